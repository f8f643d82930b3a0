"""Suppression comments: `# sgl-scan: ignore[SGL302]` on a line of a finding's span hides that finding.

The span runs from the finding's line to its end line, and a comment inside a statement that runs
over several lines (an `if (` ... `):` header Black wrapped, a call split over lines) counts on
every line of that statement: Black moves a trailing comment to the closing `):` line.

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
    lines = list(lines)
    if "sgl-scan" not in "\n".join(lines):  # most files: no directive, nothing to tokenize
        return {}
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    found: dict[int, frozenset[str]] = {}

    def add(first: int, last: int, ids: frozenset[str]) -> None:
        for number in range(first, last + 1):
            found[number] = found.get(number, frozenset()) | ids

    try:
        start: int | None = None  # first line of the logical line being read
        pending: list[tuple[int, frozenset[str]]] = []  # its suppression comments
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                ids = parse_comment(token.string)
                if ids is not None:
                    if start is None:  # a comment on a line of its own
                        add(token.start[0], token.start[0], ids)
                    else:
                        pending.append((token.start[0], ids))
            elif token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                for _line, ids in pending:
                    add(start if start is not None else _line, token.start[0], ids)
                start, pending = None, []
            elif start is None and token.type not in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING):
                start = token.start[0]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # A file that does not tokenize: fall back to comment-looking text on each line.
        found = {}
        for number, line in enumerate(text.splitlines(), start=1):
            ids = parse_comment(line[line.find("#") :]) if "#" in line else None
            if ids is not None:
                found[number] = ids
    return found


def is_suppressed(rule_id: str, line: int, suppressions: LineSuppressions | None, end_line: int | None = None) -> bool:
    """Whether a comment on any line from `line` to `end_line` (inclusive) suppresses `rule_id`."""
    if not suppressions:
        return False
    last = end_line if end_line is not None and end_line >= line else line
    if last - line > len(suppressions):  # a long span: look only at the lines that have a comment
        numbers: Iterable[int] = [n for n in suppressions if line <= n <= last]
    else:
        numbers = range(line, last + 1)
    for number in numbers:
        ids = suppressions.get(number)
        if ids and (ALL_RULES in ids or any(rule_id.startswith(prefix) for prefix in ids)):
            return True
    return False
