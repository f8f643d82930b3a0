"""Tree text made inert for a terminal: every control character shown as a visible escape.

Apart from `common.py` so the CLI's error path (and `snapshot pull`) can use it without importing
the reporters' data model.
"""

from __future__ import annotations

import re

# C0 controls (tab and newline included), DEL, C1 controls, the bidirectional overrides and isolates
# (which reorder what a reader sees) and U+E000 (text.py's colour marker).
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ue000]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` for a terminal: every control character written as a visible escape (ESC -> `\\x1b`).

    Tree text (string literals, names, file names, the version) must never move the cursor, set a
    window title, write the clipboard (OSC 52) or draw links (OSC 8) in the reader's terminal.
    """
    return _INVISIBLE.sub(_escape, text)


def visible_lines(text: str) -> str:
    """`visible` for each line of a multi-line text; the line breaks themselves stay."""
    return "\n".join(visible(line) for line in text.split("\n"))


_INVISIBLE_IN_PAGE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ue000]")


def visible_in_page(text: str) -> str:
    """`visible` for HTML: the same escapes, except that tab and newline (plain white space in a
    page, and the line breaks of multi-line fields) stay as they are."""
    return _INVISIBLE_IN_PAGE.sub(_escape, text)
