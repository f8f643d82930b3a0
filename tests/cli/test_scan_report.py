"""The scan stage after analysis (rules -> one filter step -> reporter -> exit code) on hand-built facts."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from sgl_scan.analyzer.sources import SourceText
from sgl_scan.cli.output import report_findings
from sgl_scan.errors import ConfigError
from sgl_scan.pipeline import FindingOptions, prepare
from sgl_scan.snapshots.manifest import Manifest, Snapshot
from tests.rules.inventories import EAGLE3, analysis


@pytest.fixture
def snapshot(tmp_path):
    tree = tmp_path / "snap" / "tree"
    model = tree / EAGLE3
    model.parent.mkdir(parents=True)
    lines = [f"# line {n}\n" for n in range(1, 200)]
    lines[181] = '            if "d2t" in name:  # sgl-scan: ignore[SGL302]\n'
    model.write_text("".join(lines))
    manifest = Manifest("snap-1", "local", {"path": "/x"}, "/x", "0.4.6", "speculative", "2026-01-01T00:00:00Z", ())
    return Snapshot(manifest, tmp_path / "snap")


def analysed(snapshot):
    """The hand-built facts, with the snapshot's text as the analyzer would hand it on."""

    def sha_of(path):
        file = snapshot.tree / path
        return hashlib.sha256(file.read_bytes()).hexdigest() if file.is_file() else None

    return dataclasses.replace(analysis(), sources=SourceText(snapshot.tree, sha_of))


def run(snapshot, capsys, **options):
    opts = FindingOptions(**{"fmt": "json", **options})
    code = report_findings(snapshot, analysed(snapshot), opts, prepare(opts))
    out = capsys.readouterr()
    return code, out


def test_json_report_with_suppression_and_threshold(snapshot, capsys):
    code, out = run(snapshot, capsys)
    document = json.loads(out.out)
    assert document["schema_version"] == 2
    rows = [(f["rule_id"], f["path"], f["line"]) for f in document["findings"]]
    assert ("SGL302", EAGLE3, 182) not in rows  # suppressed by the comment on its line
    assert ("SGL103", EAGLE3, 182) in rows  # the comment names SGL302 only
    assert ("SGL202", "sglang/srt/server_args.py", 321) in rows
    assert code == 0  # warnings and infos only; --fail-on error

    code, _ = run(snapshot, capsys, fail_on="warning")
    assert code == 1


def test_select_and_write_then_use_a_baseline(snapshot, capsys, tmp_path):
    baseline = tmp_path / "baseline.json"
    code, out = run(snapshot, capsys, select=("SGL2",), fail_on="warning", write_baseline=str(baseline))
    assert code == 0
    assert "wrote 2 findings to baseline" in out.err
    assert out.out == "" and len(out.err.strip().splitlines()) == 1  # one line, not the report
    assert "(error 0, warning 2, info 0;" in out.err
    code, out = run(snapshot, capsys, select=("SGL2",), fail_on="warning", baseline=str(baseline))
    assert code == 0
    doc = json.loads(out.out)
    assert doc["findings"] == [] and doc["summary"]["baselined"] == 2 and doc["summary"]["suppressed"] == 0


def test_output_file_and_format_from_its_extension(snapshot, capsys, tmp_path):
    target = tmp_path / "out.sarif"
    code, out = run(snapshot, capsys, fmt=None, output=str(target), ignore=("SGL1",))
    assert out.out == ""
    sarif = json.loads(target.read_text())
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"SGL202"}


def test_bad_selector_fails_before_any_work():
    with pytest.raises(ConfigError) as info:
        prepare(FindingOptions(select=("SGL999",)))
    assert info.value.exit_code == 2
