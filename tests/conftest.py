"""Fixtures shared by the whole suite."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.support.releases import release_tree
from tests.support.sshd import SshServer, start_sshd


@pytest.fixture(scope="session")
def sglang_0_5_23():
    return release_tree("0.5.23")


@pytest.fixture(scope="session")
def sglang_0_4_6():
    return release_tree("0.4.6")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    """Every test gets its own $SGLSCAN_HOME so nothing touches the user's store."""
    monkeypatch.setenv("SGLSCAN_HOME", str(tmp_path / "sgl-scan-home"))


@pytest.fixture
def sshd_server(tmp_path) -> Iterator[SshServer]:
    """A fresh private sshd for one test (see `tests.support.sshd.start_sshd`), with a private HOME under tmp_path."""
    with start_sshd(tmp_path / "sshd", home=tmp_path / "remote-home") as server:
        yield server
