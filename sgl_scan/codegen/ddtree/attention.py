"""The attention part of the DDTree plan: which backends can verify a tree for each model kind (MHA,
MLA, MHA with attention sinks), and what the release picks by default on each GPU architecture and
per model (its per-model override providers), all from the analyzer's attention facts.

The generated worker and plugin hook evaluate the release's own architecture predicates at run
time (`DEFAULT_ARMS` in worker.py) and force or refuse from these facts; nothing here is a fixed
table of backends.
"""

from __future__ import annotations

from dataclasses import dataclass

from sgl_scan.analyzer.attention import AttentionFacts, attention_facts
from sgl_scan.analyzer.model import Analysis, Location


@dataclass(frozen=True)
class ArchArm:
    """One arm of the release's default-backend chain for MHA models."""

    kind: str  # "call" (module.getter()) | "platform" (module.getter().attribute) | "else"
    module: str | None
    getter: str | None
    attribute: str | None
    backends: tuple[str, ...]  # what the arm picks (several: an inner choice, e.g. flashinfer if installed else triton)
    conditional: bool  # the test has conjuncts besides the architecture (they may send the choice to a later arm)
    location: Location
    sinks_skip: tuple[str, ...] = ()  # backends the arm picks only for models without attention sinks (its inner test)


@dataclass(frozen=True)
class BackendVerify:
    backend: str  # the --attention-backend name
    reads_mask: bool | None  # None: unread (refused like a causal one)
    reason: str
    location: Location  # its registration
    mla_reads_mask: bool | None = None  # the class it builds for MLA models
    mla_reason: str = "not read"
    sinks: bool | None = None  # its forward_extend takes attention sinks
    sinks_reason: str = "not read"

    def reads(self, kind: str) -> bool | None:
        """Whether a tree verify of this kind of model gets the tree mask (None: unread)."""
        if kind == "mla":
            return self.mla_reads_mask
        if kind == "sinks":
            return self.reads_mask and self.sinks if self.reads_mask is not None and self.sinks is not None else None
        return self.reads_mask

    def why(self, kind: str) -> str:
        if kind == "mla":
            return self.mla_reason
        if kind == "sinks" and self.reads_mask and not self.sinks:
            return self.sinks_reason
        return self.reason


KINDS = (
    "mha",
    "sinks",
    "mla",
)  # MHA models; MHA models with learned attention sinks (gpt-oss); MLA models (DeepSeek-V3)


@dataclass(frozen=True)
class Probe:
    """How the release tells a model's kind: "call" (module.name(server_args)) | "method" (server_args.name())."""

    kind: str
    module: str | None
    name: str
    location: Location


@dataclass(frozen=True)
class ModelOverrideBackend:
    architectures: tuple[str, ...]
    setting: str
    backends: tuple[str, ...]  # () when the provider computes the value
    location: Location


@dataclass(frozen=True)
class AttentionPlan:
    function: str | None  # the release's default-backend function
    arms: tuple[ArchArm, ...]
    unread: str | None  # why the default chain could not be read
    backends: tuple[BackendVerify, ...]
    verify_graphs: tuple[Location, ...]  # where CUDA-graph runners capture verify
    mla_arms: tuple[ArchArm, ...] = ()
    mla_unread: str | None = "not planned"
    mla_probe: Probe | None = None
    config_probe: Probe | None = None
    sinks_attribute: str | None = None
    overrides: tuple[ModelOverrideBackend, ...] = ()

    @property
    def mask_reading(self) -> tuple[str, ...]:
        return self.reading("mha")

    def reading(self, kind: str) -> tuple[str, ...]:
        return tuple(b.backend for b in self.backends if b.reads(kind))

    def kind_arms(self, kind: str) -> tuple[ArchArm, ...]:
        return self.mla_arms if kind == "mla" else self.arms


def _arm(arch: str) -> tuple[str, str | None, str | None, str | None] | None:
    """(kind, module, getter, attribute) of an arm's test; None unless it names a predicate of the
    release's own package (the generated code calls it: nothing outside `sglang.` is ever called)."""
    if arch == "else":
        return "else", None, None, None
    kind, _, rest = arch.partition(":")
    if kind == "call":
        module, _, name = rest.rpartition(".")
        return ("call", module, name, None) if module.startswith("sglang.") else None
    if kind == "platform":
        getter, _, attribute = rest.partition(":")
        module, _, name = getter.rpartition(".")
        return ("platform", module, name, attribute) if module.startswith("sglang.") and attribute else None
    return None


def _arms(
    found, unread: str | None, function: str | None, attribute: str | None
) -> tuple[tuple[ArchArm, ...], str | None]:
    arms = []
    for arm in found:
        parts = _arm(arm.arch)
        if parts is None:
            unread = unread or f"the architecture test at {arm.location} names no predicate the worker can call"
            continue
        skip = tuple(
            b
            for b, guards in arm.choices
            if attribute and any(f"not {c}" in g for g in guards for c in _sinks_words(attribute))
        )
        arms.append(
            ArchArm(
                *parts, backends=arm.backends, conditional=bool(arm.conditions), location=arm.location, sinks_skip=skip
            )
        )
    if not unread and (not arms or arms[-1].kind != "else"):
        unread = f"the default chain of {function} has no final else arm"
    return (tuple(arms) if not unread else ()), unread


def _sinks_words(attribute: str) -> tuple[str, ...]:
    return (f"model_config.{attribute}", attribute)


def _probe(found) -> Probe | None:
    """A producer the generated code can call with the server arguments (never anything outside `sglang.`)."""
    if found is None:
        return None
    producer, where = found
    kind, _, rest = producer.partition(":")
    if kind == "method" and rest.isidentifier():
        return Probe("method", None, rest, where)
    module, _, name = rest.rpartition(".")
    if kind == "call" and module.startswith("sglang.") and name.isidentifier():
        return Probe("call", module, name, where)
    return None


def attention_plan(analysis: Analysis, facts: AttentionFacts | None = None) -> AttentionPlan:
    facts = facts if facts is not None else attention_facts(analysis)
    arms, unread = _arms(facts.default_arms, facts.default_unread, facts.default_function, facts.sinks_attribute)
    mla_arms, mla_unread = _arms(facts.mla_arms, facts.mla_unread, facts.default_function, None)
    verdict = {"reads": True, "unread": None}
    backends = tuple(
        BackendVerify(
            b.name,
            verdict.get(b.verify, False),
            b.reason,
            b.registered,
            verdict.get(b.mla.verify, False) if b.mla else None,
            b.mla.reason if b.mla else "not read",
            b.sinks,
            b.sinks_reason,
        )
        for b in facts.backends
    )
    overrides = tuple(ModelOverrideBackend(o.architectures, o.setting, o.backends, o.location) for o in facts.overrides)
    return AttentionPlan(
        facts.default_function,
        arms,
        unread,
        backends,
        facts.verify_graphs,
        mla_arms,
        mla_unread,
        _probe(facts.mla_probe),
        _probe(facts.config_probe),
        facts.sinks_attribute,
        overrides,
    )


__all__ = ["KINDS", "ArchArm", "AttentionPlan", "BackendVerify", "ModelOverrideBackend", "Probe", "attention_plan"]
