"""Which functions a function runs, in source order, including those it is handed as values.

`FunctionRefs` (one per function that has any): every function it calls *or passes as an argument*
(`run_hook(handle_model_specific_adjustments, server_args)`, `run_post_process_pass(server_args,
_deepseek_spec_moe_resolution)`: the server-args pipeline of SGLang 0.5.17+ runs its steps so),
resolved through the file's imports where it can be; the module-level containers it appends a
parameter to (a registrar: `_MODEL_OVERRIDE_FNS.setdefault(arch, []).append(fn)`); and those it
loops over (a collector: `for fn in model_override_base._MODEL_OVERRIDE_FNS.get(arch, ())`).
`analyzer/normalization.py` reads them to tell what runs before the algorithm name is normalised.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from sgl_scan.analyzer.extractors._ast import Resolver, Source, last_name
from sgl_scan.analyzer.extractors._text import Trigger
from sgl_scan.analyzer.extractors.records import At

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_CONSTANT = re.compile(r"^_?[A-Z][A-Z0-9_]{2,}$")


@dataclass(frozen=True)
class FunctionRefs(At):
    function: str  # qualified name (module + qualname)
    refs: tuple[tuple[int, str], ...]  # (line, resolved dotted name or text) of functions run, in order
    appends: tuple[str, ...] = ()  # module-level containers a parameter (or a tuple holding one) is appended to
    iterates: tuple[str, ...] = ()  # module-level containers looped over


def _container(node: ast.AST) -> str | None:
    """`X`, `mod.X`, `X.get(...)`, `X.items()`, `X[k]`, `X.setdefault(k, [])`: the constant's name."""
    for _ in range(4):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            break
    name = last_name(node)
    return name if name and _CONSTANT.match(name) else None


class _Refs:
    def __init__(self, resolver: Resolver) -> None:
        self.r, self.out = resolver, []

    def module(self, tree: ast.Module) -> None:
        prefix = self.r.module_name + "."
        stack: list[tuple[ast.AST, str, str | None]] = [(node, prefix, None) for node in tree.body]
        while stack:
            node, scope, owner = stack.pop()
            if isinstance(node, _FUNCTIONS):
                self.function(node, scope + node.name, owner)
                stack.extend((child, f"{scope}{node.name}.<locals>.", None) for child in node.body)
            elif isinstance(node, ast.ClassDef):
                stack.extend((child, f"{scope}{node.name}.", f"{scope}{node.name}.") for child in node.body)
            elif isinstance(node, (ast.If, ast.Try)):
                stack.extend((child, scope, owner) for child in (*node.body, *node.orelse) if isinstance(child, ast.stmt))

    def name_of(self, node: ast.AST, owner: str | None) -> str | None:
        """`self.m` inside a class: that class's method; else the name through the file's imports."""
        if owner and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            return owner + node.attr
        return self.r.resolve(node)

    def function(self, node: ast.AST, qualname: str, owner: str | None = None) -> None:
        args = node.args
        params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        refs: list[tuple[int, int, str]] = []
        appends: list[str] = []
        iterates: list[str] = []
        stack = list(ast.iter_child_nodes(node))
        while stack:
            current = stack.pop()
            if isinstance(current, (*_FUNCTIONS, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(current, ast.Call):
                func = current.func
                if isinstance(func, (ast.Name, ast.Attribute)):
                    refs.append((current.lineno, current.col_offset, self.name_of(func, owner) or self.r.text(func)))
                for arg in current.args:
                    if isinstance(arg, (ast.Name, ast.Attribute)) and not (isinstance(arg, ast.Name) and arg.id in params):
                        resolved = self.name_of(arg, owner)
                        if resolved:
                            refs.append((arg.lineno, arg.col_offset, resolved))
                if isinstance(func, ast.Attribute) and func.attr == "append" and current.args:
                    value = current.args[0]
                    names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
                    container = _container(func.value)
                    if container and names & params:
                        appends.append(container)
            elif isinstance(current, (ast.For, ast.AsyncFor, ast.comprehension)):
                container = _container(current.iter)
                if container:
                    iterates.append(container)
            stack.extend(ast.iter_child_nodes(current))
        # registrars nested in a decorator factory append in their inner function
        for inner in ast.walk(node):
            if inner is not node and isinstance(inner, _FUNCTIONS):
                for call in ast.walk(inner):
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "append" \
                            and call.args:
                        container = _container(call.func.value)
                        inner_params = {a.arg for a in (*inner.args.posonlyargs, *inner.args.args)}
                        if container and {n.id for n in ast.walk(call.args[0]) if isinstance(n, ast.Name)} & inner_params:
                            appends.append(container)
        if refs or appends or iterates:
            refs.sort()
            self.out.append(FunctionRefs(**vars(self.r.at(node)), function=qualname,
                                         refs=tuple((line, name) for line, _col, name in refs),
                                         appends=tuple(dict.fromkeys(appends)), iterates=tuple(dict.fromkeys(iterates))))


class SequenceExtractor:
    name = "spec_call_sequence"
    version = 2  # 2: `self.method` is the enclosing class's method
    parser = "ast"
    metadata = ()
    trigger = Trigger(
        r"\bhandle_\w*speculative\w*",  # the server-args pipeline and what it runs
        r"\brun_\w+\(\s*\w+\s*,\s*\w+\s*\)",  # steps handed to a runner
        r"\b_?[A-Z][A-Z0-9_]{2,}(?:\.setdefault\([^)\n]*\))?\.append\(",  # registrars
        r"(?m)^\s*for\s+[\w\s,()]+\s+in\s+[\w.]*\b_?[A-Z][A-Z0-9_]{2,}\b",  # collectors
    )

    def extract(self, tree: ast.Module, context) -> tuple:
        if self.trigger.search(context.text) is None:  # the trigger is the scope of these facts, not only a filter
            return ()
        walker = _Refs(Resolver(tree, Source.of(context), context.module))
        walker.module(tree)
        return tuple(sorted(walker.out, key=lambda r: (r.line, r.column)))


__all__ = ["FunctionRefs", "SequenceExtractor"]
