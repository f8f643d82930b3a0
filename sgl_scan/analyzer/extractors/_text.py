"""The text side of the extractors, without libcst: triggers (the pre-pass) and hit lines.

Every process that decides which extractors a file needs imports this, not libcst.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from itertools import accumulate, count
from operator import add
from typing import Iterable, Iterator

ALGO_CLASS_NAME = re.compile(r"[Ss]pec\w*[Aa]lgo")


class OnOneLine(str):
    """A trigger pattern none of whose matches holds a line break: it is searched only on the lines that
    hold its required literal (a pattern that starts with a character class, such as a constant's
    name before `.append(`, would otherwise be tried at every position of the file)."""


class Trigger:
    """A file pre-filter that behaves like a compiled regex (`search`, `pattern`).

    It holds several regexes that each start with a literal, so Python's `re` can skip to that
    literal at C speed; one alternation would test every position of the text instead (36 MB of
    0.5.23 source: ~0.03 s against ~1 s per trigger). `search` returns the first match or None.
    """

    def __init__(self, *patterns: str, flags: int = 0) -> None:
        self.parts = tuple(re.compile(p, flags) for p in patterns)
        self.pattern = "|".join(f"(?:{p})" for p in patterns)
        self.flags = flags
        self._led = tuple(zip(self.parts, map(_required_literal, self.parts), strict=True))
        self._one_line = tuple(isinstance(p, OnOneLine) for p in patterns)

    def search(self, text: str, *args: int, present: dict[str, bool] | None = None) -> re.Match[str] | None:
        """The first match, or None. `present` (literal -> whether `text` holds it) is shared by the
        triggers searched on one text, so each literal is looked for once."""
        for (part, literal), one_line in zip(self._led, self._one_line, strict=True):
            if literal:  # no match without it (`in` scans faster than `re`)
                held = present.get(literal) if present is not None else None
                if held is None:
                    held = literal in text
                    if present is not None:
                        present[literal] = held
                if not held:
                    continue
            found = _on_lines(part, literal, text) if one_line and literal and not args else part.search(text, *args)
            if found is not None:
                return found
        return None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        for part, literal in self._led:
            if literal and literal not in text:
                continue
            yield from part.finditer(text)

    def __repr__(self) -> str:
        return f"Trigger({self.pattern!r})"


def _on_lines(part: re.Pattern[str], literal: str, text: str) -> re.Match[str] | None:
    """`part.search(text)` for a pattern that matches within one line and only around `literal`: each
    line holding the literal is searched alone (`re` still sees the text before it, for `\\b`)."""
    for start, end in _lines_with(text, literal):
        found = part.search(text, start, end)
        if found is not None:
            return found
    return None


def lines_holding(text: str, needles: Iterable[str]) -> list[str]:
    """The lines of `text` (split at "\\n" only, as `re`'s `^` and `$` see them) that hold one of
    `needles`, each once, in text order: where a one-line pattern can match, found at C speed."""
    spans = {span for needle in needles if needle for span in _lines_with(text, needle)}
    return [text[start:end] for start, end in sorted(spans)]


def _lines_with(text: str, needle: str) -> Iterator[tuple[int, int]]:
    """(start, end) offsets of each line of `text` (ended by "\\n") that holds `needle`, in order."""
    at = text.find(needle)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        yield start, end
        at = text.find(needle, max(end, at + 1))


def _required_literal(regex: re.Pattern[str]) -> str:
    """The longest text every match of `regex` contains, as `re`'s own parser reads the pattern: a
    run of plain characters in its sequence of required parts ("" when there is none, or when the
    pattern is case-insensitive)."""
    if regex.flags & re.IGNORECASE:
        return ""
    try:
        from re import _constants as c, _parser  # type: ignore[attr-defined]  # CPython 3.11+ internals, not in typeshed

        items = list(_parser.parse(regex.pattern, regex.flags))
    except Exception:  # another Python's internals: no shortcut
        return ""
    runs, run = [""], []

    def read(sequence) -> None:
        for op, value in sequence:
            if op is c.LITERAL:
                run.append(chr(value))
                continue
            if op is c.SUBPATTERN and not value[1] & re.IGNORECASE:  # a group: its parts, in place
                read(value[3])
                continue
            runs.append("".join(run))  # anything else ends the run
            run.clear()

    read(items)
    runs.append("".join(run))
    return max(runs, key=len)


_LINE_END = re.compile(r"\r\n|\r|\n")


def hit_lines(text: str, pattern) -> list[int]:
    """Sorted 1-based numbers of the lines where `pattern` (a regex or `Trigger`) matches, lines
    counted as Python counts them (`\n`, `\r\n` or `\r` ends one)."""
    if "\r" in text:
        starts = [0, *(end.end() for end in _LINE_END.finditer(text))]
    else:  # the same offsets (just past each "\n"), counted in C
        starts = [0, *map(add, accumulate(map(len, text.split("\n")[:-1])), count(1))]
    return sorted({bisect_right(starts, match.start()) for match in pattern.finditer(text)})


def any_hit(hits: list[int], first: int, last: int) -> bool:
    """Whether sorted line numbers `hits` hold one in `first`..`last` (a statement's lines)."""
    index = bisect_left(hits, first)
    return index < len(hits) and hits[index] <= last


# The triggers of the spec extractors that began as libcst ones (algorithm_class still is: a process learns
# which files need libcst without loading it).
ALGORITHM_CLASS_TRIGGER = Trigger(
    r"class\s+\w*[Ss]pec\w*[Aa]lgo",
    r"ALIAS\w*\s*(?::[^=\n]*)?=",
    r"spec_class\s*=",
    r"class\s+\w+\([^)\n]*[Ss]pec\w*[Aa]lgo",
)  # a plugin's spec class, named or derived
OPTIONS_TRIGGER = Trigger(
    r"--speculative-algorithm[\"']",
    r"speculative_algorithm[ \t]*:[ \t]*(?:A|Annotated)\[",
    r"def[ \t]+add_\w+_choices\b",
    r"add_(?<![^\n]add_)\w+_choices\b",
)
REGISTRATION_TRIGGER = Trigger(
    r"Spec\w*Algo\w*\.register\(",
    r"spec\w*algo\w*\.register\(",
    r"register_\w*(?:algo|spec)\w*\(",
    r"Spec\w*Algo\w*\s+as\s+\w+",
)  # `import SpeculativeAlgorithm as SA` ... `SA.register(`
