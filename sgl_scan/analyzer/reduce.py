"""Shrink a file's source to the parts the extractors can read, keeping every line and column.

libcst's parse and `PositionProvider` cost time in proportion to the whole file, yet the libcst
extractors (those without `parser = "ast"`) only look at statements whose lines mention what they
look for. `reduce_source` blanks the rest:

- kept whole: imports (anywhere: the extractors resolve names through function-local imports too),
  module-level simple statements, functions whose lines hold a hit, classes whose header holds a
  hit or that look like an algorithm class, an enum or a class with keywords (metaclass), and any
  other statement holding a hit;
- kept as a skeleton (header lines, then the same rules for the body): other classes, top-level
  functions without hits (their name is a module definition), compound statements holding imports;
- blanked: everything else. A body left without statements gets `pass` on the last line of its
  last statement, so a skeleton spans the same lines as the original.

Blanked lines become empty lines, so every kept node has the same line, column and text as in the
full file; a test compares the extractors' records from reduced and full source on real releases.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from typing import Iterable, Sequence, cast

from sgl_scan.analyzer.builder import char_column, split_lines
from sgl_scan.analyzer.extractors._text import any_hit

# What each extractor's records can start from, as case-insensitive regexes: a line matching one is a
# hit. A superset is only slower; an extractor not listed here gets every pattern.
EXTRACTOR_PATTERNS = {
    "spec_algo_class": (r"spec\w*algo", r"alias"),
    "spec_registrations": (r"regist", r"worker"),
    "spec_options": (r"speculative", r"choices"),
}
ALL_PATTERNS = tuple(sorted({p for patterns in EXTRACTOR_PATTERNS.values() for p in patterns}))

# Local aliases of the algorithm (`algo = self.spec_algorithm`): their later uses count as hits.
_ALIAS_DEF = re.compile(r"(?im)^[ \t]*(\w+)[ \t]*=[^\n]*?spec\w*algo")
_ALGO_CLASS = re.compile(r"(?i)spec\w*algo")
_COMPOUND_BODIES = ("body", "orelse", "finalbody")
_MATCH = getattr(ast, "Match", ())


def patterns_for(names: Iterable[str]) -> tuple[str, ...]:
    """The hit patterns that serve the extractors named `names`."""
    out: set[str] = set()
    for name in names:
        out.update(EXTRACTOR_PATTERNS.get(name, ALL_PATTERNS))
    return tuple(sorted(out))


def hit_lines(lines: Sequence[str], patterns: Sequence[str] = ALL_PATTERNS) -> set[int]:
    """1-based numbers of the lines matching one of `patterns` or using a local algorithm alias."""
    text = "".join(lines)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line))
    regexes = [re.compile(p, re.IGNORECASE) for p in patterns]
    aliases = sorted(set(_ALIAS_DEF.findall(text)))
    if aliases:
        regexes.append(re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, aliases))))
    out: set[int] = set()
    for regex in regexes:
        for found in regex.finditer(text):
            first = bisect_right(starts, found.start())
            out.update(range(first, bisect_right(starts, max(found.end() - 1, found.start())) + 1))
    return out


def _start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None)
    return min([node.lineno, *(d.lineno for d in decorators)]) if decorators else node.lineno


def _bodies(node: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists directly below a compound statement (handlers' bodies included)."""
    out = [getattr(node, name) for name in _COMPOUND_BODIES if getattr(node, name, None)]
    out.extend(h.body for h in getattr(node, "handlers", ()) or ())
    return out


def _has_import(node: ast.stmt) -> bool:
    return any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(node))


class _Reducer:
    def __init__(self, lines: Sequence[str], hits: set[int]) -> None:
        self.lines = lines
        self.hits = sorted(hits)
        self.blank: set[int] = set()  # 1-based lines to empty
        self.passes: dict[int, str] = {}  # 1-based line -> indentation of a `pass` put there

    def _hit(self, first: int, last: int) -> bool:
        return any_hit(self.hits, first, last)

    def _whole(self, node: ast.stmt, top: bool) -> bool | None:
        """True: keep whole; False: skeleton; None: blank."""
        first, last = _start(node), node.end_lineno or node.lineno
        hit = self._hit(first, last)
        t = type(node)
        if t is ast.Import or t is ast.ImportFrom:
            return True
        if t is ast.ClassDef:
            node = cast(ast.ClassDef, node)  # `t` says so
            body_first = node.body[0].lineno
            if _ALGO_CLASS.search(node.name) or (
                hit
                and (
                    node.keywords
                    or self._hit(first, body_first - 1)
                    or any("enum" in ast.unparse(b).lower() or "flag" in ast.unparse(b).lower() for b in node.bases)
                )
            ):
                return True
            return False if (hit or top or _has_import(node)) else None
        if t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            if hit:
                return True
            return False if (top or _has_import(node)) else None
        if hit:
            return True
        if not _bodies(node) and not isinstance(node, _MATCH):  # a simple statement
            return True if top else None
        if not _has_import(node):
            return None
        return True if isinstance(node, _MATCH) else False

    def body(self, statements: list[ast.stmt], top: bool = False) -> None:
        """Decide each statement of a body (statements sharing a line are decided together)."""
        units: list[list[ast.stmt]] = []
        for st in statements:
            if units and _start(st) <= (units[-1][-1].end_lineno or units[-1][-1].lineno):
                units[-1].append(st)
            else:
                units.append([st])
        kept_any = False
        last_blank = None
        for unit in units:
            decisions = [self._whole(st, top) for st in unit]
            if len(unit) > 1:  # `a; b` on one line: all or nothing
                decisions = [True] * len(unit) if any(d is not None for d in decisions) else [None] * len(unit)
            for st, decision in zip(unit, decisions, strict=True):
                if decision is False and not self.skeleton(st):
                    decision = True
                if decision is None:
                    self._blank(st)
                else:
                    kept_any = True
            last_blank = unit if decisions[-1] is None else None
        if last_blank is not None or not kept_any:
            unit = units[-1]
            first_line = self.lines[_start(unit[0]) - 1]
            indent = first_line[: len(first_line) - len(first_line.lstrip(" \t\f"))]
            self.passes[unit[-1].end_lineno or unit[-1].lineno] = indent

    def _blank(self, node: ast.stmt) -> None:
        self.blank.update(range(_start(node), (node.end_lineno or node.lineno) + 1))

    def skeleton(self, node: ast.stmt) -> bool:
        """Keep the header lines of `node` and reduce its bodies; False where a body shares a header line."""
        bodies = _bodies(node)
        for statements in bodies:
            first = _start(statements[0])
            line = self.lines[first - 1]
            if line[: len(line) - len(line.lstrip(" \t\f"))] != line[: char_column(line, statements[0].col_offset)]:
                return False  # the body starts on its header's line
        for statements in bodies:
            self.body(statements)
        return True

    def reduced(self) -> str:
        out = []
        for number, line in enumerate(self.lines, 1):
            if number in self.passes:
                out.append(self.passes[number] + "pass" + _ending(line))
            elif number in self.blank:
                out.append(_ending(line))
            else:
                out.append(line)
        return "".join(out)


def _ending(line: str) -> str:
    stripped = line.rstrip("\r\n")
    return line[len(stripped) :] or ""


def reduce_source(lines: Sequence[str], tree: ast.Module, extractors: Sequence[str] | None = None) -> str:
    """The source of `lines` (as `split_lines` gives them, parsed as `tree`) reduced as the module doc says,
    for the extractors named `extractors` (default: all)."""
    patterns = ALL_PATTERNS if extractors is None else patterns_for(extractors)
    reducer = _Reducer(lines, hit_lines(lines, patterns))
    if tree.body:
        reducer.body(tree.body, top=True)
    return reducer.reduced()


# Comments and strings, in source order: a line inside a multi-line string is never dropped.
_LEXEME = re.compile(
    "|".join(
        (
            r"#[^\r\n]*",
            r'"""(?:\\[\s\S]|[^\\])*?"""',
            r"'''(?:\\[\s\S]|[^\\])*?'''",
            r'"(?:\\[\s\S]|[^"\\\r\n])*"',
            r"'(?:\\[\s\S]|[^'\\\r\n])*'",
        )
    )
)


def compact(reduced: str) -> tuple[str, tuple[int, ...]]:
    """`reduced` without its blank and comment-only lines (outside strings), and the original
    1-based number of each line kept. libcst spends a third of its time on those lines (each is an
    `EmptyLine` node that `PositionProvider` walks); dropping whole lines leaves every column as it was.
    """
    lines = split_lines(reduced)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line))
    protected: set[int] = set()
    for found in _LEXEME.finditer(reduced):
        if found.group().startswith("#"):
            continue
        first = bisect_right(starts, found.start())
        last = bisect_right(starts, found.end() - 1)
        if last > first:
            protected.update(range(first + 1, last + 1))
    kept_lines: list[str] = []
    numbers: list[int] = []
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if (not stripped or stripped.startswith("#")) and number not in protected:
            continue
        kept_lines.append(line)
        numbers.append(number)
    return "".join(kept_lines), tuple(numbers)


__all__ = ["ALL_PATTERNS", "EXTRACTOR_PATTERNS", "compact", "hit_lines", "patterns_for", "reduce_source"]
