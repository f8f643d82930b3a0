"""README claims about the CLI as a whole: a command with no source uses the latest stored snapshot,
and usage or configuration errors exit 2 (a missing --ssh-config file, an unusable --out)."""

from __future__ import annotations

import json

import pytest

from tests.snapshots.conftest import make_mini_package
from tests.support.cli import run_main as _run


@pytest.mark.parametrize("command", [("scan",), ("graph", "--dispatch", "EAGLE")])
def test_with_no_source_and_an_empty_store_the_error_says_what_to_give(capsys, command):
    code, out, err = _run(capsys, *command)
    assert code == 2 and out == ""
    assert "give a source" in err and "the store is empty" in err and "Traceback" not in err


def test_with_no_source_scan_and_graph_use_the_latest_snapshot(capsys, tmp_path):
    package = make_mini_package(tmp_path / "src")
    code, snap_id, err = _run(capsys, "snapshot", "pull", "--path", str(package))
    assert code == 0, err
    for command in (("scan",), ("graph",)):  # the same answer; only the implicit one says it used `latest`
        code, explicit, _ = _run(capsys, *command, "--snapshot", snap_id.strip(), "--format", "json")
        code_latest, implicit, err = _run(capsys, *command, "--format", "json")
        explicit, implicit = json.loads(explicit), json.loads(implicit)
        assert explicit["tree"]["latest"] is None and implicit["tree"]["latest"].startswith("latest: no source was named")
        assert implicit["tree"]["snapshot_id"] == snap_id.strip()
        del explicit["tree"], implicit["tree"]
        assert (code_latest, implicit) == (code, explicit) and code in (0, 1), err


def test_a_missing_ssh_config_file_is_a_usage_error(capsys, tmp_path):
    missing = tmp_path / "no-such-config"
    code, out, err = _run(capsys, "snapshot", "pull", "--host", "gpu-box", "--ssh-config", str(missing))
    assert code == 2 and out == ""
    assert err.splitlines() == [f"sgl-scan: error: ssh config file not found: {missing} (--ssh-config)"]
