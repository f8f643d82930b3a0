"""One deadline per SSH pull, from connect to last byte, and one for a whole fleet (issue 31).

A server that accepts the session and then never answers (`exec`, or the session channel) must not
hang `--host` or `fleet`: `--timeout` ends the pull with one line, `--fleet-timeout` ends the fleet
with that host as its error row and the report still written. Loopback only (tests/support/wedged.py).
Reverting the watchdog in `sshconnect.Connector` makes these runs hang until the test's own timeout.
"""

from __future__ import annotations

import json
import time

import pytest

from sgl_scan.errors import RemoteError
from sgl_scan.snapshots.ssh import pull_ssh
from sgl_scan.snapshots.store import Store
from tests.reliability.remote import one_error_line, run_cli
from tests.support.wedged import wedged_sshd


@pytest.fixture(params=["exec", "session"])
def wedged(request, tmp_path):
    with wedged_sshd(tmp_path / "wedged", mode=request.param) as server:
        yield server


def test_host_that_never_answers_exec_ends_at_timeout(tmp_path, wedged):
    start = time.monotonic()
    result = run_cli(wedged.cli_args() + ["--remote-root", "/x", "--timeout", "3", "--connect-timeout", "5"],
                     tmp_path / "home", timeout=60, env={"HOME": str(tmp_path)})
    took = time.monotonic() - start
    assert result.returncode == 3
    line = one_error_line(result)
    assert "--timeout 3 s" in line or "--connect-timeout" in line, line
    assert took < 20, took


def test_pull_ssh_deadline_in_process(tmp_path):
    with wedged_sshd(tmp_path / "w") as server:
        params = {"host": server.host, "port": server.port, "identity": str(server.client_key),
                  "known_hosts": str(server.known_hosts), "remote_root": "/x", "connect_timeout": 5.0,
                  "timeout": 60.0}
        start = time.monotonic()
        with pytest.raises(RemoteError, match=r"within its deadline \(--fleet-timeout 2 s\)"):
            pull_ssh(params, store=Store(tmp_path / "store"), deadline=time.monotonic() + 2,
                     deadline_name="--fleet-timeout 2 s")
        assert time.monotonic() - start < 15


def test_fleet_with_a_wedged_host_writes_its_report(tmp_path, wedged, sshd_server, mini_package):
    config = tmp_path / "ssh_config"
    config.write_text(f"Host wedged\n  HostName 127.0.0.1\n  Port {wedged.port}\n  IdentityFile {wedged.client_key}\n"
                      f"Host good\n  HostName 127.0.0.1\n  Port {sshd_server.port}\n  User {sshd_server.user}\n"
                      f"  IdentityFile {sshd_server.client_key}\n")
    known = tmp_path / "known_hosts"
    known.write_text(wedged.known_hosts.read_text() + sshd_server.known_hosts.read_text())
    report = tmp_path / "fleet.json"
    start = time.monotonic()
    # --timeout is long: only --fleet-timeout can end the wedged pull in time
    result = run_cli(["fleet", "wedged", "good", "--ssh-config", str(config), "--known-hosts", str(known),
                      "--remote-root", str(mini_package), "--timeout", "600", "--fleet-timeout", "8",
                      "--format", "json", "-o", str(report)],
                     tmp_path / "home", timeout=90, env={"HOME": str(tmp_path)})
    took = time.monotonic() - start
    assert took < 40, took
    assert result.returncode in (0, 1), result.stderr
    hosts = {h["host"].split(":")[0]: h for h in json.loads(report.read_text())["hosts"]}
    assert hosts["good"]["error"] is None
    assert "--fleet-timeout 8 s" in hosts["wedged"]["error"]


def test_fleet_timeout_default_is_documented():
    from click.testing import CliRunner

    from sgl_scan.cli import cli

    out = CliRunner().invoke(cli, ["fleet", "--help"]).output
    assert "--fleet-timeout" in out and "3600" in out
