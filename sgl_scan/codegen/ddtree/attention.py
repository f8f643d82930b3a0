"""The attention part of the DDTree plan: which backends can verify a tree, and what the release
picks by default on each GPU architecture, both from the analyzer's attention facts.

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


@dataclass(frozen=True)
class BackendVerify:
    backend: str  # the --attention-backend name
    reads_mask: bool | None  # None: unread (refused like a causal one)
    reason: str
    location: Location  # its registration


@dataclass(frozen=True)
class AttentionPlan:
    function: str | None  # the release's default-backend function
    arms: tuple[ArchArm, ...]
    unread: str | None  # why the default chain could not be read
    backends: tuple[BackendVerify, ...]
    verify_graphs: tuple[Location, ...]  # where CUDA-graph runners capture verify

    @property
    def mask_reading(self) -> tuple[str, ...]:
        return tuple(b.backend for b in self.backends if b.reads_mask)


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


def attention_plan(analysis: Analysis, facts: AttentionFacts | None = None) -> AttentionPlan:
    facts = facts if facts is not None else attention_facts(analysis)
    arms, unread = [], facts.default_unread
    for arm in facts.default_arms:
        parts = _arm(arm.arch)
        if parts is None:
            unread = unread or f"the architecture test at {arm.location} names no predicate the worker can call"
            continue
        arms.append(ArchArm(*parts, backends=arm.backends, conditional=bool(arm.conditions), location=arm.location))
    if not unread and (not arms or arms[-1].kind != "else"):
        unread = f"the default chain of {facts.default_function} has no final else arm"
    backends = tuple(
        BackendVerify(b.name, {"reads": True, "unread": None}.get(b.verify, False), b.reason, b.registered)
        for b in facts.backends
    )
    return AttentionPlan(facts.default_function, tuple(arms) if not unread else (), unread, backends, facts.verify_graphs)


__all__ = ["ArchArm", "AttentionPlan", "BackendVerify", "attention_plan"]
