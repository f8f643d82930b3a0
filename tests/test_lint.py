"""The package passes `ruff check`, `ruff format --check` and `mypy` with the configuration in
pyproject.toml (scripts/test.sh runs the same checks before pytest; these tests make a plain `pytest`
catch them too)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


NO_RUFF = pytest.mark.skipif(importlib.util.find_spec("ruff") is None,
                             reason="ruff is not installed (pip install -e '.[test]' installs it)")


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=REPO, capture_output=True, text=True, timeout=120)


@NO_RUFF
def test_ruff_check_passes_on_the_package():
    result = _ruff("check", "--no-cache", "sgl_scan")
    assert result.returncode == 0, result.stdout + result.stderr


@NO_RUFF
def test_the_package_is_formatted():
    result = _ruff("format", "--check", "--no-cache", "sgl_scan")
    assert result.returncode == 0, result.stdout + result.stderr


@NO_RUFF
def test_the_format_check_fails_on_unformatted_code(tmp_path):
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text("x = {  'a':1 }\n")
    result = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "bad.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "bad.py" in result.stdout + result.stderr


NO_MYPY = pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                             reason="mypy is not installed (pip install -e '.[test]' installs it)")


def _mypy(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


@NO_MYPY
def test_mypy_passes_on_the_package():
    result = _mypy(REPO)  # files and settings: pyproject.toml [tool.mypy]
    assert result.returncode == 0, result.stdout + result.stderr


@NO_MYPY
def test_the_type_check_fails_on_a_type_error(tmp_path):
    """The same settings catch a wrong type in an annotated function (so the check above can fail)."""
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text().replace('files = ["sgl_scan"]',
                                                                                          'files = ["bad.py"]'))
    (tmp_path / "bad.py").write_text("def f(x: int) -> str:\n    return x\n")
    result = _mypy(tmp_path)
    assert result.returncode == 1 and "bad.py:2: error" in result.stdout, result.stdout + result.stderr
