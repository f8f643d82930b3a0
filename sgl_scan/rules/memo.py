"""The rules' findings on one analysis, kept beside its facts so a warm re-scan does not run the rules.

The rules are a function of the analysis (its facts, their inventory, the snapshot id) and of code.
The facts are named by their tree key (`TreeValues` lives in the analyzer signature's folder, which
also covers the analyzer's code, Python and libcst); the stamp names the rest: a digest of every
`sgl_scan` source, the rules' classes and the snapshot id and version. (The rules import nothing
but `sgl_scan` and the standard library.) A rule defined outside `sgl_scan`, or whose `check` was
replaced, is not covered by that digest: then the rules run every time. Findings are stored only
when no source changed since this process loaded sgl_scan (else the code that ran may not be the
code the digest names). Only what the rules return is kept; fingerprints (from the source lines),
selection, suppression and baselines are applied to it on every run.
"""

from __future__ import annotations

import hashlib
from typing import Callable, Sequence

import sgl_scan
from sgl_scan.analyzer.cache import package_digest, sources_settled
from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import RuleSet
from sgl_scan.rules.finding import Finding

KIND = "findings-1"  # the stored value's name and format: the rules' findings, sorted


def _ours(obj: object) -> bool:
    return (getattr(obj, "__module__", None) or "").startswith("sgl_scan.")


def stamp(analysis: Analysis, ruleset: RuleSet) -> str | None:
    """What the rules' findings on `analysis` depend on besides its facts (None: not cacheable)."""
    derived = analysis.derived
    if derived is None or not derived.serves(analysis.files, analysis.inventory):
        return None
    parts = [package_digest(derived.cache.root), repr(analysis.snapshot_id), repr(analysis.sglang_version)]
    for rule in ruleset.rules:
        cls = type(rule)
        if not _ours(cls) or not _ours(cls.check) or vars(rule):
            return None
        parts.append(f"{cls.__module__}:{cls.__qualname__}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def recall(analysis: Analysis, ruleset: RuleSet, run: Callable[[], Sequence[Finding]]) -> tuple[Finding, ...]:
    """`run()` (the rules' findings on `analysis`), or the value an earlier run stored for the same
    facts and stamp."""
    key = stamp(analysis, ruleset)
    if key is not None:
        found = analysis.derived.get(KIND, key)
        if isinstance(found, tuple) and all(isinstance(f, Finding) for f in found):
            return found
    findings = tuple(run())
    if key is not None and sources_settled(sgl_scan.LOADED_NS, sgl_scan.LOADED_SOURCES):
        analysis.derived.put(KIND, key, findings)
    return findings
