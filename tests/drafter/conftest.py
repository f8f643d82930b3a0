"""Fixtures for the drafter tests: one realistic draft vocabulary, drafters written on demand."""

from __future__ import annotations

import pytest

from tests.drafter import factory


@pytest.fixture(scope="session")
def ids():
    """32,000 sorted target ids of a frequency-built draft vocabulary (read-only)."""
    values = factory.hot_ids(0)
    values.flags.writeable = False
    return values


@pytest.fixture
def target_cfg(tmp_path):
    return factory.target_config(tmp_path / "target")
