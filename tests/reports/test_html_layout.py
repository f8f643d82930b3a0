"""The HTML report puts what a reviewer acts on first and never breaks an identifier inside a word
(issue 29); the fleet matrix fits 1,400 px or scrolls with its host column pinned. Measured in
headless Chromium with the shared probe (tests/reports/browser.py)."""

from __future__ import annotations

import dataclasses

import pytest

from sgl_scan.reports import render
from sgl_scan.reports.fleet import render_fleet
from tests.reports import fixtures as fx
from tests.reports.browser import Elements, probe, screenshot
from tests.reports.test_html import wide_report

# Every word (a run of letters, digits and `_`) inside code-like text: the line boxes it occupies.
# A word on two lines was broken inside itself (`DFlashWorkerV|2`); breaks between a name's parts
# (`<wbr>` after `.`, `/`, ...) or at spaces are between words and allowed.
MIDWORD_PROBE = r"""
document.querySelectorAll('details').forEach(d => { d.open = true; });
const broken = [];
for (const el of document.querySelectorAll('td.code, td .mono, td.mono, dl.meta dd, .file-title, a.loc')) {
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const m of node.textContent.matchAll(/[A-Za-z0-9_]{2,}/g)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (tops.size > 1) broken.push(m[0]);
    }
  }
}
const order = [...document.querySelectorAll('main > section')].map(s => s.id);
report({broken: broken.slice(0, 20), count: broken.length, order: order});
"""


@pytest.mark.parametrize("width", [1400, 900])
def test_no_identifier_is_broken_inside_a_word(tmp_path, width):
    inv = fx.inventory()
    long_worker = "DFlashWorkerV2" * 6 + "FROZEN_KV_MTP" * 4  # longer than its cell at any width
    algorithms = tuple(dataclasses.replace(a, worker=f"sglang.srt.speculative.dflash_worker_v2.{long_worker}")
                       for a in inv.algorithms)
    report = wide_report()._replace(inventory=dataclasses.replace(wide_report().inventory, algorithms=algorithms))
    measured, rendered = probe(render(report, "html"), MIDWORD_PROBE, tmp_path, width=width)
    assert rendered.console == ()
    assert measured["count"] == 0, measured["broken"]


def test_the_midword_probe_sees_a_broken_word(tmp_path):
    """The check above can fail: the same page with code allowed to wrap anywhere breaks words."""
    html = render(wide_report(), "html").replace("</style>", "td.code { overflow-wrap: anywhere !important; "
                                                             "word-break: break-all !important; }</style>", 1)
    measured, _ = probe(html, MIDWORD_PROBE, tmp_path, width=900)
    assert measured["count"] > 0


def test_summary_then_findings_then_the_inventory(tmp_path):
    page = render(fx.report(), "html")
    measured, _ = probe(page, MIDWORD_PROBE, tmp_path)
    order = measured["order"]
    assert order[:2] == ["summary", "findings"], order
    assert all(order.index("findings") < order.index(s) for s in ("graph", "algorithms", "predicates", "hooks", "dispatch", "d2t"))
    nav = [a["href"] for t, a in Elements(page).tags if t == "a" and a.get("href", "").startswith("#")][:3]
    assert nav[:2] == ["#summary", "#findings"], nav
    (tmp_path / "page.html").write_text(page, encoding="utf-8")
    assert screenshot(tmp_path / "page.html", tmp_path, tmp_path / "report.png")[0] == 1400  # it renders


# Where the fleet matrix ends, whether it scrolls in its own box, and whether the host cells stay
# at the box's left edge once the box is scrolled all the way right.
FLEET_PROBE = r"""
const box = document.querySelector('#matrix .scroll'), table = box.querySelector('table');
box.scrollLeft = box.scrollWidth;
const b = box.getBoundingClientRect(), t = table.getBoundingClientRect();
const hosts = [...table.querySelectorAll('td.host')].map(c => c.getBoundingClientRect());
report({viewport: document.documentElement.clientWidth, page: document.documentElement.scrollWidth,
        box_right: b.right, box_left: b.left, table_width: t.width, scrolls: getComputedStyle(box).overflowX,
        hosts_left: hosts.map(r => r.left), hosts_right: hosts.map(r => r.right)});
"""


def _wide_fleet():
    from sgl_scan.fleet.model import FleetGroup, FleetHost, FleetReport

    inv = fx.inventory()
    names = [f"ALGORITHM_{i}_WITH_A_LONG_NAME" for i in range(24)]
    algorithms = tuple(dataclasses.replace(inv.algorithms[0], name=n) for n in names)
    inv = dataclasses.replace(inv, algorithms=algorithms)
    group = FleetGroup(id="G1", hosts=tuple(f"gpu-{i}.cluster.example:/root/sglang/python/sglang" for i in range(3)),
                       content_key="k", manifest=fx.manifest(), inventory=inv, findings=(), patch_files=())
    hosts = tuple(FleetHost(label=h, host=h.split(":")[0], remote_root="/root/sglang/python/sglang",
                            snapshot_id=fx.manifest().id, group="G1", sglang_version="0.5.23") for h in group.hosts)
    return FleetReport(hosts=hosts, groups=(group,), baseline="G1", diffs=(), scope="speculative", tool_version="0")


def test_a_wide_fleet_matrix_scrolls_with_its_host_column_pinned(tmp_path):
    try:
        report = _wide_fleet()
    except TypeError as exc:  # the fleet model grew a field this builder does not fill
        pytest.fail(f"update _wide_fleet: {exc}")
    measured, rendered = probe(render_fleet(report, "html"), FLEET_PROBE, tmp_path)
    assert rendered.console == ()
    assert measured["page"] <= measured["viewport"] + 1  # the page itself never scrolls sideways
    assert measured["table_width"] > measured["box_right"] - measured["box_left"]  # this matrix is too wide ...
    assert measured["scrolls"] in ("auto", "scroll")  # ... so it scrolls in its box
    for left in measured["hosts_left"]:  # with the host column still at the box's left edge
        assert abs(left - measured["box_left"]) <= 1.5, measured
