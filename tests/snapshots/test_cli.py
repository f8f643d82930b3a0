"""`sgl-scan snapshot ...` and source failures through the CLI: in-process and as a real subprocess."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest

from sgl_scan.snapshots.store import Store
from tests.snapshots.conftest import MINI_SPECULATIVE, ssh_params
from tests.support.releases import release_wheel
from tests.support.cli import run_main as _run


def _entry_point() -> list[str]:
    found = shutil.which("sgl-scan")
    return [found] if found else [sys.executable, "-m", "sgl_scan"]


def _ssh_args(server, root, **overrides):
    params = {**ssh_params(server, root), **overrides}
    args = []
    for key in ("host", "port", "user", "identity", "known_hosts", "remote_root", "connect_timeout"):
        if params.get(key) is not None:
            args += ["--" + key.replace("_", "-"), str(params[key])]
    return args


def test_pull_list_show_rm(capsys, mini_package):
    code, out, _ = _run(capsys, "snapshot", "pull", "--path", str(mini_package))
    snap_id = out.strip()
    assert code == 0 and snap_id.count("-") == 3
    code, out, _ = _run(capsys, "snapshot", "list")
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "VERSION", "SCOPE", "FILES", "GIT", "SOURCE"]
    assert lines[1].split()[:5] == ["*", snap_id, "9.9.9", "speculative", str(len(MINI_SPECULATIVE))]  # * latest
    code, out, _ = _run(capsys, "snapshot", "show", snap_id[:-2], "--files")
    assert code == 0 and f"snapshot   {snap_id}" in out and "version    9.9.9" in out
    assert "sglang/srt/speculative/spec_info.py" in out
    code, out, _ = _run(capsys, "snapshot", "show", "latest", "--json")
    assert json.loads(out)["id"] == snap_id
    code, out, _ = _run(capsys, "snapshot", "rm", snap_id)
    assert (code, out.strip()) == (0, f"removed {snap_id}")
    code, out, _ = _run(capsys, "snapshot", "list", "--json")
    assert out == ""


def test_usage_errors_exit_2(capsys, mini_package):
    code, _, err = _run(capsys, "snapshot", "pull")
    assert code == 2 and "needs a source" in err
    code, _, err = _run(capsys, "snapshot", "pull", "--path", str(mini_package), "--pip", "sglang==0.5.23")
    assert code == 2 and "one source" in err
    code, _, err = _run(capsys, "snapshot", "pull", "--path", str(mini_package), "--max-bytes", "lots")
    assert code == 2
    code, _, err = _run(capsys, "snapshot", "show", "nothing-here")
    assert code == 3 and err.count("\n") == 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_connection_refused_auth_failure_and_timeout_are_one_line_exit_3(capsys, tmp_path, sshd_server, mini_package):
    code, _, err = _run(capsys, "snapshot", "pull", *_ssh_args(sshd_server, mini_package, port=_free_port()))
    assert code == 3 and "connection refused" in err and err.count("\n") == 1
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    code, _, err = _run(capsys, "snapshot", "pull", *_ssh_args(sshd_server, mini_package, identity=stranger))
    assert code == 3 and "authentication failed" in err and err.count("\n") == 1
    assert "PRIVATE KEY" not in err and stranger.read_text().splitlines()[1] not in err
    with socket.socket() as silent:  # accepts TCP (backlog) but never speaks SSH
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        code, _, err = _run(capsys, "snapshot", "pull",
                            *_ssh_args(sshd_server, mini_package, port=port, connect_timeout=0.5))
    assert code == 3 and "did not answer" in err and err.count("\n") == 1
    assert "Traceback" not in err


@pytest.mark.slow
def test_real_subprocess_unknown_host_is_one_line_and_exit_3(tmp_path, sshd_server, mini_package):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    env = {**os.environ, "SGLSCAN_HOME": str(tmp_path / "home")}
    result = subprocess.run(_entry_point() + ["snapshot", "pull", *_ssh_args(sshd_server, mini_package, known_hosts=empty)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 3
    assert result.stderr.count("\n") == 1 and "--accept-new-host-key" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.slow
def test_ssh_and_pip_snapshots_of_the_same_release_agree(tmp_path, sshd_server, real_package):
    """`sgl-scan snapshot pull --host 127.0.0.1 --port P` and `--pip sglang==0.5.23`, real subprocesses."""
    env = {**os.environ, "SGLSCAN_HOME": str(tmp_path / "home"),
           "SGLSCAN_DOWNLOADS": str(release_wheel("0.5.23").parent)}
    ids = {}
    for kind, args in (("ssh", _ssh_args(sshd_server, real_package)), ("pip", ["--pip", "sglang==0.5.23"])):
        result = subprocess.run(_entry_point() + ["snapshot", "pull", *args], capture_output=True, text=True,
                                env=env, timeout=300)
        assert result.returncode == 0, result.stderr
        ids[kind] = result.stdout.strip()
    manifests = {}
    for kind, snap_id in ids.items():
        result = subprocess.run(_entry_point() + ["snapshot", "show", snap_id, "--json"], capture_output=True,
                                text=True, env=env, timeout=120)
        manifests[kind] = json.loads(result.stdout)
    ssh, pip = manifests["ssh"], manifests["pip"]
    assert ssh["sglang_version"] == pip["sglang_version"] == "0.5.23"
    assert ssh["source_kind"] == "ssh" and ssh["root"] == str(real_package)
    assert ssh["source"]["port"] == sshd_server.port and "identity" not in ssh["source"]
    assert [(f["path"], f["sha256"], f["size"]) for f in ssh["files"]] == \
        [(f["path"], f["sha256"], f["size"]) for f in pip["files"]]
    assert len(ssh["files"]) > 150


@pytest.mark.slow
def test_verbose_logs_and_manifests_hold_no_key_material(capsys, caplog, tmp_path, sshd_server, mini_package):
    caplog.set_level("DEBUG")
    code, out, err = _run(capsys, "-vv", "snapshot", "pull", *_ssh_args(sshd_server, mini_package))
    assert code == 0
    key_lines = [l for l in sshd_server.client_key.read_text().splitlines() if "PRIVATE KEY" not in l]
    logs = caplog.text + err
    assert "authenticated to" in logs and str(sshd_server.client_key) in logs  # the path, at most
    manifest = next((tmp_path / "sgl-scan-home" / "snapshots").glob("*/manifest.json")).read_text()
    for line in key_lines:
        assert line not in logs and line not in manifest
    assert str(sshd_server.client_key) not in manifest


def test_ssh_pulls_say_what_they_did_and_content_is_stored_once(capsys, tmp_path, sshd_server, mini_package):
    args = ["snapshot", "pull", *_ssh_args(sshd_server, mini_package)]
    code, out, err = _run(capsys, *args)
    first = out.strip()
    assert code == 0 and f"sgl-scan: pulled {len(MINI_SPECULATIVE)} files (0 unchanged) into snapshot {first}" in err
    target = mini_package / "srt/server_args.py"
    original, stamp = target.read_bytes(), target.stat().st_mtime_ns
    target.write_bytes(original + b"# edited\n")
    code, out, err = _run(capsys, *args)
    second = out.strip()
    assert code == 0 and second != first
    assert f"pulled 1 files ({len(MINI_SPECULATIVE) - 1} unchanged) into snapshot {second}" in err
    code, out, err = _run(capsys, *args)
    assert (code, out.strip()) == (0, second) and f"reused snapshot {second}" in err
    # the edit undone, mtime and all: the file's ctime moved, so it is fetched again and the snapshot
    # is a new one (stamps are part of an SSH snapshot), holding the first snapshot's content
    target.write_bytes(original)
    os.utime(target, ns=(stamp, stamp))
    code, out, err = _run(capsys, *args)
    third = out.strip()
    assert code == 0 and third not in (first, second)
    assert f"pulled 1 files ({len(MINI_SPECULATIVE) - 1} unchanged) into snapshot {third}" in err
    store = Store(tmp_path / "sgl-scan-home" / "snapshots")
    assert store.ids() == sorted([first, second, third])
    hashes = [{f.path: f.sha256 for f in store.open(snap).manifest.files} for snap in (first, third)]
    assert hashes[0] == hashes[1]
    stored = [store.open(snap).tree / "sglang/srt/server_args.py" for snap in (first, third)]
    assert stored[0].stat().st_ino == stored[1].stat().st_ino  # the content is stored once (one blob)
    code, out, err = _run(capsys, *args)
    assert (code, out.strip()) == (0, third) and f"reused snapshot {third}" in err
    code, out, _ = _run(capsys, "snapshot", "show", "latest", "--json")
    assert json.loads(out)["id"] == third


def test_ssh_errors_name_the_remote_root_and_the_config_file(capsys, tmp_path, sshd_server, mini_package):
    missing = tmp_path / "no such dir" / "sglang"
    code, _, err = _run(capsys, "snapshot", "pull", *_ssh_args(sshd_server, missing))
    assert code == 3 and f"cannot enter the remote root {missing}" in err, err
    config = sshd_server.write_ssh_config(tmp_path / "my-ssh-config", "sglscan-box")
    code, _, err = _run(capsys, "snapshot", "pull", "--host", "sglscan-bx.invalid", "--ssh-config", str(config),
                        "--known-hosts", str(sshd_server.known_hosts), "--remote-root", str(mini_package))
    assert code == 3 and "cannot resolve host 'sglscan-bx.invalid'" in err
    assert f"check --host or {config}" in err and "~/.ssh/config" not in err, err
