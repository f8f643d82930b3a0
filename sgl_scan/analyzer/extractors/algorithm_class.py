"""The algorithm class (`SpeculativeAlgorithm`) and its plugin base: form, members, predicate bodies.

Also records module constants of alias literals (`_RESERVED_ALIASES = frozenset({"NEXTN"})`),
which `from_string` consults (`if upper in _RESERVED_ALIASES: return cls.EAGLE`).
"""

from __future__ import annotations

import ast
import re
from typing import cast

import libcst as cst
import libcst.metadata as meta

from sgl_scan.analyzer.extractors._cst import (
    ALGO_CLASS_NAME,
    Resolver,
    body_statements,
    dotted,
    last_name,
    small_statements,
    string_value,
    string_values,
    strip_docstring,
    walk_no_defs,
)
from sgl_scan.analyzer.extractors.dispatch import PREDICATE_NAME
from sgl_scan.analyzer.extractors._text import ALGORITHM_CLASS_TRIGGER
from sgl_scan.analyzer.extractors.records import AlgoClassRecord, ConstStrings, PredicateBody

_ENUM_FORMS = {
    "enum.IntEnum": "IntEnum",
    "enum.Enum": "Enum",
    "enum.StrEnum": "Enum",
    "enum.IntFlag": "IntEnum",
    "enum.Flag": "Enum",
}
_ALIAS_CONST = re.compile(r"(?i)alias")


def _module_constants(module: cst.Module) -> dict[str, cst.CSTNode]:
    """Module-level `NAME = value` (and `NAME: T = value`) assignments, the last one of each name."""
    found: dict[str, cst.CSTNode] = {}
    for statement in module.body:
        for small in small_statements(statement):
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
            ):
                found[small.targets[0].target.value] = small.value
            elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
                found[small.target.value] = small.value
    return found


def _collection(
    node: cst.CSTNode, constants: dict[str, cst.CSTNode], depth: int = 0
) -> cst.Tuple | cst.List | cst.Set | None:
    """A tuple/list/set literal, through module constants and `frozenset(...)`/`set(...)`/`tuple(...)`."""
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return node
    if depth > 8:
        return None
    if isinstance(node, cst.Name) and node.value in constants:
        return _collection(constants[node.value], constants, depth + 1)
    if (
        isinstance(node, cst.Call)
        and dotted(node.func) in ("frozenset", "set", "tuple", "list")
        and len(node.args) == 1
    ):
        return _collection(node.args[0].value, constants, depth + 1)
    return None


class _BoolParser:
    """Turns a predicate's return expression into a bool expression (see records.BOOL_OPS).

    Names of module-level constants are read through their values (`return self in _EAGLE_FAMILY`
    with `_EAGLE_FAMILY = frozenset({SpeculativeAlgorithm.EAGLE, ...})`).
    """

    def __init__(self, self_name: str, class_name: str, constants: dict[str, cst.CSTNode] | None = None) -> None:
        self.self_name, self.class_name = self_name, class_name
        self.constants = constants or {}

    def member(self, node: cst.CSTNode, depth: int = 0) -> str | None:
        if isinstance(node, cst.Name) and node.value in self.constants and depth < 8:
            return self.member(self.constants[node.value], depth + 1)
        if isinstance(node, cst.Attribute) and dotted(node.value) in (self.class_name, "cls", "type(self)"):
            return node.attr.value
        return None

    def is_self(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Name) and node.value == self.self_name

    def own_name(self, node: cst.CSTNode) -> bool:
        """`self.name` / `self.value`: the member's own name (a string test on it is a member test)."""
        return isinstance(node, cst.Attribute) and self.is_self(node.value) and node.attr.value in ("name", "value")

    def strings(self, node: cst.CSTNode, depth: int = 0) -> tuple[str, ...] | None:
        if isinstance(node, cst.Name) and node.value in self.constants and depth < 8:
            return self.strings(self.constants[node.value], depth + 1)
        return string_values(node)

    def parse(self, node: cst.CSTNode, depth: int = 0) -> tuple | None:
        if isinstance(node, cst.Name) and node.value in ("True", "False"):
            return ("const", node.value == "True")
        if isinstance(node, cst.Name) and node.value in self.constants and depth < 8:
            return self.parse(self.constants[node.value], depth + 1)  # `dflash = self.is_dflash()` then `dflash or ...`
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            inner = self.parse(node.expression)
            return ("not", inner) if inner else None
        if isinstance(node, cst.BooleanOperation):
            kind = "and" if isinstance(node.operator, cst.And) else "or"
            first, second = self.parse(node.left), self.parse(node.right)
            if first is None or second is None:
                return None
            terms: list[tuple] = []
            for part in (first, second):
                terms.extend(part[1] if part[0] == kind else (part,))
            return (kind, tuple(terms))
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and self.is_self(node.func.value):
            method = node.func.attr.value
            if not node.args:
                return ("call", method)
            if len(node.args) == 1 and "flag" in method.lower():
                flag = string_value(node.args[0].value)
                return ("flag", flag.upper()) if flag is not None else None
            return None
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            target = node.comparisons[0]
            left, right, op = node.left, target.comparator, target.operator
            if (
                isinstance(right, cst.Name)
                and right.value in ("True", "False")
                and isinstance(op, (cst.Is, cst.Equal, cst.IsNot, cst.NotEqual))
            ):
                inner = self.parse(left)  # `self.is_x() is False`
                if inner is None:
                    return None
                return inner if (right.value == "True") == isinstance(op, (cst.Is, cst.Equal)) else ("not", inner)
            if self.own_name(right) and not self.own_name(left):
                left, right = right, left
            if self.own_name(left):
                names = self.strings(right) or (None,)
                if None in names:
                    return None
                if isinstance(op, (cst.Equal, cst.NotEqual)) and len(names) == 1:
                    return ("eq", names[0]) if isinstance(op, cst.Equal) else ("ne", names[0])
                if isinstance(op, (cst.In, cst.NotIn)):
                    return ("in" if isinstance(op, cst.In) else "notin", names)
                return None
            if not self.is_self(left):
                left, right = right, left
            if not self.is_self(left):
                return None
            if isinstance(op, (cst.Equal, cst.Is, cst.NotEqual, cst.IsNot)):
                name = self.member(right)
                if name is None:
                    return None
                return ("eq", name) if isinstance(op, (cst.Equal, cst.Is)) else ("ne", name)
            right = _collection(right, self.constants) or right
            if isinstance(op, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
                members = [self.member(e.value) for e in right.elements if isinstance(e, cst.Element)]
                if not members or None in members:
                    return None
                return ("in" if isinstance(op, cst.In) else "notin", tuple(members))
        return None


def _spec_class_names(module: cst.Module, text: str) -> set[str]:
    """Names passed as `spec_class=` anywhere in the module (a plugin's algorithm class, whatever its name)."""
    found = set()

    class _Find(cst.CSTVisitor):
        def visit_Arg(self, node: cst.Arg) -> None:
            if node.keyword is not None and node.keyword.value == "spec_class" and isinstance(node.value, cst.Name):
                found.add(node.value.value)

    if "spec_class" not in text:
        return found
    try:  # the same keyword arguments (calls and class bases) through stdlib `ast`, many times faster
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        module.visit(_Find())
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "spec_class" and isinstance(node.value, ast.Name):
            found.add(node.value.id)
    return found


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _statements_expr(
    body: list, self_name: str, class_name: str, constants: dict
) -> tuple[tuple | None, cst.CSTNode | None]:
    """A predicate body of a few statements as one bool expression: local constants (`family = (...)`),
    `if <test>: return <expr>` cases, then `return <expr>`; (None, the last return's value) when any
    statement is another kind or any part is not read."""
    local = dict(constants)
    cases: list[tuple[cst.CSTNode, cst.CSTNode]] = []
    last = None
    for index, statement in enumerate(body):
        smalls = small_statements(statement)
        if (
            len(smalls) == 1
            and isinstance(smalls[0], cst.Assign)
            and len(smalls[0].targets) == 1
            and isinstance(smalls[0].targets[0].target, cst.Name)
            and not cases
        ):
            local[smalls[0].targets[0].target.value] = smalls[0].value
            continue
        if isinstance(statement, cst.If) and statement.orelse is None:
            inner = body_statements(statement.body)
            inner_smalls = small_statements(inner[0]) if len(inner) == 1 else []
            if len(inner_smalls) == 1 and isinstance(inner_smalls[0], cst.Return) and inner_smalls[0].value is not None:
                cases.append((statement.test, inner_smalls[0].value))
                continue
            return None, None
        if (
            len(smalls) == 1
            and isinstance(smalls[0], cst.Return)
            and smalls[0].value is not None
            and index == len(body) - 1
        ):
            last = smalls[0].value
            break
        return None, None
    if last is None:
        return None, None
    parser = _BoolParser(self_name, class_name, local)
    expr = parser.parse(last)
    for test, value in reversed(cases):
        condition, result = parser.parse(test), parser.parse(value)
        if expr is None or condition is None or result is None:
            return None, last
        expr = ("or", (("and", (condition, result)), ("and", (("not", condition), expr))))
    return expr, last


def _plain_method(node: cst.FunctionDef) -> str | None:
    """The `self` name of an undecorated method with exactly one positional parameter."""
    params = node.params
    if node.decorators or params.kwonly_params or params.posonly_params or params.star_kwarg:
        return None
    if not isinstance(params.star_arg, cst.MaybeSentinel) or len(params.params) != 1:
        return None
    return params.params[0].name.value


class AlgorithmClassExtractor:
    name = "spec_algo_class"
    version = 3  # 3: predicate bodies of a few statements, `self.name == "X"`, `is True/False`, enum alias members, alias mappings; 2: module constants read in predicate bodies; unread predicate bodies recorded
    trigger = ALGORITHM_CLASS_TRIGGER
    metadata = (meta.PositionProvider,)

    def extract(self, wrapper: meta.MetadataWrapper, context) -> tuple:
        r = Resolver.for_context(wrapper, context)
        out: list = []
        constants = _module_constants(wrapper.module)
        spec_classes = _spec_class_names(wrapper.module, getattr(context, "text", None) or "")
        for statement in wrapper.module.body:
            if isinstance(statement, cst.ClassDef) and (
                ALGO_CLASS_NAME.search(statement.name.value)
                or statement.name.value in spec_classes
                or any(
                    ALGO_CLASS_NAME.search((r.resolve(arg.value) or "").rpartition(".")[2])
                    for arg in statement.bases
                    if arg.keyword is None
                )
            ):
                record = self._class(r, statement, constants)
                if record is not None:
                    out.append(record)
            for small in small_statements(statement):
                const = self._const(r, small)
                if const is not None:
                    out.append(const)
        return tuple(out)

    def _const(self, r: Resolver, node: cst.CSTNode) -> ConstStrings | None:
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target, value = node.targets[0].target, node.value
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            return None
        if not isinstance(target, cst.Name) or not _ALIAS_CONST.search(target.value):
            return None
        if isinstance(value, cst.Dict):  # `{"NEXTN": "EAGLE", ...}`: spellings and what each maps to
            pairs = [
                (string_value(e.key), string_value(e.value)) for e in value.elements if isinstance(e, cst.DictElement)
            ]
            if not pairs or len(pairs) != len(value.elements) or any(k is None or v is None for k, v in pairs):
                return None
            strings = cast("list[tuple[str, str]]", pairs)  # no None among them (just tested)
            return ConstStrings(
                **vars(r.at(node)),
                qualname=f"{r.module_name}.{target.value}",
                values=tuple(k for k, _ in strings),
                targets=tuple(v for _, v in strings),
            )
        values = string_values(value)
        if values is None:
            return None
        return ConstStrings(**vars(r.at(node)), qualname=f"{r.module_name}.{target.value}", values=values)

    def _class(self, r: Resolver, node: cst.ClassDef, constants: dict[str, cst.CSTNode]) -> AlgoClassRecord | None:
        bases = tuple(r.resolve(arg.value) or r.text(arg.value) for arg in node.bases if arg.keyword is None)
        if "type" in bases:
            return None  # a metaclass, not the algorithm class
        metaclass = next(
            (
                r.resolve(arg.value)
                for arg in (*node.bases, *node.keywords)
                if arg.keyword and arg.keyword.value == "metaclass"
            ),
            None,
        )
        form = next((_ENUM_FORMS[b] for b in bases if b in _ENUM_FORMS), None)
        statements = body_statements(node.body)
        members: list = []
        predicates: list = []
        methods: list = []
        register_defaults: list = []
        alias_returns: list = []
        unread: list = []
        member_aliases: list = []
        values_of: dict[str, str | None] = {}
        parser_name = node.name.value
        for statement in statements:
            if isinstance(statement, cst.FunctionDef):
                methods.append(statement.name.value)
                self_name = _plain_method(statement)
                if self_name is not None:
                    body = strip_docstring(body_statements(statement.body))
                    smalls = small_statements(body[0]) if len(body) == 1 else []
                    if len(smalls) == 1 and isinstance(smalls[0], cst.Return) and smalls[0].value is not None:
                        expr = _BoolParser(self_name, parser_name, constants).parse(smalls[0].value)
                        if expr is not None:
                            predicates.append(
                                PredicateBody(**vars(r.at(statement)), name=statement.name.value, expr=expr)
                            )
                        elif PREDICATE_NAME.match(statement.name.value):
                            unread.append((statement.name.value, r.at(statement), r.text(smalls[0].value)))
                    elif body and PREDICATE_NAME.match(statement.name.value):
                        expr, last = _statements_expr(body, self_name, parser_name, constants)
                        if expr is not None:
                            predicates.append(
                                PredicateBody(**vars(r.at(statement)), name=statement.name.value, expr=expr)
                            )
                        else:
                            shown = r.text(last) if last is not None else _short(r.text(body[-1]))
                            unread.append((statement.name.value, r.at(statement), shown))
                if statement.name.value == "register":
                    for param in (*statement.params.params, *statement.params.kwonly_params):
                        if isinstance(param.default, (cst.Name, cst.Attribute)) and dotted(param.default) not in (
                            "None",
                            "True",
                            "False",
                        ):
                            register_defaults.append(r.resolve(param.default) or dotted(param.default))
                alias_returns.extend(self._alias_returns(r, statement, parser_name))
                continue
            if form is None:
                continue
            for small in small_statements(statement):
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                ):
                    name = small.targets[0].target.value
                    if name.startswith("_"):
                        continue
                    # `NEXTN = EAGLE` (or the same literal value as an earlier member): an alias, not a member
                    value = small.value
                    target = value.value if isinstance(value, cst.Name) and value.value in values_of else None
                    if target is None and isinstance(value, (cst.Integer, cst.SimpleString)):
                        target = next((m for m, v in values_of.items() if v == r.text(value)), None)
                    if target is not None:
                        member_aliases.append((name, target))
                        continue
                    values_of[name] = r.text(value) if isinstance(value, (cst.Integer, cst.SimpleString)) else None
                    members.append((name, r.at(statement)))
        if form is None:
            form = "registry" if (metaclass or "register" in methods) and not members else "plain"
        at = r.at(node)
        return AlgoClassRecord(
            **vars(at),
            qualname=f"{r.module_name}.{node.name.value}",
            name=node.name.value,
            form=form,
            bases=bases,
            metaclass=metaclass,
            members=tuple(members),
            predicates=tuple(predicates),
            methods=tuple(methods),
            register_defaults=tuple(d for d in register_defaults if d),
            alias_returns=tuple(alias_returns),
            unread_predicates=tuple(unread),
            member_aliases=tuple(member_aliases),
        )

    def _alias_returns(self, r: Resolver, function: cst.FunctionDef, class_name: str) -> list:
        """`if <x> in CONTAINER: return cls.MEMBER` inside a method (as in `from_string`)."""
        found = []
        for node in walk_no_defs(function):
            if not isinstance(node, cst.If) or not isinstance(node.test, cst.Comparison):
                continue
            test = node.test
            if len(test.comparisons) != 1 or not isinstance(test.comparisons[0].operator, cst.In):
                continue
            container = test.comparisons[0].comparator
            if not isinstance(container, (cst.Name, cst.Attribute)):
                continue
            body = body_statements(node.body)
            smalls = small_statements(body[0]) if len(body) == 1 else []
            if len(smalls) != 1 or not isinstance(smalls[0], cst.Return):
                continue
            value = smalls[0].value
            if isinstance(value, cst.Attribute) and dotted(value.value) in ("cls", class_name):
                found.append((r.resolve(container) or dotted(container), last_name(value)))
            elif (
                isinstance(value, cst.Subscript)
                and dotted(value.value) in ("cls", class_name)
                and len(value.slice) == 1
            ):
                index = value.slice[0].slice
                key = index.value if isinstance(index, cst.Index) else None
                if isinstance(key, cst.Subscript) and dotted(key.value) == dotted(container):
                    found.append((r.resolve(container) or dotted(container), ""))  # `cls[C[x]]`: through C's mapping
                else:
                    found.append((r.resolve(container) or dotted(container), "?"))  # a lookup not read
            elif value is not None:
                found.append((r.resolve(container) or dotted(container), "?"))  # another form: said, not guessed
        return found
