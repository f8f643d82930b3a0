"""Suppression comments: `# sgl-scan: ignore[SGL302]` on a finding's line hides that finding.

Several ids or prefixes may be listed (`ignore[SGL302, SGL1]`); a bare `# sgl-scan: ignore` hides
every rule on that line. Only real comments count (found with `tokenize`), not text in strings.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Iterable, Mapping

ALL_RULES = "*"
_DIRECTIVE = re.compile(r"#\s*sgl-scan:\s*ignore(?:\[(?P<ids>[^\]]*)\])?", re.IGNORECASE)

LineSuppressions = Mapping[int, frozenset[str]]  # 1-based line -> ids/prefixes ("*" = all)


def parse_comment(comment: str) -> frozenset[str] | None:
    """The ids a comment suppresses, or None when it is no suppression comment."""
    match = _DIRECTIVE.search(comment)
    if not match:
        return None
    ids = match.group("ids")
    if ids is None:
        return frozenset({ALL_RULES})
    return frozenset(part.strip().upper() for part in ids.split(",") if part.strip()) or frozenset({ALL_RULES})


def suppressions_in(lines: Iterable[str]) -> dict[int, frozenset[str]]:
    """Map line numbers to the rules suppressed there, from a file's source lines."""
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if "sgl-scan" not in text:
        return {}
    found: dict[int, frozenset[str]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                ids = parse_comment(token.string)
                if ids is not None:
                    found[token.start[0]] = found.get(token.start[0], frozenset()) | ids
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # A file that does not tokenize: fall back to comment-looking text on each line.
        found = {}
        for number, line in enumerate(text.splitlines(), start=1):
            ids = parse_comment(line[line.find("#"):]) if "#" in line else None
            if ids is not None:
                found[number] = ids
    return found


def is_suppressed(rule_id: str, line: int, suppressions: LineSuppressions | None) -> bool:
    if not suppressions:
        return False
    ids = suppressions.get(line)
    if not ids:
        return False
    return ALL_RULES in ids or any(rule_id.startswith(prefix) for prefix in ids)
