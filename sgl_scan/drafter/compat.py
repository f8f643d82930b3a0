"""Judge a checked drafter against one scanned SGLang: how that release reads d2t, and a verdict.

Reads only the analyzer's `SpecInventory.d2t_sites` (SGL103 facts): `offset_conversion` sites
(`hot_token_id = d2t + arange`) mean the release reads offsets, `direct_map` sites mean it takes
d2t's values as target ids; the name tests (`"d2t" in name`, `name == "d2t"`,
`name.endswith(".d2t")`) say which tensor names it picks up. When the drafter's config names its
architecture and sites live in that class, only those sites count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sgl_scan.analyzer.model import D2tSite, SpecInventory
from sgl_scan.drafter.checks import CheckReport

READING_KINDS = ("offset_conversion", "direct_map")
NAME_TEST_KINDS = ("name_test_in", "name_test_eq", "name_test_endswith")
_D2T_WORD = re.compile(r"\bd2t\b")
_NEGATED = re.compile(r"\bnot\s+in\b|!=")


@dataclass(frozen=True)
class EngineVerdict:
    snapshot_id: str
    sglang_version: str | None
    reading: str  # "offset" | "direct" | "mixed" | "none": how the release turns d2t into target ids
    sites: tuple[D2tSite, ...]  # the reading and name-test sites the verdict rests on
    scope: str  # "all model files" or "class LlamaForCausalLMEagle3"
    status: str  # "pass" | "warn" | "fail"
    verdict: str  # "compatible" | "incompatible" | "undecided"
    reason: str  # one line
    default_aux_layers: str | None = None  # the layers the release captures by default, where the facts say


def _in_class(site: D2tSite, cls: str) -> bool:
    return f".{cls}." in f".{site.function}."


def _is_d2t_lookup(detail: str) -> bool:
    """A positive test for the d2t name (the analyzer reports t2d tests and `not in` exclusions too)."""
    return bool(_D2T_WORD.search(detail)) and not _NEGATED.search(detail)


def _accepts(site: D2tSite, name: str) -> bool:
    if site.kind == "name_test_in":
        return "d2t" in name
    if site.kind == "name_test_eq":
        return name == "d2t"
    return name.endswith(".d2t")


def _where(sites) -> str:
    return ", ".join(str(s.location) for s in sites)


def judge(report: CheckReport, inventory: SpecInventory, snapshot_id: str, sglang_version: str | None) -> EngineVerdict:
    """How the scanned release would read this drafter's d2t, and whether that works."""
    relevant = [s for s in inventory.d2t_sites if s.kind in READING_KINDS + NAME_TEST_KINDS]
    scope = "all model files"
    for cls in report.architectures:
        mine = [s for s in relevant if _in_class(s, cls)]
        if mine:
            relevant, scope = mine, f"class {cls}"
            break
    readers = [s for s in relevant if s.kind in READING_KINDS]
    name_tests = [s for s in relevant if s.kind in NAME_TEST_KINDS and _is_d2t_lookup(s.detail)]
    kinds = {s.kind for s in readers}
    reading = "mixed" if len(kinds) > 1 else "offset" if "offset_conversion" in kinds else "direct" if kinds else "none"
    sites = tuple(sorted(readers + name_tests, key=lambda s: s.location))

    def verdict(status: str, word: str, reason: str) -> EngineVerdict:
        return EngineVerdict(snapshot_id, sglang_version, reading, sites, scope, status, word, reason)

    facts = report.d2t
    draft, target = report.draft_vocab, report.target.vocab_size
    d2t = report.checkpoint.d2t
    if d2t is None:
        several = report.checkpoint.candidates.get("d2t") or ()
        if several:
            return verdict(
                "fail",
                "incompatible",
                f"several d2t tensors ({', '.join(several)}): the release would keep whichever it loads last",
            )
        if draft is not None and draft == target:
            return verdict("pass", "compatible", "no d2t and none needed: draft and target share one vocabulary")
        return verdict(
            "fail",
            "incompatible",
            "the checkpoint has no d2t: this release would leave the draft->target map unset and take draft "
            "id i as target id i",
        )
    if name_tests and not any(_accepts(s, d2t.info.name) for s in name_tests):
        return verdict(
            "fail",
            "incompatible",
            f"this release looks d2t up by exact name ({_where(name_tests)}) and would not pick up {d2t.info.name!r}",
        )
    if reading == "none":
        return verdict(
            "fail",
            "incompatible",
            "no site in this snapshot turns d2t into target ids: the release (or the snapshot's scope) has "
            "no reduced-vocabulary EAGLE-3 support",
        )
    if reading == "mixed":
        offsets = [s for s in readers if s.kind == "offset_conversion"]
        directs = [s for s in readers if s.kind == "direct_map"]
        return verdict(
            "warn",
            "undecided",
            f"this release reads d2t as offsets at {_where(offsets)} and as a direct map at {_where(directs)}; "
            "which applies depends on the draft model class",
        )
    if facts is None:
        return verdict(
            "fail",
            "incompatible",
            f"the checkpoint's d2t is unusable (see d2t-format); the release reads it as {_label(reading)}",
        )
    if facts.fits == "neither":
        return verdict(
            "fail",
            "incompatible",
            f"the checkpoint's d2t fits neither reading; the release reads it as {_label(reading)}",
        )
    if facts.fits in ("both", reading):
        return verdict(
            "pass",
            "compatible",
            f"the release reads d2t as {_label(reading)} at {_where(readers)}, which the checkpoint fits",
        )
    if reading == "offset":
        reason = (
            f"the release adds arange to d2t ({_where(readers)}) but the checkpoint's d2t holds target ids already: "
            "draft id i would become target id i + d2t[i]"
        )
    else:
        reason = (
            f"the release takes d2t's values as target ids ({_where(readers)}) but the checkpoint stores offsets: "
            "draft id i would become target id d2t[i] instead of i + d2t[i]"
        )
    return verdict("fail", "incompatible", reason)


def _label(reading: str) -> str:
    return "offsets (target = i + d2t[i])" if reading == "offset" else "a direct map (target = d2t[i])"
