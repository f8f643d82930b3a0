"""A finding: one frozen record that rules produce and reporters print."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable, Mapping


class Severity(str, Enum):
    """How serious a finding is, lowest first: the one order `--fail-on`, the exit code and every
    report use. A finding holds the value (`"error"`), so reports print it as it is."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


SEVERITIES = tuple(s.value for s in Severity)  # lowest first
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}
SEVERITIES_DESC = tuple(reversed(SEVERITIES))  # highest first: summaries and tables
MAX_TEXT_CHARS = 1000  # of a message or hint


@dataclass(frozen=True)
class Finding:
    rule_id: str  # e.g. "SGL301"
    severity: str  # a `Severity` value: "info" | "warning" | "error"
    message: str
    path: str  # relative to the snapshot tree, e.g. "sglang/srt/speculative/spec_info.py"
    line: int  # 1-based
    column: int = 1
    end_line: int | None = None
    end_column: int | None = None
    snapshot_id: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    hint: str | None = None
    fingerprint: str | None = None  # stable across line moves (baselines, SARIF partialFingerprints)
    # The line-free identity shared by identical statements (rule, path, symbol); `fingerprint` adds
    # the statement's neighbours, so a new copy never takes an old one's fingerprint (rules/identity.py).
    group: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Messages and hints quote tree text (literals, names); a report repeats them per finding and
        # per format, so each is bounded here, where every rule's findings pass.
        for name in ("message", "hint"):
            value = getattr(self, name)
            if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
                cut = f"{value[:MAX_TEXT_CHARS]} … ({len(value) - MAX_TEXT_CHARS} more characters)"
                object.__setattr__(self, name, cut)


def finding_sort_key(finding: Finding) -> tuple:
    """The order findings are listed in: by file, position, rule, message."""
    return (finding.path, finding.line, finding.column, finding.rule_id, finding.message)


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=finding_sort_key)
