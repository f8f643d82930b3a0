"""Settings files found upwards stay inside the repository and are named in every report (issue 20)."""

from __future__ import annotations

import json
import os

import git
from click.testing import CliRunner

from sgl_scan.cli import cli
from tests.snapshots.conftest import make_mini_package


def _scan(cwd, *args, top=()):
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, [*top, "scan", *args])
    finally:
        os.chdir(previous)
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def test_a_config_planted_above_the_working_directory_is_ignored(tmp_path):
    package = make_mini_package(tmp_path / "tree")
    shared = tmp_path / "shared"
    (shared / "work").mkdir(parents=True)
    (shared / ".sgl-scan.toml").write_text('ignore = ["SGL"]\n')  # would silence every rule
    document = json.loads(_scan(shared / "work", "--path", str(package), "--format", "json"))
    assert document["findings"] and "config" not in document
    named = json.loads(_scan(shared / "work", "--path", str(package), "--format", "json", top=("--config", str(shared / ".sgl-scan.toml"))))
    assert named["findings"] == [] and named["config"] == str(shared / ".sgl-scan.toml")


def test_the_repository_config_is_used_and_announced(tmp_path):
    package = make_mini_package(tmp_path / "tree")
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    git.Repo.init(repo)
    config = repo / ".sgl-scan.toml"
    config.write_text('select = ["SGL3"]\n')
    (tmp_path / ".sgl-scan.toml").write_text('ignore = ["SGL"]\n')  # above the repository: never read
    text = _scan(repo / "sub", "--path", str(package))
    assert f"using settings from {config}" in text.splitlines()[1]
    document = json.loads(_scan(repo / "sub", "--path", str(package), "--format", "json"))
    assert document["config"] == str(config) and {f["rule_id"] for f in document["findings"]} == {"SGL301", "SGL302"}
    sarif = json.loads(_scan(repo / "sub", "--path", str(package), "--format", "sarif"))
    assert sarif["runs"][0]["properties"]["config"] == str(config)
