"""Parsing scanned code prints nothing: its invalid escapes are the release's business, not the terminal's."""

from __future__ import annotations

import warnings

from sgl_scan.analyzer.parse import parse_file

SOURCE = b'import re\nPATTERN = re.compile("\\d+\\.\\L")\n\n\ndef is_eagle(self):\n    return self == "EAGLE"\n'


def test_invalid_escapes_in_a_scanned_file_raise_no_warning():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        facts = parse_file("sglang/srt/x.py", SOURCE, "0" * 64)
    assert not [w for w in seen if "escape" in str(w.message)], [str(w.message) for w in seen]
    assert facts.parse_error is None
