"""A finding repeats a bounded piece of its source line (issue 31, 5): one 1 MB line (or literal)
under a finding must not make a 42 MB report; every format shows at most a few hundred characters
of it and says how much was left out."""

from __future__ import annotations

import pytest

from sgl_scan.reports.common import MAX_LINE_CHARS, clip, excerpt, source_line
from sgl_scan.rules.common import quoted
from tests.support.cli import run_main

LONG = 1024 * 1024

SPEC_INFO = """from enum import IntEnum, auto


class SpeculativeAlgorithm(IntEnum):
    NONE = auto()
    EAGLE = auto()

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE
"""


def _tree(root, literal: str, comment: str):
    package = root / "sglang"
    (package / "srt" / "speculative").mkdir(parents=True)
    (package / "version.py").write_text('__version__ = "0.5.23"\n')
    (package / "srt" / "speculative" / "spec_info.py").write_text(SPEC_INFO)
    (package / "srt" / "server_args.py").write_text(
        "class ServerArgs:\n    speculative_algorithm = None\n\n    def __post_init__(self):  #" + comment + "\n"
        f"        if self.speculative_algorithm == \"{literal}\":  #{comment}\n"
        "            self.speculative_eagle_topk = 1  #" + comment + "\n")
    return package


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "markdown", "html"])
@pytest.mark.parametrize("what", ["line", "literal"])
def test_a_megabyte_line_under_a_finding_makes_a_small_report(capsys, tmp_path, fmt, what):
    literal, comment = ("EAGEL", "x" * LONG) if what == "line" else ("EAGEL" + "y" * LONG, "")
    package = _tree(tmp_path, literal, comment)
    code, out, err = run_main(capsys, "scan", "--path", str(package), "--scope", "full", "--format", fmt)
    assert code in (0, 1), err
    assert "SGL203" in out
    assert len(out) < 100_000, len(out)


def test_clip_says_what_it_left_out():
    assert clip("a" * 10, 4) == "aaaa … (6 more characters)"
    assert clip("short") == "short"
    lines = ["x" * 5000 + "\n"] * 3
    assert len(source_line({"p": lines}, "p", 2)) < MAX_LINE_CHARS + 40
    assert all(len(e.text) < MAX_LINE_CHARS + 40 for e in excerpt({"p": lines}, "p", 2))
    assert quoted("z" * 1000).endswith('" (cut; 1000 characters)') and len(quoted("z" * 1000)) < 260
