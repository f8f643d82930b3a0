"""Helpers for extractors that read the stdlib `ast` of a whole file (no libcst parse needed).

They mirror `_cst.py` name for name, with libcst's conventions: columns are 1-based and counted in
characters, a node's text is its source normalised as in the facts (`builder.normalize_text`), and a
node's children are visited in source order (`children`: `ast`'s own field order, except where it
differs from the source, e.g. `b if a else c`).
"""

from __future__ import annotations

import ast
from itertools import accumulate
from typing import Any, Iterator, Sequence, TypeAlias, cast

from sgl_scan.analyzer.astnodes import inner_nodes
from sgl_scan.analyzer.builder import char_column, normalize_text, split_lines
from sgl_scan.analyzer.extractors._text import ALGO_CLASS_NAME, any_hit
from sgl_scan.analyzer.extractors._names import NameResolution
from sgl_scan.analyzer.extractors.records import At, WorkerRef
from sgl_scan.analyzer.parse import ast_dotted as dotted

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# the nodes with a position (`lineno`, `col_offset`, `end_lineno`, `end_col_offset`)
Located: TypeAlias = ast.expr | ast.stmt | ast.pattern | ast.keyword | ast.arg | ast.alias | ast.excepthandler


def last_name(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def string_value(node: ast.AST | None) -> str | None:
    """The value of a plain (non f-) string literal, implicit concatenations included."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def string_values(node: ast.AST | None) -> tuple[str, ...] | None:
    """Literal strings of a string, or of a tuple/list/set (or `frozenset({...})`) of strings."""
    single = string_value(node)
    if single is not None:
        return (single,)
    if isinstance(node, ast.Call) and dotted(node.func) in ("frozenset", "set", "tuple", "list"):
        arguments = [*node.args, *(k.value for k in node.keywords)]
        if len(arguments) == 1:
            only = arguments[0]
            return string_values(only.value if isinstance(only, ast.Starred) else only)
        return None
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        out = []
        for element in node.elts:
            value = string_value(element)
            if value is None:
                return None
            out.append(value)
        return tuple(out)
    return None


def children(node: ast.AST) -> list[ast.AST]:
    """Direct child nodes in source order (not expression contexts and operators: `Load()`, `Eq()`)."""
    t = type(node)  # the branches read the fields of the type `t` names (mypy does not narrow through `t`)
    if t is ast.FunctionDef or t is ast.AsyncFunctionDef:  # `ast` lists decorators after the body
        fn = cast("ast.FunctionDef | ast.AsyncFunctionDef", node)
        return [*fn.decorator_list, fn.args, *([fn.returns] if fn.returns else []), *fn.body]
    if t is ast.ClassDef:
        cls = cast(ast.ClassDef, node)
        return [*cls.decorator_list, *cls.bases, *cls.keywords, *cls.body]
    if t is ast.IfExp:
        ifexp = cast(ast.IfExp, node)
        return [ifexp.body, ifexp.test, ifexp.orelse]
    if t is ast.Dict:
        out: list[ast.AST] = []
        d = cast(ast.Dict, node)
        for key, value in zip(d.keys, d.values, strict=True):
            if key is not None:
                out.append(key)
            out.append(value)
        return out
    if t is ast.Call and (call := cast(ast.Call, node)).keywords and any(isinstance(a, ast.Starred) for a in call.args):
        rest: list[ast.expr | ast.keyword] = sorted(
            [*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset)
        )
        return [call.func, *rest]
    return inner_nodes(node)


def call_arguments(node: ast.Call) -> list[ast.expr]:
    """A call's argument values in source order, `*x`/`**x`/`k=x` as `x` (libcst's `Arg.value`)."""
    found: list[ast.expr | ast.keyword] = sorted([*node.args, *node.keywords], key=lambda n: (n.lineno, n.col_offset))
    return [n.value if isinstance(n, (ast.Starred, ast.keyword)) else n for n in found]


def walk_no_defs(node: ast.AST) -> Iterator[ast.AST]:
    """All nodes below `node` (pre-order, source order), not entering nested functions, classes, lambdas."""
    stack = list(reversed(children(node)))
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, _SCOPES):
            continue
        stack.extend(reversed(children(current)))


def statement_lines(body: Sequence[ast.stmt]) -> list[list[ast.stmt]]:
    """A body's statements grouped as libcst's statement lines (`a = 1; b = 2` is one line)."""
    out: list[list[ast.stmt]] = []
    for statement in body:
        if (
            out
            and isinstance(out[-1][-1], ast.stmt)
            and not _compound(out[-1][-1])
            and not _compound(statement)
            and statement.lineno == (out[-1][-1].end_lineno or out[-1][-1].lineno)
        ):
            out[-1].append(statement)
        else:
            out.append([statement])
    return out


def _compound(statement: ast.stmt) -> bool:
    return hasattr(statement, "body")


class Source:
    """A file's text by line, for positions (characters, not UTF-8 bytes) and texts."""

    def __init__(self, text: str, lines: list[str] | None = None) -> None:
        self.text = text
        # as `ast` counts lines (not str.splitlines: \f, \x1c, \u2028 ...); `lines`: split_lines(text) made already
        self.lines = split_lines(text) if lines is None else lines
        self.starts = [0, *accumulate(map(len, self.lines[:-1]))]
        self.ascii = text.isascii()  # byte columns are character columns
        self.names_by_tree: dict[tuple[int, str], tuple[ast.Module, dict[str, str]]] = {}  # `Resolver.names`, shared

    @classmethod
    def of(cls, context: Any) -> "Source":
        """The Source of the file an extractor is handed, made once and shared by the file's extractors
        (kept on `context` where it has room: the per-file pass's `ExtractorContext`)."""
        source = getattr(context, "source", None)
        if source is None:
            source = cls(context.text, getattr(context, "lines", None))
            try:
                context.source = source
            except AttributeError:
                pass
        return source

    def column(self, line: int, byte_col: int) -> int:
        """0-based character column of a UTF-8 byte offset on a 1-based line."""
        if self.ascii:
            return byte_col
        return char_column(self.lines[line - 1] if 0 < line <= len(self.lines) else "", byte_col)

    def segment(self, node: Located) -> str:
        start = self.starts[node.lineno - 1] + self.column(node.lineno, node.col_offset)
        end_line, end_col = cast(int, node.end_lineno), cast(int, node.end_col_offset)  # parsed nodes have both
        end = self.starts[end_line - 1] + self.column(end_line, end_col)
        return self.text[start:end]


class Resolver(NameResolution):
    """Positions, names resolved through the file's imports and definitions, and source text.

    Name resolution reads the import statements anywhere in the file (function-local ones included,
    as SGLang imports workers inside branches) and the module's own top-level definitions.
    """

    def __init__(self, tree: ast.Module, source: Source, module_name: str) -> None:
        super().__init__(module_name)
        self.tree = tree
        self.source = source

    def at(self, node: Located) -> At:
        # a parsed node's `end_lineno` is set (None only on nodes built by hand)
        return At(node.lineno, self.source.column(node.lineno, node.col_offset) + 1, cast(int, node.end_lineno))

    def text(self, node: Located) -> str:
        return normalize_text(self.source.segment(node))

    def dotted(self, node: ast.AST | None) -> str | None:
        return dotted(node)

    def last_name(self, node: ast.AST | None) -> str | None:
        return last_name(node)

    def callee(self, node: ast.AST) -> ast.AST:
        return node.func if isinstance(node, ast.Call) else node

    def names(self) -> dict[str, str]:
        if self._names is None:  # the same for every extractor of the file: worked out once, kept on its Source
            key = (id(self.tree), self.module_name)
            shared = self.source.names_by_tree.get(key)
            if shared is not None and shared[0] is self.tree:
                self._names = shared[1]
                return self._names
            names: dict[str, str] = {}
            top = {id(statement) for statement in self.tree.body}
            for statement in _statements(self.tree):
                if isinstance(statement, (ast.ClassDef, *_FUNCTIONS)) and id(statement) in top:
                    names.setdefault(statement.name, f"{self.module_name}.{statement.name}")
                elif isinstance(statement, ast.Import):
                    for alias in statement.names:
                        if alias.asname is not None:
                            names[alias.asname] = alias.name
                        else:
                            head = alias.name.split(".")[0]
                            names[head] = head
                elif isinstance(statement, ast.ImportFrom):
                    module = self.absolute(statement.module or "", statement.level or 0)
                    for alias in statement.names:
                        if alias.name == "*":
                            break
                        names[alias.asname or alias.name] = f"{module}.{alias.name}" if module else alias.name
                elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and id(statement) in top:
                    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                    for target in targets:
                        if isinstance(target, ast.Name):
                            names.setdefault(target.id, f"{self.module_name}.{target.id}")
            self._names = names
            self.source.names_by_tree[key] = (self.tree, names)
        return self._names


class ScopedWalker:
    """A pre-order walk in source order that knows the enclosing function and class (`__qualname__`
    style: `C.m`, `f.<locals>.g`), and skips statements whose lines hold no hit (`hits`: sorted line
    numbers; None reads everything) except inside an algorithm class. Subclasses act in `enter` and
    `leave`, which see every node of the statements read (libcst's visitor order and pruning) but
    expression contexts and operators (`children`)."""

    def __init__(self, resolver: Resolver, hits: list[int] | None) -> None:
        self.r = resolver
        self.hits = hits
        self.scopes: list[tuple[str, str]] = []  # (kind, name)
        self._unpruned = 0

    def _qual(self, upto: int) -> str:
        parts: list[str] = []
        for kind, name in self.scopes[: upto + 1]:
            parts.append(name)
            if kind == "def":
                parts.append("<locals>")
        if parts and parts[-1] == "<locals>":
            parts.pop()
        return f"{self.r.module_name}." + ".".join(parts)

    @property
    def function(self) -> str:
        """Qualified enclosing function, or "<module>"."""
        defs = [i for i, (kind, _) in enumerate(self.scopes) if kind == "def"]
        return self._qual(defs[-1]) if defs else "<module>"

    @property
    def class_name(self) -> str | None:
        """The innermost class whose body (or method) we are in, qualified."""
        classes = [i for i, (kind, _) in enumerate(self.scopes) if kind == "class"]
        return self._qual(classes[-1]) if classes else None

    def _relevant(self, node: ast.stmt) -> bool:
        if self.hits is None:
            return True
        # a def or class starts at its keyword, as in libcst
        return any_hit(self.hits, node.lineno, node.end_lineno or node.lineno)

    def walk(self, node: ast.AST) -> None:
        if not self._unpruned and isinstance(node, ast.stmt) and not self._relevant(node):
            return
        t = type(node)
        scope = "def" if t is ast.FunctionDef or t is ast.AsyncFunctionDef else "class" if t is ast.ClassDef else None
        if scope is None:  # most nodes
            self.enter(node)
            for child in children(node):
                self.walk(child)
            self.leave(node)
            return
        name = cast("ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef", node).name
        algo_class = scope == "class" and ALGO_CLASS_NAME.search(name) is not None
        self._unpruned += algo_class
        self.scopes.append((scope, name))
        self.enter(node)
        for child in children(node):
            self.walk(child)
        self.leave(node)
        self.scopes.pop()
        self._unpruned -= algo_class

    def enter(self, node: ast.AST) -> None:
        pass

    def leave(self, node: ast.AST) -> None:
        pass


def written_text(resolver: Resolver, node: ast.expr, before: ast.expr | ast.keyword) -> str:
    """The normalised text of `node` as written, with the parentheses around it (`ast` leaves them out
    of a node, libcst's `code_for_node` keeps them). `before` is the node whose text leads up to it
    with nothing but those parentheses: the keyword of `k=(x)`, the call of `(f)(x)`."""
    source = resolver.source
    text = source.text

    def offset(line: int, col: int) -> int:
        return source.starts[line - 1] + source.column(line, col)

    start = offset(node.lineno, node.col_offset)
    end = offset(node.end_lineno or node.lineno, node.end_col_offset or 0)
    opened, first, at = 0, start, offset(before.lineno, before.col_offset)
    while at < start:  # `k = (  # note` / `((`: count the parentheses, not what a comment says
        char = text[at]
        if char == "#":
            at = text.find("\n", at)
            if at < 0:
                break
        elif char == "(":
            opened, first = opened + 1, min(first, at)
        at += 1
    at = end
    while opened and at < len(text):
        char = text[at]
        if char == "#":
            at = text.find("\n", at)
            if at < 0:
                break
            continue
        if char == ")":
            opened -= 1
            end = at + 1
        elif not (char.isspace() or char == "\\"):
            break
        at += 1
    return normalize_text(text[first:end])


def _statements(owner: ast.AST) -> Iterator[ast.stmt]:
    """Every statement below a module or compound statement, in source order (pre-order: a compound
    statement, then its body, handlers, `else` and `finally`); expressions are not entered."""
    body = getattr(owner, "body", None)
    if not isinstance(body, list):
        return
    stack: list[ast.stmt] = body[::-1]
    while stack:
        statement = stack.pop()
        yield statement
        if _compound(statement):
            inner = getattr(statement, "body", None)
            parts: list[ast.stmt] = list(inner) if isinstance(inner, list) else []
            for handler in getattr(statement, "handlers", ()):
                parts.extend(handler.body)
            parts.extend(getattr(statement, "orelse", None) or ())
            parts.extend(getattr(statement, "finalbody", None) or ())
            stack.extend(reversed(parts))


def statement_workers(resolver: Resolver, statement: ast.AST) -> list[WorkerRef]:
    """Workers a statement returns, assigns or instantiates (not inside nested definitions)."""
    found = []
    for node in (statement, *walk_no_defs(statement)):
        if isinstance(node, ast.Return) and node.value is not None and not isinstance(node.value, ast.Call):
            ref = resolver.worker_ref(node.value)
            if ref:
                found.append(ref)
        elif isinstance(node, ast.Call):
            ref = resolver.worker_ref(node)
            if ref:
                found.append(ref)
    return found


_NO_FALLTHROUGH = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith)


def suite_workers(resolver: Resolver, body: Sequence[ast.stmt]) -> tuple[list[WorkerRef], WorkerRef | None]:
    """(every worker the body may create, the one its last worker-creating top-level statement gives)."""
    workers: list[WorkerRef] = []
    fallthrough = None
    for statement in body:
        found = statement_workers(resolver, statement)
        workers.extend(found)
        if found and not isinstance(statement, _NO_FALLTHROUGH):
            fallthrough = found[-1]
    return workers, fallthrough


__all__ = [
    "Located",
    "Resolver",
    "ScopedWalker",
    "Source",
    "call_arguments",
    "children",
    "dotted",
    "last_name",
    "statement_lines",
    "statement_workers",
    "string_value",
    "string_values",
    "suite_workers",
    "walk_no_defs",
    "written_text",
]
