"""The Markdown report: compact, valid tables, nothing dropped."""

from __future__ import annotations

import dataclasses
import re

from sgl_scan.reports import render, render_diff
from sgl_scan.reports.markdown import OPEN_FINDINGS
from sgl_scan.reports.templating import md_code
from tests.reports import fixtures as fx
from tests.reports.diff_fixtures import sample_diff


def _table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def test_title_counts_and_errors_first():
    text = render(fx.report(), "markdown")
    assert text.splitlines()[0] == "### sgl-scan: SGLang 0.5.23: 1 error, 1 warning, 1 info"
    rows = [r for r in _table_rows(text) if "SGL" in r]
    assert [r.split("|")[2].strip() for r in rows] == ["SGL401", "SGL302", "SGL301"]


def test_pipes_and_backticks_cannot_break_a_table():
    odd = dataclasses.replace(fx.findings()[0], message="a | b `c` d")
    text = render(fx.report(findings=(odd,)), "markdown")
    row = next(r for r in _table_rows(text) if "SGL302" in r)
    assert "a \\| b \\`c\\` d" in row  # backticks in a message are text, not code (issue 20: Markdown is escaped)
    cells = re.split(r"(?<!\\)\|", row)[1:-1]
    assert [c.strip() for c in cells] == ["warning", "SGL302", f"`{fx.WORKER}:6`", "a \\| b \\`c\\` d"]
    assert md_code("x`y") == "``x`y``"


def test_many_findings_fold_but_all_are_listed():
    many = tuple(dataclasses.replace(fx.findings()[1], line=i, fingerprint=f"fp{i}") for i in range(1, 31))
    text = render(fx.report(findings=many), "markdown")
    assert "<details><summary>10 more findings</summary>" in text
    assert OPEN_FINDINGS == 20
    assert all(f"llama_eagle3.py:{i}`" in text for i in range(1, 31))


def test_no_findings():
    assert "no findings" in render(fx.report(findings=()), "markdown").splitlines()[0]


def test_diff_markdown():
    text = render_diff(sample_diff(), "markdown")
    assert text.startswith("### sgl-scan diff: pip:sglang==0.5.20 → ssh:root@gpu-box:/root/sglang/python")
    assert "**Algorithms**" in text and "| ➕ added | `UNO` |" in text
    assert "members +UNO -NGRAM" in text
    assert "**New findings**" in text and "**Resolved findings**" in text


def test_a_long_diff_category_is_folded():
    diff = sample_diff()
    extra = tuple(dataclasses.replace(diff.changes[0], key=f"ALG{i}") for i in range(20))
    text = render_diff(dataclasses.replace(diff, changes=extra + diff.changes), "markdown")
    assert "<details><summary>Algorithms: 23 changes</summary>" in text
    assert "**Predicates**" in text  # short categories stay open
    assert all(f"`ALG{i}`" in text for i in range(20))
