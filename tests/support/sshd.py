"""A private OpenSSH server on 127.0.0.1 for tests and benches (Debian's `openssh-server`).

    from tests.support.sshd import start_sshd

    with start_sshd(tmp_path / "sshd") as server:
        args = server.cli_args()          # --host 127.0.0.1 --port N --user U --identity K --known-hosts F
        server.run("echo hi")             # run a command through the real ssh client (checks, returns stdout)

Each server gets its own folder with a generated host key, a client key, `authorized_keys` and
`sshd_config` (`UsePAM no`, `StrictModes no`, `Subsystem sftp internal-sftp`, TCP forwarding on
for ProxyJump), listens on a free loopback port and is stopped (with every session it spawned) when
the context exits. `env` becomes `SetEnv` lines, so a test can hand the remote shell a `PATH` or
`PYTHONPATH` without touching the real home directory. Pass the same `host_key` again to restart a
server with an identical identity, or a fresh folder to get a *changed* host key.

The pytest fixture `sshd_server` (defined in tests/conftest.py; this module needs no pytest) yields a ready server per test,
whose sessions see `HOME=<tmp_path>/remote-home`.
Never point anything at a host other than loopback.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping


SSHD = "/usr/sbin/sshd"
SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"


@dataclass(frozen=True)
class SshServer:
    """A running private sshd and everything a client needs to reach it."""

    host: str
    port: int
    user: str
    folder: Path
    client_key: Path  # private key (ed25519, no passphrase) listed in authorized_keys
    known_hosts: Path  # a known_hosts file that trusts exactly this server
    host_key: Path  # the server's private host key (reuse it to restart with the same identity)
    host_key_public: str  # "ssh-ed25519 AAAA..."
    pid: int
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def known_hosts_name(self) -> str:
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"

    def cli_args(self, *, known_hosts: Path | None = None) -> list[str]:
        """The sgl-scan source options that reach this server."""
        return [
            "--host", self.host, "--port", str(self.port), "--user", self.user,
            "--identity", str(self.client_key), "--known-hosts", str(known_hosts or self.known_hosts),
        ]

    def write_ssh_config(self, path: Path, alias: str, *, extra: str = "") -> Path:
        """Write an ~/.ssh/config-style file with `Host alias` pointing at this server."""
        path.write_text(
            f"Host {alias}\n  HostName {self.host}\n  Port {self.port}\n  User {self.user}\n"
            f"  IdentityFile {self.client_key}\n{extra}"
        )
        return path

    def ssh_command(self, command: str) -> list[str]:
        """argv for the OpenSSH client running `command` on this server."""
        return [
            "ssh", "-p", str(self.port), "-i", str(self.client_key), "-o", "BatchMode=yes",
            "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "StrictHostKeyChecking=yes",
            "-o", "IdentitiesOnly=yes", "-F", "/dev/null", f"{self.user}@{self.host}", command,
        ]

    def run(self, command: str) -> str:
        """Run `command` through the real ssh client; raise on failure, return stdout."""
        result = subprocess.run(self.ssh_command(command), capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise RuntimeError(f"ssh {command!r} failed ({result.returncode}): {result.stderr.strip()}")
        return result.stdout

    def sessions(self) -> list[int]:
        """Process ids of every process this sshd spawned (connections, shells, their children)."""
        return _descendants(self.pid)

    def kill_sessions(self) -> int:
        """SIGKILL every session process (the listener stays up); returns how many were killed."""
        killed = 0
        for pid in self.sessions():
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        return killed


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", "sgl-scan-test", "-f", str(path)], check=True)


def _unlock_root() -> None:
    """With `UsePAM no` sshd refuses locked accounts ('!' hash); a '*' hash allows key logins."""
    if os.geteuid() != 0:
        return
    shadow = Path("/etc/shadow")
    lines = shadow.read_text().splitlines(keepends=True)
    changed = False
    for i, line in enumerate(lines):
        fields = line.split(":")
        if fields[0] == "root" and len(fields) > 1 and fields[1].startswith("!"):
            fields[1] = "*"
            lines[i] = ":".join(fields)
            changed = True
    if changed:
        shadow.write_text("".join(lines))


def _config(folder: Path, port: int, host_key: Path, env: Mapping[str, str]) -> str:
    lines = [
        f"Port {port}",
        "ListenAddress 127.0.0.1",
        f"HostKey {host_key}",
        f"PidFile {folder / 'sshd.pid'}",
        f"AuthorizedKeysFile {folder / 'authorized_keys'}",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin yes",
        "UsePAM no",
        "StrictModes no",
        "AllowTcpForwarding yes",
        "UseDNS no",
        "MaxStartups 64",
        "MaxSessions 64",
        "LogLevel INFO",
        "Subsystem sftp internal-sftp",
    ]
    for key, value in env.items():
        if any(c in value for c in '"\n'):
            raise ValueError(f"SetEnv value for {key} must not contain quotes or newlines")
    if env:  # sshd honours only the first SetEnv line: all variables go on one
        lines.append("SetEnv " + " ".join(f'{key}="{value}"' for key, value in env.items()))
    return "\n".join(lines) + "\n"


def _skip(reason: str) -> None:
    """A skipped test under pytest; a plain error elsewhere (bench/run.py runs without pytest)."""
    try:
        import pytest
    except ImportError:
        raise RuntimeError(reason) from None
    pytest.skip(reason)


@contextmanager
def start_sshd(
    folder: Path, *, env: Mapping[str, str] | None = None, host_key: Path | None = None,
    home: Path | None = None,
) -> Iterator[SshServer]:
    """Start a private sshd on 127.0.0.1 (files under `folder`), yield it, stop it and its sessions.

    `home`: sessions get `HOME` set to this folder (created), so `~` on the "remote" is private
    and the real user's shell start-up files are not read (bash run by sshd sources
    `<home>/.bashrc`: write one there to change PATH). `env`: more `SetEnv` variables (sshd resets
    PATH itself).
    """
    if not os.path.exists(SSHD):
        _skip("openssh-server is not installed (/usr/sbin/sshd); run scripts/test.sh")
    env = dict(env or {})
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
        env.setdefault("HOME", str(home))
    folder.mkdir(parents=True, exist_ok=True)
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    _unlock_root()
    if host_key is None:
        host_key = folder / "host_ed25519"
        _keygen(host_key)
    client_key = folder / "client_ed25519"
    if not client_key.exists():
        _keygen(client_key)
    (folder / "authorized_keys").write_text(Path(f"{client_key}.pub").read_text())
    host_pub = " ".join(Path(f"{host_key}.pub").read_text().split()[:2])
    user = getpass.getuser()
    process = None
    for _attempt in range(5):
        port = _free_port()
        config = folder / "sshd_config"
        config.write_text(_config(folder, port, host_key, env))
        log = open(folder / "sshd.log", "ab")
        process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.PIPE, start_new_session=True,
        )
        log.close()
        ready = False
        assert process.stderr is not None
        for raw in process.stderr:  # sshd says when it listens; no polling, no sleeps
            with open(folder / "sshd.log", "ab") as handle:
                handle.write(raw)
            if b"Server listening on" in raw:
                ready = True
                break
        if ready:
            break
        process.wait()
        process = None
    if process is None:
        raise RuntimeError(f"sshd did not start; see {folder / 'sshd.log'}")
    # Keep draining sshd's log so it never blocks on a full pipe.
    drain = subprocess.Popen(["cat"], stdin=process.stderr, stdout=open(folder / "sshd.log", "ab"))
    known_hosts = folder / "known_hosts"
    name = f"[127.0.0.1]:{port}"
    known_hosts.write_text(f"{name} {host_pub}\n")
    server = SshServer(
        host="127.0.0.1", port=port, user=user, folder=folder, client_key=client_key,
        known_hosts=known_hosts, host_key=host_key, host_key_public=host_pub, pid=process.pid, env=env,
    )
    try:
        yield server
    finally:
        server.kill_sessions()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        drain.wait()
        if process.stderr:
            process.stderr.close()
