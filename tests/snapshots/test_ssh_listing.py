"""The remote listing's records, parsed without a server: one `find` walk tags each record."""

from __future__ import annotations

import pytest

from sgl_scan.errors import RemoteError
from sgl_scan.snapshots import ssh
from sgl_scan.snapshots.manifest import FileEntry
from sgl_scan.snapshots.ssh import SETTLE_COARSE, SETTLE_FINE, Listed, parse_listing, parse_now, same_file, settled


def test_one_walk_gives_files_links_and_odd_entries_apart():
    raw = (b"f12 1700000000.5 1700000001.25 77 srt/a.py\0lsrt/models/shared\0osrt/pipe.py\0"
           b"f0 1.0 2.0 5 srt/with space \xff.py\0lsrt/x.py\0\0")
    found = parse_listing(raw)
    assert found.files == {"srt/a.py": Listed(12, 1700000000.5, 1700000001.25, 77),
                           "srt/with space \udcff.py": Listed(0, 1.0, 2.0, 5)}
    assert found.links == {"srt/models/shared", "srt/x.py"} and found.odd == {"srt/pipe.py"}


@pytest.mark.parametrize("raw", [
    b"12 1700000000.5 srt/a.py\0",  # an untagged record (the old format, or a stand-in find)
    b"f12 1700000000.5 srt/a.py\0",  # a record without ctime and inode (an older listing format)
    b"fgarbage\0", b"f12 notatime 1.0 5 srt/a.py\0", b"f12 1.0 notatime 5 srt/a.py\0",
    b"f12 1.0 2.0 noinode srt/a.py\0", b"l\0", b"o\0", b"xsrt/a.py\0",
])
def test_a_malformed_record_is_one_clear_error(raw):
    with pytest.raises(RemoteError, match="listing is malformed"):
        parse_listing(raw)


@pytest.mark.parametrize("raw, now", [
    (b"1700000000.123456789\n", 1700000000.123456789), (b"1700000000.N\n", 1700000000.0),
    (b"1700000000.%N\n", 1700000000.0), (b"1700000000\n", 1700000000.0), (b"", None), (b"garbage", None),
])
def test_the_remote_clock_is_read_or_unknown(raw, now):
    assert parse_now(raw) == now


def test_ctimes_too_close_to_the_remote_clock_are_not_trusted(monkeypatch):
    monkeypatch.setattr(ssh, "SETTLE_FINE", SETTLE_FINE)  # the shipped windows (conftest zeroes them)
    monkeypatch.setattr(ssh, "SETTLE_COARSE", SETTLE_COARSE)
    now = 1700000100.5
    listing = {
        "old.py": Listed(1, 1.0, now - 60.25, 1),
        "fresh.py": Listed(1, 1.0, now - SETTLE_FINE / 2, 2),
        "future.py": Listed(1, 1.0, now + 1.5, 3),  # changed during the walk, or a clock ahead
        "coarse_old.py": Listed(1, 1.0, float(int(now) - 3), 4),
        "coarse_fresh.py": Listed(1, 1.0, float(int(now) - 1), 5),  # whole seconds: a 2 s window
    }
    kept = {path: item.ctime for path, item in settled(listing, now).items()}
    assert kept == {"old.py": now - 60.25, "fresh.py": None, "future.py": None,
                    "coarse_old.py": float(int(now) - 3), "coarse_fresh.py": None}
    assert SETTLE_FINE >= 0.02 and SETTLE_COARSE >= 2.0  # a few 10 ms clock ticks; FAT's 2 s stamps
    assert all(item.ctime is None for item in settled(listing, None).values())  # no remote clock: none


def test_a_file_is_unchanged_only_when_size_mtime_ctime_and_inode_all_match():
    old = FileEntry("sglang/srt/a.py", 12, "0" * 64, mtime=5.5, ctime=9.25, inode=77)
    assert same_file(old, Listed(12, 5.5, 9.25, 77))
    assert not same_file(None, Listed(12, 5.5, 9.25, 77))
    assert not same_file(old, Listed(13, 5.5, 9.25, 77))
    assert not same_file(old, Listed(12, 5.0, 9.25, 77))
    assert not same_file(old, Listed(12, 5.5, 9.5, 77))  # edited, mtime set back (`touch -r`)
    assert not same_file(old, Listed(12, 5.5, 9.25, 78))  # replaced by another file
    assert not same_file(old, Listed(12, 5.5, None, 77))  # not settled now
    legacy = FileEntry("sglang/srt/a.py", 12, "0" * 64, mtime=5.5)  # a base stored before ctimes were
    assert not same_file(legacy, Listed(12, 5.5, 9.25, 77))
    assert not same_file(FileEntry("sglang/srt/a.py", 12, "0" * 64, mtime=5.5, inode=77), Listed(12, 5.5, 9.25, 77))


def test_the_listing_is_counted_against_max_files_while_parsed():
    """issue 31: a remote listing is refused once it holds more records than --max-files, and the
    reply before the tar stream is bounded by the limits, not by the remote."""
    from sgl_scan.errors import RemoteError
    from sgl_scan.snapshots.ssh import head_limit
    from sgl_scan.snapshots.tarstream import Limits

    raw = b"".join(b"f10 1.0 1.0 %d srt/f%d.py\0" % (i, i) for i in range(10))
    assert len(parse_listing(raw, 10).files) == 10
    with pytest.raises(RemoteError, match="more than --max-files 5 entries"):
        parse_listing(raw, 5)
    small, default = head_limit(Limits(max_files=10, max_file_size=1 << 20)), head_limit(Limits())
    assert small < 3 << 20 < default <= Limits().max_file_size + (256 << 20)
