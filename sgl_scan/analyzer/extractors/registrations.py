"""Algorithms registered at import time, and the worker factories they name.

Forms: `SpeculativeAlgorithm.register("NONE")`, `register_speculative_algorithm("EAGLE",
worker_cls=_create_eagle_worker, flags=("EAGLE",), aliases=("NEXTN",))` (0.5.6), and the plugin
decorator `@SpeculativeAlgorithm.register("MY_SPEC") def _factory(server_args): return MyWorker`.
Only calls with a literal name count; a docstring that shows the decorator is not code. The
receiver is resolved through the file's imports, so `from ...spec_info import SpeculativeAlgorithm
as SA` then `@SA.register("DDTREE")` is a registration too. It reads the stdlib `ast` of the whole
file (`parser = "ast"`), skipping statements whose lines mention neither `register` nor `Worker`.
"""

from __future__ import annotations

import ast
import re

from sgl_scan.analyzer.extractors._ast import (
    Resolver,
    ScopedWalker,
    Source,
    dotted,
    last_name,
    statement_lines,
    statement_workers,
    string_value,
    string_values,
    walk_no_defs,
    written_text,
)
from sgl_scan.analyzer.extractors._text import REGISTRATION_TRIGGER, any_hit, hit_lines
from sgl_scan.analyzer.extractors.records import Registration, UnreadRecord, WorkerFactory, WorkerRef

_ALGO_CLASS = re.compile(r"[Ss]pec\w*[Aa]lgo")
_REGISTER = re.compile(r"^register(_\w*(algo|algorithm|spec)\w*)?$")
_HITS = re.compile(r"register|Worker")
_WORKER_KEYWORDS = ("worker_cls", "worker", "factory", "worker_factory", "draft_worker_factory")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _registration_call(node: ast.Call, resolver: Resolver) -> bool:
    """`register_…algo…(...)`, or `X.register(...)` where X is (an import alias of) a `Spec…Algo…` class."""
    name = last_name(node.func)
    if name is None or not _REGISTER.match(name):
        return False
    if name == "register":
        if not isinstance(node.func, ast.Attribute):
            return False
        receiver = node.func.value
        spelled = (last_name(receiver) or "", (resolver.resolve(receiver) or "").rpartition(".")[2])
        return any(_ALGO_CLASS.search(n) for n in spelled)
    return True


def _arguments(node: ast.Call) -> list[tuple[str | None, ast.expr]]:
    """(keyword or None, value) of each argument in source order; `*x` and `**x` as (None, x)."""
    found: list[ast.expr | ast.keyword] = [*node.args, *node.keywords]
    found.sort(key=lambda n: (n.lineno, n.col_offset))
    return [
        (n.arg, n.value) if isinstance(n, ast.keyword) else (None, n.value if isinstance(n, ast.Starred) else n)
        for n in found
    ]


def _literal_name(node: ast.Call) -> str | None:
    for keyword, value in _arguments(node):
        if keyword is None or keyword == "name":
            return string_value(value)
    return None


def _qualname(scopes: list[tuple[str, str]]) -> str:
    """`C.m`, `f` (a def's `<locals>` dropped at the end) of the scopes, without the module."""
    parts: list[str] = []
    for kind, name in scopes:
        parts.append(name)
        if kind == "def":
            parts.append("<locals>")
    if parts and parts[-1] == "<locals>":
        parts.pop()
    return ".".join(parts)


def _one_line_body(source: Source, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """`def f(): a; return b`: the body follows the header's colon on its line."""
    first = function.body[0]
    line = source.lines[first.lineno - 1]
    return line[: source.column(first.lineno, first.col_offset)].strip() != ""


class _Walker(ScopedWalker):
    def __init__(self, resolver: Resolver, hits: list[int] | None) -> None:
        super().__init__(resolver, hits)
        self.out: list[Registration | UnreadRecord | WorkerFactory] = []
        self._decorated: set[int] = set()

    def _relevant(self, node: ast.stmt) -> bool:
        decorators = getattr(node, "decorator_list", None)
        if self.hits is None or not decorators:
            return super()._relevant(node)
        return any_hit(self.hits, decorators[0].lineno, node.end_lineno or node.lineno)  # from the first `@`

    def enter(self, node: ast.AST) -> None:
        t = type(node)
        if t is ast.Call:
            if id(node) not in self._decorated and _registration_call(node, self.r):  # type: ignore[arg-type]
                self._call(node)  # type: ignore[arg-type]
        elif t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            self._function(node)  # type: ignore[arg-type]

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        own = self.scopes.pop()  # the decorators are read in the enclosing scope
        try:
            for call in node.decorator_list:
                if isinstance(call, ast.Call) and _registration_call(call, self.r):
                    self._decorated.add(id(call))
                    worker = f"{self.r.module_name}.{_qualname(self.scopes)}.{node.name}".replace("..", ".")
                    self._add(call, worker=worker)
        finally:
            self.scopes.append(own)
        workers: list[WorkerRef] = []
        fallthrough = None
        one_line = _one_line_body(self.r.source, node)  # its statements are read one by one, none falls through
        for line in [[s] for s in node.body] if one_line else statement_lines(node.body):
            found = [ref for statement in line for ref in statement_workers(self.r, statement)]
            workers.extend(found)
            if found and not one_line and any(isinstance(s, ast.Return) for s in line):
                fallthrough = found[-1]
        if workers and any(isinstance(n, ast.Return) for n in walk_no_defs(node)):
            self.out.append(
                WorkerFactory(
                    **vars(self.r.at(node)), qualname=self.function, workers=tuple(workers), fallthrough=fallthrough
                )
            )

    def _call(self, node: ast.Call) -> None:
        worker = None
        for keyword in node.keywords:
            if keyword.arg in _WORKER_KEYWORDS:
                worker = self.r.resolve(keyword.value) or dotted(keyword.value)
        if worker is None:
            positional = [value for keyword, value in _arguments(node) if keyword is None]
            if len(positional) >= 2 and isinstance(positional[1], (ast.Name, ast.Attribute)):
                worker = self.r.resolve(positional[1])
        self._add(node, worker=worker)

    def _add(self, call: ast.Call, worker: str | None) -> None:
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        name = _literal_name(call)
        if name is None:
            if self.function == "<module>" or id(call) in self._decorated:  # not a helper forwarding its parameter
                self.out.append(
                    UnreadRecord(
                        **vars(self.r.at(call)),
                        what="registration",
                        name=written_text(self.r, call.func, call),
                        reason="the algorithm name is not a string literal",
                        receiver=self.r.resolve(receiver) if receiver is not None else None,
                    )
                )
            return
        flags: tuple[str, ...] = ()
        aliases: tuple[str, ...] = ()
        spec_class = None
        for keyword in call.keywords:
            if keyword.arg == "spec_class":
                spec_class = (
                    self.r.resolve(keyword.value)
                    or dotted(keyword.value)
                    or written_text(self.r, keyword.value, keyword)
                )
            if keyword.arg == "flags":
                flags = tuple(v.upper() for v in string_values(keyword.value) or ())
            if keyword.arg == "aliases":
                aliases = tuple(v.upper() for v in string_values(keyword.value) or ())
        self.out.append(
            Registration(
                **vars(self.r.at(call)),
                name=name.upper(),
                callee=self.r.resolve(call.func) or "",
                receiver=self.r.resolve(receiver) if receiver is not None else None,
                worker=worker,
                flags=flags,
                aliases=aliases,
                function=self.function,
                spec_class=spec_class,
            )
        )


class RegistrationExtractor:
    name = "spec_registrations"
    trigger = REGISTRATION_TRIGGER
    version = 4
    parser = "ast"
    metadata = ()

    def extract(self, tree: ast.Module, context) -> tuple:
        resolver = Resolver(tree, Source.of(context), context.module)
        walker = _Walker(resolver, hit_lines(context.text, _HITS))
        for statement in tree.body:
            walker.walk(statement)
        return tuple(walker.out)
