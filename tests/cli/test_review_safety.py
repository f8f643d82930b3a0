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
from tests.support.cli import run_main_in

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


# --- 2, 3, 6, 9: the changed-line set comes from git, whatever its config and wherever check runs ---

@pytest.fixture
def fork(tmp_path, sglang_0_5_23):
    """A checkout with the five real files at python/sglang on main and a `feature` branch."""
    root = tmp_path / "fork"
    copy_files(sglang_0_5_23, root / "python")
    repo = init_repo(root)
    commit_all(repo, "upstream 0.5.23 files")
    repo.git.checkout("-b", "feature")
    return root, repo


def add_bug(root: Path, repo) -> int:
    edit(root / "python" / LLAMA, OFFSETS, DIRECT)
    commit_all(repo, "use d2t directly")
    return line_of(root / "python" / LLAMA, DIRECT)


@pytest.mark.parametrize("config", [
    {"diff.mnemonicPrefix": "true"},
    {"diff.noprefix": "true"},
    {"diff.srcPrefix": "x/", "diff.dstPrefix": "y/"},
    {"color.ui": "always", "color.diff": "always"},
    {"diff.external": "false"},
])
def test_git_config_cannot_hide_a_changed_line(fork, monkeypatch, config):
    root, repo = fork
    line = add_bug(root, repo)
    with repo.config_writer() as writer:  # the user's own settings, in the repository's config
        for key, value in config.items():
            section, name = key.split(".")
            writer.set_value(section, name, value)
    result = run(root, "check", "--diff-base", "main", "--select", "SGL301", "--format", "json")
    assert (result.exit_code, sgl301(result)) == (1, [(LLAMA, line)]), result.output


def test_a_bug_made_by_deleting_a_line_is_on_a_changed_line(fork):
    root, repo = fork
    wrapped = "self.hot_token_id = (\n                    loaded_weight\n                    + torch.arange(loaded_weight.shape[0])\n                )"
    edit(root / "python" / LLAMA, OFFSETS, wrapped)
    commit_all(repo, "wrapped as black wraps it")
    assert run(root, "check", "--diff-base", "HEAD~1", "--select", "SGL301").exit_code == 0
    edit(root / "python" / LLAMA, "                    + torch.arange(loaded_weight.shape[0])\n", "")
    commit_all(repo, "drop the arange line")  # a pure deletion: no added line at all
    result = run(root, "check", "--diff-base", "HEAD~1", "--select", "SGL301", "--format", "json")
    assert (result.exit_code, sgl301(result)) == (1, [(LLAMA, line_of(root / "python" / LLAMA, "self.hot_token_id = ("))])


def test_without_paths_check_covers_the_whole_repository_from_any_folder(fork):
    root, repo = fork
    line = add_bug(root, repo)
    inside = root / "python" / "sglang" / "srt" / "speculative"
    result = run(inside, "check", "--diff-base", "main", "--select", "SGL301", "--format", "json")
    assert (result.exit_code, sgl301(result)) == (1, [(LLAMA, line)]), result.output
    # PATHS still limit: relative to where check runs
    other = run(inside, "check", ".", "--diff-base", "main", "--select", "SGL301", "--format", "json")
    assert (other.exit_code, sgl301(other)) == (0, [])


def test_a_diff_that_cannot_be_read_is_an_error_not_a_pass(fork, monkeypatch, capsys):
    from sgl_scan.snapshots import changes

    root, repo = fork
    add_bug(root, repo)
    monkeypatch.setattr(changes, "parse_unified_diff", lambda text: {})  # a misread diff
    code, out, err = run_main_in(capsys, root, "check", "--diff-base", "main")
    assert (code, out) == (3, "")
    assert err == ("sgl-scan: error: git reports changes in 1 file(s) that were not read from its diff "
                   "(first: python/sglang/srt/models/llama_eagle3.py); refusing to pass the review\n")


def git(cwd: Path, *args: str) -> str:
    import subprocess

    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def upstream(fork):
    """The fork as an upstream: `feature` adds the bug, then main moves on; a merge ref as GitHub makes one."""
    root, repo = fork
    line = add_bug(root, repo)
    git(root, "checkout", "-q", "main")
    edit(root / "python" / "sglang" / "srt" / "speculative" / "spec_info.py", "\n", "\n# main moved\n")
    git(root, "commit", "-qam", "main moves")
    git(root, "checkout", "-q", "--detach", "main")
    git(root, "merge", "-q", "--no-ff", "feature", "-m", "Merge pull/1")
    git(root, "update-ref", "refs/pull/1/merge", "HEAD")
    git(root, "checkout", "-q", "main")
    return root, line


def ci_checkout(upstream_root: Path, where: Path, *fetches: list[str], checkout: str) -> Path:
    where.mkdir()
    git(where, "init", "-q")
    git(where, "remote", "add", "origin", f"file://{upstream_root}")
    for fetch in fetches:
        git(where, "fetch", "-q", *fetch)
    git(where, "checkout", "-q", "--detach", checkout) if checkout.startswith("refs/") else git(where, "checkout", "-q", checkout)
    return where


@pytest.mark.parametrize("setup", ["depth1_with_base", "merge_ref_full", "moved_base_branch"])
def test_ci_checkouts_keep_reporting_the_bug_on_its_changed_line(upstream, tmp_path, setup):
    root, line = upstream
    if setup == "depth1_with_base":  # actions/checkout default plus `git fetch --depth=1 origin main`
        where = ci_checkout(root, tmp_path / "ci", ["--depth=1", "origin", "+refs/pull/1/merge:refs/remotes/pull/1/merge"],
                            ["--depth=1", "origin", "+refs/heads/main:refs/remotes/origin/main"], checkout="refs/remotes/pull/1/merge")
    elif setup == "merge_ref_full":  # fetch-depth: 0, detached at the merge ref
        where = ci_checkout(root, tmp_path / "ci", ["origin", "+refs/heads/*:refs/remotes/origin/*", "+refs/pull/1/merge:refs/remotes/pull/1/merge"],
                            checkout="refs/remotes/pull/1/merge")
    else:  # a full clone of the branch, main moved since it forked
        where = ci_checkout(root, tmp_path / "ci", ["origin", "+refs/heads/*:refs/remotes/origin/*"], checkout="refs/remotes/origin/feature")
    result = run(where, "check", "--diff-base", "origin/main", "--select", "SGL301", "--format", "json")
    assert (result.exit_code, sgl301(result)) == (1, [(LLAMA, line)]), result.output


def test_a_base_a_shallow_clone_lacks_is_one_line(upstream, tmp_path, capsys):
    root, _ = upstream
    where = ci_checkout(root, tmp_path / "ci", ["--depth=1", "origin", "+refs/pull/1/merge:refs/remotes/pull/1/merge"],
                        checkout="refs/remotes/pull/1/merge")
    code, out, err = run_main_in(capsys, where, "check", "--diff-base", "HEAD~1")
    assert (code, out) == (2, "") and "which this shallow clone does not have; fetch it first" in err
    assert len(err.strip().splitlines()) == 1
