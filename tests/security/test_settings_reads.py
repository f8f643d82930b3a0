"""Settings files in a checkout are read with a bound (issue 31: every read bounded): a
`.sgl-scan.toml` over 1 MiB is one line, exit 2; one swapped for a FIFO is an error, never a hang."""

from __future__ import annotations

import os

import pytest

from sgl_scan.errors import ConfigError
from sgl_scan.smallfiles import CONFIG_LIMIT, read_small
from tests.support.cli import run_main_in


def test_an_oversized_settings_file_is_one_line(capsys, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".sgl-scan.toml").write_text("# padding\n" * 200_000 + 'fail-on = "warning"\n')
    code, out, err = run_main_in(capsys, tmp_path, "rules")
    assert code == 2 and "larger than 1 MiB" in err and len(err.strip().splitlines()) == 1, err


def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pyproject.toml")
    with pytest.raises(ConfigError, match="not a regular file"):
        read_small(tmp_path / "pyproject.toml", CONFIG_LIMIT, "settings file")


def test_a_baseline_named_by_settings_cannot_be_a_device_or_fifo(capsys, tmp_path):
    from sgl_scan.errors import ConfigError
    from sgl_scan.rules.baseline import read_baseline

    os.mkfifo(tmp_path / "baseline.json")
    for path in (tmp_path / "baseline.json", "/dev/zero"):
        with pytest.raises(ConfigError, match="not a regular file"):
            read_baseline(path)
