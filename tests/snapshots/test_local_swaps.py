"""`--path` reads what it listed, or nothing (issue 31, 2 and 3): a file swapped after the listing for
a FIFO, a symlink to /dev/zero, a symlink out of the tree, or a folder on the way swapped for a link
to the user's own files is refused (recorded as skipped), never waited on, never read; a symlinked
scope root leading outside the scanned folder is followed only with --follow-outside-links."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from sgl_scan.snapshots import local
from tests.support.cli import run_main


@pytest.fixture
def deadline():
    """A read that blocks fails the test instead of hanging the suite."""
    def expired(signum, frame):
        raise TimeoutError("sgl-scan blocked")

    before = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, before)


def _tree(root: Path) -> Path:
    package = root / "sglang"
    spec = package / "srt" / "speculative"
    (spec / "deep").mkdir(parents=True)
    (package / "version.py").write_text('__version__ = "0.5.23"\n')
    (spec / "aaa_first.py").write_text("class EagleWorker:\n    pass\n")
    for name in ("fifo.py", "zero.py", "outside.py"):
        (spec / name).write_text("X = 1\n")
    (spec / "deep" / "secret.py").write_text("LISTED = 1\n")
    return package


def _manifest(capsys) -> dict:
    code, out, err = run_main(capsys, "snapshot", "show", "latest", "--json")
    assert code == 0, err
    return json.loads(out)


def test_files_swapped_after_the_listing_are_refused_not_read(capsys, tmp_path, monkeypatch, deadline):
    package = _tree(tmp_path / "t")
    spec = package / "srt" / "speculative"
    private = tmp_path / "home-of-the-user"
    private.mkdir()
    (private / "secret.py").write_text("TOKEN = 'users-own-secret'\n")
    (private / "outside.py").write_text("TOKEN = 'users-own-secret'\n")
    listed = local.list_files

    def list_then_swap(*args, **kwargs):
        result = listed(*args, **kwargs)
        (spec / "fifo.py").unlink()
        os.mkfifo(spec / "fifo.py")
        (spec / "zero.py").unlink()
        (spec / "zero.py").symlink_to("/dev/zero")
        (spec / "outside.py").unlink()
        (spec / "outside.py").symlink_to(private / "outside.py")
        shutil.rmtree(spec / "deep")
        (spec / "deep").symlink_to(private, target_is_directory=True)
        return result

    monkeypatch.setattr(local, "list_files", list_then_swap)
    code, out, err = run_main(capsys, "snapshot", "pull", "--path", str(package), "--scope", "full")
    assert code == 0, err
    manifest = _manifest(capsys)
    skipped = {s["path"]: s["reason"] for s in manifest["skipped"]}
    assert skipped["sglang/srt/speculative/fifo.py"] == "not a regular file; not read"
    assert skipped["sglang/srt/speculative/zero.py"] == "a symlink; not read"
    assert skipped["sglang/srt/speculative/outside.py"] == "a symlink; not read"
    assert skipped["sglang/srt/speculative/deep/secret.py"] == "leads outside the tree (a link on the way); not read"
    files = {f["path"] for f in manifest["files"]}
    assert files == {"sglang/version.py", "sglang/srt/speculative/aaa_first.py"}
    from sgl_scan.paths import sgl_scan_home

    assert not any("users-own-secret" in p.read_text(errors="replace") for p in sgl_scan_home().rglob("*.py"))


def test_a_scope_root_linking_outside_the_folder_needs_follow_outside_links(capsys, tmp_path):
    package = _tree(tmp_path / "t")
    theirs = tmp_path / "users-own-code" / "speculative"
    shutil.move(package / "srt" / "speculative", theirs)
    (package / "srt" / "speculative").symlink_to(theirs, target_is_directory=True)
    code, out, err = run_main(capsys, "snapshot", "pull", "--path", str(package))
    assert code == 0, err
    manifest = _manifest(capsys)
    assert not [f for f in manifest["files"] if "/speculative/" in f["path"]]
    assert {s["path"]: s["reason"] for s in manifest["skipped"]}["sglang/srt/speculative"] == (
        "symlink to a folder outside the scanned folder, not followed (--follow-outside-links follows it)")
    code, out, err = run_main(capsys, "snapshot", "pull", "--path", str(package), "--follow-outside-links")
    assert code == 0, err
    assert "sglang/srt/speculative/aaa_first.py" in {f["path"] for f in _manifest(capsys)["files"]}


def test_a_scope_root_linking_inside_the_scanned_folder_is_followed(capsys, tmp_path):
    package = _tree(tmp_path / "t")
    kept = tmp_path / "t" / "shared" / "speculative"
    kept.parent.mkdir()
    shutil.move(package / "srt" / "speculative", kept)
    (package / "srt" / "speculative").symlink_to(kept, target_is_directory=True)
    code, out, err = run_main(capsys, "snapshot", "pull", "--path", str(tmp_path / "t"))
    assert code == 0, err
    assert "sglang/srt/speculative/aaa_first.py" in {f["path"] for f in _manifest(capsys)["files"]}


def test_check_follows_a_scope_root_linking_elsewhere_inside_the_checkout(capsys, tmp_path):
    import subprocess

    from tests.support.cli import run_main_in

    root = tmp_path / "checkout"
    package = _tree(root / "python")
    kept = root / "vendor" / "speculative"
    kept.parent.mkdir()
    shutil.move(package / "srt" / "speculative", kept)
    (package / "srt" / "speculative").symlink_to(kept, target_is_directory=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env)
    code, out, err = run_main_in(capsys, root, "check", "--diff-base", "HEAD")
    assert code in (0, 1), err
    assert "sglang/srt/speculative/aaa_first.py" in {f["path"] for f in _manifest(capsys)["files"]}
