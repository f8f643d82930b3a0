"""paramiko is imported without `invoke` unless the ssh config has a `Match exec` line."""

import subprocess
import sys

import pytest

from sgl_scan.snapshots.sshimport import needs_invoke

PROBE = (
    "import sys; from sgl_scan.snapshots.sshimport import import_paramiko; "
    "p = import_paramiko(sys.argv[1]); print(p.Transport.__name__, sys.modules.get('invoke') is not None)"
)


def test_needs_invoke_only_for_match_exec(tmp_path):
    plain = tmp_path / "plain"
    plain.write_text("Host box\n  HostName 127.0.0.1\n  # Match exec is only a comment here\n")
    match = tmp_path / "match"
    match.write_text("Host box\n  Port 2222\n\n  match host box EXEC \"test -f /x\"\n  User u\n")
    assert needs_invoke(str(plain)) is False
    assert needs_invoke(str(match)) is True
    assert needs_invoke(str(tmp_path / "missing")) is False


@pytest.mark.parametrize("config, invoke_loaded", [("plain", False), ("match", True)])
def test_import_paramiko_skips_invoke_when_unused(tmp_path, config, invoke_loaded):
    pytest.importorskip("invoke")
    (tmp_path / "plain").write_text("Host box\n  HostName 127.0.0.1\n")
    (tmp_path / "match").write_text("Match exec \"true\"\n  User u\n")
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / config)], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["Transport", str(invoke_loaded)]
