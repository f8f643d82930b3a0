"""Precision and recall of a tool's hits against sgl-scan's SGL101–SGL103 findings, by file:line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

RULE_IDS = ("SGL101", "SGL102", "SGL103")

Hits = Mapping[str, set[tuple[str, int]]]


@dataclass(frozen=True)
class Score:
    rule: str  # a rule id, or "all"
    reference: int  # sgl-scan findings
    reported: int  # the tool's hits
    matched: int

    @property
    def precision(self) -> float | None:
        return self.matched / self.reported if self.reported else None

    @property
    def recall(self) -> float | None:
        return self.matched / self.reference if self.reference else None

    def to_json(self) -> dict:
        return {
            "rule": self.rule, "reference": self.reference, "reported": self.reported, "matched": self.matched,
            "precision": None if self.precision is None else round(self.precision, 3),
            "recall": None if self.recall is None else round(self.recall, 3),
        }


def score(reference: Hits, candidate: Hits) -> tuple[Score, ...]:
    """One `Score` per rule and one for all three, matching hits to findings by (path, line)."""
    scores = []
    total_ref = total_rep = total_match = 0
    for rule in RULE_IDS:
        ref, rep = set(reference.get(rule, ())), set(candidate.get(rule, ()))
        matched = len(ref & rep)
        scores.append(Score(rule, len(ref), len(rep), matched))
        total_ref, total_rep, total_match = total_ref + len(ref), total_rep + len(rep), total_match + matched
    scores.append(Score("all", total_ref, total_rep, total_match))
    return tuple(scores)


def findings_from_json(path: Path, prefix: str = "") -> dict[str, set[tuple[str, int]]]:
    """(path, line) per rule id from `sgl-scan scan --format json` output.

    Paths in findings are relative to the snapshot tree (`sglang/srt/...`); `prefix` is prepended
    when the other tools ran from another folder.
    """
    data = json.loads(path.read_text())
    findings = data.get("findings", data) if isinstance(data, dict) else data
    hits: dict[str, set[tuple[str, int]]] = {rule: set() for rule in RULE_IDS}
    for finding in findings:
        rule = finding.get("rule_id") or finding.get("rule") or finding.get("id")
        if rule in hits:
            hits[rule].add((prefix + finding["path"], int(finding["line"])))
    return hits
