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


@pytest.mark.parametrize(
    "text, message",
    [
        ('fail-on = "fatal"\n', "fail-on = 'fatal' is not one of info, warning, error"),
        ('scope = "everything"\n', "scope = 'everything' is not one of speculative, full"),
        ('format = "xml"\n', "format = 'xml' is not one of text, json, sarif, markdown, html"),
    ],
)
def test_bad_value_names_the_file_and_key_in_one_line(tmp_path, text, message):
    (tmp_path / ".sgl-scan.toml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / ".sgl-scan.toml")
    assert str(info.value) == f"{tmp_path / '.sgl-scan.toml'}: {message}"


def test_settings_errors_and_precedence_on_the_command_line(tmp_path, capsys):
    """An unknown selector in the settings names the file and key (exit 2, one line, no traceback);
    `--select X` with X in the settings' ignore says that the command line wins, and it does."""
    import json
    import os
    import shutil

    from click.testing import CliRunner

    from sgl_scan.cli import cli, main

    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    tree = root / "sglang" / "srt" / "server_args.py"
    tree.parent.mkdir(parents=True)
    tree.write_text('def f(server_args):\n    if server_args.speculative_algorithm == "EAGLE":\n        server_args.x()\n')
    (tree.parent / "speculative").mkdir()
    (tree.parent / "speculative" / "spec_info.py").write_text("class SpeculativeAlgorithm:\n    pass\n")
    config = root / ".sgl-scan.toml"
    previous = os.getcwd()
    os.chdir(root)
    try:
        config.write_text('ignore = ["SGL9"]\n')
        with pytest.raises(SystemExit) as info:
            main(["scan", "--path", str(root)])
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert err.strip() == f"sgl-scan: error: {config}: ignore SGL9: no rule has that id, prefix or name (see `sgl-scan rules`)"
        config.write_text('ignore = ["SGL202"]\n')
        result = CliRunner().invoke(cli, ["scan", "--path", str(root), "--format", "json"])
        assert [f["rule_id"] for f in json.loads(result.stdout)["findings"]] == []
        result = CliRunner().invoke(cli, ["scan", "--path", str(root), "--format", "json", "--select", "SGL202"])
        assert f"--select SGL202 wins over {config}: ignore (command-line options win)" in result.stderr
        assert [f["rule_id"] for f in json.loads(result.stdout)["findings"]] == ["SGL202"]
    finally:
        os.chdir(previous)
        shutil.rmtree(root / ".git")
