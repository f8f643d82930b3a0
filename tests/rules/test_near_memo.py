"""The findings of a tree the rules ran on, taken by an edited tree whose changed files give every
read of the rules the same value (`rules/memo.py` `Near`, `rules/reads.py`). Checked on the real
0.5.23 files of the `speculative` scope: each edit keeps every extractor record (asserted), so only
the reads decide; the findings always equal an uncached analysis's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sgl_scan.analyzer.pipeline import analyze_tree
from sgl_scan.rules import engine
from sgl_scan.rules.engine import run_rules
from sgl_scan.snapshots.scope import select_local
from tests.support.releases import release_tree

SPEC_INFO = "sglang/srt/speculative/spec_info.py"
OTHER = "sglang/srt/speculative/eagle_utils.py"  # read by no rule before the edits below


@pytest.fixture(scope="module")
def scoped() -> tuple[Path, list[str]]:
    package = release_tree("0.5.23") / "sglang"
    paths = [str(p.relative_to(package)) for p in package.rglob("*.py")]
    taken = select_local(paths, "speculative", lambda rel: (package / rel).read_bytes())
    return package.parent, [f"sglang/{rel}" for rel in taken]


@pytest.fixture
def tree(scoped, tmp_path) -> Path:
    """A copy of the 0.5.23 files the speculative scope takes (each test edits its copy)."""
    root, paths = scoped
    assert SPEC_INFO in paths and OTHER in paths
    copy = tmp_path / "tree"
    for rel in paths:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, copy / rel)
    return copy


@pytest.fixture
def checks(monkeypatch) -> list[int]:
    """Counts the times the rules really run."""
    seen: list[int] = []
    real = engine.check_all
    monkeypatch.setattr(engine, "check_all", lambda *a: seen.append(1) or real(*a))
    return seen


def _scan(tree: Path, cache: Path | None, snapshot: str):
    analysis = analyze_tree(tree, cache_dir=cache, use_cache=cache is not None, jobs=1, snapshot_id=snapshot)
    return analysis, run_rules(analysis)


def _rows(findings) -> list[tuple]:
    return sorted((f.rule_id, f.path, f.line, f.column, f.message, f.snapshot_id, f.fingerprint) for f in findings)


def _edit(tree: Path, rel: str, old: str | None, new: str) -> None:
    """Append `new` (old None) or replace the one `old`, keeping every line where it was."""
    path = tree / rel
    text = path.read_text()
    if old is None:
        path.write_text(text + new)
    else:
        assert text.count(old) == 1 and old.count("\n") == new.count("\n")
        path.write_text(text.replace(old, new))


# (file, text replaced or None to append, new text, whether the stored findings still hold)
EDITS = {
    # a helper appended to the file whose classes and functions the rules read (SGL202's reach, SGL206)
    "helper-in-read-file": (SPEC_INFO, None, "\n\ndef _added_helper(value):\n    return value\n", True),
    # the callees of SpeculativeAlgorithm.from_string, which the reach read, are others
    "callee-read-changed": (
        SPEC_INFO,
        'raise ValueError(f"Unknown speculative algorithm name: {name}")',
        'raise LookupError(f"Unknown speculative algorithm name: {name}")',
        False,
    ),
    # a new call of a method plugin algorithms lack (SGL206's search over every file): a new finding
    "plugin-method-called": (
        OTHER,
        None,
        "\n\ndef _added_caller(spec_algorithm):\n    return spec_algorithm.create_future_map(None)\n",
        False,
    ),
    # a comment naming the attribute attention_registry.py's dead branch writes: now read elsewhere
    "dead-branch-read-elsewhere": (OTHER, None, "\n# runner.plan_stream_for_flashinfer\n", False),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edit_takes_the_stored_findings_only_when_every_read_holds(tree, tmp_path, checks, name):
    rel, old, new, holds = EDITS[name]
    cache = tmp_path / "cache"
    first, before = _scan(tree, cache, "s1")
    assert checks == [1]
    _edit(tree, rel, old, new)
    edited, after = _scan(tree, cache, "s2")
    assert edited.files.records_key() == first.files.records_key()  # only the reads decide
    assert checks == ([1] if holds else [1, 1])
    _, fresh = _scan(tree, None, "s2")
    assert _rows(after) == _rows(fresh)
    assert {f.snapshot_id for f in after} == {"s2"}
    if name in ("plugin-method-called", "dead-branch-read-elsewhere"):
        assert len(after) == len(before) + 1  # the edit's new finding (the stored ones would miss it)
    ran = len(checks)  # the uncached analysis ran them too
    again = run_rules(analyze_tree(tree, cache_dir=cache, jobs=1, snapshot_id="s2"))
    assert _rows(again) == _rows(after) and len(checks) == ran  # the edited tree's own, stored either way


def test_a_new_file_runs_the_rules(tree, tmp_path, checks):
    cache = tmp_path / "cache"
    _scan(tree, cache, "s1")
    (tree / "sglang/srt/speculative/added.py").write_text("def helper(value):\n    return value\n")
    _scan(tree, cache, "s1")
    assert checks == [1, 1]


def test_one_files_mention_check_agrees_with_the_search(tree, tmp_path, monkeypatch):
    """`holds` asks `mentions` of each changed file; it must answer as `paths_mentioning` does for
    read, deferred (records only, or none) and walked files alike."""
    from sgl_scan.analyzer import pipeline

    monkeypatch.setattr(pipeline, "PARALLEL_MIN_FILES", 2)  # a pool, which leaves files unwalked
    monkeypatch.setattr(pipeline, "POOL_MIN_BYTES", 0)
    files = pipeline.collect_facts(tree, cache_dir=tmp_path / "cache", jobs=2).files
    files.prefetch(sorted(files.deferred)[:40])
    files.peek(SPEC_INFO)
    files[OTHER]
    assert files.deferred and len(files.deferred) < len(files)  # every kind is asked about
    for words in (["need_topk"], ["plan_stream_for_flashinfer"], ["register_model_override"], ["EAGLE", "eagle"]):
        found = set(files.paths_mentioning(words))
        assert {path for path in files if files.mentions(path, words)} == found, words
