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

from sgl_scan.analyzer.astnodes import inner_nodes
from sgl_scan.analyzer.extractors._ast import Resolver, Source, last_name
from sgl_scan.analyzer.extractors._text import OnOneLine, Trigger
from sgl_scan.analyzer.extractors.records import At

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_Function = ast.FunctionDef | ast.AsyncFunctionDef
_LEAVES = (
    ast.Name,
    ast.Constant,
    ast.alias,
    ast.Pass,
    ast.Break,
    ast.Continue,
)  # nothing under them is a call or a loop
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
    """One walk of the module: each node is seen once, with the function whose record it belongs to
    (the innermost `def` around it, unless a class or lambda body comes between) and every `def`
    around it (a registrar's append may sit in an inner function: a decorator factory)."""

    def __init__(self, resolver: Resolver) -> None:
        self.r = resolver
        self.out: list[FunctionRefs] = []

    def module(self, tree: ast.Module) -> None:
        owners = self._owners(tree)
        accs = {key: _Record(node) for key, (node, _qualname, _owner) in owners.items()}
        stack: list[tuple[ast.AST, _Record | None, tuple[_Record | frozenset, ...]]] = [(tree, None, ())]
        while stack:
            node, current, around = stack.pop()
            for child in inner_nodes(node):  # less expression contexts and operators
                if isinstance(child, _FUNCTIONS):
                    record = accs.get(id(child))
                    stack.append((child, record, (*around, record or _positional(child))))
                    continue
                if isinstance(child, (ast.ClassDef, ast.Lambda)):
                    stack.append((child, None, around))
                    continue
                if isinstance(child, _LEAVES):
                    continue
                if isinstance(child, ast.Call):
                    self._call(child, current, around, owners)
                elif current is not None and isinstance(child, (ast.For, ast.AsyncFor, ast.comprehension)):
                    container = _container(child.iter)
                    if container:
                        current.iterates.append(container)
                stack.append((child, current, around))
        for key, (node, qualname, _owner) in owners.items():
            record = accs[key]
            if record.refs or record.appends or record.iterates:
                record.refs.sort()
                self.out.append(
                    FunctionRefs(
                        **vars(self.r.at(node)),
                        function=qualname,
                        refs=tuple((line, name) for line, _col, name in record.refs),
                        appends=tuple(dict.fromkeys(record.appends)),
                        iterates=tuple(dict.fromkeys(record.iterates)),
                    )
                )

    def _owners(self, tree: ast.Module) -> dict[int, tuple[_Function, str, str | None]]:
        """id(def) -> (def, qualified name, enclosing class prefix) of the functions that get a record:
        those in the module, class and function bodies, through `if` and `try` (not loops or `with`)."""
        out: dict[int, tuple[_Function, str, str | None]] = {}
        prefix = self.r.module_name + "."
        stack: list[tuple[ast.AST, str, str | None]] = [(node, prefix, None) for node in tree.body]
        while stack:
            node, scope, owner = stack.pop()
            if isinstance(node, _FUNCTIONS):
                out[id(node)] = (node, scope + node.name, owner)
                stack.extend((child, f"{scope}{node.name}.<locals>.", None) for child in node.body)
            elif isinstance(node, ast.ClassDef):
                stack.extend((child, f"{scope}{node.name}.", f"{scope}{node.name}.") for child in node.body)
            elif isinstance(node, (ast.If, ast.Try)):
                stack.extend(
                    (child, scope, owner) for child in (*node.body, *node.orelse) if isinstance(child, ast.stmt)
                )
        return out

    def name_of(self, node: ast.AST, owner: str | None) -> str | None:
        """`self.m` inside a class: that class's method; else the name through the file's imports."""
        if (
            owner
            and isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            return owner + node.attr
        return self.r.resolve(node)

    def _call(self, call: ast.Call, current: "_Record | None", around: tuple, owners: dict) -> None:
        func = call.func
        if current is not None:
            owner = owners[id(current.node)][2]
            if isinstance(func, (ast.Name, ast.Attribute)):
                current.refs.append((call.lineno, call.col_offset, self.name_of(func, owner) or self.r.text(func)))
            for arg in call.args:
                if isinstance(arg, (ast.Name, ast.Attribute)) and not (
                    isinstance(arg, ast.Name) and arg.id in current.params
                ):
                    resolved = self.name_of(arg, owner)
                    if resolved:
                        current.refs.append((arg.lineno, arg.col_offset, resolved))
        if not (isinstance(func, ast.Attribute) and func.attr == "append" and call.args):
            return
        container = _container(func.value)
        if not container:
            return
        names = {n.id for n in ast.walk(call.args[0]) if isinstance(n, ast.Name)}
        if current is not None and names & current.params:
            current.appends.append(container)
        # a registrar nested in a decorator factory appends a parameter of an inner function
        for depth in range(1, len(around)):
            inner = around[depth]
            if names & (inner.positional if isinstance(inner, _Record) else inner):
                for outer in around[:depth]:
                    if isinstance(outer, _Record):
                        outer.appends.append(container)


def _positional(node: _Function) -> frozenset:
    return frozenset(a.arg for a in (*node.args.posonlyargs, *node.args.args))


class _Record:
    """What one function's record collects while the module is walked."""

    __slots__ = ("node", "params", "positional", "refs", "appends", "iterates")

    def __init__(self, node: _Function) -> None:
        args = node.args
        self.node = node
        self.params = frozenset(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
        self.positional = _positional(node)
        self.refs: list[tuple[int, int, str]] = []
        self.appends: list[str] = []
        self.iterates: list[str] = []


class SequenceExtractor:
    name = "spec_call_sequence"
    version = 3  # 2: `self.method` is the enclosing class's method; 3: one walk per module
    parser = "ast"
    metadata = ()
    trigger = Trigger(  # a word boundary before a leading literal is written as a look-behind after it
        OnOneLine(r"handle_(?<!\whandle_)\w*speculative"),  # the server-args pipeline and what it runs
        r"run_(?<!\wrun_)\w+\(\s*\w+\s*,\s*\w+\s*\)",  # steps handed to a runner
        OnOneLine(r"\b_?[A-Z][A-Z0-9_]{2,}(?:\.setdefault\([^)\n]*\))?\.append\("),  # registrars
        r"(?m)^\s*for\s+[\w\s,()]+\s+in\s+[\w.]*\b_?[A-Z][A-Z0-9_]{2,}\b",  # collectors
    )

    def extract(self, tree: ast.Module, context) -> tuple:
        if self.trigger.search(context.text) is None:  # the trigger is the scope of these facts, not only a filter
            return ()
        walker = _Refs(Resolver(tree, Source.of(context), context.module))
        walker.module(tree)
        return tuple(sorted(walker.out, key=lambda r: (r.line, r.column)))


__all__ = ["FunctionRefs", "SequenceExtractor"]
