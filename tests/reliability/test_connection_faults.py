"""Connection faults through the installed `sgl-scan` entry point (a real subprocess each time):
exit 3, one stderr line that says what happened and what to do, no traceback unless `-v`, and nothing
stored."""

from __future__ import annotations

import io
import socket
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.reliability.remote import home_with_path, one_error_line, run_cli, ssh_cli_args, tool_dir
from tests.snapshots.conftest import make_mini_package
from tests.support.sshd import start_sshd

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _replace(args: list[str], option: str, value: str) -> list[str]:
    args = list(args)
    args[args.index(option) + 1] = value
    return args


def _nothing_stored(home: Path) -> bool:
    return not list((home / "snapshots").glob("*/manifest.json")) if (home / "snapshots").exists() else True


def _assert_fault(args: list[str], home: Path, *expected: str) -> str:
    result = run_cli(["snapshot", "pull", *args], home)
    assert result.returncode == 3, result.stdout + result.stderr
    line = one_error_line(result)
    for text in expected:
        assert text in line, line
    assert result.stdout == ""
    assert _nothing_stored(home)
    verbose = run_cli(["-v", "snapshot", "pull", *args], home)
    assert verbose.returncode == 3 and "Traceback" in verbose.stderr
    assert verbose.stderr.rstrip().splitlines()[-1] == line
    print("FAULT:", line)
    return line


def test_connection_refused(tmp_path, sshd_server, mini_package):
    args = _replace(ssh_cli_args(sshd_server, mini_package), "--port", str(_free_port()))
    _assert_fault(args, tmp_path / "home", "connection refused", "is sshd running there and the port right?")


def test_dns_failure(tmp_path, sshd_server, mini_package):
    args = _replace(ssh_cli_args(sshd_server, mini_package), "--host", "no-such-gpu-box.sgl-scan.invalid")
    _assert_fault(args, tmp_path / "home", "cannot resolve host 'no-such-gpu-box.sgl-scan.invalid'",
                  "check --host or ~/.ssh/config")


def test_authentication_failure(tmp_path, sshd_server, mini_package):
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    args = _replace(ssh_cli_args(sshd_server, mini_package), "--identity", str(stranger))
    line = _assert_fault(args, tmp_path / "home", "authentication failed", "check --user and --identity")
    assert "PRIVATE KEY" not in line


def test_connect_timeout(tmp_path, sshd_server, mini_package):
    with socket.socket() as silent:  # accepts TCP (backlog) but never speaks SSH
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        args = _replace(ssh_cli_args(sshd_server, mini_package, "--connect-timeout", "0.5"), "--port",
                        str(silent.getsockname()[1]))
        _assert_fault(args, tmp_path / "home", "did not answer", "--connect-timeout")


def test_changed_host_key(tmp_path, sshd_server, mini_package):
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    known = tmp_path / "known_hosts"
    known.write_text(f"{sshd_server.known_hosts_name} {Path(f'{other}.pub').read_text().rsplit(' ', 1)[0]}\n")
    args = ssh_cli_args(sshd_server, mini_package, "--accept-new-host-key", known_hosts=known)
    _assert_fault(args, tmp_path / "home", "CHANGED")
    assert len(known.read_text().splitlines()) == 1


def _stalling_remote(tmp_path, tar_body: str):
    tools = tool_dir(tmp_path / "tools", {"tar": tar_body})
    return start_sshd(tmp_path / "sshd", home=home_with_path(tmp_path / "remote-home", [tools]))


def test_total_deadline_stops_a_remote_that_stalls(tmp_path):
    package = make_mini_package(tmp_path / "remote")
    # the remote tar never answers: only --timeout ends the pull
    with _stalling_remote(tmp_path, "cat >/dev/null\nexec tail -f /dev/null\n") as server:
        _assert_fault(ssh_cli_args(server, package, "--timeout", "2"), tmp_path / "home", "deadline", "--timeout")


def test_server_killed_mid_transfer(tmp_path):
    package = make_mini_package(tmp_path / "remote")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        data = b"x = 1\n" * 200_000
        info = tarfile.TarInfo("srt/server_args.py")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    (tmp_path / "big.tar").write_bytes(buf.getvalue())
    # the remote tar sends 300 KB of a 1.2 MB member, then kills the sshd session serving it
    body = f"cat >/dev/null\nhead -c 300000 '{tmp_path / 'big.tar'}'\nkill -KILL $PPID\nexec tail -f /dev/null\n"
    with _stalling_remote(tmp_path, body) as server:
        line = _assert_fault(ssh_cli_args(server, package, "--timeout", "60"), tmp_path / "home")
    assert "cut short" in line or "connection" in line
