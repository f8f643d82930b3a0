"""Fingerprints that a copy cannot steal: a finding's identity is its statement plus its neighbours.

The rules give each finding a line-free key (rule id, path, symbol: `base.fingerprint_of`). Identical
statements share that key, so numbering them in line order (the fallback when no source text is
at hand, `engine.unique_fingerprints`) lets a copy added above an old finding take the old one's
number. Here the key is combined with the nearest non-blank lines above and below the statement
(lines equal to the statement itself are passed over), and only statements identical in all three
are told apart by their order. An added copy sits between other lines than the old one, so it gets
a new fingerprint and the old finding keeps its own; the shared key stays on the finding as
`group`, which baselines use when a neighbour line was edited (`baseline.KnownFindings`).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from typing import Callable, Iterable, Sequence

from sgl_scan.rules.finding import Finding

SourceLines = Callable[[str], "Sequence[str] | None"]


def _normal(text: str) -> str:
    return " ".join(text.split())


def neighbours(lines: Sequence[str] | None, finding: Finding) -> tuple[str, str]:
    """The nearest non-blank lines above and below the finding's span that differ from its first line."""
    if not lines or not 1 <= finding.line <= len(lines):
        return "", ""
    own = _normal(lines[finding.line - 1])
    last = finding.end_line if finding.end_line and finding.end_line >= finding.line else finding.line
    above = next((t for t in (_normal(x) for x in reversed(lines[: finding.line - 1])) if t and t != own), "")
    below = next((t for t in (_normal(x) for x in lines[min(last, len(lines)) :]) if t and t != own), "")
    return above, below


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def identify(findings: Iterable[Finding], source_lines: SourceLines) -> tuple[Finding, ...]:
    """`findings` (sorted, with the rules' line-free keys as fingerprints) with neighbour-based,
    unique fingerprints and their shared key as `group`."""
    seen: Counter[str] = Counter()
    result = []
    cache: dict[str, Sequence[str] | None] = {}
    for finding in findings:
        key = finding.fingerprint or ""
        if finding.path not in cache:
            cache[finding.path] = source_lines(finding.path)
        above, below = neighbours(cache[finding.path], finding)
        identity = _digest("ctx", key, above, below)
        n = seen[identity]
        seen[identity] += 1
        fingerprint = identity if n == 0 else _digest(identity, str(n))
        result.append(dataclasses.replace(finding, fingerprint=fingerprint, group=key))
    return tuple(result)
