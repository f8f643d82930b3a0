"""What the arms of an `if` on the active algorithm do: how the body leaves, what it writes, whether
the function passes an unknown name through.

Neutral facts for `analyzer/reach.py`, one `BranchShape` per `if` statement whose test mentions the
algorithm (`spec…`/`…algo…` in its text), keyed by the position of its test (the dispatch sites'
`decision_location`):

* `body_exit`: how the body leaves on every path: "neutral" (`return`, `return None`, `return {}`,
  `continue`, `break`: nothing more for this case, the rest of the function is the selected code),
  "value" (returns something else: the body is the selected code), "reject" (returns a failure:
  `return Output(success=False, ...)`, `return False, reason`), "raise", or None (it goes on).
* `writes`: where the body only assigns attributes (nested `if`s included, any test), their names;
  `read_outside` whether any of them is mentioned in this file outside the `if` statement.
* `passes_through`: the body leaves, and the rest of the function only holds more such arms and
  ends by returning the parameter the test compares, unchanged (an alias resolver: a name it does
  not know is the caller's business).
* `none_compared`: the test compares the algorithm with a collection holding `None`.
* `upper_cased`: every comparison of the test with strings is on an upper-cased value (the call, or a
  local assigned once from it).

Shapes copied from real releases are in tests/analyzer/test_reach.py.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from typing import Callable, cast

from sgl_scan.analyzer.extractors._ast import Resolver, Source
from sgl_scan.analyzer.extractors._text import any_hit, hit_lines
from sgl_scan.analyzer.extractors.records import BranchShape

_MENTIONS = re.compile(r"(?i)spec|algo")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _neutral(node: ast.stmt) -> bool:
    if isinstance(node, (ast.Continue, ast.Break)):
        return True
    if not isinstance(node, ast.Return):
        return False
    value = node.value
    if value is None or (isinstance(value, ast.Constant) and value.value in (None, "")):
        return True
    if isinstance(value, (ast.Dict, ast.List, ast.Tuple, ast.Set)) and not (
        value.keys if isinstance(value, ast.Dict) else value.elts
    ):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("dict", "list", "tuple", "set")
        and not value.args
        and not value.keywords
    )


def _rejects(node: ast.stmt) -> bool:
    """`return X(success=False, ...)` or `return False, reason`: a failure the caller sees."""
    value = node.value if isinstance(node, ast.Return) else None
    if isinstance(value, ast.Call):
        return any(isinstance(k.value, ast.Constant) and k.value.value is False for k in value.keywords)
    return (
        isinstance(value, ast.Tuple)
        and len(value.elts) >= 2
        and isinstance(value.elts[0], ast.Constant)
        and value.elts[0].value is False
    )


def _exits(body: list[ast.stmt]) -> list[ast.stmt] | None:
    """The statements by which a suite leaves on every path (None: some path goes on)."""
    if not body:
        return None
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return [last]
    if isinstance(last, ast.If):
        inner, other = _exits(last.body), _exits(last.orelse)
        if inner is not None and other is not None:
            return inner + other
    return None


def _all_exits(body: list[ast.stmt]) -> list[ast.stmt] | None:
    """Every exit of a suite that leaves on every path: the last one and the early ones inside it."""
    final = _exits(body)
    if final is None:
        return None
    found = list(final)
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES) or isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            continue  # a `continue`/`break` inside a loop of the body leaves that loop only
        if isinstance(node, (ast.Return, ast.Raise)) and node not in found:
            found.append(node)
        stack.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))
    return found


def _exit_kind(body: list[ast.stmt]) -> str | None:
    exits = _all_exits(body)
    if exits is None:
        return None
    if all(isinstance(e, ast.Raise) for e in exits):
        return "raise"
    if any(_rejects(e) for e in exits):
        return "reject"
    if all(_neutral(e) or isinstance(e, ast.Raise) for e in exits):
        return "neutral"
    return "value"


def _attribute_writes(body: list[ast.stmt]) -> tuple[str, ...]:
    """The attribute names a suite assigns when that is all it does (else ())."""
    names: list[str] = []
    for statement in body:
        if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if not all(isinstance(t, ast.Attribute) for t in targets):
                return ()
            names.extend(t.attr for t in cast("list[ast.Attribute]", targets))  # all attributes (just tested)
        elif isinstance(statement, ast.If):
            inner = _attribute_writes(statement.body)
            other = _attribute_writes(statement.orelse) if statement.orelse else ()
            if not inner or (statement.orelse and not other):
                return ()
            names.extend((*inner, *other))
        elif isinstance(statement, ast.Pass):
            continue
        else:
            return ()
    return tuple(dict.fromkeys(names))


def _compared_names(test: ast.AST) -> set[str]:
    """Local names the test compares with a string (`algo == "X"`, `algo in (...)`)."""
    out = set()
    for node in ast.walk(test):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                if isinstance(side, ast.Name):
                    out.add(side.id)
    return out


def _none_compared(test: ast.AST) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            for side in node.comparators:
                if isinstance(side, (ast.Tuple, ast.List, ast.Set)) and any(
                    isinstance(e, ast.Constant) and e.value is None for e in side.elts
                ):
                    return True
    return False


def _is_upper(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "upper"


def _upper_locals(function: ast.AST | None) -> set[str]:
    """Locals assigned exactly once in `function`, from an upper-cased value."""
    if function is None:
        return set()
    assigned: dict[str, list[ast.AST]] = {}
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.For)) and isinstance(
            node.target, ast.Name
        ):
            assigned.setdefault(node.target.id, []).extend([node, node])
        stack.extend(ast.iter_child_nodes(node))
    return {name for name, values in assigned.items() if len(values) == 1 and _is_upper(values[0])}


def _upper_cased(test: ast.AST, uppers: Callable[[], set[str]]) -> bool:
    """Whether every comparison of `test` with a string literal or a literal collection compares an
    upper-cased value (`x.upper()`, or a local `uppers()` names: asked only when a test needs it)."""
    found = False
    for node in ast.walk(test):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if not any(
                isinstance(x, ast.Constant)
                and isinstance(x.value, str)
                or isinstance(x, (ast.Tuple, ast.List, ast.Set))
                for x in sides
            ):
                continue
            subject = node.left
            if not (_is_upper(subject) or (isinstance(subject, ast.Name) and subject.id in uppers())):
                return False
            found = True
    return found


def _assigned(function: ast.AST, name: str) -> bool:
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _passes_through(function: ast.AST | None, suite: list[ast.stmt], index: int, statement: ast.If) -> bool:
    """The rest of `suite` after `statement` is more leaving arms, then `return <param>` unchanged."""
    if not isinstance(function, _FUNCTIONS) or suite is not function.body:
        return False
    args = function.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    compared = _compared_names(statement.test) & params
    rest = suite[index + 1 :]
    if not rest or not isinstance(rest[-1], ast.Return) or not isinstance(rest[-1].value, ast.Name):
        return False
    name = rest[-1].value.id
    if name not in compared or _assigned(function, name):
        return False
    return all(isinstance(s, ast.If) and _exits(s.body) is not None for s in rest[:-1])


def _mention_lines(source: Source) -> list[int]:
    """`hit_lines(text, _MENTIONS)`, found with `str.find` in the lower-cased text (many times faster
    than a case-insensitive regex with no literal to skip to) where lower-casing keeps every offset
    and no character but s/S matches `s` (the long s does, under `re`'s case folding)."""
    text = source.text
    lower, found = text.lower(), set()
    if len(lower) != len(text) or "\u017f" in text:
        return hit_lines(text, _MENTIONS)
    for word in ("spec", "algo"):
        at = lower.find(word)
        while at >= 0:
            found.add(bisect_right(source.starts, at))
            at = lower.find(word, at + 1)
    return sorted(found)


class _Shapes:
    def __init__(self, resolver: Resolver, source: Source) -> None:
        self.r, self.source = resolver, source
        self.out: list[BranchShape] = []
        self._mentions = _mention_lines(source)  # a test on other lines cannot mention one
        self._uppers: dict[int, set[str]] = {}  # id(function) -> its upper-cased locals, once per function

    def uppers(self, function: ast.AST | None) -> set[str]:
        key = id(function)
        if key not in self._uppers:
            self._uppers[key] = _upper_locals(function)
        return self._uppers[key]

    def suite(self, body: list[ast.stmt], function: ast.AST | None) -> None:
        for index, statement in enumerate(body):
            if isinstance(statement, _FUNCTIONS):
                self.suite(statement.body, statement)
                continue
            if isinstance(statement, ast.ClassDef):
                self.suite(statement.body, None)
                continue
            if (
                isinstance(statement, ast.If)
                and any_hit(self._mentions, statement.test.lineno, cast(int, statement.test.end_lineno))  # parsed: set
                and _MENTIONS.search(self.r.text(statement.test))
            ):
                self.shape(statement, function, body, index)
            for field in ("body", "orelse", "finalbody"):
                part = getattr(statement, field, None)
                if isinstance(part, list) and part and isinstance(part[0], ast.stmt):
                    self.suite(part, function)
            for handler in getattr(statement, "handlers", ()):
                self.suite(handler.body, function)
            for case in getattr(statement, "cases", ()):
                self.suite(case.body, function)

    def shape(self, statement: ast.If, function: ast.AST | None, suite: list[ast.stmt], index: int) -> None:
        test = self.r.at(statement.test)
        exit_kind = _exit_kind(statement.body)
        writes = _attribute_writes(statement.body) if exit_kind is None else ()
        self.out.append(
            BranchShape(
                **vars(self.r.at(statement)),
                test_line=test.line,
                test_column=test.column,
                body_exit=exit_kind,
                has_else=bool(statement.orelse),
                writes=writes,
                read_outside=self._mentioned_outside(writes, statement) if writes else True,
                passes_through=exit_kind is not None and _passes_through(function, suite, index, statement),
                none_compared=_none_compared(statement.test),
                upper_cased=_upper_cased(statement.test, lambda: self.uppers(function)),
            )
        )

    def _mentioned_outside(self, names: tuple[str, ...], statement: ast.If) -> bool:
        word = re.compile(rf"\b(?:{'|'.join(map(re.escape, names))})\b")
        first, last = statement.lineno, statement.end_lineno or statement.lineno
        text, starts = self.source.text, self.source.starts  # (`starts`: where each line begins)
        after = starts[last] if last < len(starts) else len(text)
        return word.search(text, 0, starts[first - 1]) is not None or word.search(text, after) is not None


class BranchExtractor:
    name = "spec_branch_shapes"
    version = 2  # 2: upper_cased
    parser = "ast"
    metadata = ()

    def __init__(self) -> None:
        from sgl_scan.analyzer.extractors.dispatch import DispatchExtractor

        self.trigger = DispatchExtractor.trigger  # the files whose tests the dispatch sites come from

    def extract(self, tree: ast.Module, context) -> tuple:
        if self.trigger.search(context.text) is None:  # the trigger is the scope of these facts, not only a filter
            return ()
        source = Source.of(context)
        walker = _Shapes(Resolver(tree, source, context.module), source)
        walker.suite(tree.body, None)
        return tuple(walker.out)


__all__ = ["BranchExtractor", "BranchShape"]
