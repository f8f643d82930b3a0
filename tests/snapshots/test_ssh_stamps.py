"""An SSH re-pull sees every edit: a file edited in place with its size kept and its mtime set back
(`touch -r`, or a checkout tool) is fetched again, because its ctime moved (no user can set it back).
Against a real private OpenSSH server on 127.0.0.1 (tests/support/sshd.py) and real 0.5.23 files."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest

from sgl_scan.errors import RemoteError
from sgl_scan.snapshots import ssh
from sgl_scan.snapshots.ssh import pull_ssh
from sgl_scan.snapshots.store import MANIFEST_FILE, MANIFEST_HASH_FILE, Store
from tests.snapshots.conftest import ssh_params
from tests.support.cli import run_main as _run
from tests.support.sshd import start_sshd

pytestmark = pytest.mark.slow

FILES = ("version.py", "srt/speculative/spec_info.py", "srt/speculative/spec_registry.py", "srt/models/llama_eagle3.py")
LLAMA = "srt/models/llama_eagle3.py"
OFFSETS = b"self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])"
BUGGY = b"self.hot_token_id = loaded_weight"  # SGL301: the d2t offsets taken as token ids


def _package(folder: Path, release: Path) -> Path:
    package = folder / "sglang"
    for rel in FILES:
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(release / "sglang" / rel, package / rel)
    return package


def _edit_keeping_size_and_mtime(target: Path, reference: Path) -> None:
    """Overwrite the offsets line in place (same inode, same size), then `touch -r` the old mtime back."""
    shutil.copy2(target, reference)
    data = target.read_bytes()
    assert data.count(OFFSETS) == 1
    edited = data.replace(OFFSETS, BUGGY + b" " * (len(OFFSETS) - len(BUGGY)))
    with open(target, "r+b") as handle:
        handle.write(edited)
    subprocess.run(["touch", "-r", str(reference), str(target)], check=True)
    after = target.stat()
    assert (after.st_size, after.st_mtime_ns) == (len(data), reference.stat().st_mtime_ns)


def _pull(capsys, server, package: Path) -> str:
    params = ssh_params(server, package)
    args = ["--host", params["host"], "--port", str(params["port"]), "--user", params["user"], "--identity",
            params["identity"], "--known-hosts", params["known_hosts"], "--remote-root", params["remote_root"]]
    code, out, err = _run(capsys, "snapshot", "pull", *args)
    assert code == 0, err
    return out.strip()


def _sgl301(capsys, snap_id: str) -> list[dict]:
    code, out, err = _run(capsys, "scan", "--snapshot", snap_id, "--select", "SGL301", "--format", "json")
    assert code in (0, 1), err
    return [f for f in json.loads(out)["findings"] if f["rule_id"] == "SGL301"]


def test_an_edit_that_keeps_size_and_mtime_is_pulled_and_changes_the_scan(capsys, tmp_path, sshd_server, sglang_0_5_23):
    package = _package(tmp_path / "remote", sglang_0_5_23)
    first = _pull(capsys, sshd_server, package)
    assert _sgl301(capsys, first) == []
    _edit_keeping_size_and_mtime(package / LLAMA, tmp_path / "reference.py")
    second = _pull(capsys, sshd_server, package)
    assert second != first
    stored = Store(tmp_path / "sgl-scan-home" / "snapshots").open(second)
    assert (stored.tree / "sglang" / LLAMA).read_bytes() == (package / LLAMA).read_bytes()
    findings = _sgl301(capsys, second)
    assert [f["path"] for f in findings] == ["sglang/" + LLAMA], findings
    assert _pull(capsys, sshd_server, package) == second  # and then nothing changed: the same snapshot


def test_without_the_ctime_the_same_edit_is_missed(tmp_path, sshd_server, sglang_0_5_23, monkeypatch):
    """The edit above really keeps size and mtime: compared by those alone (the old rule), it is missed."""
    package = _package(tmp_path / "remote", sglang_0_5_23)
    store = Store(tmp_path / "store")
    params = ssh_params(sshd_server, package)
    first = pull_ssh(params, store=store)
    _edit_keeping_size_and_mtime(package / LLAMA, tmp_path / "reference.py")
    monkeypatch.setattr(ssh, "same_file", lambda old, item: old is not None and (old.size, old.mtime) == (item.size, item.mtime))
    stale = pull_ssh(params, store=store)
    assert stale.unchanged and stale.snapshot.id == first.snapshot.id
    assert OFFSETS in (stale.snapshot.tree / "sglang" / LLAMA).read_bytes()  # the old content


def test_a_file_changed_just_before_the_listing_is_fetched_again_next_time(tmp_path, sshd_server, sglang_0_5_23, monkeypatch):
    """A ctime inside the settle window may be shared by a change right after the walk: the file is
    fetched, recorded without a ctime, and so fetched again by the next pull. The remote clock each pull
    reads is pinned just after the edit, so the pulls' own duration (a loaded machine) cannot move the
    edit out of the window."""
    package = _package(tmp_path / "remote", sglang_0_5_23)
    store = Store(tmp_path / "store")
    params = ssh_params(sshd_server, package)
    pull_ssh(params, store=store)
    time.sleep(1.5)
    with open(package / LLAMA, "ab") as handle:
        handle.write(b"# edited\n")
    edited = (package / LLAMA).stat().st_ctime
    monkeypatch.setattr(ssh, "parse_now", lambda raw: edited + 0.01)
    monkeypatch.setattr(ssh, "SETTLE_FINE", 1.0)  # the edit is inside it; the other files, 1.5 s older, are not
    second = pull_ssh(params, store=store)
    assert second.fetched == (LLAMA,)
    stamps = {f.path: f.ctime for f in second.snapshot.manifest.files}
    assert stamps.pop("sglang/" + LLAMA) is None and None not in stamps.values()
    third = pull_ssh(params, store=store)
    assert third.fetched == (LLAMA,) and not third.unchanged
    monkeypatch.setattr(ssh, "SETTLE_FINE", 0.0)
    fourth = pull_ssh(params, store=store)
    assert fourth.fetched in ((), (LLAMA,))  # () when the third pull was already outside the window
    fifth = pull_ssh(params, store=store)
    assert fifth.unchanged and fifth.fetched == ()


def test_a_base_stored_without_ctimes_is_not_trusted(tmp_path, sshd_server, sglang_0_5_23):
    package = _package(tmp_path / "remote", sglang_0_5_23)
    store = Store(tmp_path / "store")
    params = ssh_params(sshd_server, package)
    first = pull_ssh(params, store=store)
    assert all(f.ctime is not None and f.inode is not None for f in first.snapshot.manifest.files)
    # rewrite it as an older sgl-scan stored it: size and mtime only
    legacy = replace(first.snapshot.manifest, files=tuple(replace(f, ctime=None, inode=None) for f in first.snapshot.manifest.files))
    raw = legacy.to_json().encode()
    assert b'"ctime"' not in raw and b'"inode"' not in raw
    folder = first.snapshot.folder
    (folder / MANIFEST_FILE).chmod(0o644)
    (folder / MANIFEST_FILE).write_bytes(raw)
    (folder / MANIFEST_HASH_FILE).write_text(f"{hashlib.sha256(raw).hexdigest()}  {MANIFEST_FILE}\n")
    store.open(first.snapshot.id)
    again = pull_ssh(params, store=store)
    assert again.base == first.snapshot.id and not again.unchanged and again.reused == ()
    assert sorted(again.fetched) == sorted(p for p in FILES)
    assert pull_ssh(params, store=store).unchanged  # the stamps are recorded now


@pytest.mark.parametrize("find", ["stand-in", "busybox"])
def test_a_find_without_printf_is_one_clear_error_not_an_empty_or_unstamped_listing(tmp_path, sshd_server, sglang_0_5_23, find):
    """A busybox or BSD find (no -printf, no -xtype) cannot give the stamps: the pull stops and says so."""
    package = _package(tmp_path / "remote", sglang_0_5_23)
    store = Store(tmp_path / "store")
    first = pull_ssh(ssh_params(sshd_server, package), store=store)
    fakebin = tmp_path / "fakebin"
    fakebin.mkdir()
    if find == "busybox":  # the real one, where installed: its find, and its date (no %N)
        busybox = shutil.which("busybox")
        if busybox is None:
            pytest.skip("no busybox on this machine")
        for applet in ("find", "date"):
            (fakebin / applet).symlink_to(busybox)
    else:  # what busybox find answers
        (fakebin / "find").write_text(
            "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in -printf|-xtype) echo \"find: unrecognized: $a\" >&2; exit 1;; esac; done\n"
            f"exec {shutil.which('find')} \"$@\"\n")
        (fakebin / "find").chmod(0o755)
    home = tmp_path / "home-busybox"
    home.mkdir()
    (home / ".bashrc").write_text(f"PATH={fakebin}:/usr/bin:/bin\nexport PATH\n")
    with start_sshd(tmp_path / "sshd-busybox", home=home) as server:
        with pytest.raises(RemoteError, match="remote find cannot list the files with their stamps.*install GNU findutils"):
            pull_ssh(ssh_params(server, package), store=store)
    assert store.ids() == [first.snapshot.id]
