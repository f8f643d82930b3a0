"""The rules' findings on one analysis, kept beside its facts so a warm re-scan does not run the rules.

The rules are a function of the analysis (its facts, their inventory, the snapshot id, which they
only copy into each finding) and of code; they read the tree only through `analysis.files` and
`analysis.inventory`. The facts are named by their tree key (`TreeValues` lives in the analyzer
signature's folder, which also covers the analyzer's code, Python and libcst); the stamp names the
rest: a digest of every `sgl_scan` source, the rules' classes and the release version. (The rules
import nothing but `sgl_scan` and the standard library.) A rule defined outside `sgl_scan`, or
whose `check` was replaced, is not covered by that digest: then the rules run every time. Findings
are stored only when no source changed since this process loaded sgl_scan (else the code that ran
may not be the code the digest names). Only what the rules return is kept; fingerprints (from the
source lines), selection, suppression and baselines are applied to it on every run.

A tree the rules have not run on (an edit, a PR) may still get the findings of a tree they ran on:
each run also stores its findings with what they read (`rules/reads.py`) and every file's sha256,
under a name that holds the stamp, the files' records key and their paths. A tree with that name
whose changed files give every read the same value gets those findings (with its own snapshot id):
an edit that adds a helper to a file the rules read keeps them.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any, Callable, NamedTuple, Sequence

import sgl_scan
from sgl_scan.analyzer.cache import package_digest, sources_settled
from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import RuleSet
from sgl_scan.rules.finding import Finding
from sgl_scan.rules.reads import LoggedFiles, ReadLog, holds

KIND = "findings-1"  # the stored value's name and format: the rules' findings, sorted
NEAR = "findings-near-1"  # the name's start and format of a `Near`


class Near(NamedTuple):
    """The findings of one rules run, with what they read and the content of every file then."""

    shas: dict[str, str]
    log: ReadLog
    findings: tuple[Finding, ...]


def _ours(obj: object) -> bool:
    return (getattr(obj, "__module__", None) or "").startswith("sgl_scan.")


def stamp(analysis: Analysis, ruleset: RuleSet) -> str | None:
    """What the rules' findings on `analysis` depend on besides its facts and snapshot id (None: not
    cacheable). The snapshot id is only copied into each finding (`_as_of`)."""
    derived = analysis.derived
    if derived is None or not derived.serves(analysis.files, analysis.inventory):
        return None
    parts = [package_digest(derived.cache.root), repr(analysis.sglang_version)]
    for rule in ruleset.rules:
        cls = type(rule)
        if not _ours(cls) or not _ours(cls.check) or vars(rule):
            return None
        parts.append(f"{cls.__module__}:{cls.__qualname__}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def recall(analysis: Analysis, ruleset: RuleSet, run: Callable[[Analysis], Sequence[Finding]]) -> tuple[Finding, ...]:
    """`run(analysis)` (the rules' findings on `analysis`), or the value an earlier run stored for the
    same facts and stamp, or for a tree whose changes left all it read as it was (module docstring)."""
    key = stamp(analysis, ruleset)
    if key is None:
        return tuple(run(analysis))
    found = analysis.derived.get(KIND, key)
    if isinstance(found, tuple) and all(isinstance(f, Finding) for f in found):
        return _as_of(found, analysis.snapshot_id)
    near = _near_name(analysis, key)
    settled = sources_settled(sgl_scan.LOADED_NS, sgl_scan.LOADED_SOURCES)
    findings = _near_findings(analysis, near) if near is not None else None
    if findings is None:
        log = ReadLog()
        files: Any = analysis.files
        logged = dataclasses.replace(analysis, files=LoggedFiles(files, log)) if near is not None else analysis
        findings = tuple(run(logged))
        if near is not None and settled:
            shas = {path: files.sha(path) for path in files}
            analysis.derived.cache.put_value(near, Near(shas, log, findings))
    if settled:
        analysis.derived.put(KIND, key, findings)
    return findings


def _near_name(analysis: Analysis, code: str) -> str | None:
    """The name of the `Near` value of trees with `analysis`'s records and paths, under the rules'
    stamp `code` (None: not kept)."""
    files: Any = analysis.files
    if not all(hasattr(files, name) for name in ("records_key", "sha", "mentions", "source_mentioning")):
        return None
    digest = hashlib.sha256(f"{code}\n{files.records_key()}\n".encode())
    for path in sorted(files):
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
    return f"{NEAR}-{digest.hexdigest()}"


def _near_findings(analysis: Analysis, name: str) -> tuple[Finding, ...] | None:
    """The stored `Near` findings under `name`, if what they read holds on `analysis`'s files."""
    files: Any = analysis.files
    near = analysis.derived.cache.get_value(name, keep=True)
    if not isinstance(near, Near) or not isinstance(near.log, ReadLog) or not isinstance(near.shas, dict):
        return None
    changed = set()
    for path in files:
        sha = files.sha(path)
        if sha is None or near.shas.get(path) != sha:
            changed.add(path)
    if not holds(near.log, files, changed):
        return None
    return _as_of(near.findings, analysis.snapshot_id)


def _as_of(findings: tuple[Finding, ...], snapshot_id: str) -> tuple[Finding, ...]:
    """`findings` as the rules would make them on a snapshot named `snapshot_id`."""
    if all(f.snapshot_id == snapshot_id for f in findings):
        return findings
    return tuple(dataclasses.replace(f, snapshot_id=snapshot_id) for f in findings)
