"""`child_nodes` gives exactly `ast.iter_child_nodes`'s nodes, in its order, on real SGLang code."""

from __future__ import annotations

import ast

import pytest

from sgl_scan.analyzer.astnodes import child_nodes
from sgl_scan.analyzer.parse import decode_source
from sgl_scan.analyzer.pipeline import discover

SAMPLE = """
from a import (b as c, d)
import e.f as g
global_x: int = 1
def h(p, /, q=1, *r, s, t=2, **u) -> None:
    global w
    nonlocal_y = [i async for i in z if i] + {k: v for k, v in m} + {**n, None: 1}
    del a[1:2, ...], b.c
    x = f"{p!r:>{q}}" if -p else not q
    match p:
        case {"k": 1, **rest}: pass
        case P(a, b=[1, *others]) | None as y: pass
        case [1, 2, *_]: pass
    try:
        raise E from None
    except* (A, B) as err:
        assert err, "why"
    with o as (r1, r2), o2: yield lambda *a, k=1: (yield)
    return await x
@dec(1)
class K(Base, metaclass=M):
    v += 1; w = 2  # type: ignore[misc]
    async def f(self):
        async with a: pass
        async for i in b: continue
        while c: break
        else: x = a if b else c[::2]
"""


def _same_everywhere(tree: ast.AST) -> int:
    count = 0
    for node in ast.walk(tree):
        assert child_nodes(node) == list(ast.iter_child_nodes(node)), ast.dump(node)[:200]
        count += 1
    return count


def test_child_nodes_is_iter_child_nodes_on_every_node_type():
    assert _same_everywhere(ast.parse(SAMPLE, type_comments=True)) > 200
    hand_made = ast.Tuple(elts=[ast.Constant(1), None])  # no ctx: a node built by hand may lack fields
    assert child_nodes(hand_made) == list(ast.iter_child_nodes(hand_made))


@pytest.mark.slow
def test_child_nodes_is_iter_child_nodes_on_0_5_23(sglang_0_5_23):
    count = 0
    for rel in discover(sglang_0_5_23)[::3]:
        count += _same_everywhere(ast.parse(decode_source((sglang_0_5_23 / rel).read_bytes())))
    assert count > 500_000


def test_inner_nodes_are_child_nodes_less_contexts_and_operators():
    from sgl_scan.analyzer.astnodes import inner_nodes

    markers = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)
    skipped = 0
    for node in ast.walk(ast.parse(SAMPLE + "z = not a or b + c < d\nz += 1\n")):
        every = list(ast.iter_child_nodes(node))
        assert inner_nodes(node) == [n for n in every if not isinstance(n, markers)], ast.dump(node)[:200]
        skipped += len(every) - len(inner_nodes(node))
    assert skipped > 50
