"""The one place that decides which findings are reported: after the rules, before the reporters.

Order: selection (`--select/--ignore`), changed lines (`check --diff-base`, optionally keeping
findings the change created elsewhere; a finding whose hazard the diff base had is no change),
suppression comments, baseline. Every finding that is dropped is counted by reason, so reports can
say what was hidden.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping

from sgl_scan.rules.baseline import Baseline, KnownFindings
from sgl_scan.rules.finding import Finding
from sgl_scan.rules.selection import Selection
from sgl_scan.rules.suppression import LineSuppressions, is_suppressed

if TYPE_CHECKING:  # a field's type only: the hazards are made where a review's base is read
    from sgl_scan.rules.hazard import BaseHazards


@dataclass(frozen=True)
class FilterOptions:
    selection: Selection = field(default_factory=Selection)
    suppressions: Mapping[str, LineSuppressions] = field(default_factory=dict)  # path -> line -> ids
    baseline: Baseline | None = None
    changed_lines: Mapping[str, frozenset[int]] | None = None  # path -> changed lines; None = all
    # With changed_lines: the findings at the diff base (or just their fingerprints). A finding they
    # do not account for was created by the change and is kept even on an unchanged line (None:
    # changed lines only).
    previous: KnownFindings | frozenset[str] | None = None
    # With changed_lines: the diff base's findings by hazard (rules/hazard.py). A finding on a changed
    # line they account for was not made by the change and counts as unchanged (None: lines decide alone).
    base_hazards: BaseHazards | None = None


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
    findings = list(findings)
    selected = [i for i, f in enumerate(findings) if options.selection.allows(f.rule_id)]
    # Known findings are matched against every selected finding at once (one assignment), before
    # any is set aside as unchanged or suppressed, so an old finding always claims its own entry.
    in_baseline = _matched(options.baseline, findings, selected)
    previous = options.previous
    if isinstance(previous, frozenset):
        previous = KnownFindings(tuple((fp, fp) for fp in previous))
    at_base = _matched(previous, findings, selected) if previous is not None else None
    same_hazard = set()
    if options.changed_lines is not None and options.base_hazards is not None:
        same_hazard = {selected[j] for j in options.base_hazards.match([findings[i] for i in selected])}
    for i, finding in enumerate(findings):
        if not options.selection.allows(finding.rule_id):
            deselected.append(finding)
        elif (
            options.changed_lines is not None
            and not touches_changed_lines(finding, options.changed_lines)
            and (at_base is None or i in at_base)
        ):
            unchanged.append(finding)
        elif i in same_hazard:
            unchanged.append(finding)  # its lines changed, its hazard did not
        elif is_suppressed(finding.rule_id, finding.line, options.suppressions.get(finding.path), finding.end_line):
            suppressed.append(finding)
        elif i in in_baseline:
            baselined.append(finding)
        else:
            kept.append(finding)
    return Filtered(tuple(kept), tuple(deselected), tuple(unchanged), tuple(suppressed), tuple(baselined))


def _matched(known: KnownFindings | None, findings: list[Finding], selected: list[int]) -> set[int]:
    """Indices (into `findings`) of the selected findings that `known` accounts for."""
    if known is None:
        return set()
    return {selected[j] for j in known.match([findings[i] for i in selected])}
