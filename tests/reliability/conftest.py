"""Fixtures for the reliability suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snapshots.conftest import make_mini_package


@pytest.fixture
def mini_package(tmp_path) -> Path:
    """The snapshot tests' tiny SGLang package, as a remote or local tree under tmp_path."""
    return make_mini_package(tmp_path / "remote")
