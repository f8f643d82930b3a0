"""Algorithms registered at import time, and the worker factories they name.

Forms: `SpeculativeAlgorithm.register("NONE")`, `register_speculative_algorithm("EAGLE",
worker_cls=_create_eagle_worker, flags=("EAGLE",), aliases=("NEXTN",))` (0.5.6), and the plugin
decorator `@SpeculativeAlgorithm.register("MY_SPEC") def _factory(server_args): return MyWorker`.
Only calls with a literal name count; a docstring that shows the decorator is not code. The
receiver is resolved through the file's imports, so `from ...spec_info import SpeculativeAlgorithm
as SA` then `@SA.register("DDTREE")` is a registration too.
"""

from __future__ import annotations

import re

import libcst as cst
import libcst.metadata as meta

from sgl_scan.analyzer.extractors._cst import (
    Resolver,
    body_statements,
    dotted,
    last_name,
    statement_workers,
    string_value,
    string_values,
    source_text,
    walk_no_defs,
)
from sgl_scan.analyzer.extractors._scoped import ScopedVisitor, hit_lines
from sgl_scan.analyzer.extractors._text import REGISTRATION_TRIGGER
from sgl_scan.analyzer.extractors.records import Registration, UnreadRecord, WorkerFactory

_ALGO_CLASS = re.compile(r"[Ss]pec\w*[Aa]lgo")
_REGISTER = re.compile(r"^register(_\w*(algo|algorithm|spec)\w*)?$")
_HITS = re.compile(r"register|Worker")
_WORKER_KEYWORDS = ("worker_cls", "worker", "factory", "worker_factory", "draft_worker_factory")


def _registration_call(node: cst.Call, resolver: Resolver) -> bool:
    """`register_…algo…(...)`, or `X.register(...)` where X is (an import alias of) a `Spec…Algo…` class."""
    name = last_name(node.func)
    if name is None or not _REGISTER.match(name):
        return False
    if name == "register":
        receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
        if receiver is None:
            return False
        spelled = (last_name(receiver) or "", (resolver.resolve(receiver) or "").rpartition(".")[2])
        return any(_ALGO_CLASS.search(n) for n in spelled)
    return True


def _literal_name(node: cst.Call) -> str | None:
    for arg in node.args:
        if arg.keyword is None:
            return string_value(arg.value)
        if arg.keyword.value == "name":
            return string_value(arg.value)
    return None


class _Visitor(ScopedVisitor):
    def __init__(self, resolver: Resolver, hits: list[int] | None = None) -> None:
        super().__init__(resolver, hits)
        self.out: list = []
        self._decorated: set[int] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool | None:
        for decorator in node.decorators:
            call = decorator.decorator
            if isinstance(call, cst.Call) and _registration_call(call, self.r):
                self._decorated.add(id(call))
                self._add(
                    call, worker=f"{self.r.module_name}.{self._qual()}.{node.name.value}".replace("..", "."), node=call
                )
        super().visit_FunctionDef(node)
        workers = []
        fallthrough = None
        for statement in body_statements(node.body):
            found = statement_workers(self.r, statement)
            workers.extend(found)
            if (
                found
                and isinstance(statement, cst.SimpleStatementLine)
                and any(isinstance(s, cst.Return) for s in statement.body)
            ):
                fallthrough = found[-1]
        if workers and any(isinstance(n, cst.Return) for n in _returns(node)):
            self.out.append(
                WorkerFactory(
                    **vars(self.r.at(node)), qualname=self.function, workers=tuple(workers), fallthrough=fallthrough
                )
            )
        return None

    def visit_Call(self, node: cst.Call) -> bool | None:
        if id(node) not in self._decorated and _registration_call(node, self.r):
            worker = None
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in _WORKER_KEYWORDS:
                    worker = self.r.resolve(arg.value) or dotted(arg.value)
            if worker is None:
                positional = [a for a in node.args if a.keyword is None]
                if len(positional) >= 2 and isinstance(positional[1].value, (cst.Name, cst.Attribute)):
                    worker = self.r.resolve(positional[1].value)
            self._add(node, worker=worker, node=node)
        return None

    def _add(self, call: cst.Call, worker: str | None, node: cst.Call) -> None:
        name = _literal_name(call)
        if name is None:
            if self.function == "<module>" or id(call) in self._decorated:  # not a helper forwarding its parameter
                receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
                self.out.append(
                    UnreadRecord(
                        **vars(self.r.at(node)),
                        what="registration",
                        name=self.r.text(call.func),
                        reason="the algorithm name is not a string literal",
                        receiver=self.r.resolve(receiver) if receiver is not None else None,
                    )
                )
            return
        flags: tuple[str, ...] = ()
        aliases: tuple[str, ...] = ()
        spec_class = None
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "spec_class":
                spec_class = self.r.resolve(arg.value) or dotted(arg.value) or self.r.text(arg.value)
            if arg.keyword is not None and arg.keyword.value == "flags":
                flags = tuple(v.upper() for v in string_values(arg.value) or ())
            if arg.keyword is not None and arg.keyword.value == "aliases":
                aliases = tuple(v.upper() for v in string_values(arg.value) or ())
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        self.out.append(
            Registration(
                **vars(self.r.at(node)),
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


def _returns(function: cst.FunctionDef) -> list:
    return [n for n in walk_no_defs(function) if isinstance(n, cst.Return)]


class RegistrationExtractor:
    name = "spec_registrations"
    trigger = REGISTRATION_TRIGGER
    version = 3  # 3: `spec_class=`; 2: a receiver imported under another name
    metadata = (meta.PositionProvider,)

    def extract(self, wrapper: meta.MetadataWrapper, context) -> tuple:
        hits = hit_lines(source_text(wrapper, context), _HITS)
        visitor = _Visitor(Resolver.for_context(wrapper, context), hits)
        wrapper.visit(visitor)
        return tuple(visitor.out)
