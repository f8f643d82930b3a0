"""Real git repositories for tests, built with gitpython in a temporary folder.

    repo = make_repo(tmp_path / "r", {"python/sglang/version.py": '__version__ = "1.0"\\n'})
    sha = commit_files(repo, {"python/sglang/srt/x.py": "X = 1\\n"}, "add x")
    copy_package(release_dir / "sglang", tmp_path / "r" / "python" / "sglang")   # then commit_all(repo)

Commits use a fixed author and committer so the tests never depend on the user's git config.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Mapping

import git

ACTOR = git.Actor("sgl-scan tests", "tests@sgl-scan.invalid")


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Write `files` (relative path -> text or bytes) under `root`, creating folders."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def commit_all(repo: git.Repo, message: str) -> str:
    """Stage everything in the work tree (additions, changes, deletions) and commit; returns the sha."""
    repo.git.add(A=True)
    return repo.index.commit(message, author=ACTOR, committer=ACTOR).hexsha


def make_repo(root: Path, files: Mapping[str, str | bytes] | None = None, *, branch: str = "main",
              message: str = "initial") -> git.Repo:
    """A new repository at `root` on `branch`, with `files` committed when given."""
    root.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(root, initial_branch=branch)
    with repo.config_writer() as config:
        config.set_value("user", "name", ACTOR.name)
        config.set_value("user", "email", ACTOR.email)
    if files:
        write_files(root, files)
        commit_all(repo, message)
    return repo


def commit_files(repo: git.Repo, files: Mapping[str, str | bytes], message: str) -> str:
    """Write `files` into the work tree and commit them; returns the new commit's sha."""
    write_files(Path(repo.working_tree_dir), files)
    return commit_all(repo, message)


def copy_package(source: Path, target: Path) -> Path:
    """Copy an sglang package folder (e.g. from `release_tree`) to `target`, Python files only."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), dirs_exist_ok=True)
    return target
