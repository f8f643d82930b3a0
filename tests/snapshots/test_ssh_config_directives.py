"""`--ssh-config` honoured as OpenSSH does, or refused in one line naming the directive (issue 31).

ProxyCommand runs (through the user's shell, tokens expanded with the final port and user) and the
connection goes through it, never straight to HostName; Include is resolved (globs, relative to
~/.ssh, nesting); Match criteria paramiko cannot evaluate, KnownHostsCommand and RevokedHostKeys are
refused; HostKeyAlias and UserKnownHostsFile decide which known_hosts line applies. Loopback only."""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path

import pytest

from sgl_scan.errors import ConfigError, RemoteError
from sgl_scan.snapshots import sshconnect
from sgl_scan.snapshots.ssh import pull_ssh
from sgl_scan.snapshots.sshconfig import expand_config
from sgl_scan.snapshots.sshconnect import resolve_target
from sgl_scan.snapshots.store import Store
from tests.reliability.remote import one_error_line, run_cli

RELAY = r'''
import os, socket, sys, threading
open(sys.argv[3], "a").write(f"{sys.argv[1]} {sys.argv[2]}\n")
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
def up():
    while data := os.read(0, 65536):
        s.sendall(data)
    s.shutdown(socket.SHUT_WR)
threading.Thread(target=up, daemon=True).start()
while data := s.recv(65536):
    os.write(1, data)
'''


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(sshconnect, "GLOBAL_KNOWN_HOSTS", ())
    return home


class Listener:
    """A loopback port that counts direct TCP connections (and closes them)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.count = 0
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.count += 1
            conn.close()


def test_proxycommand_is_used_never_a_direct_connection(tmp_path):
    listener = Listener()
    config = tmp_path / "cfg"
    config.write_text(f"Host gpu\n  HostName 127.0.0.1\n  Port {listener.port}\n  ProxyCommand false\n")
    result = run_cli(["--host", "gpu", "--ssh-config", str(config), "--remote-root", "/x", "--connect-timeout", "5",
                      "--timeout", "10"], tmp_path / "sgl", timeout=60, env={"HOME": str(tmp_path / "home")})
    line = one_error_line(result)
    assert result.returncode == 3
    assert "ProxyCommand" in line and "exit 1" in line, line
    assert listener.count == 0


def test_proxycommand_carries_the_pull(tmp_path, sshd_server, mini_package):
    relay = tmp_path / "relay.py"
    relay.write_text(RELAY)
    log = tmp_path / "relay.log"
    config = tmp_path / "cfg"
    config.write_text(f"Host viaproxy\n  HostName 127.0.0.1\n  Port 1\n  User {sshd_server.user}\n"
                      f"  IdentityFile {sshd_server.client_key}\n"
                      f"  ProxyCommand {sys.executable} {relay} %h %p {log} 2>/dev/null\n")
    params = {"host": "viaproxy", "port": sshd_server.port, "ssh_config": str(config),
              "known_hosts": str(sshd_server.known_hosts), "remote_root": str(mini_package), "connect_timeout": 10.0}
    snap = pull_ssh(params, store=Store(tmp_path / "store")).snapshot
    assert snap.manifest.files
    # %p is the final port (--port wins over the config), as in OpenSSH
    assert log.read_text() == f"127.0.0.1 {sshd_server.port}\n"


def test_proxycommand_tokens_and_hostile_names(tmp_path):
    config = tmp_path / "cfg"
    config.write_text("Host *\n  ProxyCommand connect %h %p %r %n %%\n")
    target = resolve_target("box", port=2200, user="me", ssh_config=str(config))
    assert target.proxy_command == "connect box 2200 me box %"
    with pytest.raises(ConfigError, match="shell metacharacters"):
        resolve_target("box;touch /tmp/x", ssh_config=str(config))
    config.write_text("Host *\n  ProxyCommand connect %C\n")
    with pytest.raises(ConfigError, match="%C"):
        resolve_target("box", ssh_config=str(config))
    config.write_text("Host *\n  ProxyCommand none\n")
    assert resolve_target("box", ssh_config=str(config)).proxy_command is None
    config.write_text("Host box\n  ProxyCommand connect %h\n  ProxyJump other\n")
    with pytest.raises(ConfigError, match="both ProxyCommand and ProxyJump"):
        resolve_target("box", ssh_config=str(config))


def test_include_is_resolved_as_openssh_does(tmp_path, _home):
    conf_d = _home / ".ssh" / "conf.d"
    conf_d.mkdir()
    (conf_d / "10-gpu.conf").write_text("Host gpu\n  HostName 10.0.0.1\n  Port 2201\n")
    (conf_d / "20-other.conf").write_text("Host gpu\n  HostName 10.9.9.9\n  Port 9\n")  # first value wins
    (conf_d / "ignored.txt").write_text("Host gpu\n  User wrong\n")
    (_home / ".ssh" / "common").write_text("User alice\n")
    config = tmp_path / "cfg"
    # relative to ~/.ssh (also for -F files), globs sorted; an Include with no match is no error;
    # an Include of a file without Host lines inside a Host block belongs to that block
    config.write_text("Include conf.d/*.conf nothing-*.conf\nHost gpu\n  Include common\nHost *\n  User bob\n")
    target = resolve_target("gpu", ssh_config=str(config))
    assert (target.hostname, target.port, target.user) == ("10.0.0.1", 2201, "alice")
    assert resolve_target("else", ssh_config=str(config)).user == "bob"
    # the including file's block goes on after the included file
    config.write_text("Host *\n  Include conf.d/10-gpu.conf\n  Port 2299\n")
    assert resolve_target("web", ssh_config=str(config)).port == 2299
    assert resolve_target("gpu", ssh_config=str(config)).port == 2201


def test_include_forms_that_cannot_be_honoured_are_refused(tmp_path, _home):
    (_home / ".ssh" / "blocks").write_text("Host gpu\n  HostName 10.0.0.1\n")
    config = tmp_path / "cfg"
    config.write_text("Host web\n  Include blocks\n")
    with pytest.raises(ConfigError, match=r"cfg:2: Include of .*blocks.* inside 'Host web' is not supported"):
        resolve_target("gpu", ssh_config=str(config))
    loop = _home / ".ssh" / "loop"
    loop.write_text("Include loop\n")
    with pytest.raises(ConfigError, match="Include nested more than 16 deep"):
        expand_config(str(loop))


def test_include_refusal_is_one_cli_line(tmp_path, _home):
    (_home / ".ssh" / "blocks").write_text("Host gpu\n  HostName 127.0.0.1\n")
    config = tmp_path / "cfg"
    config.write_text("Match user root\n  Include blocks\n")
    result = run_cli(["--host", "gpu", "--ssh-config", str(config), "--remote-root", "/x"], tmp_path / "sgl",
                     timeout=60, env={"HOME": str(_home)})
    assert result.returncode == 2
    assert "Include" in one_error_line(result)


def test_match_criteria_paramiko_cannot_evaluate_are_refused(tmp_path):
    config = tmp_path / "cfg"
    for criterion in ("localnetwork 10.0.0.0/8", "tagged prod", "version OpenSSH_9*", "!localnetwork 10.0.0.0/8"):
        config.write_text(f"Match {criterion}\n  HostName 10.0.0.1\n")
        with pytest.raises(ConfigError, match=r"'Match (localnetwork|tagged|version)' is not supported"):
            resolve_target("gpu", ssh_config=str(config))
    config.write_text("Match originalhost gpu user *\n  HostName 10.0.0.1\n")
    assert resolve_target("gpu", ssh_config=str(config)).hostname == "10.0.0.1"


@pytest.mark.parametrize("directive", ["KnownHostsCommand /usr/bin/true %H", "RevokedHostKeys ~/.ssh/revoked"])
def test_host_key_directives_we_cannot_honour_are_refused(tmp_path, directive):
    config = tmp_path / "cfg"
    config.write_text(f"Host gpu\n  {directive}\n")
    with pytest.raises(ConfigError, match=directive.split()[0]):
        resolve_target("gpu", ssh_config=str(config))
    assert resolve_target("web", ssh_config=str(config)).hostname == "web"  # only where it applies


def test_host_key_alias_and_user_known_hosts_file_decide(tmp_path, sshd_server, mini_package):
    key = sshd_server.host_key_public
    mine = tmp_path / "mine_known_hosts"
    mine.write_text(f"gpu-alias {key}\n")
    config = tmp_path / "cfg"
    config.write_text(f"Host gpu\n  HostName 127.0.0.1\n  Port {sshd_server.port}\n  User {sshd_server.user}\n"
                      f"  IdentityFile {sshd_server.client_key}\n  HostKeyAlias gpu-alias\n"
                      f"  UserKnownHostsFile {mine}\n")
    params = {"host": "gpu", "ssh_config": str(config), "remote_root": str(mini_package), "connect_timeout": 10.0}
    assert pull_ssh(params, store=Store(tmp_path / "s")).snapshot.manifest.files
    mine.write_text(f"@revoked gpu-alias {key}\ngpu-alias {key}\n")
    with pytest.raises(RemoteError, match="REVOKED"):
        pull_ssh(params, store=Store(tmp_path / "s"))


@pytest.mark.parametrize("lines, word", [
    ("BindAddress 10.0.0.9", "BindAddress"),
    ("BindInterface eth1", "BindInterface"),
    ("ProxyCommand connect %h %p\n  ProxyUseFdpass yes", "ProxyUseFdpass"),
    ("IdentityAgent ~/.other-agent.sock", "IdentityAgent"),
    ("Port twenty-two", "Port"),
    ("ProxyJump jump:notaport", "ProxyJump"),
])
def test_more_directives_are_refused_in_one_line(tmp_path, lines, word):
    config = tmp_path / "cfg"
    config.write_text(f"Host gpu\n  {lines}\n")
    with pytest.raises(ConfigError, match=word):
        resolve_target("gpu", ssh_config=str(config))


def test_identity_agent_none_and_identities_only_are_honoured(tmp_path, _home):
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(_home / ".ssh" / "id_ed25519")], check=True)
    config = tmp_path / "cfg"
    config.write_text("Host gpu\n  IdentityAgent none\n  IdentitiesOnly yes\n  IdentityFile ~/.ssh/only\n")
    target = resolve_target("gpu", ssh_config=str(config))
    assert not target.use_agent and target.identities_only
    labels = [label for label, _ in sshconnect.Connector()._keys(target)]
    assert labels == []  # the one identity does not exist; no default key, no agent key
    config.write_text("Host gpu\n  IdentityFile ~/.ssh/only\n")
    assert [label for label, _ in sshconnect.Connector()._keys(resolve_target("gpu", ssh_config=str(config)))] == [
        str(_home / ".ssh" / "id_ed25519")]
