"""Sites that handle the drafter vocabulary mapping: d2t/t2d name tests, the offset conversion
`hot_token_id = d2t + torch.arange(n)`, maps taken straight from d2t, `load_token_map(...)`, and uses
of `hot_token_id` (indexing, indexing with it, `.to(...)`, `len(...)`, `.shape[0]`, `is None` tests).
Matching is on the syntax tree, so `Dropout2d`, `hist2d`, `rpd2tracing`, comments and docstrings
never count. It reads the stdlib `ast` of the whole file (`parser = "ast"`), skipping
statements whose lines hold none of the trigger's words.
"""

from __future__ import annotations

import ast
import re
from typing import cast

from sgl_scan.analyzer.extractors._ast import (
    Located,
    Resolver,
    ScopedWalker,
    Source,
    call_arguments,
    last_name,
    string_value,
    string_values,
)
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


_CASTS = ("long", "int", "to", "cuda", "cpu", "clone", "contiguous", "type", "detach", "view", "reshape")
OFFSET = "+ arange"


def _d2t_ref(node: ast.AST | None) -> bool:
    """`d2t` / `self.d2t` (the name exactly: `Dropout2d` never)."""
    return isinstance(node, (ast.Name, ast.Attribute)) and last_name(node) == "d2t"


def _unwrap_casts(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CASTS:
        node = node.func.value
    return node


ARANGE = "arange(...)"


def _added_arange(node: ast.AST, is_arange=_arange_call) -> ast.expr | None:
    """`x + arange(...)`, `arange(...) + x`, `torch.add(x, arange(...))`, `x.add(arange(...))`: x; else None.
    `is_arange` says what counts as the arange term (the walker's also knows locals bound to one)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        if is_arange(node.left):
            return node.right
        if is_arange(node.right):
            return node.left
    if isinstance(node, ast.Call) and last_name(node.func) in ("add", "add_") and not node.keywords:
        parts = list(node.args)
        if isinstance(node.func, ast.Attribute) and not (
            isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
        ):
            parts = [node.func.value, *parts]
        if len(parts) == 2 and any(is_arange(p) for p in parts):
            return parts[1] if is_arange(parts[0]) else parts[0]
    return None


def _local_step(step: str) -> bool:
    """A chain step naming a local (`offset (line 12)`)."""
    return step.endswith(")") and " (line " in step


class _Walker(ScopedWalker):
    def _relevant(self, node: ast.stmt) -> bool:
        # a local's assignment is read even on a line without the trigger's words: a later write of the map
        # may take its value (`w = w + torch.arange(n)` then `self.hot_token_id = w`)
        if type(node) is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Name:
            return True
        return super()._relevant(node)

    def __init__(self, resolver: Resolver, hits: list[int] | None) -> None:
        super().__init__(resolver, hits)
        self.out: list[D2tRecord] = []
        self._d2t_branch = 0  # depth of `if <d2t name test>:` bodies we are in
        self._locals: list[dict[str, tuple[str, ...]]] = [{}]  # per function: local name -> its value's chain
        self._counted: set[int] = set()  # d2t index reads recorded with their use

    def chain(self, node: ast.AST, depth: int = 0) -> tuple[str, ...]:
        """How a value is made, outermost step first, through casts, `+ arange` (also `torch.add`),
        the function's earlier assignments and `d2t[...]`: the facts SGL301 decides by."""
        if depth > 8:
            return ()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CASTS:
            return (f".{node.func.attr}()",) + self.chain(node.func.value, depth + 1)
        other = _added_arange(node, self._is_arange)
        if other is not None:
            return (OFFSET,) + self.chain(other, depth + 1)
        if isinstance(node, ast.Name) and node.id in self._locals[-1]:
            return self._locals[-1][node.id]
        if isinstance(node, ast.Subscript) and _d2t_ref(node.value):
            return ("d2t[...]",)
        if _arange_call(node):
            return (ARANGE,)
        return ()

    def _is_arange(self, node: ast.AST) -> bool:
        """`torch.arange(n)` through casts, or a local bound to one in an earlier statement
        (`offset = torch.arange(n)` then `d2t + offset`)."""
        steps = self.chain(node)
        return bool(steps) and steps[-1] == ARANGE and all(s.startswith(".") or _local_step(s) for s in steps[:-1])

    def _add(self, kind: str, node: Located) -> None:
        self.out.append(D2tRecord(**vars(self.r.at(node)), kind=kind, function=self.function, detail=self.r.text(node)))

    def enter(self, node: ast.AST) -> None:
        t = type(node)
        # the branches read the fields of the type `t` names (mypy does not narrow through `t`)
        if t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            self._locals.append({})
        elif t is ast.Return and (returned := cast(ast.Return, node).value) is not None:
            self._index_use(returned, "returned")
        elif t is ast.BinOp and isinstance((binop := cast(ast.BinOp, node)).op, ast.Add):
            for part in (binop.left, binop.right):
                self._index_use(part, "added to the index")
        if t is ast.Compare or t is ast.Call:
            test = cast("ast.Compare | ast.Call", node)
            for kind, site in self._name_tests(test):
                self._add(kind, site)
            if t is ast.Call:
                self._call(cast(ast.Call, node))
            elif _none_test(cast(ast.Compare, node)):
                self._add("hot_token_use", test)
        elif t is ast.If:
            if self._test_is_d2t(cast(ast.If, node).test):
                self._d2t_branch += 1
        elif t is ast.Subscript:
            subscript = cast(ast.Subscript, node)
            value = subscript.value
            if (
                _hot(value)
                or any(_hot(e) for e in self._indexes(subscript))
                or (isinstance(value, ast.Attribute) and value.attr == "shape" and _hot(value.value))
            ):
                self._add("hot_token_use", subscript)  # hot_token_id[i], x[hot_token_id], hot_token_id.shape[0]
        elif t is ast.Assign:
            self._assign(cast(ast.Assign, node))

    def leave(self, node: ast.AST) -> None:
        t = type(node)
        # the branches read the fields of the type `t` names (mypy does not narrow through `t`)
        if t is ast.If and self._test_is_d2t(cast(ast.If, node).test):
            self._d2t_branch -= 1
        elif t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            self._locals.pop()
        elif (
            t is ast.Assign
            and len((assign := cast(ast.Assign, node)).targets) == 1
            and isinstance(target := assign.targets[0], ast.Name)
        ):
            # after the statement: `x = x + arange(...)` reads the old x, binds the new one
            self._locals[-1][target.id] = (f"{target.id} (line {assign.lineno})",) + self.chain(assign.value)

    def _index_use(self, value: ast.expr, use: str) -> None:
        """`d2t[ids]` (through casts) and how its result is used (`return d2t[ids]`, `ids + d2t[ids]`)."""
        inner = _unwrap_casts(value)
        if isinstance(inner, ast.Subscript) and _d2t_ref(inner.value) and id(inner) not in self._counted:
            self._counted.add(id(inner))
            self.out.append(
                D2tRecord(
                    **vars(self.r.at(value)),
                    kind="d2t_index",
                    function=self.function,
                    detail=self.r.text(value),
                    chain=(use,),
                )
            )

    # name tests -----------------------------------------------------------------------------------
    def _name_tests(self, node: ast.AST) -> list[tuple[str, ast.Compare | ast.Call]]:
        found: list[tuple[str, ast.Compare | ast.Call]] = []
        if isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                if isinstance(op, (ast.In, ast.NotIn)) and _is_map_literal(string_value(left)):
                    found.append(("name_test_in", node))
                elif isinstance(op, (ast.Eq, ast.NotEq)) and (
                    _is_map_literal(string_value(right)) or _is_map_literal(string_value(left))
                ):
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

    def _indexes(self, node: ast.Subscript) -> list[ast.expr]:
        """The index expressions of `x[a]`, `x[a, b]` (not slices; `x[(a, b)]` is one tuple index)."""
        index = node.slice
        if isinstance(index, ast.Tuple) and not self.r.source.segment(index).startswith("("):
            return [e for e in index.elts if not isinstance(e, ast.Slice)]
        return [] if isinstance(index, ast.Slice) else [index]

    # assignments: offset conversion / direct map ----------------------------------------------------
    def _assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0]
        self._index_use(node.value, f"assigned to {self.r.text(target)}")
        self._map_write(node, self.r.text(target), node.value)

    def _map_write(self, node: ast.Assign | ast.Call, target: str, value: ast.expr) -> None:
        """`target = value` or `target.copy_(value)`: an offset conversion, a direct map, or neither."""
        to_map = bool(_MAP_TARGET.search(target))
        chain = self.chain(value)
        if to_map and OFFSET in chain and not isinstance(value, ast.BinOp):
            # through casts, `torch.add`, or a local converted in an earlier statement
            self.out.append(
                D2tRecord(
                    **vars(self.r.at(node)),
                    kind="offset_conversion",
                    function=self.function,
                    detail=self.r.text(node),
                    chain=chain,
                )
            )
            return
        other = _added_arange(value, self._is_arange) if isinstance(value, ast.BinOp) else None
        if other is not None:  # `x + arange(n)` (or a local bound to one), either side
            if to_map or self._d2t_branch or _D2T_WORD.search(self.r.text(other)):
                self._add("offset_conversion", node)
            return
        if not to_map or (isinstance(value, ast.Constant) and value.value is None):
            return
        text = self.r.text(value)
        if "arange" in text or "load_token_map" in text or ARANGE in chain:
            return
        if self._d2t_branch or _D2T_WORD.search(text):
            self.out.append(
                D2tRecord(
                    **vars(self.r.at(node)),
                    kind="direct_map",
                    function=self.function,
                    detail=self.r.text(node),
                    chain=chain,
                )
            )


class D2tExtractor:
    name = "spec_d2t"
    # 6: a local bound to `torch.arange(n)` is the arange term (`offset = torch.arange(n)`; `d2t + offset`);
    # 5: values' chains through casts, torch.add and the function's assignments; d2t[...] reads and their use;
    # 2: read from the stdlib ast; 3: `.copy_(x)` writes, `or` tests with one d2t arm;
    # 4: hot_token_id.shape[0] and `hot_token_id is None` are uses
    version = 6
    parser = "ast"
    trigger = Trigger(*(rf"{word}\b(?<!\w{word})" for word in ("d2t", "t2d", "hot_token_id", "load_token_map")))
    metadata = ()

    def extract(self, tree: ast.Module, context) -> tuple:
        walker = _Walker(Resolver(tree, Source.of(context), context.module), hit_lines(context.text, self.trigger))
        for statement in tree.body:
            walker.walk(statement)
        return tuple(walker.out)
