"""The fast path (stdlib ast) gives exactly the facts of the full path (libcst) on real SGLang code."""

from __future__ import annotations

import dataclasses

import pytest

from sgl_scan.analyzer.parse import decode_source, facts_from_ast
from sgl_scan.analyzer.parse_cst import facts_from_cst
from sgl_scan.analyzer.pipeline import discover

pytestmark = pytest.mark.slow

STRIDE = 17  # a deterministic sample: every 17th file of sglang/srt, plus non-ASCII files
NON_ASCII = 20  # columns are characters: files with non-ASCII text check the byte -> character mapping


def _sample(tree):
    paths = discover(tree)
    chosen = set(paths[::STRIDE])
    non_ascii = [rel for rel in paths[3::STRIDE // 2] if not (tree / rel).read_bytes().isascii()]
    chosen.update(non_ascii[:NON_ASCII])
    assert len(non_ascii) >= NON_ASCII
    return sorted(chosen)


def _first_difference(a, b):
    for field in ("imports", "classes", "functions", "assignments", "module_calls", "all_names", "parse_error"):
        x, y = getattr(a, field), getattr(b, field)
        if x != y:
            if isinstance(x, tuple) and isinstance(y, tuple):
                for p, q in zip(x, y):
                    if p != q:
                        return f"{field}:\n  ast {p}\n  cst {q}"
                return f"{field}: {len(x)} records vs {len(y)}"
            return f"{field}: {x!r} vs {y!r}"
    return "?"


def test_ast_and_libcst_facts_are_identical_on_0_5_23(sglang_0_5_23):
    sample = _sample(sglang_0_5_23)
    assert len(sample) > 130
    records = 0
    for rel in sample:
        text = decode_source((sglang_0_5_23 / rel).read_bytes())
        fast = dataclasses.replace(facts_from_ast(rel, "h", text), source="")
        full = dataclasses.replace(facts_from_cst(rel, "h", text), source="")
        assert fast == full, f"{rel}: {_first_difference(fast, full)}"
        records += len(fast.functions) + sum(len(f.calls) for f in fast.functions) + len(fast.imports)
    assert records > 10_000  # the sample is not trivially small
