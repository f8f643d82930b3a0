"""Code review that never passes a bug silently (issue 19), on real git checkouts of SGLang 0.5.23.

The change under review is the d2t direct-map bug (`self.hot_token_id = loaded_weight`, SGL301) in
`llama_eagle3.py`, made the ways a real change makes it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sgl_scan.cli import cli
from tests.cli.gitrepo import commit_all, init_repo

pytestmark = pytest.mark.slow

FILES = (
    "sglang/version.py",
    "sglang/srt/speculative/spec_info.py",
    "sglang/srt/speculative/spec_registry.py",
    "sglang/srt/models/llama_eagle3.py",
    "sglang/srt/models/kimi_k25_eagle3.py",
)
LLAMA = "sglang/srt/models/llama_eagle3.py"
OFFSETS = "self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])"
DIRECT = "self.hot_token_id = loaded_weight"
OLD_TEST = '            if "d2t" in name:\n'
# New code in the same load_weights, above the accepted bug: a second key handled the same wrong way.
NEW_COPY = '            if name.endswith(".d2t"):\n                self.hot_token_id = loaded_weight\n                continue\n'


def copy_files(sglang: Path, root: Path) -> Path:
    for rel in FILES:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sglang / rel, target)
    return root


def run(cwd: Path, *args: str):
    runner = CliRunner()
    before = os.getcwd()
    try:
        os.chdir(cwd)
        return runner.invoke(cli, list(args))
    finally:
        os.chdir(before)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new, 1))


def line_of(path: Path, needle: str, nth: int = 0) -> int:
    lines = path.read_text().splitlines()
    return [i for i, text in enumerate(lines, start=1) if needle in text][nth]


def sgl301(result) -> list[tuple[str, int]]:
    return [(f["path"], f["line"]) for f in json.loads(result.stdout)["findings"] if f["rule_id"] == "SGL301"]


# --- 1. a baseline cannot hide a new copy of a baselined bug -------------------------------------

def test_scan_baseline_reports_the_added_copy_and_keeps_the_old_one_baselined(tmp_path, sglang_0_5_23):
    tree = copy_files(sglang_0_5_23, tmp_path / "t")
    model = tree / LLAMA
    edit(model, OFFSETS, DIRECT)
    baseline = tmp_path / "baseline.json"
    wrote = run(tmp_path, "scan", "--path", str(tree), "--select", "SGL301", "--write-baseline", str(baseline), "--format", "sarif", "-o", str(tmp_path / "before.sarif"))
    assert wrote.exit_code == 0, wrote.output
    old_line = line_of(model, DIRECT)

    edit(model, OLD_TEST, NEW_COPY + OLD_TEST)
    new_line, moved_old = line_of(model, DIRECT, 0), line_of(model, DIRECT, 1)
    assert new_line < old_line < moved_old == old_line + 3  # the copy is above: first in line order

    result = run(tmp_path, "scan", "--path", str(tree), "--select", "SGL301", "--baseline", str(baseline), "--format", "json")
    assert result.exit_code == 1, result.output
    assert sgl301(result) == [(LLAMA, new_line)]

    run(tmp_path, "scan", "--path", str(tree), "--select", "SGL301", "--format", "sarif", "-o", str(tmp_path / "after.sarif"))
    def prints(name):
        results = json.loads((tmp_path / name).read_text())["runs"][0]["results"]
        return {r["locations"][0]["physicalLocation"]["region"]["startLine"]: r["partialFingerprints"] for r in results}
    before, after = prints("before.sarif"), prints("after.sarif")
    assert after[moved_old] == before[old_line]  # the old alert follows the old code
    assert after[new_line] != before[old_line]  # the new code is a new alert


def test_a_neighbour_edit_keeps_a_baselined_finding_but_not_with_an_added_copy(tmp_path, sglang_0_5_23):
    tree = copy_files(sglang_0_5_23, tmp_path / "t")
    model = tree / LLAMA
    edit(model, OFFSETS, DIRECT)
    baseline = tmp_path / "baseline.json"
    assert run(tmp_path, "scan", "--path", str(tree), "--write-baseline", str(baseline)).exit_code == 0
    edit(model, "                # d2t stores diffs between draft id and target id\n", "")  # its neighbour line
    quiet = run(tmp_path, "scan", "--path", str(tree), "--baseline", str(baseline), "--format", "json")
    assert (quiet.exit_code, sgl301(quiet)) == (0, [])
    edit(model, OLD_TEST, NEW_COPY + OLD_TEST)
    loud = run(tmp_path, "scan", "--path", str(tree), "--baseline", str(baseline), "--format", "json")
    assert loud.exit_code == 1 and (LLAMA, line_of(model, DIRECT, 0)) in sgl301(loud)


def test_check_with_a_committed_baseline_reports_the_added_copy(tmp_path, sglang_0_5_23):
    root = tmp_path / "fork"
    copy_files(sglang_0_5_23, root / "python")
    repo = init_repo(root)
    edit(root / "python" / LLAMA, OFFSETS, DIRECT)
    commit_all(repo, "known bug, accepted into the baseline")
    assert run(root, "scan", "--path", "python", "--select", "SGL3", "--write-baseline", "sgl-scan-baseline.json").exit_code == 0
    (root / "pyproject.toml").write_text('[tool.sgl-scan]\nbaseline = "sgl-scan-baseline.json"\n')
    commit_all(repo, "baseline")
    repo.git.checkout("-b", "feature")
    edit(root / "python" / LLAMA, OLD_TEST, NEW_COPY + OLD_TEST)
    commit_all(repo, "same bug, new line")

    result = run(root, "check", "--diff-base", "main", "--select", "SGL3", "--format", "json")
    assert result.exit_code == 1, result.output
    assert sgl301(result) == [(LLAMA, line_of(root / "python" / LLAMA, DIRECT, 0))]
