"""The JSON report and diff: versioned, complete, and documented in docs/json-schema.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

from sgl_scan.reports import render, render_diff
from sgl_scan.reports.json_report import SCHEMA_VERSION
from tests.reports import fixtures as fx
from tests.reports.diff_fixtures import sample_diff

DOC = (Path(__file__).parents[2] / "docs" / "json-schema.md").read_text()


def _keys(value, out=None) -> set[str]:
    out = set() if out is None else out
    if isinstance(value, dict):
        for key, item in value.items():
            out.add(key)
            _keys(item, out)
    elif isinstance(value, list):
        for item in value:
            _keys(item, out)
    return out


def test_report_document_is_versioned_and_complete():
    doc = json.loads(render(fx.report(), "json"))
    assert doc["schema_version"] == SCHEMA_VERSION == 2
    assert doc["kind"] == "sgl-scan/report"
    assert doc["summary"] == {"findings": {"error": 1, "warning": 1, "info": 1}, "total": 3, "parse_errors": 1}
    assert [a["name"] for a in doc["inventory"]["algorithms"]] == ["DFLASH", "EAGLE", "EAGLE3", "STANDALONE", "NGRAM", "NONE"]
    assert doc["inventory"]["aliases"] == {"NEXTN": "EAGLE"}
    assert doc["snapshot"]["git"] == {"commit": "0123456789abcdef0123456789abcdef01234567", "branch": "main", "dirty": True}
    assert doc["snapshot"]["file_count"] == 4
    assert [f["path"] for f in doc["findings"]] == sorted(f["path"] for f in doc["findings"])
    assert doc["parse_errors"][0]["location"]["path"] == "sglang/srt/broken.py"


def test_every_field_name_is_documented():
    report = json.loads(render(fx.report(), "json"))
    names = _keys(report) | _keys(json.loads(render_diff(sample_diff(), "json")))
    # values, not schema: a source's own parameters, alias literals, a rule's data keys
    names -= set(report["snapshot"]["source"]) | set(report["inventory"]["aliases"]) | set(fx.findings()[1].data)
    documented = set(re.findall(r"`([a-z0-9_]+)`", DOC))
    missing = sorted(n for n in names if n not in documented)
    assert not missing, f"fields missing from docs/json-schema.md: {missing}"


def test_diff_document():
    doc = json.loads(render_diff(sample_diff(), "json"))
    assert doc["kind"] == "sgl-scan/diff" and doc["schema_version"] == 2
    assert doc["summary"]["new_findings"] == 1 and doc["summary"]["resolved_findings"] == 1
    moved = [c for c in doc["changes"] if c["status"] == "moved"]
    assert {c["category"] for c in moved} == {"choice_hook", "d2t_site"}
