"""HTML reports write control characters as the text report does (issue 31, 6): a file name or a
version holding ESC, BEL or a bidi override (U+202E, "Trojan Source") appears as `\\x1b`, `\\x07`,
`\\u202e` in every cell and attribute, never raw."""

from __future__ import annotations

from pathlib import Path

from sgl_scan.reports.templating import html_env
from tests.support.cli import run_main

RAW = ("\x1b", "\x07", "\u202e", "\x9b")


def test_tree_text_with_controls_is_escaped_in_the_html_report(capsys, tmp_path):
    package = tmp_path / "t" / "sglang"
    spec = package / "srt" / "speculative"
    spec.mkdir(parents=True)
    (package / "version.py").write_text('__version__ = "0.5.23"\n')
    (spec / "eagle_worker.py").write_text("class EagleWorker:\n    pass\n")
    hostile = "evil\x1b]0;title\x07\u202egnp.py"
    (spec / hostile).symlink_to(tmp_path / "nowhere")  # recorded as a skipped file, by name
    (spec / "x\x1b[31m.py").write_text("class X:\n    pass\n")
    code, out, err = run_main(capsys, "scan", "--path", str(package), "--scope", "full", "--format", "html")
    assert code in (0, 1), err
    assert not [c for c in RAW if c in out], [c for c in RAW if c in out]
    assert "\\x1b" in out and "\\u202e" in out


def test_every_field_and_attribute_of_the_html_environment_is_made_visible():
    page = html_env().from_string('<td title="{{ t }}">{{ t }}</td>').render(t="a\x1b[2J\u202eb\tc\nd")
    assert page == '<td title="a\\x1b[2J\\u202eb\tc\nd">a\\x1b[2J\\u202eb\tc\nd</td>'
