"""Every format on a real release (sglang==0.5.23); expectations read from its source."""

from __future__ import annotations

import json
import re

import pytest

from sgl_scan.reports import FORMATS, render
from tests.reports.browser import (
    LOCATION_PROBE,
    Elements,
    dump_dom,
    hidden_locations,
    overflowing_tables,
    probe,
    screenshot,
)
from tests.reports.test_sarif import validate

pytestmark = pytest.mark.slow

# spec_info.py: the members of SpeculativeAlgorithm(Enum), in source order
ALGORITHMS = ["DFLASH", "UNO", "DSPARK", "EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE", "NGRAM", "NONE"]
# SpeculativeAlgorithm.create_worker: the classes its branches return
WORKERS = {"DFlashWorkerV2", "UnoWorkerV2", "DSparkWorkerV2", "FrozenKVMTPWorkerV2", "MultiLayerEagleWorkerV2",
           "EAGLEWorkerV2", "StandaloneWorkerV2", "NGRAMWorker"}


def test_every_format_renders(real_report_0_5_23):
    for fmt in FORMATS:
        document = render(real_report_0_5_23, fmt)
        assert len(document) > 1000, fmt


def test_json_inventory(real_report_0_5_23):
    doc = json.loads(render(real_report_0_5_23, "json"))
    assert [a["name"] for a in doc["inventory"]["algorithms"]] == ALGORITHMS
    assert doc["inventory"]["algorithm_class"]["qualname"] == "sglang.srt.speculative.spec_info.SpeculativeAlgorithm"
    assert doc["summary"]["total"] == len(real_report_0_5_23.findings) > 0
    kinds = {s["kind"] for s in doc["inventory"]["d2t_sites"]}
    assert "offset_conversion" in kinds  # llama_eagle3.py: hot_token_id = loaded_weight + torch.arange(...)


def test_sarif_is_valid_and_lists_each_rule_once(real_report_0_5_23):
    doc = json.loads(render(real_report_0_5_23, "sarif"))
    validate(doc)
    run = doc["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert len(ids) == len(set(ids)) and set(ids) >= {f.rule_id for f in real_report_0_5_23.findings}
    assert len(run["results"]) == len(real_report_0_5_23.findings)
    assert all(not r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith("/")
               for r in run["results"])


def test_text_shows_the_worker_branches(real_report_0_5_23):
    text = render(real_report_0_5_23, "text")
    assert "\x1b[" not in text
    section = text[text.index("Dispatch sites ("):text.index("d2t sites (")]
    assert WORKERS <= set(re.findall(r"\b(\w+Worker\w*)\b", section))


def test_html_in_headless_chromium(real_report_0_5_23, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render(real_report_0_5_23, "html"), encoding="utf-8")
    rendered = dump_dom(page, tmp_path)
    assert rendered.console == ()
    dom = Elements(rendered.dom)
    assert dom.count("svg", "dispatch-graph") == 1
    assert dom.count("g", "node-algorithm") == len(ALGORITHMS)
    assert dom.count("g", "node-worker") == len(WORKERS)
    assert dom.count("div", "finding") == len(real_report_0_5_23.findings)
    assert dom.count("table") >= 6
    assert screenshot(page, tmp_path, tmp_path / "report.png") == (1400, 2400)


def test_html_shows_every_location_at_1400_px(real_report_0_5_23, tmp_path):
    """At 1,400 px every table fits or scrolls in a box of its own, and every location cell (choice
    hooks, dispatch and d2t sites, algorithms) lies wholly inside what is visible of it."""
    html = render(real_report_0_5_23, "html")
    measured, rendered = probe(html, LOCATION_PROBE, tmp_path)
    assert rendered.console == () and measured["width"] == 1400
    inv = real_report_0_5_23.inventory
    by_section = {}
    for cell in measured["cells"]:
        by_section[cell["section"]] = by_section.get(cell["section"], 0) + 1
    assert by_section["hooks"] == len(inv.choice_hooks) and by_section["d2t"] == len(inv.d2t_sites)
    assert by_section["dispatch"] == len(inv.dispatch_sites) > 150
    assert hidden_locations(measured) == []
    assert overflowing_tables(measured) == []
    assert measured["page_width"] <= 1400
