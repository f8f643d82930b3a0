"""The git and local-folder sources, on real repositories built in tmp_path."""

from __future__ import annotations

import os

import pytest

from sgl_scan.errors import SnapshotError
from sgl_scan.snapshots.git import pull_git, redact_url
from sgl_scan.snapshots.local import pull_local
from sgl_scan.snapshots.store import Store
from tests.snapshots.conftest import MINI_SPECULATIVE, make_mini_package
from tests.support.gitrepo import commit_all, commit_files, make_repo


@pytest.fixture
def checkout(tmp_path):
    root = tmp_path / "sglang"
    make_mini_package(root / "python")
    repo = make_repo(root, branch="main")
    first = commit_all(repo, "import")
    second = commit_files(repo, {"python/sglang/srt/speculative/ddtree.py": "DDTREE = 1\n",
                                 "python/sglang/version.py": '__version__ = "10.0.0"\n'}, "add ddtree")
    return repo, first, second


def _paths(snapshot):
    return [f.path for f in snapshot.manifest.files]


def test_git_reads_an_old_revision_without_touching_the_work_tree(tmp_path, checkout):
    repo, first, second = checkout
    work = repo.working_tree_dir
    with open(os.path.join(work, "python/sglang/srt/server_args.py"), "a") as handle:
        handle.write("UNCOMMITTED = 1\n")
    before = {p: open(os.path.join(work, p), "rb").read() for p in repo.git.ls_files().splitlines()}
    status_before = repo.git.status("--porcelain")
    snap = pull_git({"git_repo": work, "rev": first}, store=Store(tmp_path / "store"))
    assert _paths(snap) == MINI_SPECULATIVE
    assert snap.manifest.sglang_version == "9.9.9"
    assert snap.manifest.git.commit == first and snap.manifest.git.dirty is False
    assert b"UNCOMMITTED" not in (snap.tree / "sglang/srt/server_args.py").read_bytes()
    assert {p: open(os.path.join(work, p), "rb").read() for p in before} == before
    assert repo.git.status("--porcelain") == status_before and repo.head.commit.hexsha == second
    head = pull_git({"git_repo": work}, store=Store(tmp_path / "store"))
    assert head.manifest.git.commit == second and head.manifest.git.branch == "main"
    assert head.manifest.sglang_version == "10.0.0"
    assert "sglang/srt/speculative/ddtree.py" in _paths(head)


def test_git_url_is_cloned_into_the_cache_and_fetched_again(tmp_path, checkout):
    repo, first, second = checkout
    url = "file://" + repo.working_tree_dir
    snap = pull_git({"git_repo": url, "rev": "main"}, store=Store(tmp_path / "store"))
    assert snap.manifest.git.commit == second and snap.manifest.git.branch == "main"
    clones = list((tmp_path / "sgl-scan-home" / "git").glob("*.git"))
    assert len(clones) == 1
    third = commit_files(repo, {"python/sglang/srt/speculative/more.py": "MORE = 1\n"}, "more")
    snap = pull_git({"git_repo": url, "rev": "main"}, store=Store(tmp_path / "store"))
    assert snap.manifest.git.commit == third and "sglang/srt/speculative/more.py" in _paths(snap)


def test_a_revision_pulled_again_is_stored_once(tmp_path, checkout):
    repo, first, second = checkout
    store = Store(tmp_path / "store")
    work = repo.working_tree_dir
    head = pull_git({"git_repo": work, "rev": "main"}, store=store)
    again = pull_git({"git_repo": work, "rev": "main"}, store=store)
    assert again.id == head.id and store.ids() == [head.id]
    assert not head.pulled.reused and again.pulled.reused
    old = pull_git({"git_repo": work, "rev": first}, store=store)  # another commit: another snapshot
    assert old.id != head.id and old.pulled.unchanged == len(old.manifest.files) - 1  # all but version.py stored
    third = commit_files(repo, {"python/sglang/srt/speculative/more.py": "MORE = 1\n"}, "more")
    moved = pull_git({"git_repo": work, "rev": "main"}, store=store)  # main moved on
    assert moved.id not in (head.id, old.id) and moved.manifest.git.commit == third
    assert len(store.ids()) == 3


def test_unknown_revision_and_missing_package_are_errors(tmp_path, checkout):
    repo, _, _ = checkout
    with pytest.raises(SnapshotError, match="unknown revision"):
        pull_git({"git_repo": repo.working_tree_dir, "rev": "no-such-branch"}, store=Store(tmp_path / "s"))
    empty = make_repo(tmp_path / "empty", {"README": "nothing\n"})
    with pytest.raises(SnapshotError, match="no SGLang package"):
        pull_git({"git_repo": empty.working_tree_dir}, store=Store(tmp_path / "s"))


def test_credentials_never_reach_the_manifest():
    assert redact_url("https://user:s3cret@example.com/sglang.git") == "https://***@example.com/sglang.git"
    assert redact_url("https://ghp_token@example.com/sglang.git") == "https://***@example.com/sglang.git"
    assert redact_url("ssh://git@example.com/sglang.git") == "ssh://git@example.com/sglang.git"
    assert redact_url("/srv/sglang") == "/srv/sglang"


@pytest.mark.parametrize("layout", ["", "python", "python/sglang", "tree"])
def test_local_folder_layouts(tmp_path, layout):
    root = tmp_path / "x"
    package = make_mini_package(root / "python" if layout.startswith("python") else root / "tree" if layout == "tree" else root)
    given = {"": root, "python": root / "python", "python/sglang": package, "tree": root}[layout]
    snap = pull_local({"local_path": str(given)}, store=Store(tmp_path / "store"))
    assert _paths(snap) == MINI_SPECULATIVE and snap.manifest.root == str(package)


def test_local_checkout_records_git_state_and_skips_links(tmp_path, checkout):
    repo, _, second = checkout
    work = repo.working_tree_dir
    os.symlink("/etc/passwd", os.path.join(work, "python/sglang/srt/speculative/evil.py"))
    with open(os.path.join(work, "python/sglang/srt/server_args.py"), "a") as handle:
        handle.write("LOCAL = 1\n")
    snap = pull_local({"local_path": work}, store=Store(tmp_path / "store"))
    assert snap.manifest.git.commit == second and snap.manifest.git.dirty
    assert "+LOCAL = 1" in (snap.folder / snap.manifest.git.patch).read_text()
    assert [(s.path, s.reason) for s in snap.manifest.skipped] == [("sglang/srt/speculative/evil.py", "not a regular file")]
    assert "sglang/srt/speculative/evil.py" not in _paths(snap)


def test_a_folder_without_sglang_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SnapshotError, match="no SGLang package"):
        pull_local({"local_path": str(tmp_path / "empty")}, store=Store(tmp_path / "store"))
