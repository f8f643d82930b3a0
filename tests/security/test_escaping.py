"""Tree text in terminal, Markdown and rule messages (issue 20, cases 3 and 7), one output at a time."""

from __future__ import annotations

import dataclasses
import re

import pytest

from sgl_scan.analyzer.model import DispatchSite, Location
from sgl_scan.cli import main
from sgl_scan.reports import render
from sgl_scan.reports import templating
from sgl_scan.rules.common import literals_of
from sgl_scan.rules.registry import load_rules
from tests.reports import fixtures as fx

OSC = "\x1b]0;TITLE\x07\x1b]52;c;cHduZWQ=\x07\x1b[2J"
SGR = re.compile(r"\x1b\[[0-9;]*m")


def _hostile_report(text: str):
    inv = fx.inventory()
    algos = (dataclasses.replace(inv.algorithms[0], name="X" + text, kind="registered" + text),) + inv.algorithms[1:]
    finding = dataclasses.replace(fx.findings()[0], message="compared with " + text)
    return fx.report(
        manifest=fx.manifest(sglang_version="0.5.23" + text),
        inventory=dataclasses.replace(inv, algorithms=algos, aliases={"A" + text: "EAGLE"}),
        findings=(finding,) + fx.findings()[1:],
    )


@pytest.mark.parametrize("color", [False, True])
def test_text_report_shows_control_characters_escaped(color):
    text = render(_hostile_report(OSC), "text", color=color)
    assert "\x07" not in text and "\x1b]" not in text and "\x1b[2J" not in text
    assert "\\x1b]0;TITLE\\x07" in text and "\\x1b[2J" in text
    assert not SGR.sub("", text).count("\x1b")  # the only ESC left open our own colours
    assert bool(SGR.search(text)) is color


def test_error_lines_show_control_characters_escaped(capsys, tmp_path):
    folder = tmp_path / ("tree" + OSC.replace("/", ""))
    folder.mkdir()  # no srt/: the one-line error names the folder
    with pytest.raises(SystemExit):
        main(["snapshot", "pull", "--path", str(folder)])
    err = capsys.readouterr().err
    assert err.startswith("sgl-scan: error:") and "\x1b" not in err and "\x07" not in err
    assert "\\x1b]0;TITLE" in err


def test_markdown_escapes_every_field():
    payload = "<img src=http://127.0.0.1:9/v.png>[UPDATE REQUIRED](http://127.0.0.1:9/fix)" + OSC
    md = render(_hostile_report(payload), "markdown")
    outside_code = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", md)
    assert "<img" not in outside_code and "](" not in outside_code.replace("\\](", "")
    assert "\x1b" not in md and "\x07" not in md
    assert "<img" not in md and not re.search(r"(?<!\\)\]\(", md)  # not even in code spans (md_code writes it as prose)
    heading = md.splitlines()[0]
    assert heading.startswith("### sgl-scan: SGLang 0.5.23&lt;img src=http&#58;//127.0.0.1:9/v.png>\\[UPDATE REQUIRED\\]")
    assert "registered&lt;img" in md  # the kind column, not filtered before
    assert "A&lt;img" in md  # the aliases


def test_markdown_helpers():
    md_text, md_code = templating.md_text, templating.md_code
    assert md_text("a_b __init__ *x* <b> | `c` # www.x.org") == "a_b \\_\\_init\\_\\_ \\*x\\* &lt;b> \\| \\`c\\` \\# www&#46;x.org"
    assert md_text("https://x") == "https&#58;//x"
    assert md_code("x`y|\x1b") == "``x`y\\|\\x1b``"


def test_a_literal_with_quotes_is_quoted_unambiguously():
    site = DispatchSite("f", Location("sglang/srt/x.py", 3), "string", 'x"<b>"y, z', ("X",), literals=('x"<b>"y, z',))
    assert literals_of(site) == ('x"<b>"y, z',)
    analysis = fx.analysis(inv=dataclasses.replace(fx.inventory(), dispatch_sites=(site,)))
    rules = {r.id: r for r in load_rules().rules}
    messages = [f.message for f in rules["SGL203"].check(analysis)] + [f.message for f in rules["SGL202"].check(analysis)]
    assert messages[0].startswith('"x\\"<b>\\"y, z" is no speculative algorithm')
    assert 'compared with "x\\"<b>\\"y, z":' in messages[1]


def test_python_warnings_about_tree_files_never_reach_stderr(tmp_path):
    """Python warns about a tree file's invalid escape sequence and quotes it; run as the CLI runs."""
    import subprocess
    import sys

    package = tmp_path / "sglang"
    (package / "srt/speculative").mkdir(parents=True)
    (package / "srt/speculative/a.py").write_bytes(b'x = "\\\x1b]0;TITLE\x07"\n')
    result = subprocess.run([sys.executable, "-W", "default", "-m", "sgl_scan", "scan", "--path", str(package), "--format", "json"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    assert "\x1b" not in result.stderr and "escape sequence" not in result.stderr
