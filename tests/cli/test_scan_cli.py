"""`sgl-scan scan` and `sgl-scan rules` end to end: real SGLang files, the real analyzer, CliRunner and a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sgl_scan.cli import cli, main

# Real 0.4.6 files: the algorithm class, argparse choices + string dispatch, the EAGLE-3 weight loader,
# the worker's hot_token_id uses and the scheduler that creates the worker.
FILES_0_4_6 = (
    "sglang/version.py",
    "sglang/srt/speculative/spec_info.py",
    "sglang/srt/speculative/eagle_worker.py",
    "sglang/srt/server_args.py",
    "sglang/srt/models/llama_eagle3.py",
    "sglang/srt/managers/scheduler.py",
)
MODEL = "sglang/srt/models/llama_eagle3.py"


@pytest.fixture
def tree(tmp_path, sglang_0_4_6):
    root = tmp_path / "checkout"
    for rel in FILES_0_4_6:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sglang_0_4_6 / rel, root / rel)
    return root


def scan(*args, cwd=None):
    runner = CliRunner()
    if cwd is None:
        return runner.invoke(cli, ["scan", *args])
    previous = os.getcwd()
    os.chdir(cwd)  # the project whose pyproject.toml the scan reads
    try:
        return runner.invoke(cli, ["scan", *args])
    finally:
        os.chdir(previous)


def findings(result):
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return [(f["rule_id"], f["path"], f["line"]) for f in json.loads(result.stdout)["findings"]]


@pytest.mark.slow
def test_scan_reports_inventory_and_checks_with_exit_codes(tree):
    result = scan("--path", str(tree), "--format", "json")
    assert result.exit_code == 0, result.output
    rows = findings(result)
    spec = "sglang/srt/speculative/spec_info.py"
    assert [r for r in rows if r[0] == "SGL101"] == [("SGL101", spec, 5), ("SGL101", spec, 6), ("SGL101", spec, 7)]
    assert ("SGL302", MODEL, 182) in rows
    assert ("SGL202", "sglang/srt/server_args.py", 321) in rows
    assert not [r for r in rows if r[0] in ("SGL201", "SGL203", "SGL204", "SGL205", "SGL301")]

    assert scan("--path", str(tree), "--format", "json", "--fail-on", "warning").exit_code == 1
    only = scan("--path", str(tree), "--format", "json", "--select", "SGL3", "--ignore", "SGL302", "--fail-on", "info")
    assert (only.exit_code, findings(only)) == (0, [])  # SGL301 only, and 0.4.6 adds arange

    default = CliRunner().invoke(cli, ["--path", str(tree)])  # no command: scan, text report
    assert default.exit_code == 0, default.output
    assert "SGL302" in default.output and "Summary" in default.output


@pytest.mark.slow
def test_suppression_comment_on_the_line(tree):
    lines = (tree / MODEL).read_text().splitlines(keepends=True)
    assert 'if "d2t" in name:' in lines[181]
    lines[181] = lines[181].rstrip("\n") + "  # sgl-scan: ignore[SGL302]\n"
    (tree / MODEL).write_text("".join(lines))
    rows = findings(scan("--path", str(tree), "--format", "json", "--select", "SGL302,SGL103"))
    assert ("SGL302", MODEL, 182) not in rows
    assert ("SGL103", MODEL, 182) in rows
    assert ("SGL302", MODEL, 186) in rows


@pytest.mark.slow
def test_baseline_round_trip_survives_a_line_move(tree, tmp_path):
    baseline = tmp_path / "baseline.json"
    first = scan("--path", str(tree), "--select", "SGL2,SGL3", "--fail-on", "warning", "--write-baseline", str(baseline))
    assert first.exit_code == 0, first.output
    # 3 SGL302 and SGL202 at server_args.py:321 (the NEXTN resolver at :317 is no dispatch since the flow facts)
    assert len(json.loads(baseline.read_text())["findings"]) == 4

    text = (tree / MODEL).read_text()
    (tree / MODEL).write_text("# moved\n# down\n# three lines\n" + text.replace(
        "        return self.hot_token_id\n",
        "        return self.hot_token_id\n\n    def extra(self, name):\n        return \"t2d\" in name\n", 1))
    again = scan("--path", str(tree), "--select", "SGL2,SGL3", "--fail-on", "warning", "--baseline", str(baseline), "--format", "json")
    assert again.exit_code == 1
    rows = findings(again)
    assert len(rows) == 1 and rows[0][:2] == ("SGL302", MODEL)


@pytest.mark.slow
def test_config_file_sets_defaults_and_options_win(tree, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.sgl-scan]\nselect = ["SGL3"]\nfail-on = "warning"\nformat = "json"\n')
    result = scan("--path", str(tree), cwd=project)
    assert result.exit_code == 1, result.output
    assert {r[0] for r in findings(result)} == {"SGL302"}
    assert scan("--path", str(tree), "--fail-on", "error", cwd=project).exit_code == 0


def run_main(argv):
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code


@pytest.mark.slow
def test_usage_and_failure_exit_codes(tree, tmp_path, capsys, monkeypatch):
    assert run_main(["scan", "--path", str(tree), "--select", "SGL999"]) == 2
    assert "--select SGL999: no rule" in capsys.readouterr().err
    assert run_main(["scan", "--path", str(tree), "--fail-on", "fatal"]) == 2
    assert run_main(["scan", "--path", str(tmp_path / "missing")]) in (2, 3)
    assert run_main(["scan", "--path", str(tmp_path)]) == 3  # a folder without an SGLang package
    assert "sgl-scan: error:" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("fail-on = 3\n")
    assert run_main(["--config", str(bad), "scan", "--path", str(tree)]) == 2
    assert "fail-on must be a string" in capsys.readouterr().err


def test_rules_command_lists_and_shows():
    runner = CliRunner()
    listing = runner.invoke(cli, ["rules"])
    assert listing.exit_code == 0
    assert "SGL301  d2t-used-as-direct-map" in listing.output
    one = runner.invoke(cli, ["rules", "d2t-substring-match"])
    assert one.output.startswith("SGL302 d2t-substring-match (warning)")
    assert "## Use instead" in one.output


@pytest.mark.slow
def test_the_installed_entry_point_in_a_subprocess(tree):
    exe = shutil.which("sgl-scan")
    command = [exe] if exe else [sys.executable, "-m", "sgl_scan"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    rules = subprocess.run([*command, "rules", "--format", "json"], capture_output=True, text=True, env=env, timeout=120)
    assert rules.returncode == 0, rules.stderr
    assert [r["id"] for r in json.loads(rules.stdout)][:3] == ["SGL101", "SGL102", "SGL103"]

    run = subprocess.run([*command, "scan", "--path", str(tree), "--format", "json", "--select", "SGL3", "--fail-on", "warning"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 1, run.stderr
    document = json.loads(run.stdout)
    assert document["schema_version"] == 2
    assert [(f["rule_id"], f["path"], f["line"]) for f in document["findings"]] == [
        ("SGL302", MODEL, 182), ("SGL302", MODEL, 186), ("SGL302", MODEL, 186)
    ]


@pytest.mark.slow
def test_suppression_comment_on_a_black_wrapped_condition(tmp_path):
    """0.5.23 `arg_groups/kimi_k3_hook.py:42-46`: `if (` / `cfg.speculative_algorithm == "DSPARK"` (43) /
    two more `and` lines / `):`. Black puts a trailing comment on the `):` line (46); it must hide the
    SGL202 finding at 43. A comment in the body (47) does not."""
    from tests.support.releases import release_tree

    source = release_tree("0.5.23")
    hook = "sglang/srt/arg_groups/kimi_k3_hook.py"
    root = tmp_path / "checkout"
    for rel in ("sglang/srt/speculative/spec_info.py", "sglang/srt/speculative/spec_registry.py", hook):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, root / rel)
    args = ("--path", str(root), "--format", "json", "--select", "SGL202")
    assert ("SGL202", hook, 43) in findings(scan(*args))

    lines = (root / hook).read_text().splitlines(keepends=True)
    assert lines[41].strip() == "if (" and lines[45].strip() == "):" and "declare_resolution(" in lines[46]
    body = list(lines)
    body[46] = body[46].rstrip("\n") + "  # sgl-scan: ignore[SGL202]\n"
    (root / hook).write_text("".join(body))
    assert ("SGL202", hook, 43) in findings(scan(*args))

    lines[45] = "    ):  # sgl-scan: ignore[SGL202]\n"
    (root / hook).write_text("".join(lines))
    assert ("SGL202", hook, 43) not in findings(scan(*args))
