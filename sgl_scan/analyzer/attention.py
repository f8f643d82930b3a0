"""Attention facts across files: the release's default backend per architecture (MHA and MLA models),
per backend name whether its target-verify path hands the verify input's custom mask on to the kernel
(for the class it builds for MHA models and for MLA models) and whether its `forward_extend` takes
attention sinks, the callables the release uses to tell MLA models and fetch the model config, and
the per-model override providers that set an attention backend for an architecture.

Built from the `spec_attention` extractor's records (`extractors/attention.py`). Whatever cannot be read
is said so (`unread`, with why); codegen refuses there instead of guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sgl_scan.analyzer.extractors.attention import (
    BackendRegistration,
    DefaultArm,
    DefaultCall,
    MaskRead,
    ModelOverride,
    VerifyGraphCapture,
)
from sgl_scan.analyzer.model import Analysis, Location
from sgl_scan.analyzer.builder import module_name
from sgl_scan.analyzer.query import (
    files_by_module,
    files_mentioning,
    find_class,
    find_method,
    records_in_passing,
    signature,
)

_WORDS = (
    "custom_mask",
    "use_mla_backend",
    "register_attention_backend",
    "generate_attn_arg_prefill",
    "capture_forward_mode",
    "default_attn_backend",
    "attention_backend",
)
SINKS_PARAMETER = "sinks"  # the keyword models pass learned attention sinks to a backend's forward_extend with
CAPTURE = "init_forward_metadata_capture_cuda_graph"


@dataclass(frozen=True)
class Arm:
    """One arm of the default chain: `arch` is the release's own predicate (see DefaultArm.arch)."""

    arch: str
    conditions: tuple[str, ...]
    backends: tuple[str, ...]
    location: Location
    choices: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (backend, inner tests it is picked under)


@dataclass(frozen=True)
class Verify:
    """How one backend class's target verify treats the custom mask."""

    cls: str | None
    verify: (
        str  # "reads" | "guarded" (only under a topk test) | "dropped" (computed, never handed on) | "none" | "unread"
    )
    reason: str
    read_at: Location | None


@dataclass(frozen=True)
class Backend:
    """What `--attention-backend name` builds for an MHA model and how its verify treats the mask;
    `mla`: the same for an MLA model; `sinks`: whether that class's forward_extend takes `sinks`."""

    name: str
    registered: Location
    cls: str | None
    verify: str  # "reads" | "guarded" (only under a topk test) | "none" | "unread"
    reason: str  # one line: where the mask is read, or why not / unread
    read_at: Location | None
    capture_at: Location | None  # the class's init_forward_metadata_capture_cuda_graph, if any
    mla: Verify | None = None
    sinks: bool | None = None  # None: unread
    sinks_reason: str = ""


@dataclass(frozen=True)
class Override:
    """A per-model override provider setting an attention backend for some architectures."""

    architectures: tuple[str, ...]
    setting: str
    backends: tuple[str, ...]  # () when the value is not a literal
    guards: tuple[str, ...]
    location: Location


@dataclass(frozen=True)
class AttentionFacts:
    default_function: str | None
    default_arms: tuple[Arm, ...]  # MHA family, in chain order
    default_unread: str | None  # why the default chain could not be read (None when it was)
    backends: tuple[Backend, ...]
    verify_graphs: tuple[Location, ...]  # where CUDA-graph runners capture TARGET_VERIFY
    mla_arms: tuple[Arm, ...] = ()  # MLA family, in chain order
    mla_unread: str | None = "no MLA arm read"
    # what the release passes the default chain to tell an MLA model and for the model config:
    # (producer, where) with producer "call:<qualified>" (called with the server arguments) | "method:<name>"
    mla_probe: tuple[str, Location] | None = None
    config_probe: tuple[str, Location] | None = None
    sinks_attribute: str | None = None  # the model-config attribute the chain tests for attention sinks
    overrides: tuple[Override, ...] = ()

    def backend(self, name: str) -> Backend | None:
        return next((b for b in self.backends if b.name == name), None)


def _mha_class(reg: BackendRegistration) -> str | None:
    """The class built for a plain MHA model: the first returned under no positive guard (a positive
    test names a special case: MLA, an architecture, double sparsity) and not on MLA's side."""
    for cls, guards in reg.classes:
        if all(g.startswith("not ") and not (g.startswith("not (not ") and "use_mla_backend" in g) for g in guards):
            return cls
    return None


def _mla_side(guard: str) -> bool | None:
    """Whether a registration guard holds for MLA models (True), for MHA models only (False), or says
    nothing of MLA (None)."""
    if "use_mla_backend" not in guard:
        return None
    text, negated = guard.strip(), False
    while True:
        if text.startswith("not (") and text.endswith(")"):
            text, negated = text[5:-1].strip(), not negated
        elif text.startswith("not "):
            text, negated = text[4:].strip(), not negated
        else:
            break
    if not re.fullmatch(r"[\w.]*use_mla_backend(\(\))?", text):
        return None
    return not negated


def _mla_class(reg: BackendRegistration) -> str | None:
    """The class built for an MLA model: the first returned where every MLA test holds and every other
    test is on its negative side (a positive one names another special case)."""
    for cls, guards in reg.classes:
        sides = [_mla_side(g) for g in guards]
        if all(side is not False for side in sides) and all(
            side is True or g.startswith("not ") for g, side in zip(guards, sides, strict=True)
        ):
            return cls
    return None


def _is_graph(read: MaskRead) -> bool:
    return "cuda_graph" in read.function or "capture" in read.function


def attention_facts(analysis: Analysis) -> AttentionFacts:
    arms: dict[tuple[str, str], list[tuple[DefaultArm, str]]] = {}
    reads: dict[str, list[MaskRead]] = {}
    registrations: dict[str, tuple[BackendRegistration, str]] = {}
    graphs: list[Location] = []
    mla_arms: dict[tuple[str, str], list[tuple[DefaultArm, str]]] = {}
    calls: list[tuple[DefaultCall, str]] = []
    overrides: list[Override] = []
    for path in files_mentioning(analysis, _WORDS):
        for record in records_in_passing(analysis, path).get("spec_attention", ()):
            if isinstance(record, DefaultArm) and record.family == "mha":
                arms.setdefault((path, record.function), []).append((record, path))
            elif isinstance(record, DefaultArm):
                mla_arms.setdefault((path, record.function), []).append((record, path))
            elif isinstance(record, DefaultCall):
                calls.append((record, path))
            elif isinstance(record, ModelOverride):
                overrides.append(
                    Override(
                        record.architectures,
                        record.setting,
                        record.backends,
                        record.guards,
                        Location(path, record.line, record.column, record.end_line),
                    )
                )
            elif isinstance(record, MaskRead):
                reads.setdefault(module_name(path), []).append(record)
            elif isinstance(record, BackendRegistration):
                registrations.setdefault(record.name, (record, path))
            elif isinstance(record, VerifyGraphCapture):
                graphs.append(Location(path, record.line, record.column, record.end_line))
    default_arms: tuple[Arm, ...]
    default_function, default_arms, unread = None, (), None
    if not arms:
        unread = "no default-backend chain under `if not use_mla_backend` was found in the files read"
    elif len(arms) > 1:
        unread = "several default-backend chains: " + ", ".join(
            f"{p}:{rs[0][0].line}" for (p, f), rs in sorted(arms.items())
        )
    else:
        (path, default_function), found = next(iter(arms.items()))
        default_arms = tuple(
            Arm(r.arch, r.conditions, r.backends, Location(p, r.line, r.column, r.end_line), r.choices)
            for r, p in found
        )
        odd = [a for a in default_arms if a.arch.startswith("unread:")]
        if odd:
            unread = f"an arm whose architecture test could not be read ({odd[0].location})"
    modules = files_by_module(analysis)
    backends = []
    for name, (reg, path) in sorted(registrations.items()):
        backends.append(_backend(analysis, modules, name, reg, path, reads))
    chain = next(iter(arms.items()), None) if len(arms) == 1 else None
    mla = mla_arms.get(chain[0]) if chain else None
    mla_unread = None if mla else "no MLA arm of the default chain was read"
    mla_found = tuple(
        Arm(r.arch, r.conditions, r.backends, Location(p, r.line, r.column, r.end_line), r.choices)
        for r, p in (mla or ())
    )
    probes = _probes(analysis, modules, chain, calls)
    return AttentionFacts(
        default_function,
        default_arms,
        unread,
        tuple(backends),
        tuple(sorted(graphs, key=str)),
        mla_found,
        mla_unread,
        *probes,
        tuple(sorted(overrides, key=lambda o: str(o.location))),
    )


_SINKS = re.compile(r"\b(\w+)\.(has_attention_sinks)\b")


def _probes(
    analysis, modules, chain, calls
) -> tuple[tuple[str, Location] | None, tuple[str, Location] | None, str | None]:
    """(MLA probe, config probe, sinks attribute): what the release passes the chain's parameters, read
    from its calls."""
    if chain is None:
        return None, None, None
    (path, function), records = chain
    mla_param = next((r.mla_test for r, _ in records if r.mla_test), "")
    config_param, sinks_attribute = None, None
    for r, _ in records:
        for _, guards in r.choices:
            for guard in guards:
                hit = _SINKS.search(guard)
                if hit:
                    config_param, sinks_attribute = hit.group(1), hit.group(2)
    facts = analysis.files.get(path)
    fn = next((f for f in facts.functions if f.qualname == function), None) if facts else None
    params = [p.name for p in fn.params if p.name != "self"] if fn else []
    name = function.rpartition(".")[2]
    mla_probe = config_probe = None
    for call, where in sorted(calls, key=lambda c: (c[1], c[0].line)):
        if call.callee.rpartition(".")[2] != name:
            continue
        by_name = {(params[int(k)] if k.isdigit() and int(k) < len(params) else k): v for k, v in call.args}
        at = Location(where, call.line, call.column, call.end_line)
        value = by_name.get(mla_param, "")
        if mla_probe is None and not value.startswith("unread:") and value:
            mla_probe = (value, at)
        value = by_name.get(config_param or "", "")
        if config_probe is None and not value.startswith("unread:") and value:
            config_probe = (value, at)
    return mla_probe, config_probe, sinks_attribute


def _verify(analysis, modules, cls: str | None, kind: str, registered: Location, reads: dict) -> Verify:
    """How `cls`'s module treats the verify input's mask: only reads whose value is handed on count."""
    if cls is None:
        return Verify(None, "unread", f"no class built for {kind} models at {registered}", None)
    module = cls.rpartition(".")[0]
    hit = find_class(analysis, cls, modules)
    if hit is None:
        return Verify(cls, "unread", f"{cls} is not in the files read", None)
    facts = hit[0]
    found = [r for r in reads.get(module, []) if not _is_graph(r)]
    passed = [r for r in found if r.use == "passed"]
    plain = [r for r in passed if not any("topk" in g for g in r.guards)]
    at = lambda r: Location(facts.path, r.line, r.column, r.end_line)  # noqa: E731
    if plain:
        r = plain[0]
        via = (
            "spec_info.generate_attn_arg_prefill (the verify input's mask)"
            if r.how == "generate_attn_arg_prefill"
            else "custom_mask"
        )
        return Verify(cls, "reads", f"{r.owner}.{r.function} reads {via} at {at(r)}", at(r))
    if passed:
        r = passed[0]
        return Verify(
            cls,
            "guarded",
            f"reads custom_mask only under a topk test ({at(r)}), the layout of EAGLE's topk > 1; otherwise "
            "a causal verify",
            at(r),
        )
    dropped = [r for r in found if r.use == "dropped"]
    if dropped:
        r = dropped[0]
        return Verify(
            cls,
            "dropped",
            f"{r.owner}.{r.function} computes the custom mask at {at(r)} into {r.bound or 'a name'} and never hands "
            "it on: its verify is planned causal",
            at(r),
        )
    return Verify(cls, "none", f"{facts.path} never reads the verify input's custom_mask (causal verify)", None)


def _sinks(analysis, modules, cls: str | None) -> tuple[bool | None, str]:
    """Whether `cls`'s forward_extend takes the `sinks` keyword models pass (or any keyword)."""
    hit = find_class(analysis, cls, modules) if cls else None
    if hit is None:
        return None, f"{cls or 'its class'} is not in the files read"
    assert cls is not None  # else no `hit`
    found = find_method(analysis, hit[0], hit[1], "forward_extend")
    if found is None:
        return None, f"{cls} has no forward_extend in the files read"
    sig = signature(*found)
    where = found[0].location(found[1])
    if any(p.name == SINKS_PARAMETER for p in sig.params) or sig.accepts_any_keyword:
        return True, f"{cls.rpartition('.')[2]}.forward_extend ({where}) takes {SINKS_PARAMETER}"
    return (
        False,
        f"{cls.rpartition('.')[2]}.forward_extend ({where}) takes no {SINKS_PARAMETER} (a TypeError on a "
        "sinks model's first forward)",
    )


def _backend(analysis, modules, name: str, reg: BackendRegistration, path: str, reads: dict) -> Backend:
    registered = Location(path, reg.line, reg.column, reg.end_line)
    mha = _verify(analysis, modules, _mha_class(reg), "MHA", registered, reads)
    mla = _verify(analysis, modules, _mla_class(reg), "MLA", registered, reads)
    capture_at = None
    hit = find_class(analysis, mha.cls, modules) if mha.cls else None
    if hit is not None:
        capture = find_method(analysis, hit[0], hit[1], CAPTURE)
        capture_at = capture[0].location(capture[1]) if capture else None
    sinks, sinks_reason = _sinks(analysis, modules, mha.cls)
    return Backend(name, registered, mha.cls, mha.verify, mha.reason, mha.read_at, capture_at, mla, sinks, sinks_reason)


__all__ = ["Arm", "AttentionFacts", "Backend", "Override", "Verify", "attention_facts"]
