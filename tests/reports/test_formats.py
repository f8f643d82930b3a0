"""The reporters' entry points: format names, inference from file names, errors."""

from __future__ import annotations

import pytest

from sgl_scan.errors import ConfigError
from sgl_scan.reports import FORMATS, format_for_path, render, render_diff
from tests.reports import fixtures as fx
from tests.reports.diff_fixtures import sample_diff


@pytest.mark.parametrize(
    "path, fmt",
    [
        ("out.json", "json"),
        ("out.sarif", "sarif"),
        ("results.sarif.json", "sarif"),
        ("REPORT.MD", "markdown"),
        ("a/b/report.html", "html"),
        ("report.htm", "html"),
        ("report.txt", "text"),
        ("report", None),
        ("report.pdf", None),
    ],
)
def test_format_for_path(path, fmt):
    assert format_for_path(path) == fmt


def test_unknown_format_is_a_configuration_error():
    with pytest.raises(ConfigError, match="unknown report format 'yaml'"):
        render(fx.report(), "yaml")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_report_and_diff_ending_in_a_newline(fmt):
    for document in (render(fx.report(), fmt), render_diff(sample_diff(), fmt)):
        assert document.endswith("\n") and len(document) > 200


@pytest.mark.parametrize("fmt", FORMATS)
def test_reporters_never_drop_findings(fmt):
    document = render(fx.report(), fmt)
    for f in fx.findings():
        assert f.rule_id in document
        assert f.path in document


def test_what_could_not_be_read_is_shown_in_every_format():
    """Issue 18: "could not read" is an answer: a summary line in text, `inventory.unread` in JSON, a
    SARIF tool notification, a section in HTML; nothing of it when everything was read."""
    import dataclasses
    import json

    from sgl_scan.analyzer.model import Location, Unread

    item = Unread("predicate", "is_eagle", Location("sglang/srt/speculative/spec_info.py", 102, 5),
                  "`return self in _eagle_family()` is not read as a set of algorithms")
    report = fx.report(inventory=dataclasses.replace(fx.inventory(), unread=(item,)))

    text = render(report, "text")
    summary = next(line for line in text.splitlines() if line.startswith("Summary: "))
    assert "1 fact(s) could not be read" in summary
    assert "sglang/srt/speculative/spec_info.py:102  predicate is_eagle:" in text
    assert json.loads(render(report, "json"))["inventory"]["unread"] == [{
        "what": "predicate", "name": "is_eagle", "reason": item.reason,
        "location": json.loads(render(report, "json"))["inventory"]["unread"][0]["location"]}]
    assert json.loads(render(report, "json"))["inventory"]["unread"][0]["location"]["line"] == 102
    notes = json.loads(render(report, "sarif"))["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    note = [n for n in notes if n["descriptor"]["id"] == "could-not-read"]
    assert len(note) == 1 and note[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 102
    from tests.reports.test_sarif import validate

    validate(json.loads(render(report, "sarif")))
    html = render(report, "html")
    assert 'id="unread"' in html and "is_eagle" in html and "_eagle_family()" in html

    clean = fx.report()
    assert "could not be read" not in render(clean, "text") and 'id="unread"' not in render(clean, "html")
    assert json.loads(render(clean, "json"))["inventory"]["unread"] == []


def test_the_census_counts_are_in_every_format():
    """Issue 27: "N references: M read, K could not be read" in text, JSON (`inventory.census`), a SARIF
    `census` notification (schema-valid), Markdown (with the could-not-read list) and HTML."""
    import dataclasses
    import json

    from sgl_scan.analyzer.model import Census, Location, Unread
    from tests.reports.test_sarif import validate

    item = Unread("reference", "SpeculativeAlgorithm.from_string(x).is_dspark()",
                  Location("sglang/srt/mem_cache/pool.py", 131, 9), "predicate call (call result): no dispatch site")
    census = Census(references=12, read=11, unread=1, forms=(("member test", 2), ("string test", 3),
                                                            ("predicate call", 6), ("match case", 0), ("d2t", 1)))
    report = fx.report(inventory=dataclasses.replace(fx.inventory(), unread=(item,), census=census))
    line = "12 references: 11 read, 1 could not be read"
    assert f"  {line}" in render(report, "text").splitlines()
    assert json.loads(render(report, "json"))["inventory"]["census"] == {
        "references": 12, "read": 11, "unread": 1,
        "forms": {"member test": 2, "string test": 3, "predicate call": 6, "match case": 0, "d2t": 1}}
    sarif = json.loads(render(report, "sarif"))
    validate(sarif)
    notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert [n["message"]["text"] for n in notes if n["descriptor"]["id"] == "census"] == [line]
    markdown = render(report, "markdown")
    assert f"**Census:** {line}" in markdown and "`sglang/srt/mem_cache/pool.py:131` reference" in markdown
    assert f"Census: {line}" in render(report, "html")
    clean = fx.report()  # no census ran (a hand-built inventory): no line anywhere
    assert all("references:" not in render(clean, fmt) for fmt in ("text", "markdown", "html", "sarif"))
    assert json.loads(render(clean, "json"))["inventory"]["census"] is None
