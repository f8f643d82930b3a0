"""The census: every node that refers to the speculative algorithm, found independently of the extractors.

A deliberately simple pass (stdlib `ast`, one walk per file, its own small binding table) lists each
node that *refers by resolution* to the algorithm class (`SpeculativeAlgorithm`, however imported):

- **member test**: a comparison (`==`, `!=`, `is`, `in`, ...) with a member (`SA.EAGLE`, a constant
  bound to one, a literal or named collection of members);
- **string test**: an algorithm string (the value `from_string(...)` reads, anywhere in the tree;
  its `.upper()`/`str(...)`/`(x or "")` spellings; a member's `.name`) compared with a string literal,
  a literal or named collection of strings, or `None`;
- **predicate call**: a method of the algorithm class called on an algorithm value (a member, the
  result of `from_string`/`SA[...]`/`SA(...)`, `self` inside the class, a name or attribute bound to
  one, here or anywhere in the tree by assignment or annotation);
- **match case**: a `case` pattern naming a member or comparing an algorithm string;
- **d2t**: an assignment, return, index, `is None` test or name test that reads the drafter's
  `d2t`/`t2d`/`hot_token_id` (a plain `x = None` or argument pass is not one).

Nothing here imports or asks the extractors: the census exists to catch what they miss. Per file it
records `Reference`s (some conditional on tree-wide facts: an attribute name that holds an algorithm
elsewhere, a method that is a predicate of the class) and `Binding`s (those tree-wide facts).
`account` then matches every reference against the facts the analyzer produced (dispatch sites,
predicates, members, d2t sites, workers, existing unread entries) by file and position: each is
*read* (a fact came from that node) or becomes an `unread` entry with its form and the reason.
Never silently dropped. See docs/census.md.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence, TypeGuard, cast

from sgl_scan.analyzer.astnodes import inner_nodes
from sgl_scan.analyzer.extractors._text import Trigger
from sgl_scan.analyzer.model import Census, DispatchSite, Location, SpecInventory, Unread
from sgl_scan.analyzer.kinds import DecisionKind

CLASS_NAME = "SpeculativeAlgorithm"
MAP_WORDS = frozenset({"d2t", "t2d", "hot_token_id"})
MAP_NAMES = frozenset({"d2t", "t2d"})
NAME = "census"

FORMS = ("member test", "string test", "predicate call", "match case", "d2t")


@dataclass(frozen=True)
class Reference:
    """One census entry: a node that refers to the algorithm (or to d2t/t2d/hot_token_id)."""

    line: int
    column: int  # 1-based, in characters
    end_line: int
    end_column: int
    form: str  # see FORMS
    shape: str  # how it is written, in a few words ("named collection", "call result", ...)
    text: str  # the node's source, one line, cut
    function: str
    needs: tuple[str, str] | None = None  # ("algo_attr"|"string_attr", name): counts only if the tree binds it so
    method: str | None = None  # a predicate call's method: counts only if the algorithm class defines it
    in_test: bool = False  # a term of a test (`if`/`while`/`assert`/...): the site must know it decides that test
    negated: bool = False  # in a test: whether the term's truth is complemented there (`not`, `!=`, `is False`)


@dataclass(frozen=True)
class Binding:
    """A tree-wide fact the census learned in this file."""

    kind: str  # "algo_attr" | "string_attr" | "predicates" | "class" | "incomplete" (the walk stopped: `name` says why)
    name: str
    values: tuple[str, ...] = ()


# Which files the census reads: those naming the class, an algorithm attribute or the vocabulary maps.
TRIGGER = Trigger(CLASS_NAME, r"spec_algo", r"speculative_algo", r"d2t", r"t2d", r"hot_token_id")

_EQ = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn)
_NEGATIVE = (ast.NotEq, ast.IsNot, ast.NotIn)
_CONSTRUCTORS = ("from_string", "from_name", "get", "parse")  # class methods whose value is an algorithm
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COLLECTIONS = (ast.Tuple, ast.List, ast.Set)
TEXT_LIMIT = 120

# value kinds
CLASS, MEMBER, MEMBERS, ALGO, STRING, STRINGS, LITERAL, NONE = (
    "class",
    "member",
    "members",
    "algo",
    "string",
    "strings",
    "literal",
    "none",
)


class _Census:
    def __init__(self, text: str, module: str) -> None:
        self.lines = text.splitlines()
        self.package = module.rpartition(".")[0] if module else ""
        self.module = module
        self.refs: list[Reference] = []
        self.bindings: list[Binding] = []
        self.scopes: list[dict[str, tuple]] = [{}]
        self.function = "<module>"
        self.algo_classes: list[bool] = []  # per enclosing class: is it the algorithm class
        self.seen: set[tuple[int, int, str, tuple[str, str] | None]] = set()

    # -- positions and text ---------------------------------------------------------------------
    def _col(self, line: int, byte_col: int) -> int:
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if src.isascii():
            return byte_col + 1
        return len(src.encode("utf-8")[:byte_col].decode("utf-8", "replace")) + 1

    def _text(self, node: ast.expr | ast.stmt | ast.pattern) -> str:
        try:
            first, last = node.lineno, node.end_lineno or node.lineno
            if first == last:
                raw = (
                    self.lines[first - 1]
                    .encode("utf-8")[node.col_offset : node.end_col_offset]
                    .decode("utf-8", "replace")
                )
            else:
                raw = " ".join(self.lines[first - 1 : last])
        except (IndexError, AttributeError):
            raw = ""
        raw = " ".join(raw.split())
        return raw if len(raw) <= TEXT_LIMIT else raw[: TEXT_LIMIT - 3] + "..."

    node_ctx: bool | None = None

    def add(
        self,
        node: ast.expr | ast.stmt | ast.pattern,
        form: str,
        shape: str,
        needs: tuple[str, str] | None = None,
        method: str | None = None,
        inverted: bool = False,
    ) -> None:
        key = (node.lineno, node.col_offset, form, needs)  # a test counted under two conditions is kept twice;
        if key in self.seen:  # `entries` keeps the one whose condition holds
            return
        self.seen.add(key)
        end_line = node.end_lineno or node.lineno
        self.refs.append(
            Reference(
                node.lineno,
                self._col(node.lineno, node.col_offset),
                end_line,
                self._col(end_line, node.end_col_offset or 0),
                form,
                shape,
                self._text(node),
                self.function,
                needs,
                method,
                self.node_ctx is not None and form != "d2t",
                (bool(self.node_ctx) != inverted) if self.node_ctx is not None else False,
            )
        )

    # -- binding table ----------------------------------------------------------------------------
    def lookup(self, name: str) -> tuple | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def bind(self, name: str, value: tuple | None) -> None:
        if value is None:
            self.scopes[-1].pop(name, None)
        else:
            self.scopes[-1][name] = value

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = self.module.split(".")
                parts = parts[: len(parts) - node.level]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                local = alias.asname or alias.name
                if alias.name == CLASS_NAME:
                    self.bind(local, (CLASS,))
                elif alias.name != "*":
                    self.bind(local, ("module", target))
        else:
            for alias in node.names:
                if alias.asname:
                    self.bind(alias.asname, ("module", alias.name))

    def kind(self, node: Any) -> tuple | None:
        """What an expression is, by the binding table: (CLASS,), (MEMBER, name), (MEMBERS, names),
        (ALGO,), (STRING,), (STRINGS, values), (LITERAL, value), (NONE,), ("cand", name) (an
        unresolved name or attribute: an algorithm if the tree binds that name so), ("module", qn).

        `node` is an `ast.expr` or None, typed `Any`: the branches test `type(node)` once (held in `t`),
        which mypy cannot narrow `node` by, and an isinstance per branch would cost this hot path."""
        t = type(node)
        if t is ast.Name:
            found = self.lookup(node.id)
            if found is not None:
                return found
            if node.id == CLASS_NAME:
                return (CLASS,)
            return ("cand", node.id)
        if t is ast.Constant:
            if node.value is None:
                return (NONE,)
            if isinstance(node.value, str):
                return (LITERAL, node.value)
            return None
        if t is ast.Attribute:
            base = self.kind(node.value)
            attr = node.attr
            if base is not None:
                if base[0] == CLASS:
                    if attr.isupper():
                        return (MEMBER, attr)
                    return None
                if base[0] == "module" and attr == CLASS_NAME:
                    return (CLASS,)
                if base[0] == MEMBER and attr == "name":
                    return (LITERAL, base[1])  # `SA.DFLASH.name` is the string "DFLASH"
                if base[0] == ALGO and attr == "name":
                    return (STRING,)
                if base[0] == "cand" and attr == "name":
                    return base  # `self.spec_algorithm.name`: the name of what that attribute holds
                if base[0] in (MEMBER, ALGO):
                    return None
            if attr == CLASS_NAME:
                return (CLASS,)
            return ("cand", attr)
        if t is ast.Call:
            func = node.func
            if isinstance(func, ast.Attribute):
                base = self.kind(func.value)
                if base is not None and base[0] == CLASS and func.attr in _CONSTRUCTORS:
                    return (ALGO,)
                if base is not None and func.attr in ("upper", "lower", "strip") and base[0] in (STRING, "cand"):
                    return base
                if (
                    func.attr == "get"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                    and node.args[0].value.isidentifier()
                ):
                    return ("cand", node.args[0].value)  # `server_args_dict.get("speculative_algorithm")`
                return None
            if isinstance(func, ast.Name):
                base = self.kind(func)
                if base is not None and base[0] == CLASS:
                    return (ALGO,)
                if func.id == "str" and len(node.args) == 1:
                    inner = self.kind(node.args[0])
                    if inner is not None and inner[0] in (STRING, "cand", ALGO, MEMBER):
                        return (STRING,) if inner[0] != "cand" else inner
                    return None
                if func.id == "getattr" and len(node.args) >= 2:
                    name = node.args[1]
                    if isinstance(name, ast.Constant) and isinstance(name.value, str):
                        return ("cand", name.value)
                if func.id in ("frozenset", "set", "tuple", "list") and len(node.args) == 1:
                    return self.kind(node.args[0])
            return None
        if t is ast.Subscript:
            base = self.kind(node.value)
            if base is not None and base[0] == CLASS:
                return (ALGO,)
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.isidentifier():
                return ("cand", key.value)  # `args["speculative_algorithm"]`: what the attribute of that name holds
            return None
        if t is ast.BoolOp and isinstance(node.op, ast.Or) and len(node.values) == 2:
            first = self.kind(node.values[0])
            if first is not None and first[0] in (STRING, "cand", ALGO):
                return first
            return None
        if t is ast.NamedExpr:
            return self.kind(node.value)
        if t in _COLLECTIONS:
            kinds = [self.kind(e) for e in node.elts]
            if kinds and all(k is not None and k[0] == MEMBER for k in kinds):
                return (MEMBERS, tuple(k[1] for k in cast("list[tuple]", kinds)))
            if (
                kinds
                and all(k is not None and k[0] in (LITERAL, NONE) for k in kinds)
                and any(k[0] == LITERAL for k in cast("list[tuple]", kinds))
            ):
                return (STRINGS, tuple(k[1] if k[0] == LITERAL else None for k in cast("list[tuple]", kinds)))
            return None
        return None

    def _value_binding(self, value: ast.expr) -> tuple | None:
        k = self.kind(value)
        if k is None or k[0] in ("cand", "module"):
            return None
        return k

    # -- walk ---------------------------------------------------------------------------------------
    hits: list[int] = []

    def _hit(self, node: ast.stmt) -> bool:
        first, last = node.lineno, node.end_lineno or node.lineno
        decorators: list[ast.expr] | None = getattr(node, "decorator_list", None)
        if decorators:
            first = min(first, *(d.lineno for d in decorators))
        at = bisect_left(self.hits, first)
        return at < len(self.hits) and self.hits[at] <= last

    def _mentions_map(self, node: ast.stmt) -> bool:
        first, last = node.lineno, node.end_lineno or node.lineno
        return any("d2t" in line or "t2d" in line for line in self.lines[first - 1 : last])

    def _uses_local(self, node: ast.stmt) -> bool:
        """Whether a statement's lines name a local of this function that the table binds."""
        names = self.scopes[-1]
        if not names:
            return False
        first, last = node.lineno, node.end_lineno or node.lineno
        segment = "\n".join(self.lines[first - 1 : last])
        return any(name in segment for name in names)

    def walk_body(self, body: list[ast.stmt]) -> None:
        """Statements of a module or class body, each walked only when its lines hold a word."""
        for statement in body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                self._import(statement)
            elif self._hit(statement):
                self.walk(statement)
            elif isinstance(statement, ast.Assign):  # a constant rebound: forget what it was
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        self.bind(target.id, None)

    ctx: bool | None = None  # the node being walked is a term of a test, under an odd (True) or even number of `not`s

    def walk_test(self, node: Any, nots: int = 0) -> None:
        """A test (`if`, `elif`, `while`, `assert`, a conditional expression's, a comprehension's
        `if`): its terms through `and`/`or`/`not`/walrus and `is True`/`is False`/`== False`.
        `node` (an `ast.expr`) is `Any` for the reason `kind` gives."""
        t = type(node)
        if t is ast.BoolOp:
            for value in node.values:
                self.walk_test(value, nots)
            return
        if t is ast.UnaryOp and isinstance(node.op, ast.Not):
            self.walk_test(node.operand, nots + 1)
            return
        if t is ast.NamedExpr:
            self.walk_test(node.value, nots)
            if isinstance(node.target, ast.Name):
                self.bind(node.target.id, self._value_binding(node.value))
            return
        if t is ast.Compare and len(node.ops) == 1:
            flip = _bool_flip(node.left, node.ops[0], node.comparators[0])
            if flip is not None:
                operand = node.left if _bool_constant(node.comparators[0]) else node.comparators[0]
                self.walk_test(operand, nots + flip)
                return
        self.ctx = nots % 2 == 1
        self.walk(node)

    def walk(self, node: Any) -> None:
        """Walk `node` (any `ast` node; `Any` for the reason `kind` gives)."""
        ctx, self.ctx = self.ctx, None
        self.node_ctx = ctx
        t = type(node)
        if t is ast.If or t is ast.While:
            self.walk_test(node.test)
            for child in (*node.body, *node.orelse):
                self.walk(child)
            return
        if t is ast.Assert:
            self.walk_test(node.test)
            if node.msg is not None:
                self.walk(node.msg)
            return
        if t is ast.IfExp:
            self.walk_test(node.test)
            self.walk(node.body)
            self.walk(node.orelse)
            return
        if t is ast.comprehension:
            self.walk(node.target)
            self.walk(node.iter)
            for test in node.ifs:
                self.walk_test(test)
            return
        if t is ast.Import or t is ast.ImportFrom:
            self._import(node)
            return
        if t in _FUNCS:
            self._function(node)
            return
        if t is ast.ClassDef:
            self._class(node)
            return
        if t is ast.Lambda:  # its parameters hide outer names; its body is read like any expression
            args = node.args
            for default in [*args.defaults, *args.kw_defaults]:
                if default is not None:
                    self.walk(default)
            self.scopes.append({a.arg: ("shadow",) for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]})
            self.walk(node.body)
            self.scopes.pop()
            return
        if t is ast.Assign or t is ast.AnnAssign or t is ast.AugAssign:
            self._assign(node)
        elif t is ast.Compare:
            self._compare(node)
        elif t is ast.Call:
            self._call(node)
        elif t is ast.Match:
            self._match(node)
        elif (
            t is ast.Return
            and node.value is not None
            and self._mentions_map(node)
            and _reads_map(node.value)
            and not _plain(node.value)
        ):
            self.add(node, "d2t", "returned")
        elif t is ast.Subscript:
            if _map_name(node.value) or any(_map_name(n) for n in _index_nodes(node)):
                self.add(node, "d2t", "indexing")
        self.node_ctx = None
        for child in inner_nodes(node):  # expression contexts and operators hold nothing to count
            self.walk(child)
        if t is ast.NamedExpr and isinstance(node.target, ast.Name):
            self.bind(node.target.id, self._value_binding(node.value))

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for deco in node.decorator_list:
            self.walk(deco)
        outer_function = self.function
        self.function = node.name if outer_function == "<module>" else f"{outer_function}.{node.name}"
        scope: dict[str, tuple] = {}
        in_algo = bool(self.algo_classes and self.algo_classes[-1])
        args = node.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        for i, param in enumerate(params):
            annotated = _annotation_kind(self, param.annotation)
            if annotated is not None:
                scope[param.arg] = annotated
            elif in_algo and i == 0 and param.arg == "self":
                scope["self"] = (ALGO,)
            elif in_algo and i == 0 and param.arg == "cls":
                scope["cls"] = (CLASS,)
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self.walk(default)
        self.scopes.append(scope)
        in_algo = in_algo or bool(scope)
        for statement in node.body:
            if in_algo or self._hit(statement) or self._uses_local(statement):
                self.walk(statement)
            elif isinstance(statement, ast.Assign):
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        self.bind(target.id, None)
        self.scopes.pop()
        self.function = outer_function

    def _class(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.walk(expr)
        is_algo = node.name == CLASS_NAME or any((self.kind(b) or ("",))[0] == CLASS for b in node.bases)
        if node.name == CLASS_NAME:
            self.bindings.append(Binding("class", self.module + "." + node.name))
        if is_algo:
            predicates = tuple(sorted(s.name for s in node.body if isinstance(s, _FUNCS) and _is_predicate(s)))
            self.bindings.append(Binding("predicates", node.name, predicates))
        self.algo_classes.append(is_algo)
        outer = self.function
        self.function = node.name if outer == "<module>" else f"{outer}.{node.name}"
        self.scopes.append({"__class__": ("classbody",)})
        if is_algo:
            self.scopes[-1][node.name] = (CLASS,)
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                if _annotation_kind(self, statement.annotation) == (ALGO,):
                    self.bindings.append(Binding("algo_attr", statement.target.id))
            if is_algo or self._hit(statement):
                self.walk(statement)
        self.scopes.pop()
        self.function = outer
        self.algo_classes.pop()
        if is_algo and node.name != CLASS_NAME:
            self.bind(node.name, (CLASS,))

    def _assign(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> None:
        value = node.value
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if isinstance(node, ast.AnnAssign) and _annotation_kind(self, node.annotation) == (ALGO,):
            for target in targets:
                if isinstance(target, ast.Attribute):
                    self.bindings.append(Binding("algo_attr", target.attr))
                elif isinstance(target, ast.Name) and value is None:
                    self.bind(target.id, (ALGO,))
        if value is None:
            return
        if self._mentions_map(node) and _reads_map(value) and not _plain(value):
            self.add(node, "d2t", "assignment")
        elif any(_last(t) == "hot_token_id" for t in targets) and _converts(value):
            self.add(node, "d2t", "conversion")
        bound = self._value_binding(value) if not isinstance(node, ast.AugAssign) else None
        if (
            bound is None
            and not isinstance(node, ast.AugAssign)
            and self.function != "<module>"
            and "__class__" not in self.scopes[-1]
        ):
            found = self.kind(value)  # a local copy of an attribute (`spec = runner.spec_algorithm`) stands for it
            copies = (ast.Attribute, ast.Call, ast.Subscript, ast.BoolOp)
            bound = found if found is not None and found[0] == "cand" and isinstance(value, copies) else None
        for target in targets:
            if isinstance(target, ast.Name):
                if isinstance(node, ast.AugAssign):
                    continue
                self.bind(target.id, bound)
            elif isinstance(target, ast.Attribute) and bound is not None and bound[0] in (ALGO, MEMBER):
                self.bindings.append(Binding("algo_attr", target.attr))

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            base = self.kind(func.value)
            if base is not None and base[0] == CLASS and func.attr in ("from_string", "from_name"):
                for arg in node.args[:1]:
                    if isinstance(arg, ast.Attribute):  # `from_string(server_args.speculative_algorithm)`
                        self.bindings.append(Binding("string_attr", arg.attr))
            if not node.args and not node.keywords and not func.attr.startswith("__") and base is not None:
                shape = (
                    "call result"
                    if isinstance(func.value, ast.Call)
                    else "subscript"
                    if isinstance(func.value, ast.Subscript)
                    else "name"
                    if isinstance(func.value, ast.Name)
                    else "attribute"
                )
                if base[0] in (ALGO, MEMBER):
                    self.add(node, "predicate call", shape, method=func.attr)
                elif base[0] == "cand":
                    self.add(node, "predicate call", shape, needs=("algo_attr", base[1]), method=func.attr)
            if func.attr in ("endswith", "startswith") and node.args and _map_literal(node.args[0]):
                self.add(node, "d2t", "name test")
        elif isinstance(func, ast.Name) and func.id == "load_token_map":
            self.add(node, "d2t", "load")
        for keyword in node.keywords:
            if keyword.arg and self._value_binding(keyword.value) in ((ALGO,),):
                self.bindings.append(Binding("algo_attr", keyword.arg))

    def _compare(self, node: ast.Compare) -> None:
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, _EQ):
                self._pair(node, left, right, op)
            left = right

    def _pair(self, node: ast.Compare, left: ast.expr, right: ast.expr, op: ast.cmpop) -> None:
        if _map_literal(left) or (_map_literal(right) and not isinstance(op, (ast.In, ast.NotIn))):
            self.add(node, "d2t", "name test")
            return
        if isinstance(op, (ast.Is, ast.IsNot)) and (_map_name(left) or _map_name(right)):
            self.add(node, "d2t", "None test")
            return
        lk, rk = self.kind(left), self.kind(right)
        for other, ok in ((right, rk), (left, lk)):
            if ok is not None and ok[0] in (MEMBER, MEMBERS):
                if isinstance(op, (ast.In, ast.NotIn)) and other is left:
                    continue
                self.add(node, "member test", _shape(other, ok), inverted=isinstance(op, _NEGATIVE))
                return
        for subject, sk, other, ok in ((left, lk, right, rk), (right, rk, left, lk)):
            if sk is None or ok is None or ok[0] not in (LITERAL, STRINGS, NONE):
                continue
            if isinstance(op, (ast.In, ast.NotIn)) and subject is right:
                continue  # `"EAGLE" in x`: a substring test
            if ok[0] == NONE and not isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
                continue
            inverted = isinstance(op, _NEGATIVE)
            # `x is None` says which algorithm only of the option string (None = no algorithm); of an
            # algorithm object (NONE then, never None) it is a null check, no reference
            null_check = ok[0] == NONE
            if sk[0] == STRING or (sk[0] == ALGO and not null_check):
                self.add(node, "string test", _shape(other, ok), inverted=inverted)
                return
            if sk[0] == "cand":
                self.add(node, "string test", _shape(other, ok), needs=("string_attr", sk[1]), inverted=inverted)
                if not null_check:
                    self.add(node, "string test", _shape(other, ok), needs=("algo_attr", sk[1]), inverted=inverted)
                return

    def _match(self, node: ast.Match) -> None:
        subject = self.kind(node.subject)
        for case in node.cases:
            for pattern in _value_patterns(case.pattern):
                k = self.kind(pattern.value)
                if k is not None and k[0] == MEMBER:
                    self.add(pattern, "match case", "match statement")
                elif k is not None and k[0] == LITERAL and subject is not None:
                    if subject[0] in (STRING, ALGO):
                        self.add(pattern, "match case", "match statement")
                    elif subject[0] == "cand":
                        self.add(pattern, "match case", "match statement", needs=("string_attr", subject[1]))


def _is_predicate(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A method of `self` alone that answers a bool: annotated `-> bool`, or (unannotated) every
    `return` gives a comparison, `and`/`or`/`not`, a bool constant or a zero-argument call."""
    args = node.args
    if node.name.startswith("__") or len(args.args) != 1 or args.kwonlyargs or args.vararg or args.posonlyargs:
        return False
    if any(_decorator_name(d) in ("classmethod", "staticmethod", "property") for d in node.decorator_list):
        return False
    if node.returns is not None:
        return _last(node.returns) == "bool" or (
            isinstance(node.returns, ast.Constant) and node.returns.value == "bool"
        )
    returns = [n.value for n in ast.walk(node) if isinstance(n, ast.Return)]
    boolish = (ast.Compare, ast.BoolOp)
    return bool(returns) and all(
        isinstance(v, boolish)
        or (isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not))
        or (isinstance(v, ast.Constant) and isinstance(v.value, bool))
        or (isinstance(v, ast.Call) and not v.args and not v.keywords)
        for v in returns
    )


def _bool_constant(node: ast.expr) -> TypeGuard[ast.Constant]:
    return isinstance(node, ast.Constant) and isinstance(node.value, bool)


def _bool_flip(left: ast.expr, op: ast.cmpop, right: ast.expr) -> int | None:
    """For `t is True` / `t == False` / `t is not False` ...: 1 when the comparison complements `t`, 0
    when it keeps it; None when neither side is a bool constant."""
    const = right if _bool_constant(right) else left if _bool_constant(left) else None
    if const is None or not isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
        return None
    negative = isinstance(op, (ast.IsNot, ast.NotEq))
    return int(const.value == negative)


def _decorator_name(node: ast.expr) -> str | None:
    return _last(node.func if isinstance(node, ast.Call) else node)


def _last(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _annotation_kind(census: _Census, node: ast.expr | None) -> tuple | None:
    """(ALGO,) for an annotation naming the class (`SA`, `Optional[SA]`, `SA | None`, "SA")."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (ALGO,) if CLASS_NAME in node.value else None
    if isinstance(node, ast.Subscript):
        return _annotation_kind(census, node.slice)
    if isinstance(node, ast.BinOp):
        return _annotation_kind(census, node.left) or _annotation_kind(census, node.right)
    if isinstance(node, ast.Tuple):
        return next((k for k in (_annotation_kind(census, e) for e in node.elts) if k), None)
    k = census.kind(node)
    return (ALGO,) if k is not None and k[0] == CLASS else None


def _shape(other: ast.expr, kind: tuple) -> str:
    if isinstance(other, ast.Name):
        return "named collection" if kind[0] in (MEMBERS, STRINGS) else "named constant"
    if kind[0] == NONE:
        return "None"
    if kind[0] in (MEMBERS, STRINGS):
        return "literal collection" + (" with None" if kind[0] == STRINGS and None in kind[1] else "")
    return "literal"


def _value_patterns(pattern: ast.pattern) -> Iterable[ast.MatchValue]:
    if isinstance(pattern, ast.MatchValue):
        yield pattern
    elif isinstance(pattern, ast.MatchOr):
        for inner in pattern.patterns:
            yield from _value_patterns(inner)
    elif isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        yield from _value_patterns(pattern.pattern)


def _map_name(node: ast.expr | None) -> bool:
    return isinstance(node, (ast.Name, ast.Attribute)) and _last(node) in MAP_WORDS


def _map_literal(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lstrip(".") in ("d2t", "t2d")


def _reads_map(node: ast.AST) -> bool:
    """Whether an expression reads the d2t/t2d map (`f(self.d2t)` too: the value flows)."""
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Name, ast.Attribute)) and _last(sub) in MAP_NAMES:
            return True
    return False


def _converts(node: ast.expr) -> bool:
    """A value computed from others (`w + torch.arange(n)`, `torch.add(w, o)`, `w[ids]`): a conversion."""
    if isinstance(node, (ast.BinOp, ast.Subscript)):
        return True
    return isinstance(node, ast.Call) and _last(node.func) in ("add", "index_select", "gather", "take")


def _plain(node: ast.expr) -> bool:
    """A plain copy or getter (`x = self.d2t`, `return self.d2t`): no conversion, no use."""
    return isinstance(node, (ast.Name, ast.Attribute))


def _index_nodes(node: ast.Subscript) -> list[ast.expr]:
    s = node.slice
    return list(s.elts) if isinstance(s, ast.Tuple) else [s]


def _module_statements(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Module-level statements, also inside module-level `if`/`try` (`try: import x except: ...`)."""
    for statement in body:
        if isinstance(statement, ast.If):
            yield from _module_statements(statement.body)
            yield from _module_statements(statement.orelse)
        elif isinstance(statement, ast.Try):
            yield from _module_statements(statement.body)
            for handler in statement.handlers:
                yield from _module_statements(handler.body)
        else:
            yield statement


def _hit_lines(text: str, words: Iterable[str]) -> list[int]:
    """Sorted 1-based numbers of the lines holding one of `words` (as a substring)."""
    present = [w for w in words if w in text]
    if not present:
        return []
    pattern = re.compile("|".join(re.escape(w) for w in sorted(present, key=len, reverse=True)))
    lines, out, last = 1, [], -1
    position = 0
    for match in pattern.finditer(text):
        lines += text.count("\n", position, match.start())
        position = match.start()
        if lines != last:
            out.append(lines)
            last = lines
    return out


class CensusExtractor:
    """The census as a per-file pass of the pipeline (its records live in `FileFacts.extras["census"]`;
    the inventory builder reads only `spec_*` extras, so the extractors never see them)."""

    name = NAME
    # 6: a member's `.name` is its string (`x == SA.DFLASH.name`), `x.spec_algorithm.name` spells
    # x.spec_algorithm; `is None` on an algorithm object is no reference
    version = 6
    parser = "ast"
    trigger = TRIGGER
    metadata = ()

    def extract(self, tree: ast.Module, context: Any) -> tuple:
        return census_of(tree, context.text or "", context.module)


_WORDS = (CLASS_NAME, "spec_algo", "speculative_algo", "d2t", "t2d", "hot_token_id", "load_token_map")


def census_of(tree: ast.Module, text: str, module: str) -> tuple:
    """The census records of one parsed file: its `Reference`s then its `Binding`s.

    Two steps, both cheap: the module's own bindings (imports and constants at module level, as the
    binding table sees them) give the names that may refer to the algorithm here; then only
    statements whose lines hold one of those names or of the trigger's words are walked, a function
    with such a line as a whole (its locals), the algorithm class as a whole (`self` is an algorithm).
    """
    census = _Census(text, module)
    for statement in _module_statements(tree.body):
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            census._import(statement)
        elif (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            bound = census._value_binding(statement.value)
            if bound is not None:
                census.bind(statement.targets[0].id, bound)
    words = set(_WORDS) | {name for name, value in census.scopes[0].items() if value[0] != "module"}
    census.hits = _hit_lines(text, words)
    census.scopes = [{}]
    try:
        census.walk_body(tree.body)
    except RecursionError:  # nested deeper than this walk follows: say so, never fail the file's extractors
        census.bindings.append(Binding("incomplete", "nested too deeply for the census to walk"))
    refs = sorted(census.refs, key=lambda r: (r.line, r.column, r.form, r.needs or ("", "")))
    return (*refs, *dict.fromkeys(census.bindings))


# -- accounting --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """A census reference that counts (its conditions hold in this tree), and how it ended."""

    path: str
    reference: Reference
    read: bool
    by: str  # what consumed it: "dispatch" | "predicate" | "member" | "d2t" | "worker" | "unread" | "" (new unread)


REASONS = {
    "member test": "a comparison with an algorithm member that produced no dispatch site",
    "string test": "an algorithm string compared with a literal that produced no dispatch site",
    "predicate call": "a predicate call on an algorithm value that produced no dispatch site",
    "match case": "a `case` on an algorithm that produced no dispatch site",
    "d2t": "a use of d2t/t2d/hot_token_id that produced no d2t site",
}


def entries(files: Mapping[str, Any]) -> list[tuple[str, Reference]]:
    """The references of a tree that count: those whose tree-wide conditions hold."""
    per_file = []
    algo_attrs: set[str] = set()
    string_attrs: set[str] = set()
    predicates: set[str] | None = None
    for path in sorted(files):
        extras = getattr(files[path], "extras", None) or {}
        records = extras.get(NAME, ())
        if not records:
            continue
        refs = []
        for record in records:
            if type(record) is Reference:
                refs.append(record)
            elif record.kind == "algo_attr":
                algo_attrs.add(record.name)
            elif record.kind == "string_attr":
                string_attrs.add(record.name)
            elif record.kind == "predicates" and record.name == CLASS_NAME:
                predicates = (predicates or set()) | set(record.values)
        per_file.append((path, refs))
    out = []
    for path, refs in per_file:
        for ref in refs:
            if ref.needs is not None:
                kind, name = ref.needs
                if name not in (algo_attrs if kind == "algo_attr" else string_attrs):
                    continue
            if ref.form == "predicate call" and predicates is not None and ref.method not in predicates:
                continue
            out.append((path, ref))
    # one entry per node: a string test that counts both ways is one reference
    unique: dict[tuple, tuple[str, Reference]] = {}
    for path, ref in out:
        unique.setdefault((path, ref.line, ref.column, ref.form), (path, ref))
    return list(unique.values())


def _within(line: int, column: int, start: tuple[int, int], end: tuple[int, int]) -> bool:
    return start <= (line, column) <= end


def _spans(inventory: SpecInventory) -> dict[str, list[tuple[str, Location, DispatchSite | None]]]:
    """Per path, (kind, location, the dispatch site or None) of every fact the analyzer produced."""
    out: dict[str, list[tuple[str, Location, DispatchSite | None]]] = {}

    def put(kind: str, location: Location | None) -> None:
        if location is not None:
            out.setdefault(location.path, []).append((kind, location, None))

    for site in inventory.dispatch_sites:
        out.setdefault(site.location.path, []).append(("dispatch", site.location, site))
    for predicate in inventory.predicates:
        put("predicate", predicate.location)
    for algorithm in inventory.algorithms:
        put("member", algorithm.location)
        put("worker", algorithm.worker_location)
        for choice in algorithm.workers:
            put("worker", choice.location)
    for d2t in inventory.d2t_sites:
        put("d2t", d2t.location)
    for unread in inventory.unread:
        put("unread", unread.location)
    return out


_CONSUMERS = {
    "member test": ("dispatch", "predicate", "unread"),
    "string test": ("dispatch", "predicate", "unread"),
    "predicate call": ("dispatch", "predicate", "unread"),
    "match case": ("dispatch", "predicate", "unread"),
    "d2t": ("d2t", "unread"),
}


def _consumer(ref: Reference, facts: Sequence[tuple[str, Location, DispatchSite | None]]) -> tuple[str | None, str]:
    """What fact came from this node: a fact starting inside the node, or a fact spanning it whose
    kind covers a body (a predicate's whole `def`, an unread entry's statement). A term of a test
    is read only by a site that decides that test (a decision other than "value") with the
    term's polarity there (`negated`). Returns (the consumer's kind or None, why not)."""
    kinds = _CONSUMERS[ref.form]
    start, end = (ref.line, ref.column), (ref.end_line, ref.end_column)
    found, why = None, ""
    for kind, loc, fact in facts:
        if kind not in kinds:
            continue
        if _within(loc.line, loc.column, start, end):
            if kind == "dispatch" and ref.in_test and fact is not None:
                if fact.decision == DecisionKind.VALUE:
                    why = "read as a dispatch site, but not as the test it sits in"
                    continue
                if fact.negated != ref.negated:
                    why = (
                        "read as a dispatch site with the opposite polarity ("
                        + ("`not`, `!=`, `is False` lost" if ref.negated else "a negation that is not there")
                        + ")"
                    )
                    continue
            return kind, ""
        if kind in ("predicate", "unread") or ref.form == "d2t":
            last = loc.end_line or loc.line
            if (loc.line, loc.column) <= start and ref.line <= last:
                found = found or kind
    return found, why


def account(files: Mapping[str, Any], inventory: SpecInventory) -> tuple[SpecInventory, tuple[Entry, ...]]:
    """The inventory with its census (counts) and a `reference` unread entry for every census entry
    no fact came from; and every entry with how it ended."""
    from dataclasses import replace

    spans = _spans(inventory)
    done: list[Entry] = []
    new: list[Unread] = []
    for path in sorted(files):
        for record in (getattr(files[path], "extras", None) or {}).get(NAME, ()):
            if type(record) is Binding and record.kind == "incomplete":
                new.append(
                    Unread(
                        "reference",
                        path.rpartition("/")[2],
                        Location(path, 1),
                        f"the census could not read this file ({record.name}): its references are not counted",
                    )
                )
    for path, ref in entries(files):
        by, why = _consumer(ref, spans.get(path, ()))
        if by is None:
            location = Location(path, ref.line, ref.column, ref.end_line, ref.end_column)
            new.append(Unread("reference", ref.text, location, f"{ref.form} ({ref.shape}): {why or REASONS[ref.form]}"))
            done.append(Entry(path, ref, False, ""))
        else:
            done.append(Entry(path, ref, by != "unread", by))
    read = sum(1 for e in done if e.read)
    census = Census(
        references=len(done),
        read=read,
        unread=len(done) - read,
        forms=tuple((form, sum(1 for e in done if e.reference.form == form)) for form in FORMS),
    )
    unread = tuple(sorted((*inventory.unread, *new), key=lambda u: (u.location, u.what, u.name)))
    return replace(inventory, unread=unread, census=census), tuple(done)


__all__ = ["Binding", "CensusExtractor", "Entry", "FORMS", "Reference", "account", "census_of", "entries"]
