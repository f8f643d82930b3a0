"""The HTML report: self-contained, escaped, linked; rendered in a real headless Chromium."""

from __future__ import annotations

import dataclasses
import re

import pytest

from sgl_scan.reports import render, render_diff
from tests.reports import fixtures as fx
from tests.reports.browser import Elements, dump_dom, screenshot
from tests.reports.diff_fixtures import sample_diff


def test_page_is_self_contained():
    page = render(fx.report(), "html")
    urls = re.findall(r'\s(?:src|href)="([^"]*)"', page) + re.findall(r"url\(([^)]*)\)", page)
    assert urls and all(u.startswith("#") for u in urls), [u for u in urls if not u.startswith("#")]
    assert "<script" not in page.replace("&lt;script", "")
    assert "default-src 'none'" in page  # the browser itself refuses anything external


def test_source_text_is_escaped():
    page = render(fx.report(), "html")
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_findings_link_to_their_lines_and_rules():
    dom = Elements(render(fx.report(), "html"))
    ids = dom.ids()
    links = [a["href"][1:] for t, a in dom.tags if t == "a" and a.get("href", "").startswith("#")]
    assert all(target in ids for target in links), sorted(set(links) - ids)
    assert {"finding-1", "finding-1-L3100", "finding-2-L6", "finding-3-L6", "rule-SGL301", "rule-SGL401"} <= ids
    focus = [a for t, a in dom.tags if t == "span" and "focus" in (a.get("class") or "")]
    assert [a["id"] for a in focus] == ["finding-2-L6", "finding-3-L6"]


def test_findings_are_grouped_worst_first_and_many_infos_fold():
    page = render(fx.report(), "html")
    order = [page.index(f'<summary><span class="pill {sev}">') for sev in ("error", "warning", "info")]
    assert order == sorted(order)
    assert page.count("<details class=\"severity-group\" open>") == 3
    many = tuple(dataclasses.replace(fx.findings()[1], line=i % 9 + 1, fingerprint=f"fp{i}") for i in range(25))
    page = render(fx.report(findings=fx.findings()[:1] + many), "html")
    assert page.count("<details class=\"severity-group\" open>") == 1  # the warning; 25 infos folded
    assert page.count('<div class="finding"') == 26


def test_graph_nodes_link_to_dispatch_site_rows():
    dom = Elements(render(fx.report(), "html"))
    svg_links = [a["href"][1:] for t, a in dom.tags if t == "a" and a.get("href", "").startswith("#site-")]
    assert len(svg_links) == 7 and set(svg_links) <= dom.ids()  # 4 worker branches, 3 other functions


def test_a_finding_without_source_says_so():
    page = render(fx.report(sources=None), "html")
    assert page.count("source not included in this report") == 3


@pytest.mark.slow
def test_report_in_headless_chromium(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render(fx.report(), "html"), encoding="utf-8")
    rendered = dump_dom(page, tmp_path)
    assert rendered.console == ()
    dom = Elements(rendered.dom)
    assert dom.count("table") >= 6  # algorithms, predicates, hooks, dispatch, d2t kinds, not analysed
    assert dom.count("svg", "dispatch-graph") == 1
    assert dom.count("g", "node-algorithm") == 6 and dom.count("g", "node-worker") == 4
    assert dom.count("div", "finding") == 3
    assert dom.count("td", "yes") == sum(len(p.members) for p in fx.inventory().predicates)
    width, height = screenshot(page, tmp_path, tmp_path / "report.png")
    assert (width, height) == (1400, 2400)
    assert (tmp_path / "report.png").stat().st_size > 50_000  # a rendered page, not a blank one


@pytest.mark.slow
def test_diff_in_headless_chromium(tmp_path):
    page = tmp_path / "diff.html"
    page.write_text(render_diff(sample_diff(), "html"), encoding="utf-8")
    rendered = dump_dom(page, tmp_path)
    assert rendered.console == ()
    dom = Elements(rendered.dom)
    assert dom.count("table") == 7  # 5 categories, new and resolved findings
    assert dom.count("span", "added") == 2 and dom.count("span", "moved") == 2


@pytest.mark.slow
def test_console_errors_are_caught(tmp_path):
    """The console check can fail: a page that logs an error is reported."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><script>console.error('sentinel-7f3a')</script></body></html>")
    rendered = dump_dom(page, tmp_path)
    assert any("sentinel-7f3a" in line for line in rendered.console), rendered.console
