"""File stamps: a settled, unchanged file is not read again; any edit (same size, mtime restored) is seen."""

from __future__ import annotations

import os
import time

import pytest

from sgl_scan.snapshots import local, stamps
from sgl_scan.snapshots.local import pull_local
from sgl_scan.snapshots.store import Store


def _pull(store, package, scope="speculative"):
    return pull_local({"local_path": str(package), "scope": scope}, store=store)


@pytest.fixture
def reads(monkeypatch):
    """Files the local pull opens (by package-relative path suffix), counted."""
    seen: list[str] = []
    real = local.read_regular  # every file the local pull reads goes through it (safeio)

    def counting(path, *args, **kw):
        seen.append(str(path))
        return real(path, *args, **kw)

    monkeypatch.setattr(local, "read_regular", counting)
    return seen


@pytest.fixture
def settle_at_once(monkeypatch):
    """Stamps trusted as soon as they are recorded (the 2 s rule is tested on its own below)."""
    monkeypatch.setattr(stamps, "RACY_NS", -10**12)


def _same_size_edit(path, old: bytes, new: bytes) -> None:
    st = path.stat()
    data = path.read_bytes()
    assert old in data and len(old) == len(new)
    time.sleep(0.02)  # a later clock tick than the pull's
    path.write_bytes(data.replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # cp -p, rsync -t, tar x
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_size == st.st_size


def test_an_unchanged_settled_folder_is_not_read_again(tmp_path, mini_package, reads, settle_at_once):
    store = Store(tmp_path / "store")
    first = _pull(store, mini_package)
    assert reads  # the first pull reads every candidate
    reads.clear()
    again = _pull(store, mini_package)
    assert again.id == first.id and again.pulled.reused
    assert reads == []  # nothing read: sizes, times and inodes prove it unchanged


def test_a_same_size_edit_with_its_mtime_restored_is_seen(tmp_path, mini_package, settle_at_once):
    store = Store(tmp_path / "store")
    first = _pull(store, mini_package)
    target = mini_package / "srt/speculative/spec_info.py"
    _same_size_edit(target, b"class", b"klass")  # the ctime moves, whatever the mtime says
    second = _pull(store, mini_package)
    assert second.id != first.id and not second.pulled.reused
    assert (second.tree / "sglang/srt/speculative/spec_info.py").read_bytes().startswith(b"klass")


def test_a_file_replaced_by_another_inode_is_seen(tmp_path, mini_package, settle_at_once):
    store = Store(tmp_path / "store")
    first = _pull(store, mini_package)
    target = mini_package / "srt/speculative/spec_info.py"
    st = target.stat()
    replacement = target.with_name("spec_info.tmp")
    replacement.write_bytes(target.read_bytes().replace(b"EAGLE", b"EAGLX"))
    os.utime(replacement, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(replacement, target)  # same size and mtime, another inode
    second = _pull(store, mini_package)
    assert second.id != first.id
    assert b"EAGLX" in (second.tree / "sglang/srt/speculative/spec_info.py").read_bytes()


def test_a_file_that_has_not_settled_is_read_every_time(tmp_path, mini_package, reads, monkeypatch):
    """Files changed within the settle window are read and hashed on every pull (the window widened to an
    hour, so a loaded machine's slow pulls cannot carry the file past it between the two pulls)."""
    monkeypatch.setattr(stamps, "RACY_NS", 3600 * 10**9)
    store = Store(tmp_path / "store")
    os.utime(mini_package / "srt/speculative/spec_info.py")  # changed just now, whatever the machine's load
    _pull(store, mini_package)
    reads.clear()
    _pull(store, mini_package)
    assert any(path.endswith("spec_info.py") for path in reads)


def test_scope_match_follows_the_bytes(tmp_path, mini_package, settle_at_once):
    """A file the byte search left out is taken once an edit (same size, mtime restored) names the algorithm."""
    store = Store(tmp_path / "store")
    target = mini_package / "srt/layers/linear.py"
    target.write_text("class Linear:\n    spec_algoX = 1\n".replace("spec_algoX", "sp3c_algoX"))
    first = _pull(store, mini_package)
    assert "sglang/srt/layers/linear.py" not in {f.path for f in first.manifest.files}
    _same_size_edit(target, b"sp3c_algo", b"spec_algo")
    second = _pull(store, mini_package)
    assert "sglang/srt/layers/linear.py" in {f.path for f in second.manifest.files}


def test_a_stored_file_altered_in_place_is_caught(tmp_path, mini_package, settle_at_once):
    store = Store(tmp_path / "store")
    snapshot = _pull(store, mini_package)
    store.verify(snapshot)  # records the stored files' stamps
    stored = snapshot.tree / "sglang/srt/speculative/spec_info.py"
    os.chmod(stored, 0o644)
    _same_size_edit(stored, b"EAGLE", b"EAGLX")
    with pytest.raises(Exception, match="does not match its sha256"):
        store.verify(snapshot)


def test_a_damaged_stamp_file_reads_as_empty(tmp_path):
    path = tmp_path / "s.pkl"
    target = tmp_path / "f"
    target.write_text("x")
    recorded = stamps.StampFile(path)
    recorded.put("f", target.stat(), {"sha256": "abc"})
    recorded.changed = True
    recorded.save()
    assert stamps.StampFile(path).entries
    path.write_bytes(path.read_bytes()[:-1] + b"!")
    assert stamps.StampFile(path).entries == {}


def test_a_scope_match_learned_under_another_pattern_is_not_trusted(tmp_path, mini_package, settle_at_once):
    """A stamp's scope answer is kept with the pattern it answered: a later build whose scope pattern differs
    (an older sgl-scan's record, say) searches the bytes again instead of reusing a stale yes."""
    store = Store(tmp_path / "store")
    target = mini_package / "srt/layers/linear.py"
    target.write_text("class Linear:\n    pass\n")
    first = _pull(store, mini_package)
    assert "sglang/srt/layers/linear.py" not in {f.path for f in first.manifest.files}
    recorded = stamps.source_stamps(store.root, local.find_package(mini_package))
    name = next(n for n in recorded.entries if n.endswith("srt/layers/linear.py"))
    stamp, when, value = recorded.entries[name]
    recorded.entries[name] = (stamp, when, {**value, "match": ("an older scope pattern", True)})
    recorded.changed = True
    recorded.save()
    second = _pull(store, mini_package)
    assert "sglang/srt/layers/linear.py" not in {f.path for f in second.manifest.files}


def _edit_and_pull_again(tmp_path, mini_package, reads, alter_stored=None):
    """Pull, pull again (the store checks and stamps its copy), edit one file, pull: the edited pull."""
    store = Store(tmp_path / "store")
    first = _pull(store, mini_package)
    assert _pull(store, mini_package).id == first.id  # verified: its files' stamps are recorded
    if alter_stored is not None:
        alter_stored(first.tree)
    edited = mini_package / "srt/speculative/spec_info.py"
    edited.write_bytes(edited.read_bytes() + b"\nADDED = 1\n")
    reads.clear()
    second = _pull(store, mini_package)
    for entry in second.manifest.files:  # whatever was linked or read, the snapshot holds the folder's bytes
        assert (second.tree / entry.path).read_bytes() == (mini_package / entry.path[len("sglang/") :]).read_bytes()
    return first, second


def test_an_edited_folder_reads_only_the_edited_file(tmp_path, mini_package, reads, settle_at_once):
    first, second = _edit_and_pull_again(tmp_path, mini_package, reads)
    assert [path.rsplit("/sglang/", 1)[-1] for path in reads] == ["srt/speculative/spec_info.py"]
    linked = {entry.path for entry in second.manifest.files} - {"sglang/srt/speculative/spec_info.py"}
    assert linked and all(
        (second.tree / path).stat().st_ino == (first.tree / path).stat().st_ino for path in linked
    )


def test_a_stored_copy_altered_since_it_was_checked_is_read_from_the_folder(
    tmp_path, mini_package, reads, settle_at_once
):
    def alter(tree):  # same size, mtime restored: only its stamp (ctime) tells
        stored = tree / "sglang/srt/server_args.py"
        os.chmod(stored, 0o644)
        _same_size_edit(stored, b"class", b"klass")

    first, second = _edit_and_pull_again(tmp_path, mini_package, reads, alter_stored=alter)
    assert sorted(path.rsplit("/sglang/", 1)[-1] for path in reads) == [
        "srt/server_args.py",
        "srt/speculative/spec_info.py",
    ]
    assert (second.tree / "sglang/srt/server_args.py").stat().st_ino != (
        first.tree / "sglang/srt/server_args.py"
    ).stat().st_ino


def test_a_stored_copy_whose_stamp_moved_is_taken_from_its_blob_hashed_not_read_from_the_folder(
    tmp_path, mini_package, reads, settle_at_once
):
    """Every snapshot sharing a blob links it, which moves the stored copies' ctimes: their stamps no
    longer vouch for them. A file the folder's own settled stamp knows is then taken from the blob
    holding its sha256, hashed now (one read in the store), not read from the folder and written again."""

    def relink(tree):  # what another snapshot sharing these blobs does: the ctime moves, the bytes do not
        for stored in (tree / "sglang").rglob("*.py"):
            os.link(stored, stored.with_name(stored.name + ".extra"))
            os.unlink(stored.with_name(stored.name + ".extra"))

    first, second = _edit_and_pull_again(tmp_path, mini_package, reads, alter_stored=relink)
    assert [path.rsplit("/sglang/", 1)[-1] for path in reads] == ["srt/speculative/spec_info.py"]
    blobs = tmp_path / "store" / ".blobs"
    for entry in second.manifest.files:
        if entry.path != "sglang/srt/speculative/spec_info.py":
            assert (second.tree / entry.path).stat().st_ino == (blobs / entry.sha256).stat().st_ino
