"""`child_nodes(node)`: `ast.iter_child_nodes(node)` as a list, several times cheaper;
`inner_nodes(node)`: the same less expression contexts and operators.

The walkers of the per-file pass visit every node of every file, and `ast.iter_child_nodes` (two
generators and an `isinstance` per field) was a fifth of a cold scan. Here each node type's fields
are looked up once, without the fields that CPython's grammar (`Parser/Python.asdl`) types as
identifiers, strings, ints or constants, which never hold a node; what is left holds a node, None,
or a list of nodes and Nones. Same nodes, same order (tests/analyzer/test_astnodes.py compares the
two on every node of a real release).
"""

from __future__ import annotations

import ast

# fields typed identifier / string / int / constant in the grammar (never a node)
_NOT_NODES = frozenset(
    {
        "id",
        "attr",
        "arg",
        "name",
        "asname",
        "module",
        "level",
        "type_comment",
        "kind",
        "conversion",
        "is_async",
        "simple",
        "tag",
        "rest",
        "kwd_attrs",
        "lineno",
    }
)
_IDENTIFIER_LISTS = (ast.Global, ast.Nonlocal)  # `names`: identifiers (Import's `names` are alias nodes)
_CONSTANT_VALUE = (ast.Constant, ast.MatchSingleton)  # `value`: a constant

_FIELDS: dict[type, tuple[str, ...]] = {}
_INNER_FIELDS: dict[type, tuple[str, ...]] = {}
_MARKERS = frozenset({"ctx", "op", "ops"})  # Load/Store/Del, and the operators: leaves a walk can skip


def node_fields(t: type) -> tuple[str, ...]:
    """The fields of node type `t` that can hold child nodes, in `_fields` order (cached)."""
    fields = _FIELDS.get(t)
    if fields is None:
        fields = tuple(
            f
            for f in getattr(t, "_fields", ())
            if f not in _NOT_NODES
            and not (f == "names" and issubclass(t, _IDENTIFIER_LISTS))
            and not (f == "value" and issubclass(t, _CONSTANT_VALUE))
        )
        _FIELDS[t] = fields
    return fields


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The direct child nodes of `node`, exactly as `ast.iter_child_nodes` yields them."""
    fields = _FIELDS.get(type(node))
    if fields is None:
        fields = node_fields(type(node))
    out: list[ast.AST] = []
    append = out.append
    for f in fields:
        v = getattr(node, f, None)  # a node built by hand may lack a field
        if type(v) is list:
            for x in v:
                if x is not None:
                    append(x)
        elif v is not None:
            append(v)
    return out


def inner_nodes(node: ast.AST) -> list[ast.AST]:
    """`child_nodes(node)` without expression contexts (`Load()` ...) and operators (`Add()`, `Eq()`
    ...): for walks that act on neither (a quarter of the nodes of typical code)."""
    t = type(node)
    fields = _INNER_FIELDS.get(t)
    if fields is None:
        fields = _INNER_FIELDS[t] = tuple(f for f in node_fields(t) if f not in _MARKERS)
    # child_nodes' gathering loop, repeated rather than called: both run once per node of every walk
    out: list[ast.AST] = []
    append = out.append
    for f in fields:
        v = getattr(node, f, None)
        if type(v) is list:
            for x in v:
                if x is not None:
                    append(x)
        elif v is not None:
            append(v)
    return out


__all__ = ["child_nodes", "inner_nodes", "node_fields"]
