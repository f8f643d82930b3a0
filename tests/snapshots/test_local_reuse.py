"""A local folder whose content is stored already is not stored again; content decides, not mtimes."""

from __future__ import annotations

import os

import pytest

from sgl_scan.cli import main
from sgl_scan.snapshots.local import pull_local
from sgl_scan.snapshots.store import Store
from tests.support.gitrepo import copy_package
from tests.support.releases import release_tree


def _pull(store, package, scope="speculative"):
    return pull_local({"local_path": str(package), "scope": scope}, store=store)


def test_an_unchanged_folder_gives_back_its_snapshot(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    first = _pull(store, mini_package)  # files written a moment ago: hashed, so no age is needed
    again = _pull(store, mini_package)
    assert again.id == first.id and again.manifest == first.manifest
    assert (first.pulled.reused, again.pulled.reused) == (False, True)
    assert store.ids() == [first.id]


def test_content_decides_not_mtimes(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    first = _pull(store, mini_package)
    target = mini_package / "srt/speculative/spec_info.py"

    os.utime(target, ns=(1, 1))  # same bytes, another mtime: the stored copy is still right
    assert _pull(store, mini_package).id == first.id

    stamp = target.stat().st_mtime_ns
    target.write_bytes(target.read_bytes().replace(b"class", b"klass", 1))  # same size, new content ...
    os.utime(target, ns=(stamp, stamp))  # ... and the old mtime (cp -p, rsync -t, tar x)
    second = _pull(store, mini_package)
    assert second.id != first.id and not second.pulled.reused
    assert (second.pulled.pulled, second.pulled.unchanged) == (1, len(second.manifest.files) - 1)
    assert (second.tree / "sglang/srt/speculative/spec_info.py").read_bytes().startswith(b"klass")

    (mini_package / "srt/speculative/new_algo.py").write_text("X = 1\n")  # a file more
    third = _pull(store, mini_package)
    assert "sglang/srt/speculative/new_algo.py" in {f.path for f in third.manifest.files}

    full = _pull(store, mini_package, scope="full")  # another scope is another snapshot
    assert full.id != third.id and full.manifest.scope == "full"
    assert _pull(store, mini_package).id == third.id  # ...and the speculative one is still reused

    (mini_package / "srt/speculative/new_algo.py").unlink()  # back to the second state: its snapshot
    assert _pull(store, mini_package).id == second.id
    assert len(store.ids()) == 4


def test_the_same_bytes_in_another_folder_are_another_source(tmp_path, mini_package):
    store = Store(tmp_path / "store")
    first = _pull(store, mini_package)
    twin = tmp_path / "twin" / "sglang"
    copy_package(mini_package, twin)
    other = _pull(store, twin)
    assert other.id != first.id and other.manifest.source == {"path": str(twin)}
    assert other.pulled.unchanged == len(other.manifest.files)  # every blob shared, nothing copied twice
    assert (other.tree / "sglang/version.py").stat().st_ino == (first.tree / "sglang/version.py").stat().st_ino


def test_a_damaged_stored_snapshot_is_not_reused(tmp_path, mini_package):
    store = Store(tmp_path / "store")
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


def _scan(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(["scan", *args])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_a_same_size_edit_with_its_mtime_restored_is_scanned_real_0_5_23(tmp_path, capsys):
    """Issue 18 case 9: 0.5.23's llama_eagle3.py turned into a direct d2t map, same length, old mtime."""
    package = copy_package(release_tree("0.5.23") / "sglang", tmp_path / "t" / "sglang")
    code, out, first_err = _scan(capsys, "--path", str(package), "--select", "SGL301")
    assert code == 0 and "SGL301" not in out, out

    model = package / "srt/models/llama_eagle3.py"
    old = b"self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])"
    new = b"self.hot_token_id = loaded_weight".ljust(len(old))
    before = model.stat()
    text = model.read_bytes()
    assert text.count(old) == 1
    model.write_bytes(text.replace(old, new))
    os.utime(model, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (model.stat().st_size, model.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)

    code, out, err = _scan(capsys, "--path", str(package), "--select", "SGL301")
    assert code == 1 and "SGL301" in out and "llama_eagle3.py:352" in out, out + err
    assert "pulled" in first_err and "into snapshot" in first_err  # each pull says what it did
    assert "reused" not in err and "pulled 1 files" in err

    code, out, err = _scan(capsys, "--path", str(package), "--select", "SGL301")  # nothing changed now: said so
    assert code == 1 and "SGL301" in out and "reused snapshot" in err
