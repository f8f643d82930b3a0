"""No command named by a scanned repository's git configuration ever runs (issue 31, 1).

Each trap is one config key that makes git run a command: `core.fsmonitor`, `core.sshCommand`
(a partial clone fetching a missing blob), `core.pager`, `diff.<driver>.textconv`, `diff.external`,
`filter.<driver>.clean` / `.smudge` / `.process` (selected by `.gitattributes`), hooks (through
`core.hooksPath` and `.git/hooks`) and `include.path` (a file holding `core.fsmonitor`). For each:
plain git is shown to run the command (the trap is armed, on a copy), then `--path`, `--git` and
`check` run on the checkout and nothing runs. `test_without_the_quarantine_*` replaces the private
git folder by the repository's own and shows the traps firing through sgl-scan itself: the
protection these tests check is the quarantine, not luck. (`core.pager`, `filter.*.smudge` and hooks
need a terminal, a checkout or a commit, which sgl-scan never does even unprotected; for them the
armed trap and `test_git_sees_none_of_the_repository_config` are the evidence.)
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

from sgl_scan.snapshots import safegit
from tests.support.cli import run_main, run_main_in

KEYS = ("core.fsmonitor", "core.sshCommand", "core.pager", "diff.textconv", "diff.external", "filter.clean",
        "filter.smudge", "filter.process", "hooks", "include.path")
HOOKS = ("post-index-change", "pre-commit", "commit-msg", "post-commit", "post-checkout", "reference-transaction",
         "pre-auto-gc", "fsmonitor-watchman", "post-rewrite", "pre-push")


def git(root: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    if "stdout" not in kwargs:
        kwargs["capture_output"] = True
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "a",
           "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}
    return subprocess.run(["git", "-C", str(root), *args], env=env, **kwargs)


def _checkout(root: Path) -> None:
    package = root / "python" / "sglang"
    (package / "srt" / "speculative").mkdir(parents=True)
    (package / "version.py").write_text('__version__ = "0.5.23"\n')
    (package / "srt" / "speculative" / "eagle_worker.py").write_text("class EagleWorker:\n    pass\n")
    (package / "srt" / "speculative" / "other.py").write_text("X = 1\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")


def _arm(root: Path, key: str, mark: Path) -> list[str]:
    """Set the trap for `key` in `root`; the plain git command that springs it."""
    touch = f"touch {mark}"
    cfg = lambda k, v: git(root, "config", k, v)  # noqa: E731
    attributes = root / ".gitattributes"
    if key == "core.fsmonitor":
        cfg("core.fsmonitor", f"{touch}; false")
        trigger = ["status"]
    elif key == "include.path":
        (root / "extra.cfg").write_text(f"[core]\n\tfsmonitor = {touch}; false\n")
        cfg("include.path", str(root / "extra.cfg"))
        trigger = ["status"]
    elif key == "core.sshCommand":  # a partial clone: a missing blob is fetched from the promisor remote
        blob = git(root, "rev-parse", "HEAD:python/sglang/srt/speculative/other.py", text=True).stdout.strip()
        (root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
        cfg("core.repositoryformatversion", "1")
        cfg("extensions.partialClone", "origin")
        cfg("remote.origin.url", "ssh://127.0.0.1:1/x")
        cfg("remote.origin.promisor", "true")
        cfg("core.sshCommand", f"{touch}; false")
        trigger = ["cat-file", "-p", blob]
    elif key == "core.pager":
        cfg("core.pager", f"{touch}; cat")
        trigger = ["log"]  # on a terminal
    elif key == "diff.textconv":
        attributes.write_text("*.py diff=pwn\n")
        cfg("diff.pwn.textconv", f"sh -c '{touch}; cat \"$0\"'")
        trigger = ["diff", "HEAD"]
    elif key == "diff.external":
        cfg("diff.external", f"{touch};")
        trigger = ["diff", "HEAD"]
    elif key == "filter.clean":
        attributes.write_text("*.py filter=pwn\n")
        cfg("filter.pwn.clean", f"sh -c '{touch}; cat'")
        trigger = ["diff", "HEAD"]
    elif key == "filter.smudge":
        attributes.write_text("*.py filter=pwn\n")
        cfg("filter.pwn.smudge", f"sh -c '{touch}; cat'")
        trigger = ["checkout", "HEAD", "--", "python/sglang/version.py"]
    elif key == "filter.process":
        attributes.write_text("*.py filter=proc\n")
        cfg("filter.proc.process", f"{touch}; exit 1")
        trigger = ["diff", "HEAD"]
    else:  # hooks, from core.hooksPath and from .git/hooks
        for folder in (root / "hooks-elsewhere", root / ".git" / "hooks"):
            folder.mkdir(exist_ok=True)
            for name in HOOKS:
                (folder / name).write_text(f"#!/bin/sh\n{touch}\n")
                (folder / name).chmod(0o755)
        cfg("core.hooksPath", str(root / "hooks-elsewhere"))
        trigger = ["commit", "-q", "--allow-empty", "-m", "x"]
    # dirty: staged and unstaged edits (a diff of the work tree is taken), an index to refresh
    (root / "python" / "sglang" / "srt" / "speculative" / "eagle_worker.py").write_text("class EagleWorker:\n    x = 1\n")
    (root / "python" / "sglang" / "srt" / "speculative" / "other.py").write_text("X = 2\n")
    os.utime(root / "python" / "sglang" / "version.py", (1, 1))
    return trigger


def _springs(root: Path, trigger: list[str], mark: Path, tmp_path: Path) -> bool:
    """Whether plain git, run on a copy of `root`, runs the trap's command."""
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    if trigger == ["log"]:  # the pager starts only on a terminal
        controller, terminal = pty.openpty()
        git(copy, *trigger, stdout=terminal, stderr=terminal, stdin=terminal, timeout=30)
        os.close(terminal)
        os.close(controller)
    else:
        git(copy, *trigger, timeout=30)
    fired = mark.exists()
    mark.unlink(missing_ok=True)
    shutil.rmtree(copy)
    return fired


@pytest.fixture(params=KEYS)
def trap(request, tmp_path):
    root, mark = tmp_path / "checkout", tmp_path / f"PWNED-{request.param}"
    _checkout(root)
    trigger = _arm(root, request.param, mark)
    # the hooks trap points at the checkout's own folders; a copy's commit touches the same mark
    assert _springs(root, trigger, mark, tmp_path), f"the {request.param} trap does not fire under plain git"
    return root, mark


def test_scan_path_runs_nothing_from_the_checkouts_git_config(capsys, trap):
    root, mark = trap
    code, out, err = run_main(capsys, "snapshot", "pull", "--path", str(root / "python" / "sglang"))
    assert code == 0, err
    assert not mark.exists()


def test_git_path_runs_nothing_from_the_repositorys_git_config(capsys, trap):
    root, mark = trap
    code, out, err = run_main(capsys, "snapshot", "pull", "--git", str(root), "--scope", "full")
    assert code in (0, 3) and "internal error" not in err and "Traceback" not in err, err
    assert not mark.exists()


def test_check_runs_nothing_from_the_checkouts_git_config(capsys, trap):
    root, mark = trap
    code, out, err = run_main_in(capsys, root, "check", "--diff-base", "HEAD", "--format", "json")
    assert code in (0, 1, 3) and "internal error" not in err and "Traceback" not in err, err
    assert not mark.exists()


def test_git_sees_none_of_the_repository_config(tmp_path):
    root = tmp_path / "checkout"
    _checkout(root)
    (root / "extra.cfg").write_text("[core]\n\tpager = included\n")
    for key, value in (("core.fsmonitor", "x"), ("core.sshCommand", "x"), ("core.pager", "x"), ("diff.pwn.textconv", "x"),
                       ("diff.external", "x"), ("filter.pwn.clean", "x"), ("filter.pwn.smudge", "x"),
                       ("filter.pwn.process", "x"), ("core.hooksPath", "x"), ("include.path", str(root / "extra.cfg")),
                       ("core.filemode", "false")):
        git(root, "config", key, value)
    with safegit.quarantined(safegit.locate(root)) as repo:
        seen = repo.text("config", "--list", "--show-origin")
        assert "fsmonitor=x" not in seen and "sshcommand" not in seen and "pager" not in seen
        assert "textconv" not in seen and "external" not in seen and "filter." not in seen
        assert "hookspath=x" not in seen and "include" not in seen
        assert "core.filemode=false" in seen  # a key that names no command is kept
        assert repo.commit_of("HEAD") == git(root, "rev-parse", "HEAD", text=True).stdout.strip()
    assert (root / ".git" / "config").exists() and not list(tmp_path.glob("sgl-scan-git-*"))


class _Exposed(safegit.Quarantine):
    """What sgl-scan did before the quarantine: git on the repository's own git folder and config."""

    def __init__(self, located):
        super().__init__(located, located.git_dir)
        self.env = {**os.environ, "GIT_DIR": str(located.git_dir)}
        if located.work_tree is not None:
            self.env["GIT_WORK_TREE"] = str(located.work_tree)


@contextmanager
def _exposed(located, **kwargs):
    yield _Exposed(located)


@pytest.mark.parametrize("key", ["core.fsmonitor", "diff.textconv", "filter.clean", "filter.process", "include.path",
                                 "diff.external"])
def test_without_the_quarantine_the_traps_fire_through_scan_path(capsys, tmp_path, monkeypatch, key):
    root, mark = tmp_path / "checkout", tmp_path / "PWNED"
    _checkout(root)
    _arm(root, key, mark)
    monkeypatch.setattr(safegit, "quarantined", _exposed)
    monkeypatch.setattr(safegit, "GIT", ("git",))
    monkeypatch.setattr(safegit, "DIFF_SAFETY", ())
    run_main(capsys, "snapshot", "pull", "--path", str(root / "python" / "sglang"))
    assert mark.exists()


def test_without_the_quarantine_the_ssh_trap_fires_through_git_path(capsys, tmp_path, monkeypatch):
    root, mark = tmp_path / "checkout", tmp_path / "PWNED"
    _checkout(root)
    _arm(root, "core.sshCommand", mark)
    monkeypatch.setattr(safegit, "quarantined", _exposed)
    run_main(capsys, "snapshot", "pull", "--git", str(root), "--scope", "full")
    assert mark.exists()


@pytest.mark.parametrize("key", ["core.fsmonitor", "filter.clean", "filter.process", "include.path"])
def test_without_the_quarantine_the_traps_fire_through_check(capsys, tmp_path, monkeypatch, key):
    root, mark = tmp_path / "checkout", tmp_path / "PWNED"
    _checkout(root)
    _arm(root, key, mark)
    monkeypatch.setattr(safegit, "quarantined", _exposed)
    monkeypatch.setattr(safegit, "GIT", ("git",))
    run_main_in(capsys, root, "check", "--diff-base", "HEAD", "--format", "json")
    assert mark.exists()
