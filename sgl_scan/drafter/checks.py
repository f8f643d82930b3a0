"""Named checks on a drafter checkpoint, each a frozen pass/warn/fail/skip result with one line of why.

`run_checks(checkpoint, target)` reads only the `Checkpoint` and `Target` values; it never opens a
file. Draft vocabulary: the config's `draft_vocab_size`, else the rows of `lm_head.weight`, else
d2t's length. Target vocabulary: `--target-vocab`/`--target-config`, else t2d's length, else the
drafter config's `vocab_size` (the report says which).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, TypeGuard, cast

from sgl_scan.drafter.checkpoint import INTEGER_DTYPES, Checkpoint, MappingTensor
from sgl_scan.drafter.mapping import D2tFacts, analyse_d2t
from sgl_scan.drafter.model_config import config_field
from sgl_scan.drafter.target import Target, complete_target

STATUSES = ("pass", "warn", "fail", "skip")

# Where drafter configs keep the target layers whose hidden states feed the draft head.
AUX_LAYER_KEYS = (
    ("eagle_config", "eagle_aux_hidden_state_layer_ids"),
    (None, "eagle_aux_hidden_state_layer_ids"),
)


@dataclass(frozen=True)
class CheckResult:
    name: str  # stable id, e.g. "d2t-offset-range"
    status: str  # one of STATUSES
    message: str  # one line
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AuxLayers:
    """The drafter's aux hidden-state layer ids and where the config keeps them."""

    key: str | None  # "eagle_config.eagle_aux_hidden_state_layer_ids", or None when not set
    layer_ids: tuple[int, ...] | None


@dataclass(frozen=True)
class CheckReport:
    checkpoint: Checkpoint
    target: Target  # completed: the vocabulary used for the checks and where it came from
    draft_vocab: int | None
    draft_vocab_source: str
    d2t: D2tFacts | None
    aux: AuxLayers
    architectures: tuple[str, ...]
    checks: tuple[CheckResult, ...]

    @property
    def failed(self) -> bool:
        return any(c.status == "fail" for c in self.checks)


def _n(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def _count(value: int, noun: str) -> str:
    return f"{value:,} {noun}{'' if value == 1 else 's'}"


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _draft_vocab(ckpt: Checkpoint) -> tuple[int | None, str]:
    configured = _positive_int(config_field(ckpt.config or {}, "draft_vocab_size"))
    if configured:
        return configured, "config.json draft_vocab_size"
    if ckpt.head_rows:
        return ckpt.head_rows, "lm_head.weight rows"
    if ckpt.d2t is not None and len(ckpt.d2t.info.shape) == 1:
        return ckpt.d2t.info.shape[0], "d2t length"
    return None, "unknown"


def find_aux_layers(config: Mapping[str, Any] | None) -> AuxLayers:
    for parent, key in AUX_LAYER_KEYS:
        holder = (config or {}).get(parent) if parent else config
        if isinstance(holder, Mapping) and holder.get(key) is not None:
            raw = holder[key]
            ids = tuple(raw) if isinstance(raw, (list, tuple)) else (raw,)
            return AuxLayers(f"{parent}.{key}" if parent else key, ids)
    return AuxLayers(None, None)


def _usable(tensor: MappingTensor | None) -> TypeGuard[MappingTensor]:
    return tensor is not None and tensor.values is not None


def run_checks(ckpt: Checkpoint, target: Target) -> CheckReport:
    """Run every check on `ckpt` against `target` (unknown target fields are filled from the drafter)."""
    t2d_len = ckpt.t2d.info.shape[0] if ckpt.t2d is not None and len(ckpt.t2d.info.shape) == 1 else None
    target = complete_target(target, t2d_len, ckpt.config)
    draft_vocab, draft_source = _draft_vocab(ckpt)
    d2t_ok = _usable(ckpt.d2t) and ckpt.d2t.info.dtype in INTEGER_DTYPES and ckpt.d2t.values.ndim == 1
    t2d_values = ckpt.t2d.values if _usable(ckpt.t2d) and ckpt.t2d.values.ndim == 1 else None
    # d2t_ok: ckpt.d2t is usable
    facts = analyse_d2t(cast(MappingTensor, ckpt.d2t).values, target.vocab_size, t2d_values) if d2t_ok else None
    architectures = tuple(a for a in (ckpt.config or {}).get("architectures") or () if isinstance(a, str))
    aux = find_aux_layers(ckpt.config)

    checks = [
        _check_mapping_tensors(ckpt, draft_vocab, target),
        _check_d2t_format(ckpt, draft_vocab, draft_source),
        *_check_d2t_values(facts, target, draft_vocab),
        _check_t2d_format(ckpt, target),
        _check_t2d_count(ckpt, facts, draft_vocab),
        _check_t2d_matches(ckpt, facts),
        _check_config_present(ckpt),
        _check_config_vocab(ckpt, target, draft_vocab),
        _check_max_positions(ckpt),
        _check_aux_layers(aux, target),
    ]
    return CheckReport(ckpt, target, draft_vocab, draft_source, facts, aux, architectures, tuple(checks))


# --- mapping tensors ---------------------------------------------------------------------------


def _check_mapping_tensors(ckpt: Checkpoint, draft_vocab: int | None, target: Target) -> CheckResult:
    name = "mapping-tensors"
    found = {k: v for k, v in ckpt.candidates.items() if v}
    details: dict[str, Any] = {k: list(v) for k, v in ckpt.candidates.items()}
    if ckpt.copies:
        details["copies"] = {k: list(v) for k, v in ckpt.copies.items()}
    if ckpt.conflicts:
        kind, why = next(iter(ckpt.conflicts.items()))
        return CheckResult(
            name,
            "fail",
            f"{len(ckpt.copies[kind])} different {kind} tensors: {why}; the engine keeps whichever it loads last",
            details,
        )
    several = [k for k, v in found.items() if len(v) > 1]
    if several:
        kind = several[0]
        return CheckResult(
            name,
            "fail",
            f"several tensors named {kind}: {', '.join(found[kind])}; the engine keeps whichever it loads last",
            details,
        )
    missing = [k for k in ("d2t", "t2d") if k not in found]
    if not missing:
        return CheckResult(name, "pass", f"d2t ({found['d2t'][0]}) and t2d ({found['t2d'][0]}) found", details)
    reduced = draft_vocab is not None and target.vocab_size is not None and draft_vocab < target.vocab_size
    if draft_vocab is not None and draft_vocab == target.vocab_size:
        return CheckResult(
            name,
            "pass",
            f"no {' or '.join(missing)}, none needed: draft and target share one vocabulary ({_n(draft_vocab)})",
            details,
        )
    if not reduced:
        return CheckResult(
            name,
            "warn",
            f"{' and '.join(missing)} missing; whether a mapping is needed is unknown "
            f"(draft vocab {_n(draft_vocab)}, target vocab {_n(target.vocab_size)})",
            details,
        )
    sizes = f"draft vocab {_n(draft_vocab)} < target vocab {_n(target.vocab_size)}"
    if "d2t" in missing:
        consequence = (
            f"the engine would fall back to the identity map: draft id i taken as target id i, "
            f"so the draft only ever proposes the first {_n(draft_vocab)} target ids and acceptance collapses"
        )
    else:
        consequence = (
            "the checkpoint is incomplete: engines that build the draft vocabulary from t2d fall back to "
            "identity, and d2t cannot be cross-checked"
        )
    return CheckResult(name, "fail", f"{' and '.join(missing)} missing ({sizes}): {consequence}", details)


# --- d2t ---------------------------------------------------------------------------------------


def _check_d2t_format(ckpt: Checkpoint, draft_vocab: int | None, draft_source: str) -> CheckResult:
    name = "d2t-format"
    tensor = ckpt.d2t
    if tensor is None:
        return CheckResult(
            name,
            "skip",
            "several d2t tensors (see mapping-tensors)"
            if ckpt.candidates.get("d2t") or ckpt.conflicts.get("d2t")
            else "no d2t tensor",
        )
    info = tensor.info
    details = {"name": info.name, "dtype": info.dtype, "shape": list(info.shape), "file": info.file}
    if info.dtype not in INTEGER_DTYPES:
        return CheckResult(
            name,
            "fail",
            f"{info.name} is {info.dtype}, not an integer tensor; target ids must be exact integers",
            details,
        )
    if tensor.values is None:
        return CheckResult(name, "fail", f"{info.name} could not be loaded: {tensor.error}", details)
    if len(info.shape) != 1:
        return CheckResult(
            name,
            "fail",
            f"{info.name} has shape {list(info.shape)}; d2t must be one-dimensional (one entry per draft id)",
            details,
        )
    length = info.shape[0]
    if draft_source != "d2t length" and draft_vocab != length:
        return CheckResult(
            name,
            "fail",
            f"{info.name} has {_n(length)} entries but the draft vocab is {_n(draft_vocab)} ({draft_source})",
            details,
        )
    basis = "= draft vocab" if draft_source != "d2t length" else "(no draft_vocab_size or lm_head to compare with)"
    return CheckResult(name, "pass", f"{info.dtype}, {_n(length)} entries {basis}", details)


def _describe(reading) -> str:
    parts = []
    if reading.out_of_range:
        draft, tid = reading.first_out_of_range
        parts.append(f"{reading.out_of_range:,} out of range (first: draft {draft:,} -> {tid:,})")
    if reading.collisions:
        earlier, draft, tid = reading.first_collision
        parts.append(f"{_count(reading.collisions, 'collision')} (first: draft {earlier:,} and {draft:,} -> {tid:,})")
    return ", ".join(parts) or "valid"


def _check_d2t_values(facts: D2tFacts | None, target: Target, draft_vocab: int | None) -> list[CheckResult]:
    names = ("d2t-offset-range", "d2t-offset-distinct", "d2t-reading", "d2t-trivial")
    if facts is None:
        return [CheckResult(n, "skip", "no usable integer d2t") for n in names]
    off = facts.offset
    vocab = _n(target.vocab_size)
    results = []
    if target.vocab_size is None:
        results.append(CheckResult(names[0], "skip", "target vocab unknown: give --target-vocab or --target-config"))
    elif off.out_of_range:
        assert off.first_out_of_range is not None  # found with out_of_range
        draft, tid = off.first_out_of_range
        results.append(
            CheckResult(
                names[0],
                "fail",
                f"{off.out_of_range:,} of {facts.length:,} ids i + d2t[i] fall outside [0, {vocab}) (first: "
                f"draft {draft:,} -> {tid:,})",
                {"count": off.out_of_range, "first": list(off.first_out_of_range)},
            )
        )
    else:
        results.append(CheckResult(names[0], "pass", f"every i + d2t[i] lies in [0, {vocab})"))

    if off.collisions:
        assert off.first_collision is not None  # found with collisions
        earlier, draft, tid = off.first_collision
        results.append(
            CheckResult(
                names[1],
                "fail",
                f"{_count(off.collisions, 'draft id')} {'shares' if off.collisions == 1 else 'share'} an "
                f"earlier draft id's target under i + d2t[i] (first: draft {earlier:,} and {draft:,} -> "
                f"{tid:,})",
                {"count": off.collisions, "first": list(off.first_collision)},
            )
        )
    else:
        results.append(CheckResult(names[1], "pass", f"all {facts.length:,} target ids i + d2t[i] are distinct"))

    results.append(_reading_result(names[2], facts, vocab))
    results.append(_trivial_result(names[3], facts, target, draft_vocab))
    return results


def _reading_result(name: str, facts: D2tFacts, vocab: str) -> CheckResult:
    details = {
        "fits": facts.fits,
        "decided_by_t2d": facts.decided_by_t2d,
        "offset": _describe(facts.offset),
        "direct": _describe(facts.direct),
    }
    t2d_note = " (t2d agrees)" if facts.decided_by_t2d else ""
    if facts.fits == "offset":
        return CheckResult(
            name,
            "pass",
            f"fits the offset reading (target = i + d2t[i]){t2d_note}; as a direct map: {_describe(facts.direct)}",
            details,
        )
    if facts.fits == "direct":
        return CheckResult(
            name,
            "fail",
            f"written as a direct map: d2t[i] are themselves {facts.unique_targets:,} distinct target ids in "
            f"[0, {vocab}){t2d_note}, but EAGLE-3 stores offsets (target = i + d2t[i]: {_describe(facts.offset)}); "
            "store d2t[i] - i instead",
            details,
        )
    if facts.fits == "both":
        return CheckResult(
            name,
            "warn",
            "fits both readings (offset and direct map) and no t2d decides; the offset reading is assumed",
            details,
        )
    return CheckResult(
        name,
        "fail",
        f"fits neither reading: offset {_describe(facts.offset)}; direct {_describe(facts.direct)}",
        details,
    )


def _trivial_result(name: str, facts: D2tFacts, target: Target, draft_vocab: int | None) -> CheckResult:
    if target.vocab_size is not None and facts.length >= target.vocab_size:
        return CheckResult(name, "pass", "draft and target vocabularies have one size: an identity mapping is expected")
    first_n = f"the first {facts.length:,} target ids"
    why = "the draft vocabulary was probably never built from token frequencies"
    if facts.all_zero:
        return CheckResult(
            name, "warn", f"d2t is all zero: draft id i maps to target id i, {first_n}; {why}", {"kind": "all-zero"}
        )
    if facts.identity_direct:
        return CheckResult(
            name, "warn", f"d2t[i] == i: a direct identity map onto {first_n}; {why}", {"kind": "identity"}
        )
    return CheckResult(name, "pass", "not an identity mapping")


# --- t2d ---------------------------------------------------------------------------------------


def _check_t2d_format(ckpt: Checkpoint, target: Target) -> CheckResult:
    name = "t2d-format"
    tensor = ckpt.t2d
    if tensor is None:
        return CheckResult(name, "skip", "no t2d tensor")
    info = tensor.info
    details = {"name": info.name, "dtype": info.dtype, "shape": list(info.shape), "file": info.file}
    if tensor.values is None:
        return CheckResult(name, "fail", f"{info.name} could not be loaded: {tensor.error}", details)
    if len(info.shape) != 1:
        return CheckResult(
            name,
            "fail",
            f"{info.name} has shape {list(info.shape)}; t2d must be one-dimensional (one flag per target id)",
            details,
        )
    if info.dtype != "BOOL":
        return CheckResult(name, "fail", f"{info.name} is {info.dtype}, not BOOL (one flag per target id)", details)
    if target.vocab_size is not None and info.shape[0] != target.vocab_size:
        return CheckResult(
            name,
            "fail",
            f"{info.name} has {_n(info.shape[0])} entries but the target vocab is {_n(target.vocab_size)} "
            f"({target.vocab_source})",
            details,
        )
    basis = (
        "= target vocab"
        if target.vocab_source != "t2d length"
        else "(taken as the target vocab: give --target-config to confirm)"
    )
    return CheckResult(name, "pass", f"BOOL, {_n(info.shape[0])} entries {basis}", details)


def _check_t2d_count(ckpt: Checkpoint, facts: D2tFacts | None, draft_vocab: int | None) -> CheckResult:
    name = "t2d-count"
    if not _usable(ckpt.t2d) or ckpt.t2d.values.ndim != 1:
        return CheckResult(name, "skip", "no usable t2d")
    import numpy as np

    count = int(np.count_nonzero(ckpt.t2d.values))
    expected = facts.length if facts is not None else draft_vocab
    if expected is None:
        return CheckResult(name, "skip", f"{count:,} True entries; draft vocab unknown", {"true": count})
    if count != expected:
        return CheckResult(
            name,
            "fail",
            f"t2d has {count:,} True entries, the draft vocab is {expected:,}",
            {"true": count, "expected": expected},
        )
    return CheckResult(name, "pass", f"{count:,} True entries = draft vocab", {"true": count})


def _check_t2d_matches(ckpt: Checkpoint, facts: D2tFacts | None) -> CheckResult:
    name = "t2d-matches-d2t"
    if facts is None or not _usable(ckpt.t2d):
        return CheckResult(name, "skip", "needs both a usable d2t and t2d")
    reading = facts.reading(facts.effective)
    if reading.t2d_missing is None:
        return CheckResult(name, "skip", "t2d's length is not the target vocab; no id-by-id comparison")
    label = "i + d2t[i]" if facts.effective == "offset" else "d2t[i] (direct reading)"
    details = {
        "reading": facts.effective,
        "mapped_but_false": reading.t2d_missing,
        "true_but_unmapped": reading.t2d_extra,
        "first_mismatch": reading.first_t2d_mismatch,
    }
    if reading.t2d_missing == 0 and reading.t2d_extra == 0:
        return CheckResult(name, "pass", f"t2d is True at exactly the ids {label} maps to", details)
    return CheckResult(
        name,
        "fail",
        f"t2d disagrees with {label}: {reading.t2d_missing:,} mapped ids are False in t2d, "
        f"{reading.t2d_extra:,} True entries are not mapped (first differing target id {reading.first_t2d_mismatch:,})",
        details,
    )


# --- config.json -------------------------------------------------------------------------------


def _check_config_present(ckpt: Checkpoint) -> CheckResult:
    if ckpt.config is None:
        return CheckResult(
            "config",
            "fail",
            "no config.json next to the checkpoint: the engine reads the draft architecture and sizes from it",
        )
    return CheckResult("config", "pass", f"{ckpt.config_path} read", {"path": ckpt.config_path})


def _check_config_vocab(ckpt: Checkpoint, target: Target, draft_vocab: int | None) -> CheckResult:
    name = "config-vocab"
    if ckpt.config is None:
        return CheckResult(name, "skip", "no config.json")
    config = ckpt.config
    problems, facts = [], []
    draft_cfg = config_field(config, "draft_vocab_size")
    vocab_cfg = config_field(config, "vocab_size")
    d2t_len = ckpt.d2t.info.shape[0] if ckpt.d2t is not None and len(ckpt.d2t.info.shape) == 1 else None
    t2d_len = ckpt.t2d.info.shape[0] if ckpt.t2d is not None and len(ckpt.t2d.info.shape) == 1 else None

    if draft_cfg is not None:
        facts.append(
            f"draft_vocab_size {draft_cfg:,}" if isinstance(draft_cfg, int) else f"draft_vocab_size {draft_cfg!r}"
        )
        for label, value in (("d2t length", d2t_len), ("lm_head.weight rows", ckpt.head_rows)):
            if value is not None and value != draft_cfg:
                problems.append(f"draft_vocab_size {draft_cfg!r} != {label} {value:,}")
    if vocab_cfg is not None:
        facts.append(f"vocab_size {vocab_cfg:,}" if isinstance(vocab_cfg, int) else f"vocab_size {vocab_cfg!r}")
        if target.confirmed and vocab_cfg != target.vocab_size:
            problems.append(f"vocab_size {vocab_cfg!r} != target vocab {target.vocab_size:,} ({target.vocab_source})")
        if t2d_len is not None and vocab_cfg != t2d_len:
            problems.append(f"vocab_size {vocab_cfg!r} != t2d length {t2d_len:,}")
    else:
        problems.append("vocab_size missing (the target vocabulary the draft head maps into)")
    details = {"draft_vocab_size": draft_cfg, "vocab_size": vocab_cfg}
    if problems:
        return CheckResult(name, "fail", "; ".join(problems), details)
    reduced = draft_vocab is not None and target.vocab_size is not None and draft_vocab < target.vocab_size
    if draft_cfg is None and (reduced or d2t_len is not None):
        return CheckResult(
            name,
            "warn",
            f"draft_vocab_size missing while the draft vocabulary ({_n(draft_vocab)}) is reduced: engines "
            "size the draft head from it",
            details,
        )
    return CheckResult(
        name,
        "pass",
        ", ".join(facts) + " agree with the tensors" + (" and the target" if target.confirmed else ""),
        details,
    )


def _check_max_positions(ckpt: Checkpoint) -> CheckResult:
    name = "config-max-position-embeddings"
    if ckpt.config is None:
        return CheckResult(name, "skip", "no config.json")
    value = config_field(ckpt.config, "max_position_embeddings")
    if _positive_int(value) is None:
        shown = "missing" if value is None else f"{value!r}, not a positive integer"
        return CheckResult(
            name,
            "fail",
            f"max_position_embeddings {shown}: the engine sizes the draft's rotary embedding from it",
            {"value": value},
        )
    return CheckResult(name, "pass", f"max_position_embeddings {value:,}", {"value": value})


def _check_aux_layers(aux: AuxLayers, target: Target) -> CheckResult:
    name = "config-aux-layers"
    details = {
        "key": aux.key,
        "layer_ids": list(aux.layer_ids) if aux.layer_ids is not None else None,
        "target_layers": target.num_layers,
    }
    if aux.layer_ids is None:
        return CheckResult(
            name, "pass", "eagle_aux_hidden_state_layer_ids not set: the engine captures its default layers", details
        )
    shown = f"{aux.key} {list(aux.layer_ids)}"
    bad = [i for i in aux.layer_ids if not (isinstance(i, int) and not isinstance(i, bool) and i >= 0)]
    if bad:
        return CheckResult(name, "fail", f"{shown}: {bad[0]!r} is not a layer index", details)
    if len(set(aux.layer_ids)) != len(aux.layer_ids):
        return CheckResult(name, "fail", f"{shown}: a layer appears twice", details)
    if target.num_layers is None:
        return CheckResult(name, "skip", f"{shown}; target layer count unknown: give --target-config", details)
    outside = [i for i in aux.layer_ids if i >= target.num_layers]
    if outside:
        return CheckResult(
            name,
            "fail",
            f"{shown}: {outside} outside the target's {target.num_layers} layers (0..{target.num_layers - 1})",
            details,
        )
    return CheckResult(name, "pass", f"{shown} within the target's {target.num_layers} layers", details)
