"""The one place that turns an outcome into a process exit code."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.rules.finding import SEVERITY_RANK

CLEAN = 0
FINDINGS = 1
USAGE = 2
FAILURE = 3


def exit_code_for(severities: Iterable[str], fail_on: str = "error") -> int:
    """0 when no finding reaches `fail_on`, else 1 (usage errors and failures are raised, not passed here)."""
    threshold = SEVERITY_RANK[fail_on]
    return FINDINGS if any(SEVERITY_RANK[s] >= threshold for s in severities) else CLEAN
