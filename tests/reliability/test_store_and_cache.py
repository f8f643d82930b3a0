"""Store and cache under concurrent use and damage, through the installed entry point: two processes
pulling and scanning into one `$SGLSCAN_HOME` corrupt nothing; a damaged blob is refused by its hash;
damaged facts-cache entries are rebuilt; a full disk fails in one line and keeps the old snapshot."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from sgl_scan.snapshots.store import Store
from tests.reliability.remote import entry_point, one_error_line, run_cli
from tests.support.releases import release_tree
from tests.support.tmpfs import small_tmpfs

pytestmark = pytest.mark.slow


def _stable(report: str) -> dict:
    """A JSON report without the fields that name the run (snapshot id, time, tool version)."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("snapshot", "snapshot_id", "tool")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads(report))


def _spawn(args: list[str], home: Path) -> subprocess.Popen:
    return subprocess.Popen(entry_point() + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "SGLSCAN_HOME": str(home)})


def test_two_processes_pulling_and_scanning_into_one_home_corrupt_nothing(tmp_path):
    package = release_tree("0.5.23") / "sglang"
    home = tmp_path / "home"
    reports = []
    for _ in range(2):  # a cold round (both parse and write the cache) and a warm one
        procs = [_spawn(["scan", "--path", str(package), "--format", "json"], home) for _ in range(2)]
        for proc in procs:
            out, err = proc.communicate(timeout=900)
            assert proc.returncode in (0, 1), err
            assert "Traceback" not in err
            reports.append(_stable(out))
    assert all(r == reports[0] for r in reports)
    store = Store(home / "snapshots")
    # one folder, one content: the content check runs again under the store lock at commit, so even
    # the racing cold pair stores it once, and the warm pair reuses it
    assert len(store.ids()) == 1
    for snap_id in store.ids():
        store.open(snap_id)  # every file's hash verifies
    assert list((store.root / ".staging").iterdir()) == []
    listing = run_cli(["snapshot", "list", "--json"], home)
    assert listing.returncode == 0 and len(listing.stdout.splitlines()) == len(store.ids())


def test_a_damaged_blob_is_refused_by_its_hash_and_a_fresh_pull_is_clean(tmp_path, mini_package):
    home = tmp_path / "home"
    first = run_cli(["snapshot", "pull", "--path", str(mini_package)], home)
    assert first.returncode == 0, first.stderr
    snap_id = first.stdout.strip()
    target = home / "snapshots" / snap_id / "tree" / "sglang/srt/server_args.py"
    os.chmod(target, 0o644)
    with open(target, "r+b") as handle:  # same size, one byte different: only the hash can tell
        data = handle.read()
        handle.seek(0)
        handle.write(bytes([data[0] ^ 1]) + data[1:])
    scanned = run_cli(["scan", "--snapshot", snap_id, "--format", "json"], home)
    assert scanned.returncode == 3
    line = one_error_line(scanned)
    assert "corrupted" in line and "server_args.py" in line
    again = run_cli(["scan", "--path", str(mini_package), "--format", "json"], home)
    assert again.returncode in (0, 1), again.stderr
    # the snapshot the scan used (ids made within one second do not sort by time: never pick by name)
    new_id = json.loads(again.stdout)["snapshot"]["id"]
    assert new_id != snap_id
    new_tree = home / "snapshots" / new_id / "tree"
    assert (new_tree / "sglang/srt/server_args.py").read_bytes() == (mini_package / "srt/server_args.py").read_bytes()


def test_damaged_facts_cache_entries_are_rebuilt(tmp_path, mini_package):
    home = tmp_path / "home"
    clean = run_cli(["scan", "--path", str(mini_package), "--format", "json"], home)
    assert clean.returncode in (0, 1), clean.stderr
    entries = [p for p in (home / "facts").rglob("*") if p.is_file()]
    assert entries, "the scan wrote no facts cache"
    for number, entry in enumerate(entries):
        raw = entry.read_bytes()
        entry.write_bytes(raw[: len(raw) // 2] if number % 2 else b"\x80garbage" + raw[8:])
    damaged = run_cli(["scan", "--path", str(mini_package), "--format", "json"], home)
    assert damaged.returncode == clean.returncode, damaged.stderr
    assert _stable(damaged.stdout) == _stable(clean.stdout)
    rebuilt = run_cli(["scan", "--path", str(mini_package), "--format", "json"], home)
    assert _stable(rebuilt.stdout) == _stable(clean.stdout)


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MB tmpfs (needs root and mount rights; skipped elsewhere)."""
    with small_tmpfs(tmp_path, "1m") as mount:
        yield mount


def test_a_full_disk_mid_pull_is_one_line_and_keeps_the_old_snapshot(tmp_path, small_disk, mini_package):
    home = small_disk / "home"
    first = run_cli(["snapshot", "pull", "--path", str(mini_package)], home)
    assert first.returncode == 0, first.stderr
    full = run_cli(["snapshot", "pull", "--path", str(release_tree("0.5.23") / "sglang"), "--scope", "full"], home)
    assert full.returncode == 3
    assert "disk full" in one_error_line(full)
    store = Store(home / "snapshots")
    assert store.ids() == [first.stdout.strip()]
    store.open(first.stdout.strip())
    assert list((store.root / ".staging").iterdir()) == []
