"""The benchmark harness: its scoring on hand-made data, and a `--quick` run on a tiny real tree.

No timing assertions (speed lives in `bench/results.md`); these check that the harness measures
what it says, scores hits correctly and degrades to "n/a" instead of failing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench import accuracy, grep_patterns
from bench.pull_bench import ADD, DELETE, MODIFY, ChangeSet

REPO = Path(__file__).resolve().parents[2]

# A tiny but real tree: files of sglang 0.5.23 that hold each kind of SGL101-SGL103 site, one file
# with grep-only noise (Dropout2d), and every file the pull change set touches.
TINY_FILES = (
    "sglang/srt/speculative/spec_info.py",
    "sglang/srt/speculative/spec_utils.py",
    "sglang/srt/speculative/ngram_worker.py",
    "sglang/srt/speculative/eagle_worker_v2.py",
    "sglang/srt/server_args.py",
    "sglang/srt/arg_groups/choices.py",
    "sglang/srt/arg_groups/fields/spec.py",
    "sglang/srt/models/llama_eagle3.py",
    "sglang/srt/utils/nvtx_pytorch_hooks.py",
    "sglang/version.py",
    "sglang/__init__.py",
)


@pytest.fixture(scope="module")
def tiny_tree(sglang_0_5_23, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tiny") / "tree"
    for rel in TINY_FILES:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(sglang_0_5_23 / rel, target)
    return root


def test_grep_classify_assigns_hits_to_rules():
    output = (
        "sglang/srt/speculative/spec_info.py:39:    DFLASH = auto()\n"
        "sglang/srt/arg_groups/choices.py:215:add_load_format_choices = LOAD_FORMAT_CHOICES.extend\n"
        "sglang/srt/models/llama_eagle3.py:350:            if \"d2t\" in name:\n"
        "sglang/srt/utils/nvtx_pytorch_hooks.py:277:            torch.nn.Dropout2d,\n"
        "binary file matches\n"
    )
    hits = grep_patterns.classify(output)
    assert hits["SGL101"] == {("sglang/srt/speculative/spec_info.py", 39)}
    assert hits["SGL102"] == {("sglang/srt/arg_groups/choices.py", 215)}
    # Dropout2d is grep noise: the d2t pattern matches it, as the seeds' grep did.
    assert hits["SGL103"] == {("sglang/srt/models/llama_eagle3.py", 350), ("sglang/srt/utils/nvtx_pytorch_hooks.py", 277)}


def test_score_counts_matches_by_file_and_line():
    reference = {"SGL101": {("a.py", 1), ("a.py", 2)}, "SGL103": {("b.py", 5)}}
    candidate = {"SGL101": {("a.py", 1), ("a.py", 9)}, "SGL103": {("b.py", 5), ("b.py", 6), ("c.py", 5)}}
    by_rule = {s.rule: s for s in accuracy.score(reference, candidate)}
    assert (by_rule["SGL101"].precision, by_rule["SGL101"].recall) == (0.5, 0.5)
    assert by_rule["SGL102"].precision is None and by_rule["SGL102"].recall is None
    assert (by_rule["SGL103"].matched, by_rule["SGL103"].reported) == (1, 3)
    assert (by_rule["all"].reference, by_rule["all"].reported, by_rule["all"].matched) == (3, 5, 2)


def test_change_set_is_undone_exactly(tiny_tree):
    package = tiny_tree / "sglang"
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in package.rglob("*.py")}
    changes = ChangeSet(package)
    changes.apply(7)
    assert all(b"benchmark edit 7" in (package / rel).read_bytes() for rel in MODIFY)
    assert not (package / DELETE).exists() and (package / ADD).exists()
    changes.undo()
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in package.rglob("*.py")}
    assert after == before


@pytest.mark.slow
def test_quick_run_on_a_tiny_tree(tiny_tree, tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ)
    env.pop("SGLSCAN_HOME", None)  # the harness gives every measurement its own home
    # As in a venv with just the package and its `bench` extra: no pytest (the harness reuses the
    # suite's sshd and release helpers, which must import without it).
    no_pytest = tmp_path / "no-pytest"
    no_pytest.mkdir()
    (no_pytest / "pytest.py").write_text("raise ImportError('pytest is not installed in this venv')\n")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(no_pytest), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "run.py"), "--quick", "--tree", str(tiny_tree), "--out", str(out),
         "--semgrep-venv", str(tmp_path / "no-semgrep")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    document = json.loads((out / "results.json").read_text())
    results = document["results"]

    # The baselines always run; each has exactly one time in --quick mode.
    for key in ("grep_full", "grep_speculative", "rsync_full_cold", "scp_full_cold", "rsync_full_nochange",
                "rsync_full_changed", "ssh_true", "paramiko_true"):  # the last two: the re-pull's floors
        assert results[key]["runs"] == 1, (key, results[key])
    # Semgrep is absent from the given venv and --quick never installs it: reported, not fatal.
    assert results["semgrep_full"]["runs"] == 0
    assert "not installed" in results["semgrep_full"]["reason"]

    # Every target is listed with a verdict, and the Markdown table says the same.
    verdicts = {t["name"]: t["verdict"] for t in document["targets"]}
    assert len(verdicts) == 12 and set(verdicts.values()) <= {"PASS", "MISS", "n/a"}
    # the fleet section ran over its loopback daemons: one host, eight, and 64 host entries
    for key in ("fleet_1_cold", "fleet_8_cold", "fleet_1_nochange", "fleet_8_nochange", "fleet_64_nochange"):
        assert results[key]["runs"] == 1, (key, results[key])
    table = (out / "results.md").read_text()
    for name, verdict in verdicts.items():
        assert f"| {name} |" in table and f"**{verdict}**" in table
    assert document["environment"]["tree"]["srt"]["files"] == sum(1 for f in TINY_FILES if f.startswith("sglang/srt/"))

    # Once sgl-scan scans, grep is scored against its findings; Dropout2d keeps grep's d2t precision below 1.
    if results["sgl_full_cold"]["runs"]:
        grep_scores = {s["rule"]: s for s in document["accuracy"]["grep"]}
        assert grep_scores["SGL103"]["reported"] > grep_scores["SGL103"]["matched"]
        assert grep_scores["SGL103"]["matched"] > 0
