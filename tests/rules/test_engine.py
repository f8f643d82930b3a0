"""The rule registry and engine on hand-built analyzer output."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
from pathlib import Path

import pytest

from sgl_scan.analyzer.model import D2tSite
from sgl_scan.rules.engine import RuleError, run_rules
from sgl_scan.rules.registry import RuleLoadError, load_rule_class, load_rules, rule_module_names
from tests.rules.inventories import EAGLE3, analysis, inventory, loc

EXPECTED_IDS = ("SGL101", "SGL102", "SGL103", "SGL201", "SGL202", "SGL203", "SGL204", "SGL205", "SGL206", "SGL207", "SGL208", "SGL209",
                "SGL301", "SGL302")


def test_every_rule_module_loads_with_stable_ids():
    rules = load_rules()
    assert set(EXPECTED_IDS) <= set(rules.ids())
    assert len(rule_module_names()) == len(rules.rules)
    for rule in rules.rules:
        doc = rule.doc()
        assert doc.docs.startswith("## What it does")
        assert rules.get(rule.name) is rule


@pytest.fixture
def scratch_package(tmp_path, monkeypatch):
    package = tmp_path / "scratch_rules"
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package
    for name in [n for n in sys.modules if n.startswith("scratch_rules")]:
        del sys.modules[name]


def test_a_rule_that_fails_to_import_is_an_error(scratch_package):
    (scratch_package / "sgl901_broken.py").write_text("import does_not_exist_anywhere\n")
    with pytest.raises(RuleLoadError, match="sgl901_broken failed to load: ModuleNotFoundError"):
        load_rule_class("scratch_rules.sgl901_broken")


def test_a_rule_without_docs_sections_or_examples_is_an_error(scratch_package):
    (scratch_package / "sgl902_undocumented.py").write_text(textwrap.dedent('''
        from sgl_scan.rules.base import Rule

        class Undocumented(Rule):
            """Only a summary."""
            id = "SGL902"
            name = "undocumented"
            severity = "fatal"
            message = "x"

            def check(self, analysis):
                return ()
    '''))
    with pytest.raises(RuleLoadError) as info:
        load_rule_class("scratch_rules.sgl902_undocumented")
    text = str(info.value)
    assert "severity must be one of" in text
    assert "lacks the section 'Why it matters'" in text
    assert "needs an example" in text


def test_engine_runs_all_rules_on_a_hand_built_inventory():
    findings = run_rules(analysis())
    by_rule = {}
    for f in findings:
        by_rule.setdefault(f.rule_id, []).append((f.path, f.line))
    assert by_rule["SGL101"] == [("sglang/srt/speculative/spec_info.py", 5), ("sglang/srt/speculative/spec_info.py", 6),
                                 ("sglang/srt/speculative/spec_info.py", 7)]
    assert by_rule["SGL102"] == [("sglang/srt/server_args.py", 861)]
    assert by_rule["SGL103"] == [(EAGLE3, 182), (EAGLE3, 184)]
    assert by_rule["SGL202"] == [("sglang/srt/server_args.py", 317), ("sglang/srt/server_args.py", 321)]
    assert by_rule["SGL302"] == [(EAGLE3, 182)]
    # NONE needs no worker, NEXTN is an alias, the choices match the members: no errors.
    assert not {"SGL201", "SGL203", "SGL204", "SGL205", "SGL301"} & set(by_rule)
    assert all(f.snapshot_id == "snap-1" for f in findings)
    assert [f.path for f in findings] == sorted(f.path for f in findings)


def test_fingerprints_are_unique_and_do_not_depend_on_lines():
    site = D2tSite("hot_token_use", loc(EAGLE3, 10), "W.f", "self.hot_token_id[topk_index]")
    twice = inventory(d2t_sites=(site, dataclasses.replace(site, location=loc(EAGLE3, 20))))
    first = [f for f in run_rules(analysis(twice)) if f.rule_id == "SGL103"]
    assert len({f.fingerprint for f in first}) == 2

    moved = inventory(d2t_sites=tuple(dataclasses.replace(s, location=loc(EAGLE3, s.location.line + 7)) for s in twice.d2t_sites))
    second = [f for f in run_rules(analysis(moved)) if f.rule_id == "SGL103"]
    assert [f.fingerprint for f in first] == [f.fingerprint for f in second]
    assert [f.line for f in second] == [17, 27]


def test_a_rule_that_raises_is_reported_with_its_id(monkeypatch):
    rules = load_rules()
    broken = rules.get("SGL101")

    def explode(analysis):
        raise KeyError("boom")

    monkeypatch.setattr(broken, "check", explode)
    with pytest.raises(RuleError, match=r"rule SGL101 \(speculative-algorithm-member\) failed: KeyError"):
        run_rules(analysis(), rules)


def test_readme_documents_every_rule():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for rule in load_rules().rules:
        assert f"| {rule.id} | {rule.name} | {rule.severity} |" in readme, rule.id
