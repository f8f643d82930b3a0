"""Runs every loaded rule over one `Analysis` and returns all their findings, ordered and fingerprinted.

The engine does not select, suppress or baseline anything: that happens once, afterwards, in
`sgl_scan.rules.filtering`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter

from sgl_scan.analyzer.model import Analysis
from sgl_scan.errors import SglScanError
from sgl_scan.rules.base import RuleSet
from sgl_scan.rules.finding import Finding
from sgl_scan.rules.identity import SourceLines, identify
from sgl_scan.rules.memo import recall
from sgl_scan.rules.registry import load_rules


class RuleError(SglScanError):
    """A rule raised while checking a snapshot (exit 3)."""


def sort_key(finding: Finding) -> tuple:
    return (finding.path, finding.line, finding.column, finding.rule_id, finding.message)


def run_rules(
    analysis: Analysis, rules: RuleSet | None = None, *, source_lines: SourceLines | None = None
) -> tuple[Finding, ...]:
    """All findings of `rules` (default: every rule) on `analysis`, sorted by path and line.

    With `source_lines` (path -> the snapshot file's lines, read by the caller) fingerprints include
    each statement's neighbours (`rules/identity.py`); without, repeats are numbered in line order.
    What the rules return is kept with a cached analysis's facts (`rules/memo.py`)."""
    ruleset = rules if rules is not None else load_rules()
    findings = recall(analysis, ruleset, lambda logged: sorted(check_all(logged, ruleset), key=sort_key))
    if source_lines is not None:
        return identify(findings, source_lines)
    return unique_fingerprints(list(findings))


def check_all(analysis: Analysis, ruleset: RuleSet) -> list[Finding]:
    """Every rule's findings, as the rules return them (a rule that raises stops the run)."""
    findings: list[Finding] = []
    for rule in ruleset.rules:
        try:
            findings.extend(rule.check(analysis))
        except SglScanError:
            raise
        except Exception as exc:
            raise RuleError(f"rule {rule.id} ({rule.name}) failed: {type(exc).__name__}: {exc}") from exc
    return findings


def unique_fingerprints(findings: list[Finding]) -> tuple[Finding, ...]:
    """Give repeated fingerprints an occurrence number (in line order), so each one is unique."""
    seen: Counter[str] = Counter()
    result = []
    for finding in findings:
        base = finding.fingerprint or ""
        n = seen[base]
        seen[base] += 1
        if n:
            again = hashlib.sha256(f"{base}#{n}".encode()).hexdigest()[:20]
            finding = dataclasses.replace(finding, fingerprint=again, group=base)
        else:
            finding = dataclasses.replace(finding, group=base)
        result.append(finding)
    return tuple(result)
