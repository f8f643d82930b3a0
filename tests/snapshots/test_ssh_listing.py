"""The remote listing's records, parsed without a server: one `find` walk tags each record."""

from __future__ import annotations

import pytest

from sgl_scan.errors import RemoteError
from sgl_scan.snapshots.ssh import Listed, parse_listing


def test_one_walk_gives_files_links_and_odd_entries_apart():
    raw = (b"f12 1700000000.5 srt/a.py\0lsrt/models/shared\0osrt/pipe.py\0"
           b"f0 1.0 srt/with space \xff.py\0lsrt/x.py\0\0")
    found = parse_listing(raw)
    assert found.files == {"srt/a.py": Listed(12, 1700000000.5), "srt/with space \udcff.py": Listed(0, 1.0)}
    assert found.links == {"srt/models/shared", "srt/x.py"} and found.odd == {"srt/pipe.py"}


@pytest.mark.parametrize("raw", [
    b"12 1700000000.5 srt/a.py\0",  # an untagged record (the old format, or a stand-in find)
    b"fgarbage\0", b"f12 notatime srt/a.py\0", b"l\0", b"o\0", b"xsrt/a.py\0",
])
def test_a_malformed_record_is_one_clear_error(raw):
    with pytest.raises(RemoteError, match="listing is malformed"):
        parse_listing(raw)
