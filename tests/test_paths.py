"""sgl-scan's environment variables: `SGLSCAN_*`, outside SGLang's `SGL_*`/`SGLANG_*` namespace;
the old `SGL_SCAN_*` names are still read, with one notice."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sgl_scan import paths
from tests.snapshots.conftest import make_mini_package


@pytest.fixture
def fresh_notices(monkeypatch):
    monkeypatch.setattr(paths, "_noticed", set())


def test_no_variable_of_ours_is_in_sglangs_namespace():
    assert not paths.PREFIX.startswith(("SGL_", "SGLANG_"))


def test_new_name_wins_and_says_nothing(tmp_path, monkeypatch, caplog, fresh_notices):
    monkeypatch.setenv("SGLSCAN_HOME", str(tmp_path / "new"))
    monkeypatch.setenv("SGL_SCAN_HOME", str(tmp_path / "old"))
    assert paths.sgl_scan_home() == tmp_path / "new"
    assert caplog.records == []


def test_old_name_is_read_with_one_notice(tmp_path, monkeypatch, caplog, fresh_notices):
    monkeypatch.delenv("SGLSCAN_HOME", raising=False)
    monkeypatch.setenv("SGL_SCAN_HOME", str(tmp_path / "old"))
    assert paths.sgl_scan_home() == tmp_path / "old"
    assert paths.snapshots_dir() == tmp_path / "old" / "snapshots"
    notices = [r.getMessage() for r in caplog.records]
    assert notices == ["SGL_SCAN_HOME is read for now; rename it to SGLSCAN_HOME (SGLang claims SGL_* variables)"]


def test_old_downloads_name_is_read(tmp_path, monkeypatch, fresh_notices):
    from sgl_scan.snapshots.wheel import downloads_folder

    monkeypatch.delenv("SGLSCAN_DOWNLOADS", raising=False)
    monkeypatch.setenv("SGL_SCAN_DOWNLOADS", str(tmp_path / "dl"))
    assert downloads_folder() == tmp_path / "dl"


def test_cli_with_the_old_name_uses_its_store_and_prints_one_notice_line(tmp_path):
    package = make_mini_package(tmp_path / "src")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLSCAN_", "SGL_SCAN_"))}
    env["SGL_SCAN_HOME"] = str(tmp_path / "old")
    result = subprocess.run([sys.executable, "-m", "sgl_scan", "snapshot", "pull", "--path", str(package)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[:1] == [
        "sgl-scan: SGL_SCAN_HOME is read for now; rename it to SGLSCAN_HOME (SGLang claims SGL_* variables)"]
    assert result.stderr.count("SGL_SCAN_HOME") == 1
    assert (tmp_path / "old" / "snapshots" / result.stdout.strip() / "manifest.json").is_file()
