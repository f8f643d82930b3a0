"""Sites that handle the drafter vocabulary mapping: d2t/t2d name tests, the offset conversion
`hot_token_id = d2t + torch.arange(n)`, maps taken straight from d2t, `load_token_map(...)`, and uses
of `hot_token_id` (indexing, indexing with it, `.to(...)`, `len(...)`, `.shape[0]`, `is None` tests). Matching is on the syntax tree, so `Dropout2d`, `hist2d`, `rpd2tracing`, comments
and docstrings never count. It reads the stdlib `ast` of the whole file (`parser = "ast"`), skipping
statements whose lines hold none of the trigger's words.
"""

from __future__ import annotations

import ast
import re

from sgl_scan.analyzer.extractors._ast import Resolver, ScopedWalker, Source, call_arguments, last_name, string_value, string_values
from sgl_scan.analyzer.extractors._text import Trigger, hit_lines
from sgl_scan.analyzer.extractors.records import D2tRecord

MAP_NAMES = ("d2t", "t2d")
HOT = "hot_token_id"
_MAP_TARGET = re.compile(r"(?:^|\.)(hot_token_id|draft_to_target\w*|d2t_map\w*)$")
_D2T_WORD = re.compile(r"\bd2t\b")


def _is_map_literal(value: str | None) -> bool:
    return value is not None and value.lstrip(".") in MAP_NAMES


def _is_d2t(value: str | None) -> bool:
    return value is not None and value.lstrip(".") == "d2t"


def _hot(node: ast.AST | None) -> bool:
    return last_name(node) == HOT and isinstance(node, (ast.Name, ast.Attribute))


def _none_test(node: ast.Compare) -> bool:
    """`hot_token_id is None` / `is not None` (either side)."""
    if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Is, ast.IsNot)):
        return False
    left, right = node.left, node.comparators[0]
    none = lambda n: isinstance(n, ast.Constant) and n.value is None  # noqa: E731
    return (_hot(left) and none(right)) or (_hot(right) and none(left))


def _arange_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and last_name(node.func) == "arange"


class _Walker(ScopedWalker):
    def __init__(self, resolver: Resolver, hits: list[int] | None) -> None:
        super().__init__(resolver, hits)
        self.out: list[D2tRecord] = []
        self._d2t_branch = 0  # depth of `if <d2t name test>:` bodies we are in

    def _add(self, kind: str, node: ast.AST) -> None:
        self.out.append(D2tRecord(**vars(self.r.at(node)), kind=kind, function=self.function, detail=self.r.text(node)))

    def enter(self, node: ast.AST) -> None:
        t = type(node)
        if t is ast.Compare or t is ast.Call:
            for kind, site in self._name_tests(node):
                self._add(kind, site)
            if t is ast.Call:
                self._call(node)
            elif _none_test(node):
                self._add("hot_token_use", node)
        elif t is ast.If:
            if self._test_is_d2t(node.test):
                self._d2t_branch += 1
        elif t is ast.Subscript:
            value = node.value
            if _hot(value) or any(_hot(e) for e in self._indexes(node)) or (
                    isinstance(value, ast.Attribute) and value.attr == "shape" and _hot(value.value)):
                self._add("hot_token_use", node)  # hot_token_id[i], x[hot_token_id], hot_token_id.shape[0]
        elif t is ast.Assign:
            self._assign(node)

    def leave(self, node: ast.AST) -> None:
        if type(node) is ast.If and self._test_is_d2t(node.test):
            self._d2t_branch -= 1

    # name tests -----------------------------------------------------------------------------------
    def _name_tests(self, node: ast.AST) -> list[tuple[str, ast.AST]]:
        found = []
        if isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.In, ast.NotIn)) and _is_map_literal(string_value(left)):
                    found.append(("name_test_in", node))
                elif isinstance(op, (ast.Eq, ast.NotEq)) and (
                        _is_map_literal(string_value(right)) or _is_map_literal(string_value(left))):
                    found.append(("name_test_eq", node))
                left = right
        elif isinstance(node, ast.Call) and last_name(node.func) == "endswith" and isinstance(node.func, ast.Attribute):
            arguments = call_arguments(node)
            if arguments and any(_is_map_literal(v) for v in string_values(arguments[0]) or ()):
                found.append(("name_test_endswith", node))
        return found

    def _test_is_d2t(self, test: ast.AST) -> bool:
        """A test that is true when `name` is the d2t tensor (`"d2t" in name`, `== "d2t"`, `.endswith(".d2t")`).

        With `or`, one d2t arm is enough: `if "d2t" in name or "hot_token_id" in name:` runs its body
        for the d2t tensor too, so what the body does to it is what happens to d2t.
        """
        if isinstance(test, ast.BoolOp):
            return isinstance(test.op, ast.Or) and any(self._test_is_d2t(value) for value in test.values)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, right = test.ops[0], test.comparators[0]
            if isinstance(op, ast.In):
                return _is_d2t(string_value(test.left))
            if isinstance(op, ast.Eq):
                return _is_d2t(string_value(test.left)) or _is_d2t(string_value(right))
            return False
        if isinstance(test, ast.Call) and last_name(test.func) == "endswith":
            arguments = call_arguments(test)
            return bool(arguments) and any(_is_d2t(v) for v in string_values(arguments[0]) or ())
        return False

    # calls: load_token_map, .to(...), len(...) ----------------------------------------------------
    def _call(self, node: ast.Call) -> None:
        name = last_name(node.func)
        if name == "load_token_map":
            self._add("load_token_map", node)
        elif name == "copy_" and isinstance(node.func, ast.Attribute):
            if len(node.args) == 1 and not isinstance(node.args[0], ast.Starred):
                # `self.hot_token_id.copy_(x)` (`non_blocking=` aside) writes x in place, like `= x`
                self._map_write(node, self.r.text(node.func.value), node.args[0])
        elif name == "to" and isinstance(node.func, ast.Attribute) and _hot(node.func.value):
            self._add("hot_token_use", node)
        elif isinstance(node.func, ast.Name) and name == "len":
            arguments = call_arguments(node)
            if len(arguments) == 1 and _hot(arguments[0]):
                self._add("hot_token_use", node)

    def _indexes(self, node: ast.Subscript) -> list[ast.AST]:
        """The index expressions of `x[a]`, `x[a, b]` (not slices; `x[(a, b)]` is one tuple index)."""
        index = node.slice
        if isinstance(index, ast.Tuple) and not self.r.source.segment(index).startswith("("):
            return [e for e in index.elts if not isinstance(e, ast.Slice)]
        return [] if isinstance(index, ast.Slice) else [index]

    # assignments: offset conversion / direct map ----------------------------------------------------
    def _assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            return
        self._map_write(node, self.r.text(node.targets[0]), node.value)

    def _map_write(self, node: ast.AST, target: str, value: ast.AST) -> None:
        """`target = value` or `target.copy_(value)`: an offset conversion, a direct map, or neither."""
        to_map = bool(_MAP_TARGET.search(target))
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and (
                _arange_call(value.left) or _arange_call(value.right)):
            other = value.right if _arange_call(value.left) else value.left
            if to_map or self._d2t_branch or _D2T_WORD.search(self.r.text(other)):
                self._add("offset_conversion", node)
            return
        if not to_map or (isinstance(value, ast.Constant) and value.value is None):
            return
        text = self.r.text(value)
        if "arange" in text or "load_token_map" in text:
            return
        if self._d2t_branch or _D2T_WORD.search(text):
            self._add("direct_map", node)


class D2tExtractor:
    name = "spec_d2t"
    version = 4  # 2: read from the stdlib ast; 3: `.copy_(x)` writes, `or` tests with one d2t arm; 4: hot_token_id.shape[0] and `hot_token_id is None` are uses
    parser = "ast"
    trigger = Trigger(*(rf"{word}\b(?<!\w{word})" for word in ("d2t", "t2d", "hot_token_id", "load_token_map")))
    metadata = ()

    def extract(self, tree: ast.Module, context) -> tuple:
        walker = _Walker(Resolver(tree, Source.of(context), context.module), hit_lines(context.text, self.trigger))
        for statement in tree.body:
            walker.walk(statement)
        return tuple(walker.out)
