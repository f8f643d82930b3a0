"""Alias resolvers: functions that turn an accepted spelling of an algorithm into its member name.

The form (SGLang 0.5.12 `server_args.py`, 0.5.13+ `arg_groups/speculative_hook.py`)::

    def _resolve_speculative_algorithm_alias(speculative_algorithm, ...):
        if speculative_algorithm == "NEXTN" or speculative_algorithm == "EAGLE":
            if is_gemma4_draft:
                return "FROZEN_KV_MTP"
            return "EAGLE"
        return speculative_algorithm

A function counts as a resolver when it returns one of its parameters unchanged on some path (the
identity fall-through) and that parameter is named like an algorithm; each `if` on that parameter
(`==` literals joined by `or`, or `in` a tuple of literals) whose body ends in `return "LITERAL"`
maps the other literals to that one (`NEXTN -> EAGLE`). Returns under a further condition inside
the body (`FROZEN_KV_MTP` above) are not the default and are not recorded.

The other alias forms are read elsewhere: `if x == "NEXTN": x = "EAGLE"` (dispatch), registration
`aliases=(...)` (registrations), and `if upper in _RESERVED_ALIASES: return cls.EAGLE` with the table
(algorithm_class).
"""

from __future__ import annotations

import ast
import re

from sgl_scan.analyzer.extractors._ast import Resolver, Source, string_value, string_values
from sgl_scan.analyzer.extractors._text import Trigger
from sgl_scan.analyzer.extractors.records import AliasResolver

_ALGO_PARAM = re.compile(r"(?i)algo")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = function.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def _returns_name(function: ast.AST, name: str) -> bool:
    """Whether some `return <name>` is in the function (not in nested definitions)."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and node.value.id == name:
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _literals(test: ast.AST, name: str) -> tuple[str, ...] | None:
    """The literals `test` compares `name` with: `name == "A" or name == "B"`, `name in ("A", "B")`."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        out: list[str] = []
        for value in test.values:
            found = _literals(value, name)
            if found is None:
                return None
            out.extend(found)
        return tuple(out)
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    left, right, op = test.left, test.comparators[0], test.ops[0]
    if isinstance(right, ast.Name) and right.id == name and isinstance(op, ast.Eq):
        left, right = right, left
    if not (isinstance(left, ast.Name) and left.id == name):
        return None
    if isinstance(op, ast.Eq):
        literal = string_value(right)
        return (literal,) if literal is not None else None
    if isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        return string_values(right)
    return None


def _ifs(body: list[ast.stmt]):
    """`if` statements of a function body, `elif`s included (not inside nested definitions)."""
    for statement in body:
        if isinstance(statement, ast.If):
            yield statement
            yield from _ifs(statement.body)
            yield from _ifs(statement.orelse)
        elif isinstance(statement, (ast.With, ast.AsyncWith, ast.Try, ast.For, ast.While)):
            yield from _ifs(statement.body)


class _Finder:
    def __init__(self, resolver: Resolver) -> None:
        self.r = resolver
        self.out: list[AliasResolver] = []

    def scan(self, body: list[ast.stmt], prefix: str) -> None:
        for statement in body:
            if isinstance(statement, _FUNCTIONS):
                self.function(statement, f"{prefix}{statement.name}")
            elif isinstance(statement, ast.ClassDef):
                self.scan(statement.body, f"{prefix}{statement.name}.")

    def function(self, function: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str) -> None:
        for name in _parameters(function):
            if not _ALGO_PARAM.search(name) or not _returns_name(function, name):
                continue
            for node in _ifs(function.body):
                literals = _literals(node.test, name)
                last = node.body[-1] if node.body else None
                target = string_value(last.value) if isinstance(last, ast.Return) else None
                if not literals or target is None:
                    continue
                aliases = tuple(dict.fromkeys(v.upper() for v in literals if v.upper() != target.upper()))
                if aliases:
                    self.out.append(
                        AliasResolver(
                            **vars(self.r.at(node)),
                            aliases=aliases,
                            target=target.upper(),
                            function=f"{self.r.module_name}.{qualname}",
                        )
                    )


class AliasResolverExtractor:
    name = "spec_alias_resolvers"
    version = 1
    parser = "ast"
    trigger = Trigger(r"return\s+spec\w*algo", r"return\s+algo")
    metadata = ()

    def extract(self, tree: ast.Module, context) -> tuple:
        finder = _Finder(Resolver(tree, Source.of(context), context.module))
        finder.scan(tree.body, "")
        return tuple(finder.out)
