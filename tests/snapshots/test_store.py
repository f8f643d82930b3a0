"""The store: atomic commits, verification, removal, blob sharing, concurrent pulls."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import time

import pytest

from sgl_scan.errors import SnapshotError
from sgl_scan.snapshots.local import pull_local
from sgl_scan.snapshots import store as store_module
from sgl_scan.snapshots.store import Store
from tests.snapshots.conftest import MINI_SPECULATIVE, make_mini_package
from tests.support.tmpfs import small_tmpfs


def _pull(store, package, scope="speculative"):
    return pull_local({"local_path": str(package), "scope": scope}, store=store)


def test_a_pull_is_stored_with_manifest_hashes_and_version(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    snap = _pull(store, mini_package)
    assert re.fullmatch(r"\d{8}T\d{6}-local-9\.9\.9-[0-9a-f]{6}", snap.id)
    assert [f.path for f in snap.manifest.files] == MINI_SPECULATIVE
    assert snap.manifest.sglang_version == "9.9.9"
    data = json.loads((snap.folder / "manifest.json").read_text())
    assert data["id"] == snap.id and len(data["files"]) == len(MINI_SPECULATIVE)
    reopened = store.open(snap.id)
    assert reopened.manifest == snap.manifest
    assert (reopened.tree / "sglang/srt/speculative/spec_info.py").read_bytes().startswith(b"class SpeculativeAlgorithm")


def test_ids_are_unique_and_latest_is_the_newest(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    ids = []
    for number in range(3):
        (mini_package / "srt/server_args.py").write_text(f"X = {number}\n")  # a changed folder: a new snapshot
        ids.append(_pull(store, mini_package).id)
    assert len(set(ids)) == 3
    assert store.latest().id == ids[-1]
    assert store.open("latest").id == ids[-1]
    assert [m.id for m in store.list()] == ids


def test_a_failed_pull_leaves_nothing_and_keeps_the_old_snapshot(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    old = _pull(store, mini_package)
    with pytest.raises(RuntimeError):
        with store.stage() as stage:
            stage.write("sglang/version.py", b'__version__ = "1"\n')
            raise RuntimeError("interrupted")
    assert store.ids() == [old.id]
    assert list((store.root / ".staging").iterdir()) == []
    store.open(old.id)


def test_stale_staging_folders_of_killed_pulls_are_swept(tmp_path):
    store = Store(tmp_path / "store")
    stale = store.root / ".staging" / "deadbeef"
    (stale / "tree").mkdir(parents=True)
    (store.root / ".staging" / "deadbeef.lock").write_text("")
    with store.stage():
        assert not stale.exists()


def test_a_modified_file_is_detected_on_open(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    snap = _pull(store, mini_package)
    target = snap.tree / "sglang/srt/server_args.py"
    os.chmod(target, 0o644)
    target.write_text("tampered\n")
    with pytest.raises(SnapshotError, match="corrupted.*server_args.py"):
        store.open(snap.id)


def _edit(package, number: int = 1) -> None:
    """Change one file of the package, so that its next pull is a new snapshot."""
    (package / "srt/server_args.py").write_text(f"X = {number}\n")


def test_a_missing_file_and_a_corrupt_manifest_are_detected(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    one = _pull(store, mini_package)
    _edit(mini_package)
    two = _pull(store, mini_package)
    assert one.id != two.id
    (one.tree / "sglang/version.py").unlink()
    with pytest.raises(SnapshotError, match="corrupted"):
        store.open(one.id)
    raw = (two.folder / "manifest.json").read_bytes()
    (two.folder / "manifest.json").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(SnapshotError, match="manifest"):
        store.open(two.id)


def _local(package):
    """A matcher for the snapshots of this package folder pulled with `_pull`."""
    return lambda hint: hint.source_kind == "local" and hint.root == str(package.resolve())


def test_the_newest_snapshot_of_a_source_is_found_reading_one_manifest(tmp_path, mini_package, monkeypatch):
    """A fleet's pulls share one Store and each looks for its host's newest snapshot among all of
    them: each `source.json` is read once, and only the chosen snapshot's manifest."""
    store = Store(tmp_path / "store")
    ids = []
    for number in range(4):
        _edit(mini_package, number)
        ids.append(_pull(store, mini_package).id)
    manifests, hints = [], []
    real_manifest, real_hint = Store._read_manifest, store_module._source_hint
    monkeypatch.setattr(Store, "_read_manifest", lambda self, f: manifests.append(f.name) or real_manifest(self, f))
    monkeypatch.setattr(store_module, "_source_hint", lambda raw, i: hints.append(i) or real_hint(raw, i))
    store = Store(tmp_path / "store")
    for _ in range(5):
        assert store.newest(_local(mini_package)).id == ids[-1]
    assert manifests == [ids[-1]] * 5 and sorted(hints) == sorted(ids)
    assert store.newest(lambda hint: False) is None


def test_a_snapshot_stored_before_source_hints_is_found_from_its_manifest(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    old = _pull(store, mini_package)
    _edit(mini_package)
    new = _pull(store, mini_package)
    (new.folder / "source.json").unlink()
    assert [h.id for h in store.hints()] == [old.id, new.id]
    assert store.newest(_local(mini_package)).id == new.id


def test_a_source_hint_rewritten_with_its_size_and_mtime_kept_is_read_again_and_confirmed(tmp_path, mini_package):
    """The hints read are trusted only while their file is unchanged: an edit that keeps the size and
    restores the mtime is still read again; and a hint is only a hint: a snapshot whose manifest
    says otherwise is never given as some other source's."""
    store = Store(tmp_path / "store")
    snap = _pull(store, mini_package)
    assert store.newest(_local(mini_package)).id == snap.id
    hint_file = snap.folder / "source.json"
    raw = hint_file.read_bytes()
    root = str(mini_package.resolve())
    forged = raw.replace(json.dumps(root).encode(), json.dumps("/" + "x" * (len(root) - 1)).encode())
    assert forged != raw and len(forged) == len(raw)
    st = os.stat(hint_file)
    time.sleep(0.02)  # a later clock tick than the commit's: the rewrite's ctime is another
    hint_file.write_bytes(forged)
    os.utime(hint_file, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert store.hints()[0].root != str(mini_package.resolve())  # read again
    assert store.newest(lambda hint: True) is None  # the manifest contradicts it
    assert store.newest(_local(mini_package)) is None


def test_identical_files_share_storage_and_rm_frees_unused_blobs(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    one = _pull(store, mini_package)
    _edit(mini_package)
    two = _pull(store, mini_package)
    a = (one.tree / "sglang/srt/speculative/spec_info.py").stat()
    b = (two.tree / "sglang/srt/speculative/spec_info.py").stat()
    assert a.st_ino == b.st_ino and a.st_nlink == 3  # two trees + the blob
    assert (one.tree / "sglang/srt/server_args.py").stat().st_nlink == 2  # changed: its own blob
    blobs = {p.name for p in (store.root / ".blobs").rglob("*") if p.is_file()}
    assert blobs == {f.sha256 for f in one.manifest.files + two.manifest.files}
    assert two.pulled.unchanged == len(two.manifest.files) - 1 and two.pulled.pulled == 1
    assert store.remove(one.id) == one.id
    store.open(two.id)
    assert {p.name for p in (store.root / ".blobs").rglob("*") if p.is_file()} == {f.sha256 for f in two.manifest.files}
    store.remove(two.id)
    assert [p for p in (store.root / ".blobs").rglob("*") if p.is_file()] == []
    assert store.ids() == []


def test_refs_that_name_nothing_or_several_snapshots_are_errors(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    with pytest.raises(SnapshotError, match="no snapshots"):
        store.latest()
    _pull(store, mini_package)
    _edit(mini_package)
    _pull(store, mini_package)
    with pytest.raises(SnapshotError, match="ambiguous"):
        store.open("20")
    with pytest.raises(SnapshotError, match="no snapshot"):
        store.open("nope")


def _worker(args):
    root, package, rounds = args
    store = Store(root)
    return [_pull(store, package).id for _ in range(rounds)]


@pytest.mark.slow
def test_concurrent_pulls_into_one_store_corrupt_nothing(tmp_path):
    """Four processes pull five times each, at once: two of them the same folder, two others folders
    holding the same bytes. Each folder gets exactly one snapshot (the content check runs again
    under the store lock, so two identical pulls racing to commit store it once) and all open intact."""
    same = make_mini_package(tmp_path / "src0")
    twins = [make_mini_package(tmp_path / f"src{n}") for n in (1, 2)]
    for package in twins:
        _edit(package, 1)  # same bytes in two folders: two sources, two snapshots
    root = tmp_path / "store"
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.map(_worker, [(root, package, 5) for package in (same, same, *twins)])
    store = Store(root)
    assert [len(set(chunk)) for chunk in results] == [1, 1, 1, 1]
    assert results[0][0] == results[1][0]
    assert sorted({chunk[0] for chunk in results}) == store.ids() and len(store.ids()) == 3
    for chunk in results:
        assert [f.path for f in store.open(chunk[0]).manifest.files] == MINI_SPECULATIVE
    assert list((root / ".staging").iterdir()) == []


@pytest.fixture
def small_disk(tmp_path):
    """A 400 KB tmpfs (needs root and mount rights; skipped elsewhere)."""
    with small_tmpfs(tmp_path, "400k") as mount:
        yield mount


def test_a_full_disk_mid_pull_fails_cleanly_and_keeps_the_old_snapshot(tmp_path, small_disk, mini_package, real_package):
    store = Store(small_disk / "store")
    old = _pull(store, mini_package)
    with pytest.raises(SnapshotError, match="disk full"):
        _pull(store, real_package)  # 3.4 MB of files into what is left of 400 KB
    assert store.ids() == [old.id]
    store.open(old.id)
    assert list((store.root / ".staging").iterdir()) == []


def test_a_snapshot_stored_before_content_keys_is_still_reused_and_gets_its_key(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    first = _pull(store, mini_package)
    key = (first.folder / "content.key").read_text()
    (first.folder / "content.key").unlink()  # as an older sgl-scan left it
    again = _pull(store, mini_package)
    assert again.id == first.id and again.pulled.reused
    assert (first.folder / "content.key").read_text() == key
    (first.folder / "content.key").write_text("0" * 64 + "\n")  # a wrong hint never matches
    assert _pull(store, mini_package).id != first.id
