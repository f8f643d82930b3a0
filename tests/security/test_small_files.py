"""Settings, baselines, ssh configs, hosts files and known_hosts are checked by type and size on
the opened descriptor before they are read (issue 31): an oversized or special file is one line,
never a hang, a huge read or a parser's RecursionError."""

from __future__ import annotations

import os
import threading

import pytest

from sgl_scan.config import discover_default_map
from sgl_scan.errors import ConfigError, RemoteError
from sgl_scan.fleet.hosts import parse_hosts_file
from sgl_scan.rules.baseline import read_baseline
from sgl_scan.smallfiles import CONFIG_LIMIT, read_small
from sgl_scan.snapshots.knownhosts import KnownHosts
from sgl_scan.snapshots.sshconfig import expand_config


def _repo(tmp_path):
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_oversized_settings_file_is_refused_by_size(tmp_path):
    repo = _repo(tmp_path)
    with open(repo / ".sgl-scan.toml", "wb") as handle:
        handle.write(b'select = ["SGL3"]\n')
        handle.truncate(CONFIG_LIMIT + 1)
    with pytest.raises(ConfigError, match="larger than 1 MiB"):
        discover_default_map(start=repo)


def test_deeply_nested_settings_and_baseline_are_one_line(tmp_path):
    repo = _repo(tmp_path)
    (repo / ".sgl-scan.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(ConfigError):
        discover_default_map(start=repo)
    baseline = tmp_path / "baseline.json"
    baseline.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigError, match="not readable JSON"):
        read_baseline(baseline)


def test_oversized_baseline_is_refused_by_size(tmp_path):
    baseline = tmp_path / "baseline.json"
    with open(baseline, "wb") as handle:
        handle.truncate((64 << 20) + 1)
    with pytest.raises(ConfigError, match="larger than 64 MiB"):
        read_baseline(baseline)


def _never_blocks(call):
    """Run `call` in a thread; fail (instead of hanging the suite) if it blocks."""
    outcome = {}

    def run():
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed back to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "blocked on a FIFO"
    return outcome


def test_fifos_are_refused_without_waiting(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for call, error in [
        (lambda: read_baseline(fifo), ConfigError),
        (lambda: expand_config(str(fifo)), ConfigError),
        (lambda: parse_hosts_file(str(fifo)), ConfigError),
        (lambda: KnownHosts([fifo]), RemoteError),
        (lambda: read_small(fifo, 10, "file"), ConfigError),
    ]:
        outcome = _never_blocks(call)
        assert isinstance(outcome.get("error"), error), outcome
        assert "not a regular file" in str(outcome["error"])


def test_dev_null_reads_as_empty_where_openssh_allows_it():
    assert KnownHosts([__import__("pathlib").Path("/dev/null")]).lines == []
