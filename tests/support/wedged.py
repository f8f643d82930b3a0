"""SSH servers on 127.0.0.1 that misbehave on purpose, for deadline tests (loopback only).

    with wedged_sshd(tmp_path / "wedged") as server:   # accepts, authenticates, never answers `exec`
        server.cli_args()                              # --host 127.0.0.1 --port N --identity K --known-hosts F

The server is a paramiko `ServerInterface` in a subprocess (killed when the context exits): it
accepts any public key and opens sessions, then sleeps in `check_channel_exec_request`, which is
what a wedged sshd or a hostile host looks like to a client waiting for the `exec` reply.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

SERVER = r'''
import socket, sys, threading, time, paramiko
port_file, keyfile, mode = sys.argv[1], sys.argv[2], sys.argv[3]
key = paramiko.Ed25519Key.from_private_key_file(keyfile)
class S(paramiko.ServerInterface):
    def get_allowed_auths(self, u): return "publickey"
    def check_auth_publickey(self, u, k): return paramiko.AUTH_SUCCESSFUL
    def check_channel_request(self, kind, chanid):
        if mode == "session":
            time.sleep(10**6)
        return paramiko.OPEN_SUCCEEDED
    def check_channel_exec_request(self, ch, cmd): time.sleep(10**6); return True
def serve(c):
    t = paramiko.Transport(c); t.add_server_key(key); t.start_server(server=S())
    while t.is_active(): time.sleep(0.5)
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
open(port_file + ".tmp", "w").write(str(s.getsockname()[1])); __import__("os").rename(port_file + ".tmp", port_file)
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
'''


@dataclass(frozen=True)
class WedgedServer:
    host: str
    port: int
    client_key: Path
    known_hosts: Path

    def cli_args(self) -> list[str]:
        return ["--host", self.host, "--port", str(self.port), "--identity", str(self.client_key),
                "--known-hosts", str(self.known_hosts)]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


@contextmanager
def wedged_sshd(folder: Path, *, mode: str = "exec") -> Iterator[WedgedServer]:
    """A server that hangs at `exec` (mode "exec") or at opening the session channel ("session")."""
    folder.mkdir(parents=True, exist_ok=True)
    _keygen(folder / "host")
    _keygen(folder / "client")
    (folder / "srv.py").write_text(SERVER)
    port_file = folder / "port"
    proc = subprocess.Popen([sys.executable, str(folder / "srv.py"), str(port_file), str(folder / "host"), mode],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(200):
            if port_file.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        port = int(port_file.read_text())
        known = folder / "known_hosts"
        public = " ".join((folder / "host.pub").read_text().split()[:2])
        known.write_text(f"[127.0.0.1]:{port} {public}\n")
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        yield WedgedServer("127.0.0.1", port, folder / "client", known)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
