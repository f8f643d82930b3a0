"""The one place that decides which findings are reported: after the rules, before the reporters.

Order: selection (`--select/--ignore`), changed lines (`check --diff-base`, optionally keeping
findings the change created elsewhere), suppression comments, baseline. Every finding that is dropped is counted by reason, so reports can say what was hidden.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from sgl_scan.rules.baseline import Baseline
from sgl_scan.rules.finding import Finding
from sgl_scan.rules.selection import Selection
from sgl_scan.rules.suppression import LineSuppressions, is_suppressed


@dataclass(frozen=True)
class FilterOptions:
    selection: Selection = field(default_factory=Selection)
    suppressions: Mapping[str, LineSuppressions] = field(default_factory=dict)  # path -> line -> ids
    baseline: Baseline | None = None
    changed_lines: Mapping[str, frozenset[int]] | None = None  # path -> changed lines; None = all
    # With changed_lines: fingerprints of the findings at the diff base. A finding absent there was
    # created by the change and is kept even on an unchanged line (None: changed lines only).
    previous: frozenset[str] | None = None


@dataclass(frozen=True)
class Filtered:
    kept: tuple[Finding, ...]
    deselected: tuple[Finding, ...] = ()
    unchanged: tuple[Finding, ...] = ()  # outside the lines changed since --diff-base
    suppressed: tuple[Finding, ...] = ()
    baselined: tuple[Finding, ...] = ()

    def counts(self) -> dict[str, int]:
        return {
            "reported": len(self.kept),
            "deselected": len(self.deselected),
            "unchanged": len(self.unchanged),
            "suppressed": len(self.suppressed),
            "baselined": len(self.baselined),
        }


def touches_changed_lines(finding: Finding, changed: Mapping[str, frozenset[int]]) -> bool:
    """Whether any line the finding spans was changed."""
    lines = changed.get(finding.path)
    if not lines:
        return False
    last = finding.end_line if finding.end_line and finding.end_line >= finding.line else finding.line
    return any(n in lines for n in range(finding.line, last + 1))


def apply_filters(findings: Iterable[Finding], options: FilterOptions) -> Filtered:
    kept, deselected, unchanged, suppressed, baselined = [], [], [], [], []
    for finding in findings:
        if not options.selection.allows(finding.rule_id):
            deselected.append(finding)
        elif (
            options.changed_lines is not None
            and not touches_changed_lines(finding, options.changed_lines)
            and (options.previous is None or finding.fingerprint in options.previous)
        ):
            unchanged.append(finding)
        elif is_suppressed(finding.rule_id, finding.line, options.suppressions.get(finding.path),
                               finding.end_line):
            suppressed.append(finding)
        elif options.baseline is not None and finding in options.baseline:
            baselined.append(finding)
        else:
            kept.append(finding)
    return Filtered(tuple(kept), tuple(deselected), tuple(unchanged), tuple(suppressed), tuple(baselined))
