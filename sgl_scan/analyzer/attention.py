"""Attention facts across files: the release's default backend per architecture (MHA models) and,
per backend name, whether its target-verify path reads the verify input's custom mask.

Built from the `spec_attention` extractor's records (`extractors/attention.py`). Whatever cannot be read
is said so (`unread`, with why); codegen refuses there instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass

from sgl_scan.analyzer.extractors.attention import BackendRegistration, DefaultArm, MaskRead, VerifyGraphCapture
from sgl_scan.analyzer.model import Analysis, Location
from sgl_scan.analyzer.query import files_by_module, files_mentioning, find_class, find_method

_WORDS = ("custom_mask", "use_mla_backend", "register_attention_backend", "generate_attn_arg_prefill", "capture_forward_mode")
CAPTURE = "init_forward_metadata_capture_cuda_graph"


@dataclass(frozen=True)
class Arm:
    """One arm of the default chain: `arch` is the release's own predicate (see DefaultArm.arch)."""

    arch: str
    conditions: tuple[str, ...]
    backends: tuple[str, ...]
    location: Location


@dataclass(frozen=True)
class Backend:
    """What `--attention-backend name` builds for an MHA model and how its verify treats the mask."""

    name: str
    registered: Location
    cls: str | None
    verify: str  # "reads" | "guarded" (only under a topk test) | "none" | "unread"
    reason: str  # one line: where the mask is read, or why not / unread
    read_at: Location | None
    capture_at: Location | None  # the class's init_forward_metadata_capture_cuda_graph, if any


@dataclass(frozen=True)
class AttentionFacts:
    default_function: str | None
    default_arms: tuple[Arm, ...]  # MHA family, in chain order
    default_unread: str | None  # why the default chain could not be read (None when it was)
    backends: tuple[Backend, ...]
    verify_graphs: tuple[Location, ...]  # where CUDA-graph runners capture TARGET_VERIFY

    def backend(self, name: str) -> Backend | None:
        return next((b for b in self.backends if b.name == name), None)


def _mha_class(reg: BackendRegistration) -> str | None:
    """The class built for a plain MHA model: the first returned under no positive guard (a positive
    test names a special case: MLA, an architecture, double sparsity) and not on MLA's side."""
    for cls, guards in reg.classes:
        if all(g.startswith("not ") and not (g.startswith("not (not ") and "use_mla_backend" in g) for g in guards):
            return cls
    return None


def _is_graph(read: MaskRead) -> bool:
    return "cuda_graph" in read.function or "capture" in read.function


def attention_facts(analysis: Analysis) -> AttentionFacts:
    arms: dict[tuple[str, str], list[tuple[DefaultArm, str]]] = {}
    reads: dict[str, list[MaskRead]] = {}
    registrations: dict[str, tuple[BackendRegistration, str]] = {}
    graphs: list[Location] = []
    for path in files_mentioning(analysis, _WORDS):
        facts = analysis.files[path]
        for record in (facts.extras or {}).get("spec_attention", ()):
            if isinstance(record, DefaultArm) and record.family == "mha":
                arms.setdefault((path, record.function), []).append((record, path))
            elif isinstance(record, MaskRead):
                reads.setdefault(facts.module, []).append(record)
            elif isinstance(record, BackendRegistration):
                registrations.setdefault(record.name, (record, path))
            elif isinstance(record, VerifyGraphCapture):
                graphs.append(Location(path, record.line, record.column, record.end_line))
    default_function, default_arms, unread = None, (), None
    if not arms:
        unread = "no default-backend chain under `if not use_mla_backend` was found in the files read"
    elif len(arms) > 1:
        unread = "several default-backend chains: " + ", ".join(f"{p}:{rs[0][0].line}" for (p, f), rs in sorted(arms.items()))
    else:
        (path, default_function), found = next(iter(arms.items()))
        default_arms = tuple(Arm(r.arch, r.conditions, r.backends, Location(p, r.line, r.column, r.end_line)) for r, p in found)
        odd = [a for a in default_arms if a.arch.startswith("unread:")]
        if odd:
            unread = f"an arm whose architecture test could not be read ({odd[0].location})"
    modules = files_by_module(analysis)
    backends = []
    for name, (reg, path) in sorted(registrations.items()):
        backends.append(_backend(analysis, modules, name, reg, path, reads))
    return AttentionFacts(default_function, default_arms, unread, tuple(backends), tuple(sorted(graphs, key=str)))


def _backend(analysis, modules, name: str, reg: BackendRegistration, path: str, reads: dict) -> Backend:
    registered = Location(path, reg.line, reg.column, reg.end_line)
    cls = _mha_class(reg)
    if cls is None:
        return Backend(name, registered, None, "unread", f"no class built for MHA models at {registered}", None, None)
    module = cls.rpartition(".")[0]
    hit = find_class(analysis, cls, modules)
    if hit is None:
        return Backend(name, registered, cls, "unread", f"{cls} is not in the files read", None, None)
    facts, fact = hit
    capture = find_method(analysis, facts, fact, CAPTURE)
    capture_at = capture[0].location(capture[1]) if capture else None
    found = [r for r in reads.get(module, []) if not _is_graph(r)]
    plain = [r for r in found if not any("topk" in g for g in r.guards)]
    if plain:
        r = plain[0]
        at = Location(facts.path, r.line, r.column, r.end_line)
        via = "spec_info.generate_attn_arg_prefill (the verify input's mask)" if r.how == "generate_attn_arg_prefill" else "custom_mask"
        return Backend(name, registered, cls, "reads", f"{r.owner}.{r.function} reads {via} at {at}", at, capture_at)
    if found:
        r = found[0]
        at = Location(facts.path, r.line, r.column, r.end_line)
        return Backend(name, registered, cls, "guarded", f"reads custom_mask only under a topk test ({at}), the layout of EAGLE's topk > 1; otherwise a causal verify",
                       at, capture_at)
    return Backend(name, registered, cls, "none", f"{facts.path} never reads the verify input's custom_mask (causal verify)", None, capture_at)


__all__ = ["Arm", "AttentionFacts", "Backend", "attention_facts"]
