"""The rules' findings kept beside the facts (`rules/memo.py`): served only for the same facts,
inventory, snapshot, rules and code."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sgl_scan.analyzer.pipeline import analyze_tree
from sgl_scan.rules import engine, memo
from sgl_scan.rules.engine import RuleError, run_rules
from sgl_scan.rules.registry import load_rules

REPO = Path(__file__).resolve().parents[2]

SPEC_INFO = """\
from enum import IntEnum, auto


class SpeculativeAlgorithm(IntEnum):
    NONE = auto()
    EAGLE = auto()

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE
"""
SERVER_ARGS = """\
class ServerArgs:
    speculative_algorithm = None

    def __post_init__(self):
        if self.speculative_algorithm == "EAGEL":
            self.speculative_eagle_topk = 1
"""


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    for rel, text in {"sglang/srt/speculative/spec_info.py": SPEC_INFO, "sglang/srt/server_args.py": SERVER_ARGS}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def checks(monkeypatch):
    """Counts the times the rules really run."""
    seen: list[int] = []
    real = engine.check_all
    monkeypatch.setattr(engine, "check_all", lambda *a: seen.append(1) or real(*a))
    return seen


def _sgl203(findings) -> list[tuple[str, int, str | None]]:
    return [(f.path, f.line, f.snapshot_id) for f in findings if f.rule_id == "SGL203"]


def test_a_second_analysis_of_the_same_tree_does_not_run_the_rules(tree, tmp_path, checks):
    cache = tmp_path / "cache"
    cold = run_rules(analyze_tree(tree, cache_dir=cache, jobs=1, snapshot_id="s1"))
    warm_analysis = analyze_tree(tree, cache_dir=cache, jobs=1, snapshot_id="s1")
    warm = run_rules(warm_analysis)
    assert checks == [1] and warm == cold
    assert _sgl203(warm) == [("sglang/srt/server_args.py", 5, "s1")]
    assert not warm_analysis.files.loaded  # nor read the facts


def test_another_snapshot_id_of_the_same_facts_takes_the_findings_with_its_own_id(tree, tmp_path, checks):
    """The snapshot id is only copied into each finding: the stored ones are served with the new id."""
    cache = tmp_path / "cache"
    run_rules(analyze_tree(tree, cache_dir=cache, jobs=1, snapshot_id="s1"))
    other = run_rules(analyze_tree(tree, cache_dir=cache, jobs=1, snapshot_id="s2"))
    assert checks == [1] and _sgl203(other) == [("sglang/srt/server_args.py", 5, "s2")]


def test_an_edited_tree_runs_them_again(tree, tmp_path, checks):
    cache = tmp_path / "cache"
    run_rules(analyze_tree(tree, cache_dir=cache, jobs=1))
    (tree / "sglang/srt/server_args.py").write_text(SERVER_ARGS.replace('"EAGEL"', '"EAGLE"'))
    assert _sgl203(run_rules(analyze_tree(tree, cache_dir=cache, jobs=1))) == [] and checks == [1, 1]


def test_another_code_digest_runs_them_again(tree, tmp_path, checks, monkeypatch):
    cache = tmp_path / "cache"
    run_rules(analyze_tree(tree, cache_dir=cache, jobs=1))
    monkeypatch.setattr(memo, "package_digest", lambda root=None: "edited")
    run_rules(analyze_tree(tree, cache_dir=cache, jobs=1))
    assert checks == [1, 1]


@pytest.mark.parametrize("where", ["instance", "class"])
def test_a_replaced_rule_check_is_never_served_from_the_cache(tree, tmp_path, monkeypatch, where):
    cache = tmp_path / "cache"
    rules = load_rules()
    run_rules(analyze_tree(tree, cache_dir=cache, jobs=1), rules)

    def explode(*args):
        raise KeyError("boom")

    rule = rules.get("SGL203")
    monkeypatch.setattr(rule if where == "instance" else type(rule), "check", explode)
    with pytest.raises(RuleError, match="SGL203"):
        run_rules(analyze_tree(tree, cache_dir=cache, jobs=1), rules)


def test_a_copy_with_another_inventory_is_never_served_from_the_cache(tree, tmp_path, checks):
    cache = tmp_path / "cache"
    analysis = analyze_tree(tree, cache_dir=cache, jobs=1)
    run_rules(analysis)
    algorithms = tuple(a for a in analysis.inventory.algorithms if a.name != "EAGLE")
    fewer = dataclasses.replace(analysis, inventory=dataclasses.replace(analysis.inventory, algorithms=algorithms))
    assert run_rules(fewer) != run_rules(analysis)
    assert checks == [1, 1]


_EDIT = ('f"{quoted(literal)} is no speculative algorithm or alias"', 'f"{quoted(literal)} EDITED: names no algorithm"')


def test_editing_a_rules_code_changes_the_warm_report(tree, tmp_path):
    """End to end, as a user edits the installed package: the next scan in the same home reports
    what the edited rule says, not the findings stored by the old code."""
    package = tmp_path / "code" / "sgl_scan"
    shutil.copytree(REPO / "sgl_scan", package, ignore=shutil.ignore_patterns("__pycache__"))
    rule = package / "rules" / "sgl203_unknown_algorithm_literal.py"
    assert _EDIT[0] in rule.read_text()
    env = dict(os.environ, SGLSCAN_HOME=str(tmp_path / "home"), PYTHONPATH=str(package.parent), PYTHONDONTWRITEBYTECODE="1")
    args = [sys.executable, "-m", "sgl_scan", "scan", "--path", str(tree / "sglang"), "--format", "json"]

    def scan() -> str:
        result = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert result.returncode in (0, 1), result.stderr[-2000:]
        return result.stdout

    before = scan()
    assert "is no speculative algorithm or alias" in before and "EDITED" not in before
    rule.write_text(rule.read_text().replace(*_EDIT))
    after = scan()
    assert "EDITED" in after and after != before


def test_findings_are_not_stored_when_the_code_may_have_changed_since_it_was_loaded(tree, tmp_path, checks, monkeypatch):
    """A source edited after this process loaded sgl_scan: the rules that ran may be the old code while
    the digest names the new one, so their findings are not stored (time 0: every source is newer)."""
    import sgl_scan

    monkeypatch.setattr(sgl_scan, "LOADED_NS", 0)
    cache = tmp_path / "cache"
    first = run_rules(analyze_tree(tree, cache_dir=cache, jobs=1))
    assert run_rules(analyze_tree(tree, cache_dir=cache, jobs=1)) == first
    assert checks == [1, 1]
