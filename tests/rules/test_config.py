"""`[tool.sgl-scan]` / `.sgl-scan.toml` discovery and translation to click defaults."""

from __future__ import annotations

import pytest

from sgl_scan.config import default_map, discover_default_map, find_config, load_config
from sgl_scan.errors import ConfigError


def test_pyproject_table_found_from_a_subfolder(tmp_path):
    (tmp_path / ".git").mkdir()  # the repository's root: the search goes no higher
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.sgl-scan]\nselect = ["SGL3"]\nfail-on = "warning"\nscope = "full"\nbaseline = "b.json"\n'
    )
    sub = tmp_path / "python" / "sglang"
    sub.mkdir(parents=True)
    found, path = discover_default_map(sub)
    assert path == tmp_path / "pyproject.toml"
    assert found["scope"] == "full"
    assert found["scan"] == {"select": ["SGL3"], "fail_on": "warning", "scope": "full", "baseline": str(tmp_path / "b.json")}
    assert found["check"] == found["scan"]


def test_dotfile_wins_and_pyproject_without_table_is_skipped(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".sgl-scan.toml").write_text('ignore = "SGL1"\nformat = "sarif"\n')
    inner = tmp_path / "repo"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[tool.black]\nline-length = 100\n')
    assert find_config(inner) == tmp_path / ".sgl-scan.toml"
    assert default_map(load_config(tmp_path / ".sgl-scan.toml"))["scan"] == {"ignore": ["SGL1"], "fmt": "sarif"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("[tool.sgl-scan]\nfail_on = 'error'\n", "unknown key 'fail_on'"),
        ("[tool.sgl-scan]\nselect = [1, 2]\n", "select must be a list of strings"),
        ("[tool.sgl-scan\n", "not valid TOML"),
    ],
)
def test_bad_config_is_a_configuration_error(tmp_path, text, message):
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        discover_default_map(tmp_path)


def test_explicit_config_must_exist(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        discover_default_map(tmp_path, explicit=tmp_path / "nope.toml")


def test_no_config_anywhere(tmp_path):
    assert discover_default_map(tmp_path) == ({}, None)


def test_someone_elses_broken_pyproject_is_passed_over(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.black\nline-length = 100\n")
    assert discover_default_map(tmp_path) == ({}, None)
