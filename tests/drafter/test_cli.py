"""`sgl-scan drafter check|diff` through the real entry point: output, JSON and exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from sgl_scan.cli import main
from tests.drafter import factory


def run(argv, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture
def good(tmp_path):
    return factory.good_drafter(tmp_path / "good")


def test_check_passes_without_a_snapshot(good, target_cfg, capsys):
    rc, out, err = run(["drafter", "check", str(good), "--target-config", str(target_cfg)], capsys)
    assert rc == 0, err
    assert "PASS  d2t-reading" in out
    assert "SGLang: no snapshot stored and no source given" in out
    assert "SGLang default capture: no snapshot" in out
    assert out.rstrip().endswith("result: 0 failed, 0 warnings, 13 passed, 0 skipped")


def test_check_json_and_failure_exit(tmp_path, ids, target_cfg, capsys):
    folder = factory.write_drafter(tmp_path / "direct", factory.tensors(ids.copy(), factory.mask(ids)), factory.config())
    rc, out, _ = run(["drafter", "check", str(folder), "--target-config", str(target_cfg), "--format", "json", "--no-snapshot"], capsys)
    assert rc == 1
    data = json.loads(out)
    assert data["failed"] is True and data["d2t_reading"] == "direct"
    assert data["engine"] is None and data["engine_note"] == "skipped (--no-snapshot)"
    assert {c["name"]: c["status"] for c in data["checks"]}["d2t-reading"] == "fail"
    assert data["target"] == {"vocab_size": 163_840, "vocab_source": f"--target-config {target_cfg}", "num_layers": 61}
    assert data["summary"] == {"pass": 11, "warn": 0, "fail": 2, "skip": 0}


def test_warnings_alone_exit_zero(tmp_path, target_cfg, capsys):
    folder = factory.write_drafter(tmp_path / "zero", factory.tensors(np.zeros(32_000, np.int64), factory.mask(np.arange(32_000))), factory.config())
    rc, out, _ = run(["drafter", "check", str(folder), "--target-vocab", "163840"], capsys)
    assert rc == 0 and "WARN  d2t-trivial" in out


def test_usage_errors_exit_2(good, target_cfg, capsys):
    rc, _, err = run(["drafter", "check", str(good), "--target-config", str(target_cfg), "--target-vocab", "5"], capsys)
    assert rc == 2 and "give --target-config or --target-vocab, not both" in err
    rc, _, err = run(["drafter", "check", str(good), "--target-vocab", "0"], capsys)
    assert rc == 2
    rc, _, err = run(["drafter", "check", str(good), "--format", "xml"], capsys)
    assert rc == 2


def test_unreadable_input_exits_3_with_one_line(tmp_path, capsys):
    bad = tmp_path / "model.safetensors"
    bad.write_bytes(b"PK\x03\x04" + b"\0" * 64)
    rc, out, err = run(["drafter", "check", str(bad), "--no-snapshot"], capsys)
    assert rc == 3 and out == ""
    assert err == f"sgl-scan: error: {bad}: not a safetensors file (a zip archive: torch.save's format; convert it to safetensors)\n"


def test_diff_text_and_json(tmp_path, capsys):
    a = factory.good_drafter(tmp_path / "k2", seed=0)
    b = factory.good_drafter(tmp_path / "k25", seed=1)
    differing = int(np.count_nonzero(factory.hot_ids(0) != factory.hot_ids(1)))
    rc, out, _ = run(["drafter", "diff", str(a), str(b), "--limit", "3"], capsys)
    assert rc == 0
    assert f"{differing:,} of 32,000 draft positions map to different target ids" in out
    assert [line.split(":")[0].strip() for line in out.splitlines() if line.startswith("  ")] == ["800", "801", "802"]
    rc, out, _ = run(["drafter", "diff", str(a), str(b), "--format", "json"], capsys)
    data = json.loads(out)
    assert data["differing"] == differing and len(data["first_differences"]) == 10


def test_installed_entry_point(good, target_cfg):
    entry = shutil.which("sgl-scan")
    command = [entry] if entry else [sys.executable, "-m", "sgl_scan"]
    result = subprocess.run(
        [*command, "drafter", "check", str(good), "--target-config", str(target_cfg), "--no-snapshot", "--format", "json"],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["summary"]["fail"] == 0


def test_missing_backend_is_a_clear_usage_error(good, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "safetensors", None)  # import safetensors now raises ImportError
    rc, out, err = run(["drafter", "check", str(good), "--no-snapshot"], capsys)
    assert rc == 2 and out == ""
    assert err.startswith("sgl-scan: error: drafter checks need numpy and safetensors")
    assert "pip install 'sgl-scan[drafter]'" in err
