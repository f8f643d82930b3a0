"""SARIF output validates against the official 2.1.0 schema and carries what code scanning needs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

from sgl_scan.reports import render, render_diff
from sgl_scan.rules.finding import Finding
from tests.reports import fixtures as fx
from tests.reports.diff_fixtures import sample_diff

SCHEMA = json.loads((Path(__file__).parents[1] / "data" / "sarif-schema-2.1.0.json").read_text())


def validate(document: dict) -> None:
    jsonschema.Draft4Validator(SCHEMA).validate(document)


def sarif(report=None) -> dict:
    return json.loads(render(report or fx.report(), "sarif"))


def test_report_validates_against_the_official_schema():
    validate(sarif())


def test_the_validator_rejects_a_broken_document():
    document = sarif()
    document["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        validate(document)


def test_each_rule_is_listed_once_with_docs_and_results_point_at_it():
    run = sarif()["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["SGL301", "SGL302", "SGL401"]
    sgl301 = rules[0]
    assert sgl301["fullDescription"]["text"].startswith("Finds where the drafter's `d2t` tensor")
    assert "## Why it matters" in sgl301["help"]["markdown"]
    assert sgl301["defaultConfiguration"]["level"] == "note"
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_levels_fingerprints_and_paths_relative_to_the_snapshot_root():
    run = sarif()["runs"][0]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    assert {k: v["level"] for k, v in by_rule.items()} == {"SGL301": "note", "SGL302": "warning", "SGL401": "error"}
    assert by_rule["SGL302"]["partialFingerprints"] == {"sglScanFingerprint/v1": "fp-302-worker"}
    location = by_rule["SGL302"]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": fx.WORKER, "uriBaseId": "SNAPSHOTROOT"}
    assert location["region"]["startLine"] == 6 and location["region"]["startColumn"] == 21
    assert location["region"]["snippet"]["text"].strip().startswith("head.data = head.data[self.hot_token_id]")
    assert "SNAPSHOTROOT" in run["originalUriBaseIds"]
    assert "Hint: check that d2t is offsets" in by_rule["SGL302"]["message"]["text"]


def test_a_local_tree_root_is_a_file_uri_ending_in_a_slash():
    # the manifest's root is the package folder; uris start with sglang/, so the base is its parent
    report = fx.report(manifest=fx.manifest(source_kind="local", source={"path": "/srv/sglang/python"},
                                            root="/srv/sglang/python/sglang"))
    base = sarif(report)["runs"][0]["originalUriBaseIds"]["SNAPSHOTROOT"]
    assert base["uri"] == "file:///srv/sglang/python/"
    # a package folder under another name: sglang/... is not below any folder, so no uri is claimed
    other = fx.report(manifest=fx.manifest(source_kind="local", source={"path": "/srv/pkg"}, root="/srv/pkg"))
    assert "uri" not in sarif(other)["runs"][0]["originalUriBaseIds"]["SNAPSHOTROOT"]


def test_a_declared_root_rewrites_every_location():
    from sgl_scan.reports.model import ArtifactRoot

    report = fx.report(artifact_root=ArtifactRoot("file:///work/my%20repo/", "python/sglang"))
    document = sarif(report)
    validate(document)
    run = document["runs"][0]
    assert run["originalUriBaseIds"] == {"SRCROOT": {"uri": "file:///work/my%20repo/", "description": {
        "text": "the repository root (uris as code scanning reads them)"}}}
    places = [loc["physicalLocation"]["artifactLocation"] for r in run["results"] for loc in r["locations"]]
    places += [loc["physicalLocation"]["artifactLocation"] for n in run["invocations"][0]["toolExecutionNotifications"]
               for loc in n["locations"]]
    assert places and all(p["uriBaseId"] == "SRCROOT" and p["uri"].startswith("python/sglang/srt/") for p in places)


def test_parse_errors_and_skipped_files_are_notifications():
    notes = sarif()["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert [(n["descriptor"]["id"], n["level"]) for n in notes] == [("parse-error", "error"), ("skipped-file", "note")]
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "sglang/srt/broken.py"


def test_a_finding_of_a_rule_without_docs_still_gets_one_descriptor():
    extra = Finding("SGL999", "warning", "something new", fx.SPEC, 3)
    report = fx.report(findings=fx.findings() + (extra, dataclasses.replace(extra, line=4)))
    document = sarif(report)
    validate(document)
    ids = [r["id"] for r in document["runs"][0]["tool"]["driver"]["rules"]]
    assert ids.count("SGL999") == 1


def test_an_empty_report_is_valid():
    validate(sarif(fx.report(findings=(), parse_errors=(), rules=())))


def test_diff_sarif_marks_new_and_absent_results():
    document = json.loads(render_diff(sample_diff(), "sarif"))
    validate(document)
    run = document["runs"][0]
    states = sorted((r["ruleId"], r["baselineState"]) for r in run["results"])
    assert states == [("SGL301", "new"), ("SGL401", "absent")]
    assert any(c["category"] == "algorithm" and c["key"] == "UNO" for c in run["properties"]["inventoryChanges"])
