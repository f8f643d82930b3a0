"""Mistakes get one line and one exit code per kind of mistake (issue 29): click's usage errors in
one line with click's own suggestion, "did you mean" at every level, the same code for the same
mistake whichever command made it, and no remark that has nothing to do with the mistake."""

from __future__ import annotations

import pytest

from sgl_scan.snapshots.wheel import _no_match_hint
from tests.support.cli import run_main as _run


@pytest.mark.parametrize("args, words", [
    (["scna"], "No such command 'scna'. Did you mean 'scan'?"),
    (["snapshot", "lst"], "No such command 'lst'. Did you mean 'list'?"),
    (["graph", "--dispach", "EAGLE"], "Did you mean"),
    (["graph", "--format", "svg"], "'svg' is not one of"),
    (["scan", "--fail-on", "bad"], "Invalid value for '--fail-on'"),
    (["drafter", "check"], "Missing argument 'PATH'"),
    (["--pip", "sglang==0.5.23", "rules"], "--pip does not apply to 'sgl-scan rules'"),
])
def test_a_usage_error_is_one_line_with_clicks_suggestion(capsys, args, words):
    code, out, err = _run(capsys, *args)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("sgl-scan: error: ") and words in err, err
    assert "Usage:" not in err and "Try '" not in err


@pytest.mark.parametrize("command", [("scan",), ("graph", "--dispatch", "EAGLE"), ("gen", "ddtree", "--dry-run")])
def test_an_empty_store_is_the_same_mistake_for_every_command(capsys, command):
    code, out, err = _run(capsys, *command)
    assert (code, out) == (2, "") and "the store is empty" in err and err.count("\n") == 1


@pytest.mark.parametrize("command", [("scan",), ("snapshot", "pull"), ("graph",)])
def test_path_to_a_missing_folder_or_to_a_file_is_the_same_mistake(capsys, tmp_path, command):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    codes = {_run(capsys, *command, "--path", str(where))[0] for where in (tmp_path / "missing", a_file)}
    assert codes == {2}


PIP_NONE = ("ERROR: Could not find a version that satisfies the requirement sglang==9.9.9 (from versions: 0.5.21, "
            "0.5.22, 0.5.23)\nERROR: No matching distribution found for sglang==9.9.9\n")
PIP_NO_WHEELS = ("ERROR: Could not find a version that satisfies the requirement sglang==0.1.0 (from versions: none)\n"
                 "ERROR: No matching distribution found for sglang==0.1.0\n")


def test_a_missing_version_is_named_without_the_sdist_remark():
    assert _no_match_hint("sglang==9.9.9", PIP_NONE) == " (the index has no wheel of sglang 9.9.9; newest: 0.5.23)"
    assert "sdist" in _no_match_hint("sglang==0.1.0", PIP_NO_WHEELS)  # no wheel at all: the remark explains why
