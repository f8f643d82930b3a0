"""The text report: stable plain text when piped, colour only when asked for."""

from __future__ import annotations

import dataclasses
import re

from sgl_scan.reports import render, render_diff
from tests.reports import fixtures as fx
from tests.reports.diff_fixtures import sample_diff

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_plain_text_has_no_escape_codes_and_coloured_text_does():
    plain = render(fx.report(), "text")
    coloured = render(fx.report(), "text", color=True)
    assert not ANSI.search(plain)
    assert ANSI.search(coloured)
    assert ANSI.sub("", coloured) == plain


def test_header_names_the_snapshot_source_version_and_git_state():
    head = render(fx.report(), "text").splitlines()[:6]
    assert "SGLang 0.5.23" in head[0]
    assert "ssh root@gpu-box:/root/sglang/python (port 2222)" in head[2]
    assert "0123456789ab (main, dirty)" in head[4]


def test_predicate_matrix_marks_members():
    lines = render(fx.report(), "text").splitlines()
    row = next(line for line in lines if line.strip().startswith("is_eagle "))
    # columns: DFLASH EAGLE EAGLE3 STANDALONE NGRAM NONE
    assert row.split()[1:] == [".", "x", "x", ".", ".", "."]


def test_findings_are_grouped_by_file_with_their_source_line():
    text = render(fx.report(), "text")
    findings = text[text.index("Findings (3)"):]
    files = [fx.MODEL, fx.ARGS, fx.WORKER]
    positions = [findings.index(f"\n{path}\n") for path in files]
    assert positions == sorted(positions)
    assert "6 | head.data = head.data[self.hot_token_id]" in findings
    assert "hint: check that d2t is offsets" in findings


def test_summary_counts_by_severity():
    lines = render(fx.report(), "text").rstrip().splitlines()
    assert lines[-2] == "Summary: error 1, warning 1, info 1 - 3 findings, 1 parse error"
    empty = render(fx.report(findings=(), parse_errors=()), "text")
    assert empty.rstrip().splitlines()[-2] == "Summary: error 0, warning 0, info 0 - 0 findings, 0 parse errors"


def test_the_summary_says_what_the_scope_covers():
    """A default-scope answer is partial and says so (issue 18, case 7); a full-scope one says it is whole."""
    report = fx.report()
    assert report.manifest.scope == "speculative"
    last = render(report, "text").rstrip().splitlines()[-1]
    assert last == (f"  speculative scope ({len(report.manifest.files)} files): only files that name the speculative "
                    "algorithm or the d2t/t2d maps were read; run with --scope full for all")
    full = fx.report(manifest=dataclasses.replace(report.manifest, scope="full"))
    assert render(full, "text").rstrip().splitlines()[-1].endswith("every *.py under srt/ was read")


def test_rendering_twice_gives_the_same_text():
    assert render(fx.report(), "text") == render(fx.report(), "text")


def test_diff_text_lists_changes_and_findings():
    text = render_diff(sample_diff(), "text")
    assert "  + added    UNO  sglang/srt/speculative/spec_info.py:50" in text
    assert "      members +UNO -NGRAM" in text
    assert "New findings (1)" in text and "Resolved findings (1)" in text
    assert not ANSI.search(text)
    assert ANSI.search(render_diff(sample_diff(), "text", color=True))
