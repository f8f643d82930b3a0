"""A local folder unchanged since its newest snapshot is not stored again (a repeated scan copies nothing)."""

from __future__ import annotations

import os
import time

from sgl_scan.snapshots import local
from sgl_scan.snapshots.local import pull_local
from sgl_scan.snapshots.store import Store


def _age(package, seconds: float = 60.0) -> None:
    """Date every file `seconds` back, past the same-second guard."""
    stamp = time.time() - seconds
    for folder, _, names in os.walk(package):
        for name in names:
            os.utime(os.path.join(folder, name), (stamp, stamp))


def _pull(store, package, scope="speculative"):
    return pull_local({"local_path": str(package), "scope": scope}, store=store)


def test_an_unchanged_folder_gives_back_its_snapshot(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    _age(mini_package)
    first = _pull(store, mini_package)
    again = _pull(store, mini_package)
    assert again.id == first.id and again.manifest == first.manifest
    assert store.ids() == [first.id]


def test_any_change_makes_a_new_snapshot(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    _age(mini_package)
    first = _pull(store, mini_package)
    target = mini_package / "srt/speculative/spec_info.py"

    os.utime(target, (time.time() - 30, time.time() - 30))  # same bytes, another mtime
    second = _pull(store, mini_package)
    assert second.id != first.id

    target.write_bytes(target.read_bytes().replace(b"class", b"klass", 1))  # same size, new content
    _age(mini_package)
    third = _pull(store, mini_package)
    assert third.id != second.id
    assert {f.path: f.sha256 for f in third.manifest.files} != {f.path: f.sha256 for f in second.manifest.files}

    (mini_package / "srt/speculative/new_algo.py").write_text("X = 1\n")  # a file more
    _age(mini_package)
    fourth = _pull(store, mini_package)
    assert "sglang/srt/speculative/new_algo.py" in {f.path for f in fourth.manifest.files}

    full = _pull(store, mini_package, scope="full")  # another scope is another snapshot
    assert full.id != fourth.id and full.manifest.scope == "full"
    assert _pull(store, mini_package).id == fourth.id  # ...and the speculative one is still reused


def test_a_file_modified_just_before_its_snapshot_is_not_trusted(tmp_path, mini_package, monkeypatch):
    # "Just before" is within the racy window; widened to an hour so that a slow machine (the
    # fixture's files written more than 2 s before the pull) cannot turn this into a reuse.
    monkeypatch.setattr(local, "RACY_SECONDS", 3600.0)
    store = Store(tmp_path / "store")
    first = _pull(store, mini_package)  # files written a moment ago: a same-second edit could go unseen
    assert _pull(store, mini_package).id != first.id


def test_a_damaged_stored_snapshot_is_not_reused(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    _age(mini_package)
    first = _pull(store, mini_package)
    os.unlink(first.tree / "sglang/srt/speculative/spec_info.py")
    second = _pull(store, mini_package)
    assert second.id != first.id
    assert (second.tree / "sglang/srt/speculative/spec_info.py").is_file()

    stored = second.tree / "sglang/srt/server_args.py"  # same size, one byte changed: only the hash tells
    os.chmod(stored, 0o644)
    data = stored.read_bytes()
    stored.write_bytes(bytes([data[0] ^ 1]) + data[1:])
    third = _pull(store, mini_package)
    assert third.id != second.id
    assert (third.tree / "sglang/srt/server_args.py").read_bytes() == (mini_package / "srt/server_args.py").read_bytes()
