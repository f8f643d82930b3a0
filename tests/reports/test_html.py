"""The HTML report: self-contained, escaped, linked; rendered in a real headless Chromium."""

from __future__ import annotations

import dataclasses
import re

import pytest

from sgl_scan.reports import render, render_diff
from tests.reports import fixtures as fx
from tests.reports.browser import (
    LOCATION_PROBE,
    Elements,
    dump_dom,
    hidden_locations,
    overflowing_tables,
    probe,
    screenshot,
)
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
    assert dom.count("g", "node-algorithm") == 6 and dom.count("g", "node-worker") == 5
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


# ---- fitting 1,400 px, the graph's focus and the site filters ------------------------------------

LONG = "sglang.srt.speculative." + ".".join(f"very_long_module_name_{i}" for i in range(8))


def wide_report():
    """The hand-built report with the widest text a tree can put in each table: long dotted names,
    long expressions, long choice lists. A table that cannot fit must still show its locations."""
    inv = fx.inventory()
    hooks = tuple(dataclasses.replace(h, name=h.name + "_" + "x" * 90, choices=h.choices + "_" + "Y" * 90,
                                      values=tuple(f"VALUE_{i}_{'Z' * 20}" for i in range(6)))
                  for h in inv.choice_hooks)
    d2t = tuple(dataclasses.replace(s, function=f"{LONG}.{s.function}", detail=s.detail + " + " + "w" * 140)
                for s in inv.d2t_sites)
    sites = tuple(dataclasses.replace(s, function=f"{LONG}.{s.function}", detail=s.detail + "_" + "q" * 120)
                  for s in inv.dispatch_sites)
    return fx.report(inventory=dataclasses.replace(inv, choice_hooks=hooks, d2t_sites=d2t, dispatch_sites=sites))


def _locations_at_1400(html: str, tmp_path) -> dict:
    measured, rendered = probe(html, LOCATION_PROBE, tmp_path)
    assert rendered.console == ()  # the page's own policy still refuses nothing it asks for
    assert measured["width"] == 1400
    return measured


@pytest.mark.slow
def test_every_table_shows_its_location_column_at_1400_px(tmp_path):
    measured = _locations_at_1400(render(wide_report(), "html"), tmp_path)
    sections = {c["section"] for c in measured["cells"]}
    assert {"algorithms", "hooks", "dispatch", "d2t", "not-analysed"} <= sections, sections
    # algorithms (defined at, worker chosen at), hooks, dispatch sites, d2t sites, parse error and skipped file
    assert len(measured["cells"]) == 6 + 5 + 3 + 7 + 4 + 2
    assert hidden_locations(measured) == []
    assert overflowing_tables(measured) == []
    assert measured["page_width"] <= 1400  # the page itself never scrolls sideways
    width, _ = screenshot(write(tmp_path / "wide.html", render(wide_report(), "html")), tmp_path,
                          tmp_path / "wide.png")
    assert width == 1400


@pytest.mark.slow
def test_a_table_too_wide_to_fit_scrolls_in_its_own_box_with_its_locations_pinned(tmp_path):
    """A word no layout can break (here a 300-letter hook kind) makes the table wider than the page:
    it scrolls inside its own box, and scrolled to its far end its location column is still in view."""
    inv = fx.inventory()
    hooks = tuple(dataclasses.replace(h, kind="k" * 300) for h in inv.choice_hooks)
    html = render(fx.report(inventory=dataclasses.replace(inv, choice_hooks=hooks)), "html")
    measured = _locations_at_1400(html, tmp_path)
    hooks_table = next(t for t in measured["tables"] if t["section"] == "hooks")
    assert hooks_table["right"] > 1400 and hooks_table["own_scroller"]
    assert overflowing_tables(measured) == [] and hidden_locations(measured) == []
    assert measured["page_width"] <= 1400
    scrolled, _ = probe(html, SCROLL_TO_THE_RIGHT + LOCATION_PROBE, tmp_path)
    assert scrolled["scrolled"] >= 1  # the hooks box scrolled
    hooks_cells = [c for c in scrolled["cells"] if c["section"] == "hooks"]
    assert len(hooks_cells) == 3 and hidden_locations(scrolled) == []


SCROLL_TO_THE_RIGHT = r"""
let scrolledBoxes = 0;
document.querySelectorAll('.table-scroll').forEach(box => {
  if (box.scrollWidth > box.clientWidth) { box.scrollLeft = box.scrollWidth; scrolledBoxes += box.scrollLeft > 0; }
});
const reportMeasured = report;
report = value => reportMeasured(Object.assign(value, {scrolled: scrolledBoxes}));
"""


@pytest.mark.slow
def test_the_location_check_fails_on_a_table_that_cuts_its_locations_off(tmp_path):
    """The measurement can fail: a table whose location column lies past 1,400 px is reported."""
    page = render(fx.report(), "html").replace(
        "</main>", '<section id="cut"><table><tr><td style="padding-left:1500px">sglang/srt/x.py:1</td></tr>'
                   "</table></section></main>")
    measured = _locations_at_1400(page, tmp_path)
    assert [c for c in hidden_locations(measured) if c.startswith("cut ")], measured["cells"][-1]


@pytest.mark.slow
def test_diff_tables_show_their_locations_at_1400_px(tmp_path):
    measured = _locations_at_1400(render_diff(sample_diff(), "html"), tmp_path)
    assert len(measured["cells"]) >= 10
    assert hidden_locations(measured) == [] and overflowing_tables(measured) == []


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


# Checks one radio button of the graph's focus and reads what stays visible.
FOCUS_PROBE = r"""
// the page fades greyed shapes over .15 s; read the end state, not a frame of the fade (a loaded
// machine may lay out mid-transition)
document.querySelectorAll('svg.dispatch-graph .node, svg.dispatch-graph .edge').forEach(el => {
  el.style.transition = 'none';
});
const pick = document.getElementById(%s);
pick.checked = true;
const shapes = [...document.querySelectorAll('svg.dispatch-graph .node, svg.dispatch-graph .edge')].map(el => ({
  kind: el.classList.contains('node') ? 'node' : 'edge',
  title: el.querySelector('title').textContent,
  opacity: parseFloat(getComputedStyle(el).opacity),
}));
report({checked: pick.checked, shapes: shapes});
"""


def _focus(tmp_path, radio_id: str) -> dict[tuple[str, str], float]:
    measured, rendered = probe(render(fx.report(), "html"), FOCUS_PROBE % f"'{radio_id}'", tmp_path)
    assert rendered.console == () and measured["checked"]
    return {(s["kind"], s["title"]): s["opacity"] for s in measured["shapes"]}


@pytest.mark.slow
def test_picking_an_algorithm_greys_every_other_path(tmp_path):
    from sgl_scan.reports.html import algorithm_keys

    keys = algorithm_keys(fx.inventory())
    everything = _focus(tmp_path, "gf-all")
    assert everything and min(everything.values()) >= 0.5  # nothing greyed out
    eagle3 = _focus(tmp_path, f"gf-{keys['EAGLE3']}")
    shown = {k for k, opacity in eagle3.items() if opacity >= 0.5}
    greyed = {k for k, opacity in eagle3.items() if opacity <= 0.15}
    assert shown | greyed == set(eagle3)
    worker = "sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2"
    assert {("node", "EAGLE3 (enum) at sglang/srt/speculative/spec_info.py:42"), ("node", worker),
            ("edge", "EAGLE3 -> create_worker · is_eagle: is_eagle"),
            ("edge", "create_worker · is_eagle -> EAGLEWorkerV2: creates if not server_args.enable_multi_layer_eagle"),
            ("edge", "EAGLE3 -> ServerArgs._handle_speculative_decoding: \"EAGLE3\"")} <= shown
    assert ("node", "EAGLE (enum) at sglang/srt/speculative/spec_info.py:41") in greyed
    assert ("edge", "EAGLE -> create_worker · is_eagle: is_eagle") in greyed
    assert ("edge", "NGRAM -> create_worker · is_ngram: is_ngram") in greyed
    assert ("node", "sglang.srt.speculative.ngram_worker.NGRAMWorker") in greyed


# Selects filter options (by id) and reads which dispatch-site rows stay visible.
FILTER_PROBE = r"""
const results = [];
for (const ids of %s) {
  document.querySelectorAll('#dispatch select').forEach(s => { s.selectedIndex = 0; });
  for (const id of ids) document.getElementById(id).selected = true;
  results.push([...document.querySelectorAll('#dispatch tbody tr')]
    .filter(tr => tr.getClientRects().length > 0)
    .map(tr => tr.querySelector('td').textContent.trim()));
}
report(results);
"""


@pytest.mark.slow
def test_dispatch_sites_filter_by_algorithm_via_and_file(tmp_path):
    import json

    from sgl_scan.reports.html import algorithm_keys

    inv = fx.inventory()
    keys = algorithm_keys(inv)
    files = sorted({s.location.path for s in inv.dispatch_sites})
    vias = sorted({s.via for s in inv.dispatch_sites})
    choices = [
        [],
        [f"sa-{keys['EAGLE3']}"],
        [f"sa-{keys['EAGLE3']}", f"sv-{vias.index('predicate')}"],
        [f"sf-{files.index(fx.SCHED)}"],
        [f"sa-{keys['NGRAM']}", f"sf-{files.index(fx.SCHED)}"],
        [f"sv-{vias.index('member')}"],
    ]
    measured, rendered = probe(render(fx.report(), "html"), FILTER_PROBE % json.dumps(choices), tmp_path)
    assert rendered.console == ()

    def expect(alg=None, via=None, path=None):
        return sorted(str(s.location) for s in inv.dispatch_sites
                      if (alg is None or alg in s.algorithms) and (via is None or s.via == via)
                      and (path is None or s.location.path == path))

    expected = [expect(), expect("EAGLE3"), expect("EAGLE3", "predicate"), expect(path=fx.SCHED),
                expect("NGRAM", path=fx.SCHED), expect(via="member")]
    assert [sorted(rows) for rows in measured] == expected
    assert len(expected[0]) == 7 and len(expected[2]) == 3 and expected[4] == [f"{fx.SCHED}:512"]


def test_filters_and_focus_controls_name_only_numbers_in_css():
    """Algorithm names and paths are tree text: they appear escaped in labels, never inside <style>."""
    inv = fx.inventory()
    evil = '</style><script>alert(1)</script>'
    algs = tuple(dataclasses.replace(a, name=a.name + evil) if a.name == "EAGLE3" else a for a in inv.algorithms)
    sites = tuple(dataclasses.replace(s, algorithms=tuple(n + evil if n == "EAGLE3" else n for n in s.algorithms),
                                      location=dataclasses.replace(s.location, path=s.location.path + evil))
                  for s in inv.dispatch_sites)
    page = render(fx.report(inventory=dataclasses.replace(inv, algorithms=algs, dispatch_sites=sites)), "html")
    style = page[page.index("<style>"):page.index("</style>")]
    assert "alert" not in style and "EAGLE" not in style and "sglang/" not in style
    for i in range(len(inv.algorithms)):  # a button and a hover rule per algorithm (hover: no headless check)
        assert f"#graph:has(#gf-{i}:checked)" in style and f".node-algorithm.a-{i}:hover" in style
    assert "<script" not in page and page.count("&lt;script&gt;alert(1)&lt;/script&gt;") > 5
    dom = Elements(page)
    assert dom.count("select") == 3 and dom.count("input") == len(inv.algorithms) + 1
    assert not any(t == "form" for t, _ in dom.tags)  # controls only restyle the page; nothing is submitted


def test_long_code_wraps_between_its_parts_and_stays_escaped():
    from sgl_scan.reports.templating import breakable

    assert str(breakable('a.b/c(<x>&"y",z[1])')) == "a.<wbr>b/<wbr>c(<wbr>&lt;x&gt;&amp;&#34;y&#34;,<wbr>z[<wbr>1])"
    page = render(wide_report(), "html")
    assert f"sglang.<wbr>srt.<wbr>speculative.<wbr>very_long_module_name_0.<wbr>" in page
