"""Real git repositories in tmp_path for the code-review tests."""

from __future__ import annotations

from pathlib import Path

import git


def init_repo(root: Path) -> git.Repo:
    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "sgl-scan tests")
        config.set_value("user", "email", "tests@sgl-scan.invalid")
        config.set_value("commit", "gpgsign", "false")
    return repo


def commit_all(repo: git.Repo, message: str) -> str:
    repo.git.add("--all")
    repo.index.commit(message)
    return repo.head.commit.hexsha
