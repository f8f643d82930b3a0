"""The package passes `ruff check` with the configuration in pyproject.toml (scripts/test.sh runs the
same check before pytest; this test makes a plain `pytest` catch a finding too)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None,
                    reason="ruff is not installed (pip install -e '.[test]' installs it)")
def test_ruff_check_passes_on_the_package():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "sgl_scan"],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
