"""The floor of any paramiko client: start Python, import paramiko, connect, check the host key,
authenticate with a key, run `true`, close. Nothing else.

    python bench/paramiko_floor.py HOST PORT USER KEY_FILE KNOWN_HOSTS

`bench/pull_bench.py` times it beside `ssh HOST true` and the no-change re-pulls: whatever a
paramiko-based tool does on top (listing, comparing, its own imports) costs more than this.
Imports only what that needs (paramiko without `invoke`, as sgl-scan imports it when the ssh config
has no `Match exec` line). The host key must match KNOWN_HOSTS, as it must for sgl-scan.
"""

import socket
import sys

sys.modules.setdefault("invoke", None)  # paramiko.config runs without it (only `Match exec` needs it)
import paramiko  # noqa: E402


def main(host: str, port: str, user: str, key_file: str, known_hosts: str) -> int:
    name = host if int(port) == 22 else f"[{host}]:{port}"
    trusted = paramiko.HostKeys(known_hosts).lookup(name) or {}
    sock = socket.create_connection((host, int(port)), timeout=15)
    transport = paramiko.Transport(sock)
    try:
        transport.start_client(timeout=15)
        key = transport.get_remote_server_key()
        if trusted.get(key.get_name()) != key:
            print(f"host key of {name} is not the one in {known_hosts}", file=sys.stderr)
            return 1
        transport.auth_publickey(user, paramiko.PKey.from_path(key_file))
        channel = transport.open_session(timeout=15)
        channel.exec_command("true")
        return channel.recv_exit_status()
    finally:
        try:
            sock.shutdown(socket.SHUT_RDWR)  # wakes paramiko's reader thread at once
        except OSError:
            pass
        transport.close()


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:6]))
