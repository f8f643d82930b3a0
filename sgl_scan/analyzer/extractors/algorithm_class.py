"""The algorithm class (`SpeculativeAlgorithm`) and its plugin base: form, members, predicate bodies.

Also records module constants of alias literals (`_RESERVED_ALIASES = frozenset({"NEXTN"})`),
which `from_string` consults (`if upper in _RESERVED_ALIASES: return cls.EAGLE`).

It reads the stdlib `ast` of the whole file (`parser = "ast"`): module-level classes named like the
algorithm class, passed as `spec_class=` anywhere in the file, or deriving from such a class, and
module-level assignments. A body is read as statements the way libcst groups them (the simple
statements of one line are one statement, each of a one-line suite's is its own), and the texts
recorded are those libcst gives for the source the per-file pass hands it: an expression with the
parentheses around it, a statement with its lines' trailing comments, comment-only lines left out.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from typing import Any, Sequence

from sgl_scan.analyzer.builder import normalize_text
from sgl_scan.analyzer.extractors._ast import (
    Resolver,
    Source,
    call_arguments,
    dotted,
    last_name,
    statement_lines,
    string_value,
    string_values,
    walk_no_defs,
)
from sgl_scan.analyzer.extractors._text import ALGO_CLASS_NAME, ALGORITHM_CLASS_TRIGGER
from sgl_scan.analyzer.extractors.dispatch import PREDICATE_NAME
from sgl_scan.analyzer.extractors.records import AlgoClassRecord, At, ConstStrings, PredicateBody

_ENUM_FORMS = {
    "enum.IntEnum": "IntEnum",
    "enum.Enum": "Enum",
    "enum.StrEnum": "Enum",
    "enum.IntFlag": "IntEnum",
    "enum.Flag": "Enum",
}
_ALIAS_CONST = re.compile(r"(?i)alias")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COLLECTIONS = (ast.Tuple, ast.List, ast.Set)
_ONE_STRING = re.compile(r"""(?is)[a-z]{0,2}(?:'''.*'''|\"\"\".*\"\"\"|'[^'\n]*'|"[^"\n]*")""")

Unit = list[ast.stmt]  # one libcst statement: a compound statement, or the simple statements of one line


def _is_bool(node: ast.AST | None, value: bool | None = None) -> bool:
    """`True`/`False` (`value`: that one)."""
    return isinstance(node, ast.Constant) and isinstance(node.value, bool) and (value is None or node.value is value)


def _single_argument(node: ast.Call) -> ast.AST | None:
    """The value of a call's only argument (`*x`, `**x` and `k=x` as `x`), else None."""
    arguments = call_arguments(node)
    return arguments[0] if len(arguments) == 1 else None


# -- statements as libcst groups them -------------------------------------------------------------
def _compound(statement: ast.stmt) -> bool:
    return hasattr(statement, "body")


def _smalls(unit: Unit) -> Unit:
    """The simple statements of a unit (none for a compound statement)."""
    return [] if _compound(unit[0]) else unit


def _on_header_line(body: Sequence[ast.stmt], source: Source) -> bool:
    """Whether a body is a one-line suite (`def f(self): return x`): its first statement follows the colon."""
    first = body[0]
    line = source.lines[first.lineno - 1]
    if line[: source.column(first.lineno, first.col_offset)].strip():
        return True
    above = source.lines[first.lineno - 2] if first.lineno > 1 else ""
    return above.rstrip("\r\n").endswith("\\")  # `def f(self): \` then the statement


def _units(body: Sequence[ast.stmt], source: Source) -> list[Unit]:
    if not body:
        return []
    if _on_header_line(body, source):
        return [[statement] for statement in body]
    return statement_lines(body)


def _strip_docstring(units: list[Unit]) -> list[Unit]:
    if units:
        smalls = _smalls(units[0])
        if len(smalls) == 1 and isinstance(smalls[0], ast.Expr) and string_value(smalls[0].value) is not None:
            return units[1:]
    return units


def _single_return(body: Sequence[ast.stmt]) -> ast.Return | None:
    """The statement of a body that is one `return <value>`."""
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0]
    return None


def _unit_at(r: Resolver, unit: Unit) -> At:
    first, last = unit[0], unit[-1]
    return At(first.lineno, r.source.column(first.lineno, first.col_offset) + 1, last.end_lineno or last.lineno)


# -- libcst's texts ---------------------------------------------------------------------------------
class _Texts:
    """A node's text as libcst's `code_for_node` gives it for the source the per-file pass hands
    libcst (comment-only lines left out), normalised as the facts' texts."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.text = source.text

    def offset(self, line: int, byte_col: int) -> int:
        return self.source.starts[line - 1] + self.source.column(line, byte_col)

    def expression(self, node: ast.expr, shared_parens: bool = False) -> str:
        """With the parentheses around it (libcst's `lpar`/`rpar`); `shared_parens`: the outermost
        pair is its owner's (a class's only base)."""
        start = self.offset(node.lineno, node.col_offset)
        end = self.offset(node.end_lineno or node.lineno, node.end_col_offset or 0)
        spans = [(start, end)]
        while True:
            before, after = self._skip_back(spans[-1][0]), self._skip_forward(spans[-1][1])
            if before > 0 and self.text[before - 1] == "(" and self.text[after : after + 1] == ")":
                spans.append((before - 1, after + 1))
            else:
                break
        if shared_parens and len(spans) > 1:
            spans.pop()
        start, end = spans[-1]
        starts = self.source.starts
        first, last = bisect_right(starts, start), bisect_right(starts, end - 1)
        if first == last:
            return normalize_text(self.text[start:end])
        pieces = [
            self.text[start : starts[first]],
            *self.source.lines[first : last - 1],
            self.text[starts[last - 1] : end],
        ]
        return normalize_text("".join(self._without_comment_lines(pieces, first, [node])))

    def _skip_forward(self, at: int) -> int:
        """The offset of the next code character at or after `at` (whitespace, comments, `\\`-newlines skipped)."""
        text = self.text
        while at < len(text):
            char = text[at]
            if char == "#":
                while at < len(text) and text[at] not in "\r\n":
                    at += 1
            elif char.isspace() or (char == "\\" and text[at + 1 : at + 2] in ("\n", "\r")):
                at += 1
            else:
                break
        return at

    def _skip_back(self, at: int) -> int:
        """The offset just past the previous code character before `at`."""
        text = self.text
        while at > 0:
            char = text[at - 1]
            if char in "\r\n":
                line_end = at - 2 if char == "\n" and text[at - 2 : at - 1] == "\r" else at - 1
                line_start = max(text.rfind("\n", 0, line_end), text.rfind("\r", 0, line_end)) + 1
                code = _code_end(text[line_start:line_end])
                at = line_start + code
                if code and text[at - 1] == "\\":
                    at -= 1
            elif char.isspace():
                at -= 1
            else:
                break
        return at

    def small(self, statement: ast.stmt) -> str:
        """A simple statement of a one-line suite, with its `;`."""
        start = self.offset(statement.lineno, statement.col_offset)
        end = self.offset(statement.end_lineno or statement.lineno, statement.end_col_offset or 0)
        after = end
        while after < len(self.text) and self.text[after] in " \t\f":
            after += 1
        if self.text[after : after + 1] == ";":
            end = after + 1
        return normalize_text(self.text[start:end])

    def statement(self, unit: Unit) -> str:
        """A statement on its own lines: its lines, with its line's trailing comment."""
        first = _first_line(unit[0])
        last = unit[-1].end_lineno or unit[-1].lineno
        lines = self.source.lines[first - 1 : last]  # whole lines: the indentation is normalised away
        return normalize_text("".join(self._without_comment_lines(lines, first, unit)))

    def _without_comment_lines(self, lines: list[str], first: int, nodes: Sequence[ast.AST]) -> list[str]:
        """`lines` (from line `first`) without the comment-only lines (those inside a string stay),
        as the per-file pass hands libcst a file's source."""
        if len(lines) < 3:
            return lines
        protected = _string_lines(nodes)
        return [
            line for number, line in enumerate(lines, first) if number in protected or not line.lstrip().startswith("#")
        ]


def _string_lines(nodes: Sequence[ast.AST]) -> set[int]:
    """The lines after the first of each multi-line string literal below `nodes`."""
    found: set[int] = set()
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, (ast.Constant, ast.JoinedStr)) and (node.end_lineno or node.lineno) > node.lineno:
                found.update(range(node.lineno + 1, (node.end_lineno or node.lineno) + 1))
    return found


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", None)
    return decorators[0].lineno if decorators else statement.lineno


def _code_end(line: str) -> int:
    """Where a line's code ends: at a `#` outside strings, else its end."""
    quote = ""
    index = 0
    while index < len(line):
        char = line[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#":
            return len(line[:index].rstrip())
        index += 1
    return len(line.rstrip())


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


# -- reading predicate bodies -----------------------------------------------------------------------
def _module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level `NAME = value` (and `NAME: T = value`) assignments, the last one of each name."""
    found: dict[str, ast.expr] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name):
                found[target.id] = statement.value
        elif (
            isinstance(statement, ast.AnnAssign)
            and statement.value is not None
            and isinstance(statement.target, ast.Name)
        ):
            found[statement.target.id] = statement.value
    return found


def _collection(node: ast.AST, constants: dict[str, ast.expr], depth: int = 0) -> ast.AST | None:
    """A tuple/list/set literal, through module constants and `frozenset(...)`/`set(...)`/`tuple(...)`."""
    if isinstance(node, _COLLECTIONS):
        return node
    if depth > 8:
        return None
    if isinstance(node, ast.Name) and node.id in constants:
        return _collection(constants[node.id], constants, depth + 1)
    if isinstance(node, ast.Call) and dotted(node.func) in ("frozenset", "set", "tuple", "list"):
        only = _single_argument(node)
        return _collection(only, constants, depth + 1) if only is not None else None
    return None


class _BoolParser:
    """Turns a predicate's return expression into a bool expression (see records.BOOL_OPS).

    Names of module-level constants are read through their values (`return self in _EAGLE_FAMILY`
    with `_EAGLE_FAMILY = frozenset({SpeculativeAlgorithm.EAGLE, ...})`).
    """

    def __init__(self, self_name: str, class_name: str, constants: dict[str, ast.expr] | None = None) -> None:
        self.self_name, self.class_name = self_name, class_name
        self.constants = constants or {}

    def member(self, node: ast.AST, depth: int = 0) -> str | None:
        if isinstance(node, ast.Name) and node.id in self.constants and depth < 8:
            return self.member(self.constants[node.id], depth + 1)
        if isinstance(node, ast.Attribute) and dotted(node.value) in (self.class_name, "cls"):
            return node.attr
        return None

    def is_self(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == self.self_name

    def own_name(self, node: ast.AST) -> bool:
        """`self.name` / `self.value`: the member's own name (a string test on it is a member test)."""
        return isinstance(node, ast.Attribute) and self.is_self(node.value) and node.attr in ("name", "value")

    def strings(self, node: ast.AST, depth: int = 0) -> tuple[str, ...] | None:
        if isinstance(node, ast.Name) and node.id in self.constants and depth < 8:
            return self.strings(self.constants[node.id], depth + 1)
        return string_values(node)

    def parse(self, node: ast.AST, depth: int = 0) -> tuple | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return ("const", node.value)
        if isinstance(node, ast.Name) and node.id in self.constants and depth < 8:
            return self.parse(self.constants[node.id], depth + 1)  # `dflash = self.is_dflash()` then `dflash or ...`
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.parse(node.operand)
            return ("not", inner) if inner else None
        if isinstance(node, ast.BoolOp):
            return self._bool_op(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and self.is_self(node.func.value):
            return self._own_call(node, node.func.attr)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self._comparison(node.left, node.ops[0], node.comparators[0])
        return None

    def _bool_op(self, node: ast.BoolOp) -> tuple | None:
        op = "and" if isinstance(node.op, ast.And) else "or"
        terms: list[tuple] = []
        for value in node.values:
            part = self.parse(value)
            if part is None:
                return None
            terms.extend(part[1] if part[0] == op else (part,))
        return (op, tuple(terms))

    def _own_call(self, node: ast.Call, method: str) -> tuple | None:
        arguments = call_arguments(node)
        if not arguments:
            return ("call", method)
        if len(arguments) == 1 and "flag" in method.lower():
            flag = string_value(arguments[0])
            return ("flag", flag.upper()) if flag is not None else None
        return None

    def _comparison(self, left: ast.expr, op: ast.cmpop, right: ast.expr) -> tuple | None:
        if _is_bool(right) and isinstance(op, (ast.Is, ast.Eq, ast.IsNot, ast.NotEq)):
            inner = self.parse(left)  # `self.is_x() is False`
            if inner is None:
                return None
            return inner if _is_bool(right, True) == isinstance(op, (ast.Is, ast.Eq)) else ("not", inner)
        if self.own_name(right) and not self.own_name(left):
            left, right = right, left
        if self.own_name(left):
            return self._name_test(op, right)
        if not self.is_self(left):
            left, right = right, left
        if not self.is_self(left):
            return None
        if isinstance(op, (ast.Eq, ast.Is, ast.NotEq, ast.IsNot)):
            name = self.member(right)
            if name is None:
                return None
            return ("eq", name) if isinstance(op, (ast.Eq, ast.Is)) else ("ne", name)
        collection = _collection(right, self.constants) or right
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(collection, _COLLECTIONS):
            names = [self.member(e) for e in collection.elts if not isinstance(e, ast.Starred)]
            if not names or None in names:
                return None
            return ("in" if isinstance(op, ast.In) else "notin", tuple(names))
        return None

    def _name_test(self, op: ast.cmpop, right: ast.expr) -> tuple | None:
        """`self.name == "X"`, `self.value in ("X", "Y")`."""
        names = self.strings(right) or (None,)
        if None in names:
            return None
        if isinstance(op, (ast.Eq, ast.NotEq)) and len(names) == 1:
            return ("eq", names[0]) if isinstance(op, ast.Eq) else ("ne", names[0])
        if isinstance(op, (ast.In, ast.NotIn)):
            return ("in" if isinstance(op, ast.In) else "notin", names)
        return None


def _statements_expr(
    body: list[Unit], self_name: str, class_name: str, constants: dict[str, ast.expr]
) -> tuple[tuple | None, ast.expr | None]:
    """A predicate body of a few statements as one bool expression: local constants (`family = (...)`),
    `if <test>: return <expr>` cases, then `return <expr>`; (None, the last return's value) when any
    statement is another kind or any part is not read."""
    local = dict(constants)
    cases: list[tuple[ast.expr, ast.expr]] = []
    last = None
    for index, unit in enumerate(body):
        smalls = _smalls(unit)
        only = smalls[0] if len(smalls) == 1 else None
        if isinstance(only, ast.Assign) and len(only.targets) == 1 and isinstance(only.targets[0], ast.Name):
            if not cases:
                local[only.targets[0].id] = only.value
                continue
        statement = unit[0]
        if isinstance(statement, ast.If) and not statement.orelse:
            returned = _single_return(statement.body)
            if returned is None or returned.value is None:
                return None, None
            cases.append((statement.test, returned.value))
            continue
        if isinstance(only, ast.Return) and only.value is not None and index == len(body) - 1:
            last = only.value
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


def _plain_method(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The `self` name of an undecorated method with exactly one positional parameter."""
    args = node.args
    if node.decorator_list or args.kwonlyargs or args.posonlyargs or args.kwarg or args.vararg:
        return None
    if len(args.args) != 1:
        return None
    return args.args[0].arg


def _spec_class_names(tree: ast.Module, text: str) -> set[str]:
    """Names passed as `spec_class=` anywhere in the module (a plugin's algorithm class, whatever its name)."""
    if "spec_class" not in text:
        return set()
    return {
        node.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.keyword) and node.arg == "spec_class" and isinstance(node.value, ast.Name)
    }


def _positional_bases(node: ast.ClassDef) -> list[ast.expr]:
    """A class's bases (`*bases` as `bases`)."""
    return [base.value if isinstance(base, ast.Starred) else base for base in node.bases]


def _register_defaults(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """Default values of a function's positional and keyword-only parameters, in order."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    return [d for d in (*defaults[len(args.posonlyargs) :], *args.kw_defaults) if d is not None]


def _subscript_key(node: ast.Subscript, source: Source) -> ast.expr | None:
    """The key of `x[key]` with one element (`x[a, b]` and `x[a:b]`: None)."""
    key = node.slice
    if isinstance(key, ast.Tuple):
        line = source.lines[key.lineno - 1]
        parenthesised = line[source.column(key.lineno, key.col_offset) :].startswith("(")
        if not parenthesised:
            return key.elts[0] if len(key.elts) == 1 else None
    if isinstance(key, ast.Slice):
        return None
    return key


class AlgorithmClassExtractor:
    name = "spec_algo_class"
    version = 4  # the facts cache is keyed on it: raise it when the records change
    parser = "ast"
    trigger = ALGORITHM_CLASS_TRIGGER
    metadata = ()

    def extract(self, tree: ast.Module, context: Any) -> tuple:
        source = Source.of(context)
        r = Resolver(tree, source, context.module)
        texts = _Texts(source)
        out: list = []
        constants = _module_constants(tree)
        spec_classes = _spec_class_names(tree, context.text or "")
        for statement in tree.body:
            if isinstance(statement, ast.ClassDef) and self._algorithm_class(r, statement, spec_classes):
                record = self._class(r, texts, statement, constants)
                if record is not None:
                    out.append(record)
            elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
                const = self._const(r, statement)
                if const is not None:
                    out.append(const)
        return tuple(out)

    def _algorithm_class(self, r: Resolver, node: ast.ClassDef, spec_classes: set[str]) -> bool:
        return bool(
            ALGO_CLASS_NAME.search(node.name)
            or node.name in spec_classes
            or any(
                ALGO_CLASS_NAME.search((r.resolve(base) or "").rpartition(".")[2]) for base in _positional_bases(node)
            )
        )

    def _const(self, r: Resolver, node: ast.Assign | ast.AnnAssign) -> ConstStrings | None:
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                return None
            target, value = node.targets[0], node.value
        elif node.value is not None:
            target, value = node.target, node.value
        else:
            return None
        if not isinstance(target, ast.Name) or not _ALIAS_CONST.search(target.id):
            return None
        qualname = f"{r.module_name}.{target.id}"
        if isinstance(value, ast.Dict):  # `{"NEXTN": "EAGLE", ...}`: spellings and what each maps to
            pairs = [
                (string_value(k), string_value(v))
                for k, v in zip(value.keys, value.values, strict=True)
                if k is not None
            ]
            if not pairs or len(pairs) != len(value.keys) or any(k is None or v is None for k, v in pairs):
                return None
            return ConstStrings(
                **vars(r.at(node)),
                qualname=qualname,
                values=tuple(k for k, _ in pairs if k is not None),
                targets=tuple(v for _, v in pairs if v is not None),
            )
        values = string_values(value)
        if values is None:
            return None
        return ConstStrings(**vars(r.at(node)), qualname=qualname, values=values)

    def _class(
        self, r: Resolver, texts: _Texts, node: ast.ClassDef, constants: dict[str, ast.expr]
    ) -> AlgoClassRecord | None:
        shared = len(node.bases) + len(node.keywords) == 1  # `class C(B)`: the parentheses are the class's
        bases = tuple(r.resolve(base) or texts.expression(base, shared) for base in _positional_bases(node))
        if "type" in bases:
            return None  # a metaclass, not the algorithm class
        metaclass = next((r.resolve(k.value) for k in node.keywords if k.arg == "metaclass"), None)
        form = next((_ENUM_FORMS[b] for b in bases if b in _ENUM_FORMS), None)
        reader = _ClassBody(r, texts, node.name, constants, form is not None)
        reader.read(_units(node.body, r.source))
        if form is None:
            form = "registry" if (metaclass or "register" in reader.methods) and not reader.members else "plain"
        return AlgoClassRecord(
            **vars(r.at(node)),
            qualname=f"{r.module_name}.{node.name}",
            name=node.name,
            form=form,
            bases=bases,
            metaclass=metaclass,
            members=tuple(reader.members),
            predicates=tuple(reader.predicates),
            methods=tuple(reader.methods),
            register_defaults=tuple(d for d in reader.register_defaults if d),
            alias_returns=tuple(reader.alias_returns),
            unread_predicates=tuple(reader.unread),
            member_aliases=tuple(reader.member_aliases),
        )


class _ClassBody:
    """What an algorithm class's body holds: methods, predicates, enum members and their aliases."""

    def __init__(self, r: Resolver, texts: _Texts, class_name: str, constants: dict[str, ast.expr], enum: bool) -> None:
        self.r, self.texts, self.class_name, self.constants, self.enum = r, texts, class_name, constants, enum
        self.members: list[tuple[str, At]] = []
        self.predicates: list[PredicateBody] = []
        self.methods: list[str] = []
        self.register_defaults: list[str | None] = []
        self.alias_returns: list[Any] = []  # (container, member); the container is None where not named
        self.unread: list[tuple[str, At, str]] = []
        self.member_aliases: list[tuple[str, str]] = []
        self.values_of: dict[str, str | None] = {}

    def read(self, units: list[Unit]) -> None:
        for unit in units:
            statement = unit[0]
            if isinstance(statement, _FUNCTIONS):
                self.method(statement)
            elif self.enum:
                for small in _smalls(unit):
                    self.member(small, unit)

    def method(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.methods.append(function.name)
        self_name = _plain_method(function)
        if self_name is not None:
            self.predicate(function, self_name)
        if function.name == "register":
            for default in _register_defaults(function):
                if isinstance(default, (ast.Name, ast.Attribute)) and dotted(default) not in ("None", "True", "False"):
                    self.register_defaults.append(self.r.resolve(default) or dotted(default))
        self.alias_returns.extend(self._alias_returns(function))

    def predicate(self, function: ast.FunctionDef | ast.AsyncFunctionDef, self_name: str) -> None:
        r, name = self.r, function.name
        one_line = _on_header_line(function.body, r.source)
        all_units = _units(function.body, r.source)
        body = _strip_docstring(all_units)
        smalls = _smalls(body[0]) if len(body) == 1 else []
        if len(smalls) == 1 and isinstance(smalls[0], ast.Return) and smalls[0].value is not None:
            expr = _BoolParser(self_name, self.class_name, self.constants).parse(smalls[0].value)
            if expr is not None:
                self.predicates.append(PredicateBody(**vars(r.at(function)), name=name, expr=expr))
            elif PREDICATE_NAME.match(name):
                self.unread.append((name, r.at(function), self.texts.expression(smalls[0].value)))
        elif body and PREDICATE_NAME.match(name):
            expr, last = _statements_expr(body, self_name, self.class_name, self.constants)
            if expr is not None:
                self.predicates.append(PredicateBody(**vars(r.at(function)), name=name, expr=expr))
            else:
                shown = (
                    self.texts.expression(last) if last is not None else _short(self._last_text(all_units, one_line))
                )
                self.unread.append((name, r.at(function), shown))

    def _last_text(self, units: list[Unit], one_line: bool) -> str:
        """libcst's text of a body's last statement."""
        last = units[-1]
        if one_line:
            return self.texts.small(last[0])
        return self.texts.statement(last)

    def member(self, small: ast.stmt, unit: Unit) -> None:
        if not (isinstance(small, ast.Assign) and len(small.targets) == 1 and isinstance(small.targets[0], ast.Name)):
            return
        name = small.targets[0].id
        if name.startswith("_"):
            return
        # `NEXTN = EAGLE` (or the same literal value as an earlier member): an alias, not a member
        value = small.value
        literal = self._literal_text(value)
        target = value.id if isinstance(value, ast.Name) and value.id in self.values_of else None
        if target is None and literal is not None:
            target = next((m for m, v in self.values_of.items() if v == literal), None)
        if target is not None:
            self.member_aliases.append((name, target))
            return
        self.values_of[name] = literal
        self.members.append((name, _unit_at(self.r, unit)))

    def _literal_text(self, value: ast.expr) -> str | None:
        """The text of an integer or of one string literal (libcst's `Integer`, `SimpleString`)."""
        if not isinstance(value, ast.Constant):
            return None
        if type(value.value) is int:
            return self.texts.expression(value)
        if isinstance(value.value, (str, bytes)) and _ONE_STRING.fullmatch(self.r.source.segment(value)):
            return self.texts.expression(value)
        return None

    def _alias_returns(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str | None, str | None]]:
        """`if <x> in CONTAINER: return cls.MEMBER` inside a method (as in `from_string`)."""
        found = []
        owners = ("cls", self.class_name)
        for node in walk_no_defs(function):
            if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
                continue
            test = node.test
            if len(test.ops) != 1 or not isinstance(test.ops[0], ast.In):
                continue
            container = test.comparators[0]
            if not isinstance(container, (ast.Name, ast.Attribute)):
                continue
            if len(node.body) != 1 or not isinstance(node.body[0], ast.Return):
                continue
            value = node.body[0].value
            where = self.r.resolve(container) or dotted(container)
            if isinstance(value, ast.Attribute) and dotted(value.value) in owners:
                found.append((where, last_name(value)))
            elif isinstance(value, ast.Subscript) and dotted(value.value) in owners:
                key = _subscript_key(value, self.r.source)
                if isinstance(key, ast.Subscript) and dotted(key.value) == dotted(container):
                    found.append((where, ""))  # `cls[C[x]]`: through C's mapping
                else:
                    found.append((where, "?"))  # a lookup not read
            elif value is not None:
                found.append((where, "?"))  # another form: said, not guessed
        return found
