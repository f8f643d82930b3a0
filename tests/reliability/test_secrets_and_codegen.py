"""Credentials never reach manifests, logs (`-v`, `-vv`) or reports; codegen never loses a folder."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sgl_scan.codegen.write import write_tree
from sgl_scan.errors import CodegenError
from tests.reliability.remote import one_error_line, run_cli, ssh_cli_args

PASSPHRASE = "correct-horse-battery-staple-7731"
TOKEN = "ghp_s3cr3tT0kenValue9876"


def _key_lines(key: Path) -> list[str]:
    return [line for line in key.read_text().splitlines() if "PRIVATE KEY" not in line and line.strip()]


@pytest.mark.slow
def test_a_pull_and_every_report_format_hold_no_key_material(tmp_path, sshd_server, mini_package):
    home = tmp_path / "home"
    pulled = run_cli(["-vv", "snapshot", "pull", *ssh_cli_args(sshd_server, mini_package)], home)
    assert pulled.returncode == 0, pulled.stderr
    assert str(sshd_server.client_key) in pulled.stderr  # the identity's path, at most
    texts = [pulled.stdout, pulled.stderr]
    for fmt in ("text", "json", "sarif", "markdown", "html"):
        result = run_cli(["-vv", "scan", "--snapshot", "latest", "--format", fmt], home)
        assert result.returncode in (0, 1), result.stderr
        assert str(sshd_server.client_key) not in result.stdout
        texts += [result.stdout, result.stderr]
    texts += [p.read_text(errors="replace") for p in (home / "snapshots").glob("*/*.json")]
    everything = "\n".join(texts)
    for line in _key_lines(sshd_server.client_key):
        assert line not in everything


@pytest.mark.slow
def test_an_encrypted_key_is_never_read_out_or_echoed(tmp_path, sshd_server, mini_package):
    locked = tmp_path / "locked_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", PASSPHRASE, "-f", str(locked)], check=True)
    # authorise it, so only the missing passphrase stands between sgl-scan and the server
    with open(sshd_server.folder / "authorized_keys", "a") as handle:
        handle.write(Path(f"{locked}.pub").read_text())
    args = ssh_cli_args(sshd_server, mini_package)
    args[args.index("--identity") + 1] = str(locked)
    home = tmp_path / "home"
    plain = run_cli(["snapshot", "pull", *args], home, env={"SSH_AUTH_SOCK": "", "HOME": str(tmp_path)})
    assert plain.returncode == 3 and "authentication failed" in one_error_line(plain)
    verbose = run_cli(["-vv", "snapshot", "pull", *args], home, env={"SSH_AUTH_SOCK": "", "HOME": str(tmp_path)})
    assert verbose.returncode == 3 and "skipping encrypted key" in verbose.stderr
    assert f"{locked} (encrypted: load it into ssh-agent)" in plain.stderr
    for text in (plain.stderr, verbose.stderr):
        assert PASSPHRASE not in text
        for line in _key_lines(locked):
            assert line not in text


def test_a_git_url_token_is_redacted_everywhere(tmp_path):
    url = f"https://builder:{TOKEN}@127.0.0.1:1/sglang.git"  # loopback, closed port: the fetch fails
    home = tmp_path / "home"
    for verbosity in ([], ["-v"], ["-vv"]):
        result = run_cli([*verbosity, "snapshot", "pull", "--git", url], home, env={"GIT_TERMINAL_PROMPT": "0"})
        assert result.returncode == 3, result.stderr
        assert TOKEN not in result.stderr and TOKEN not in result.stdout
        assert "cannot fetch https://***@127.0.0.1:1/sglang.git" in result.stderr.splitlines()[-1]


def test_codegen_writes_all_or_nothing(tmp_path):
    out = tmp_path / "plugin"
    write_tree({"a.py": "A = 1\n", "pkg/b.py": "B = 1\n"}, out, force=False, protected=tmp_path / "snap")
    before = {p.relative_to(out): p.read_text() for p in out.rglob("*.py")}
    # the second file cannot be created (its folder name is taken by a file): nothing may change
    with pytest.raises(CodegenError, match="cannot write"):
        write_tree({"a.py": "A = 2\n", "a.py/c.py": "C = 1\n"}, out, force=True, protected=tmp_path / "snap")
    assert {p.relative_to(out): p.read_text() for p in out.rglob("*.py")} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plugin"]  # no staging folder left behind
    with pytest.raises(CodegenError, match="--force"):
        write_tree({"a.py": "A = 3\n"}, out, force=False, protected=tmp_path / "snap")
    with pytest.raises(CodegenError, match="refusing --out .*: it is inside .*snap"):
        write_tree({"a.py": "A = 3\n"}, tmp_path / "snap" / "tree" / "out", force=True, protected=tmp_path / "snap")
    assert {p.relative_to(out): p.read_text() for p in out.rglob("*.py")} == before
