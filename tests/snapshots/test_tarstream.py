"""Hostile tar streams: every one is refused, nothing lands outside the staging tree, nothing is stored."""

from __future__ import annotations

import hashlib
import io
import tarfile

import pytest

from sgl_scan.errors import RemoteError
from sgl_scan.snapshots.store import Store
from sgl_scan.snapshots.tarstream import Limits, extract_stream


def _tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _file(name: str, data: bytes = b"x = 1\n") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _special(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info, None


def _extract(tmp_path, raw: bytes, expected, limits=Limits()):
    store = Store(tmp_path / "store")
    with store.stage() as stage:
        names = extract_stream(io.BytesIO(raw), stage.write_later, prefix="sglang/",
                               expected={n: 1.0 for n in expected}, limits=limits)
        stage.flush()
        return names, dict(stage.files)


def _assert_refused(tmp_path, raw, expected, match, limits=Limits()):
    outside = set(p for p in tmp_path.rglob("*"))
    with pytest.raises(RemoteError, match=match):
        _extract(tmp_path, raw, expected, limits)
    after = set(p for p in tmp_path.rglob("*"))
    new = {p for p in after - outside if ".staging" not in p.parts and p.name != ".lock"}
    assert new <= {tmp_path / "store", tmp_path / "store" / ".staging"}, new
    assert Store(tmp_path / "store").ids() == []
    assert not list((tmp_path / "store" / ".staging").glob("*/tree/**/*.py"))


def test_a_good_stream_is_extracted_with_hashes(tmp_path):
    raw = _tar(_file("srt/a.py", b"A = 1\n"), _file("version.py", b'__version__ = "1"\n'))
    names, files = _extract(tmp_path, raw, ["srt/a.py", "version.py"])
    assert names == ["srt/a.py", "version.py"]
    entry = files["sglang/srt/a.py"]
    assert entry.sha256 == hashlib.sha256(b"A = 1\n").hexdigest() and entry.size == 6 and entry.mtime == 1.0
    assert (tmp_path / "store" / ".staging").exists()


HOSTILE = [
    ([_file("/etc/passwd")], ["/etc/passwd"], "absolute"),
    ([_file("../../escape.py")], ["../../escape.py"], r"\.\."),
    ([_file("srt/../../escape.py")], ["srt/../../escape.py"], r"\.\."),
    ([_special("srt/a.py", tarfile.SYMTYPE, "/etc/passwd")], ["srt/a.py"], "link"),
    ([_special("srt/a.py", tarfile.SYMTYPE, "../../../../etc/passwd")], ["srt/a.py"], "link"),
    ([_special("srt/a.py", tarfile.LNKTYPE, "/etc/passwd")], ["srt/a.py"], "link"),
    ([_special("srt/a.py", tarfile.CHRTYPE)], ["srt/a.py"], "device"),
    ([_special("srt/a.py", tarfile.BLKTYPE)], ["srt/a.py"], "device"),
    ([_special("srt/a.py", tarfile.FIFOTYPE)], ["srt/a.py"], "device or FIFO"),
    ([_special("srt", tarfile.DIRTYPE)], ["srt"], "non-file"),
    ([_file("srt/other.py")], ["srt/a.py"], "not requested"),
    ([_file("srt/a.py"), _file("srt/a.py")], ["srt/a.py"], "repeated"),
    ([_file("/".join(["d"] * 200) + "/a.py")], ["/".join(["d"] * 200) + "/a.py"], "suspicious"),
]


@pytest.mark.parametrize("members, expected, match", HOSTILE)
def test_hostile_members_are_refused(tmp_path, members, expected, match):
    _assert_refused(tmp_path, _tar(*members), expected, match)


@pytest.mark.parametrize("members, expected, match", HOSTILE)
def test_without_tarfile_data_filter_the_lexical_checks_still_refuse(tmp_path, monkeypatch, members, expected, match):
    """Python before 3.10.12 / 3.11.4 (setup.cfg allows 3.10) has no tarfile.data_filter: a pull must still
    work there (it raised AttributeError on every SSH pull) and every hostile member is still refused."""
    monkeypatch.delattr(tarfile, "data_filter", raising=False)
    monkeypatch.delattr(tarfile, "FilterError", raising=False)
    _assert_refused(tmp_path, _tar(*members), expected, match)
    names, _ = _extract(tmp_path / "good", _tar(_file("srt/a.py")), ["srt/a.py"])
    assert names == ["srt/a.py"]


def test_a_member_claiming_10_gb_is_refused_before_reading_it(tmp_path):
    info = tarfile.TarInfo("srt/a.py")
    info.size = 10 * 1024**3
    header = info.tobuf(format=tarfile.GNU_FORMAT)
    _assert_refused(tmp_path, header + b"\0" * 512, ["srt/a.py"], "max-file-size")


def test_total_bytes_and_file_count_limits(tmp_path):
    raw = _tar(*[_file(f"srt/f{i}.py", b"y" * 100) for i in range(5)])
    names = [f"srt/f{i}.py" for i in range(5)]
    _assert_refused(tmp_path / "a", raw, names, "max-bytes", Limits(max_bytes=250))
    _assert_refused(tmp_path / "b", raw, names, "max-files", Limits(max_files=3))


def test_a_tar_bomb_of_tiny_files_stops_at_the_file_limit(tmp_path):
    names = [f"srt/bomb/{i}.py" for i in range(2000)]
    raw = _tar(*[_file(n, b"") for n in names])
    _assert_refused(tmp_path, raw, names, "max-files", Limits(max_files=1000))


def test_a_stream_cut_in_the_middle_is_refused(tmp_path):
    raw = _tar(_file("srt/a.py", b"a" * 5000), _file("srt/b.py", b"b" * 5000))
    cut = raw[: 512 + 2000]
    _assert_refused(tmp_path, cut, ["srt/a.py", "srt/b.py"], "cut short")


def test_a_stream_that_ends_before_all_files_arrived_is_refused(tmp_path):
    raw = _tar(_file("srt/a.py"))
    _assert_refused(tmp_path, raw, ["srt/a.py", "srt/b.py"], "ended before")


def test_garbage_instead_of_a_tar_is_refused(tmp_path):
    _assert_refused(tmp_path, b"Welcome to my server!\n" * 100, ["srt/a.py"], "tar")
