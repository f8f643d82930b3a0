"""known_hosts decided as OpenSSH decides (issue 31): `@revoked` refused with OpenSSH's words even
when another line trusts the key, `@cert-authority` recognised (a host trusted only through a CA is
refused in one line and never trusted on first use), OpenSSH's host patterns (globs, `!`
negation, hashed names, `[host]:port`), blank runs between fields. Unit tests on `knownhosts`, and
the same decisions through a real loopback sshd."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import paramiko
import pytest

from sgl_scan.errors import RemoteError
from sgl_scan.snapshots import sshconnect
from sgl_scan.snapshots.knownhosts import KnownHosts, host_matches
from sgl_scan.snapshots.ssh import pull_ssh
from sgl_scan.snapshots.store import Store
from tests.snapshots.conftest import ssh_params


def _key(folder: Path, name: str) -> tuple[str, bytes]:
    path = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    text = " ".join(Path(f"{path}.pub").read_text().split()[:2])
    return text, base64.b64decode(text.split()[1])


@pytest.fixture(autouse=True)
def _no_user_files(tmp_path, monkeypatch):
    """The user's and the system's known_hosts never take part."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(sshconnect, "GLOBAL_KNOWN_HOSTS", ())


def _check(tmp_path, text: str, name: str, blob: bytes, accept_new: bool = False) -> bool:
    file = tmp_path / "kh"
    file.write_text(text)
    return KnownHosts([file]).check(name, "ssh-ed25519", blob, "fp", accept_new=accept_new)


def test_host_patterns_follow_openssh():
    assert host_matches("gpu1.example.com", "*.example.com")
    assert host_matches("GPU1.example.com", "gpu?.example.com")  # the host is lower-cased
    assert not host_matches("bad.example.com", "!bad.example.com,*.example.com")
    assert not host_matches("bad.example.com", "*.example.com,!bad.example.com")  # a negation wins anywhere
    assert host_matches("[127.0.0.1]:2222", "[127.0.0.1]:2222")  # brackets are literal, not a class
    assert not host_matches("[127.0.0.1]:2222", "127.0.0.1")
    assert host_matches("[127.0.0.1]:2222", "*")
    hashed = paramiko.HostKeys.hash_host("gpu1")
    assert host_matches("gpu1", hashed) and not host_matches("gpu2", hashed)


def test_revoked_key_is_refused_even_when_trusted(tmp_path):
    key, blob = _key(tmp_path, "k")
    for revoked in (f"@revoked * {key}", f"@revoked  gpu*  {key}"):
        with pytest.raises(RemoteError, match=r"^REVOKED HOST KEY DETECTED: the ssh-ed25519 host key for gpu1 is "
                                              r"marked as revoked \(.*kh:1\)"):
            _check(tmp_path, f"{revoked}\ngpu1 {key}\n", "gpu1", blob, accept_new=True)
    # a revocation for other hosts, or of another key, does not apply
    other, _ = _key(tmp_path, "o")
    assert _check(tmp_path, f"@revoked other {key}\n@revoked * {other}\ngpu1 {key}\n", "gpu1", blob)


def test_cert_authority_line_is_recognised_not_skipped(tmp_path):
    key, blob = _key(tmp_path, "k")
    ca, _ = _key(tmp_path, "ca")
    for accept_new in (False, True):  # never trusted on first use behind a CA
        with pytest.raises(RemoteError, match=r"@cert-authority .*kh:1.* cannot check host certificates"):
            _check(tmp_path, f"@cert-authority *.example.com {ca}\n", "gpu1.example.com", blob, accept_new)
    # a CA for other hosts changes nothing: the host is simply unknown (or new)
    assert _check(tmp_path, f"@cert-authority *.other.org {ca}\n", "gpu1.example.com", blob, True) is False
    # a host's own plain line decides, CA or not
    assert _check(tmp_path, f"@cert-authority * {ca}\ngpu1.example.com {key}\n", "gpu1.example.com", blob)


def test_changed_and_negated_lines(tmp_path):
    key, blob = _key(tmp_path, "k")
    other, other_blob = _key(tmp_path, "o")
    with pytest.raises(RemoteError, match="CHANGED"):
        _check(tmp_path, f"*.example.com {other}\n", "gpu1.example.com", blob, accept_new=True)
    with pytest.raises(RemoteError, match="not known"):
        _check(tmp_path, f"!gpu1.example.com,*.example.com {key}\n", "gpu1.example.com", blob)
    assert _check(tmp_path, f"gpu1.example.com\t\t{key} comment here\n", "gpu1.example.com", blob)


def test_revoked_host_key_refused_by_a_real_server(tmp_path, sshd_server, mini_package):
    known = tmp_path / "known_hosts"
    key = sshd_server.host_key_public
    known.write_text(f"@revoked * {key}\n{sshd_server.known_hosts_name} {key}\n")
    with pytest.raises(RemoteError, match="REVOKED HOST KEY DETECTED"):
        pull_ssh(ssh_params(sshd_server, mini_package, known_hosts=str(known)), store=Store(tmp_path / "s"))
    # the user's own ~/.ssh/known_hosts2 takes part, as in OpenSSH
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    (tmp_path / "home" / ".ssh" / "known_hosts2").write_text(f"@revoked * {key}\n")
    known.write_text(f"{sshd_server.known_hosts_name} {key}\n")
    with pytest.raises(RemoteError, match="REVOKED HOST KEY DETECTED"):
        pull_ssh(ssh_params(sshd_server, mini_package, known_hosts=str(known)), store=Store(tmp_path / "s"))


def test_cert_authority_only_host_is_refused_by_a_real_server(tmp_path, sshd_server, mini_package):
    ca, _ = _key(tmp_path, "ca")
    known = tmp_path / "known_hosts"
    known.write_text(f"@cert-authority [127.0.0.1]:* {ca}\n")
    with pytest.raises(RemoteError, match="cannot check host certificates"):
        pull_ssh(ssh_params(sshd_server, mini_package, known_hosts=str(known), accept_new_host_key=True),
                 store=Store(tmp_path / "s"))
    assert known.read_text().count("\n") == 1  # nothing recorded
