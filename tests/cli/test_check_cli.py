"""`sgl-scan check --diff-base` in a real git checkout made in tmp_path from real SGLang 0.5.23 files."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from sgl_scan.cli import cli
from tests.cli.gitrepo import commit_all, init_repo

FILES_0_5_23 = (
    "sglang/version.py",
    "sglang/srt/speculative/spec_info.py",
    "sglang/srt/speculative/spec_registry.py",
    "sglang/srt/models/llama_eagle3.py",
    "sglang/srt/models/kimi_k25_eagle3.py",
)
KIMI = "sglang/srt/models/kimi_k25_eagle3.py"
LLAMA = "sglang/srt/models/llama_eagle3.py"
OFFSETS = "self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])"

pytestmark = pytest.mark.slow


@pytest.fixture
def checkout(tmp_path, sglang_0_5_23):
    root = tmp_path / "sglang-fork"
    for rel in FILES_0_5_23:
        target = root / "python" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sglang_0_5_23 / rel, target)
    repo = init_repo(root)
    commit_all(repo, "upstream 0.5.23 files")
    return root, repo


def check(root, *args):
    runner = CliRunner()
    cwd = os.getcwd()
    try:
        os.chdir(root)
        return runner.invoke(cli, ["check", *args])
    finally:
        os.chdir(cwd)


def rows(result):
    return [(f["rule_id"], f["path"], f["line"]) for f in json.loads(result.stdout)["findings"]]


def test_a_commit_that_breaks_d2t_is_caught_and_old_findings_stay_quiet(checkout):
    root, repo = checkout
    model = root / "python" / KIMI
    text = model.read_text()
    assert text.count(OFFSETS) == 1
    line = text[: text.index(OFFSETS)].count("\n") + 1
    assert line == 440  # read in the 0.5.23 wheel
    model.write_text(text.replace(OFFSETS, "self.hot_token_id = loaded_weight"))
    commit_all(repo, "use d2t directly")

    result = check(root, "--diff-base", "HEAD~1", "--format", "json")
    assert result.exit_code == 1, result.output
    found = rows(result)
    assert ("SGL301", KIMI, 440) in found
    assert {r for r in found if r[0] != "SGL103"} == {("SGL301", KIMI, 440)}
    # The substring tests in llama_eagle3.py (SGL302, lines 350 and 355) predate the change.
    assert not [r for r in found if r[1] == LLAMA]

    clean = check(root, "--diff-base", "HEAD", "--format", "json")
    assert (clean.exit_code, rows(clean)) == (0, [])


def test_uncommitted_and_untracked_changes_count_and_paths_limit(checkout):
    root, _ = checkout
    llama = root / "python" / LLAMA
    text = llama.read_text()
    llama.write_text(text.replace('if "d2t" in name:', 'if "d2t" in name:  # sgl-scan: ignore[SGL302]', 1))
    extra = root / "python" / "sglang" / "srt" / "models" / "my_eagle3.py"
    extra.write_text(
        "class MyEagle3:\n"
        "    def load_weights(self, weights):\n"
        "        for name, loaded_weight in weights:\n"
        '            if "d2t" in name:\n'
        "                self.hot_token_id = loaded_weight\n"
    )
    result = check(root, "--diff-base", "HEAD", "--format", "json", "--ignore", "SGL1")
    assert result.exit_code == 1, result.output
    assert rows(result) == [
        ("SGL302", "sglang/srt/models/my_eagle3.py", 4),
        ("SGL301", "sglang/srt/models/my_eagle3.py", 5),
    ]
    # the edited llama line keeps the SGL103 d2t site the base had: not the change's (rules/hazard.py)
    only_llama = check(root, "python/sglang/srt/models/llama_eagle3.py", "--diff-base", "HEAD", "--format", "json")
    assert (only_llama.exit_code, rows(only_llama)) == (0, [])


def test_check_outside_a_checkout_is_a_usage_error(tmp_path):
    result = check(tmp_path, "--diff-base", "HEAD")
    assert result.exit_code != 0
    assert "not inside a git checkout" in str(result.exception)


FILES_0_4_6 = (
    "sglang/version.py",
    "sglang/srt/speculative/spec_info.py",
    "sglang/srt/speculative/eagle_worker.py",
    "sglang/srt/server_args.py",
    "sglang/srt/managers/scheduler.py",
)


def test_include_new_reports_what_a_change_breaks_elsewhere(tmp_path, sglang_0_4_6):
    root = tmp_path / "fork"
    for rel in FILES_0_4_6:
        target = root / "python" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sglang_0_4_6 / rel, target)
    repo = init_repo(root)
    commit_all(repo, "upstream 0.4.6 files")
    spec = root / "python" / "sglang" / "srt" / "speculative" / "spec_info.py"
    text = spec.read_text()
    assert "    EAGLE3 = auto()\n" in text  # line 7
    spec.write_text(text.replace("    EAGLE3 = auto()\n", "    EAGLE3 = auto()\n    DDTREE = auto()\n", 1))
    commit_all(repo, "add DDTREE to the enum only")

    spec_path = "sglang/srt/speculative/spec_info.py"
    only_changed = check(root, "--diff-base", "HEAD~1", "--format", "json", "--ignore", "SGL1")
    assert only_changed.exit_code == 1, only_changed.output
    # No worker, no predicate of its own: both reported on the new line 8.
    assert rows(only_changed) == [("SGL201", spec_path, 8), ("SGL204", spec_path, 8)]

    with_new = check(root, "--diff-base", "HEAD~1", "--format", "json", "--ignore", "SGL1", "--include-new")
    assert with_new.exit_code == 1, with_new.output
    # ...and the argparse choices (server_args.py:861, untouched) no longer match the enum.
    assert rows(with_new) == [("SGL205", "sglang/srt/server_args.py", 861), ("SGL201", spec_path, 8), ("SGL204", spec_path, 8)]
    assert json.loads(with_new.stdout)["findings"][0]["data"]["missing_choices"] == ["DDTREE"]
    # the checkout is what was scanned: it is `latest`, not the base revision pulled beside it
    from sgl_scan.snapshots.store import Store

    assert Store().latest().manifest.source_kind == "local"


def test_check_states_its_scope_in_text_and_json(checkout):
    """A review answer covers only the files the scope takes, and says so (issue 18, case 7)."""
    root, _ = checkout
    text = check(root, "--diff-base", "HEAD")
    assert text.exit_code == 0, text.output
    assert text.stdout.rstrip().splitlines()[-1].endswith("run with --scope full for all")
    doc = json.loads(check(root, "--diff-base", "HEAD", "--scope", "full", "--format", "json").stdout)
    assert doc["scope"]["name"] == "full" and doc["scope"]["complete"] is True


def test_text_review_prints_findings_first_and_a_one_line_inventory(checkout):
    """Issue 13 item 6: a review run's text output is the comments, not the inventory tables."""
    root, repo = checkout
    model = root / "python" / KIMI
    model.write_text(model.read_text().replace(OFFSETS, "self.hot_token_id = loaded_weight"))
    commit_all(repo, "use d2t directly")

    result = check(root, "--diff-base", "HEAD~1", "--format", "text")
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stdout.splitlines() if line.strip()]  # stderr holds the pull's line
    first_finding = next(i for i, line in enumerate(lines) if "SGL301" in line)
    assert lines[1].startswith("Findings (") and first_finding < 6  # right after the one-line header
    assert KIMI in lines[2] and "440:" in lines[first_finding]
    inventory = [line for line in lines if line.startswith("Inventory: ")]
    assert len(inventory) == 1 and "algorithms (" in inventory[0] and "EAGLE" in inventory[0]
    for table in ("Algorithms (", "Predicates", "Choice hooks", "Dispatch sites (", "d2t sites ("):
        assert not any(line.startswith(table) for line in lines), table
    assert lines[-3].startswith("Summary: ") and lines[-2].strip().endswith("could not be read")
    assert "run with --scope full for all" in lines[-1] and len(lines) < 30
