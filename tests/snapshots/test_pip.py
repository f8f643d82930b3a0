"""The PyPI source with real SGLang wheels (cached between runs in tests/support/releases.py's cache)."""

from __future__ import annotations

import hashlib
import shutil
import zipfile

import pytest

from sgl_scan.errors import ConfigError, SnapshotError
from sgl_scan.snapshots import scope
from sgl_scan.snapshots.wheel import pull_pip
from sgl_scan.snapshots.store import Store
from tests.support.releases import release_wheel

pytestmark = pytest.mark.slow


@pytest.fixture
def offline_index(tmp_path, monkeypatch):
    """Downloads go to a fresh folder; pip may only read the test cache's wheels (no network)."""
    wheels = release_wheel("0.5.23").parent
    release_wheel("0.4.6")
    downloads = tmp_path / "downloads"
    monkeypatch.setenv("SGLSCAN_DOWNLOADS", str(downloads))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return downloads


def _wheel_expectation(version: str, kind: str) -> dict[str, str]:
    with zipfile.ZipFile(release_wheel(version)) as archive:
        names = {n[len("sglang/"):]: n for n in archive.namelist() if n.startswith("sglang/") and n.endswith(".py")}
        data = {rel: archive.read(name) for rel, name in names.items()}
    chosen = scope.select_local(data, kind, data.__getitem__)
    return {"sglang/" + rel: hashlib.sha256(data[rel]).hexdigest() for rel in chosen}


@pytest.mark.parametrize("version, kind", [("0.5.23", "speculative"), ("0.4.6", "speculative"), ("0.5.23", "full")])
def test_pip_release_manifest_is_right(tmp_path, monkeypatch, version, kind):
    monkeypatch.setenv("SGLSCAN_DOWNLOADS", str(release_wheel(version).parent))  # the shared cache: no download
    snap = pull_pip({"pip_spec": f"sglang=={version}", "scope": kind}, store=Store(tmp_path / "store"))
    m = snap.manifest
    assert m.sglang_version == version and m.source_kind == "pip" and m.scope == kind
    assert m.source["archive"] == release_wheel(version).name
    assert m.source["archive_sha256"] == hashlib.sha256(release_wheel(version).read_bytes()).hexdigest()
    assert {f.path: f.sha256 for f in m.files} == _wheel_expectation(version, kind)
    assert "sglang/srt/speculative/spec_info.py" in {f.path for f in m.files}
    Store(tmp_path / "store").open(m.id)  # tree matches the manifest


def test_a_version_range_runs_pip_download(tmp_path, offline_index):
    snap = pull_pip({"pip_spec": "sglang>=0.4.6,<0.4.7"}, store=Store(tmp_path / "store"))
    assert snap.manifest.sglang_version == "0.4.6"
    assert [p.name for p in offline_index.glob("*.whl")] == [release_wheel("0.4.6").name]


def test_a_damaged_cached_wheel_is_downloaded_again(tmp_path, offline_index):
    """Only a file sgl-scan downloaded itself (its ledger proves name, size, mtime and inode) is
    deleted and downloaded again when it no longer opens (issue 31)."""
    wheel = release_wheel("0.4.6")
    pull_pip({"pip_spec": "sglang==0.4.6"}, store=Store(tmp_path / "store"))
    cached = offline_index / wheel.name
    stamp = cached.stat()
    with open(cached, "r+b") as handle:  # bit rot: same size, same mtime, same inode
        handle.seek(stamp.st_size - 22)
        handle.write(b"\0" * 22)
    import os

    os.utime(cached, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    snap = pull_pip({"pip_spec": "sglang==0.4.6"}, store=Store(tmp_path / "store"))
    assert snap.manifest.sglang_version == "0.4.6"
    assert cached.read_bytes() == wheel.read_bytes()


def test_a_users_file_named_like_a_cached_wheel_is_never_deleted(tmp_path, offline_index):
    offline_index.mkdir(parents=True)
    mine = offline_index / release_wheel("0.4.6").name
    mine.write_bytes(b"my own notes, not a wheel\n")
    with pytest.raises(SnapshotError, match="sgl-scan did not download it .* it is left alone"):
        pull_pip({"pip_spec": "sglang==0.4.6"}, store=Store(tmp_path / "store"))
    assert mine.read_bytes() == b"my own notes, not a wheel\n"


def test_a_wheel_file_path_is_accepted(tmp_path):
    local = tmp_path / release_wheel("0.4.6").name
    shutil.copy(release_wheel("0.4.6"), local)
    snap = pull_pip({"pip_spec": str(local)}, store=Store(tmp_path / "store"))
    assert snap.manifest.sglang_version == "0.4.6"


def test_a_spec_that_is_not_sglang_is_a_usage_error(tmp_path):
    with pytest.raises(ConfigError):
        pull_pip({"pip_spec": "requests==2.0"}, store=Store(tmp_path / "store"))


def test_the_same_release_pulled_again_is_stored_once(tmp_path, monkeypatch, capsys):
    """Issue 15: every `--pip` run stored a new identical snapshot (7 after 8 commands)."""
    from sgl_scan.snapshots.resolve import obtain_snapshot

    monkeypatch.setenv("SGLSCAN_DOWNLOADS", str(release_wheel("0.4.6").parent))  # the shared cache: no download
    store = Store(tmp_path / "store")
    first = obtain_snapshot({"pip_spec": "sglang==0.4.6"}, store=store)
    again = [obtain_snapshot({"pip_spec": "sglang==0.4.6"}, store=store) for _ in range(3)]
    assert {snap.id for snap in again} == {first.id} and store.ids() == [first.id]
    err = capsys.readouterr().err
    assert f"pulled {len(first.manifest.files)} files (0 unchanged) into snapshot {first.id}" in err
    assert err.count(f"reused snapshot {first.id}") == 3
    full = obtain_snapshot({"pip_spec": "sglang==0.4.6", "scope": "full"}, store=store)  # scope is part of it
    assert full.id != first.id and len(store.ids()) == 2
