"""`Analysis.sources`: the text of a file as it was analysed, or nothing when it changed since."""

from __future__ import annotations

import logging

from sgl_scan.analyzer.pipeline import analyze_tree

SPEC = "sglang/srt/speculative/spec_info.py"


def _tree(tmp_path):
    file = tmp_path / SPEC
    file.parent.mkdir(parents=True)
    file.write_text("from enum import IntEnum\n\n\nclass SpeculativeAlgorithm(IntEnum):\n    EAGLE = 1\n")
    return file


def test_the_lines_are_those_of_the_analysed_bytes(tmp_path):
    _tree(tmp_path)
    for use_cache in (True, False):
        analysis = analyze_tree(tmp_path, cache_dir=tmp_path / "cache", jobs=1, use_cache=use_cache)
        assert analysis.sources.lines(SPEC)[3] == "class SpeculativeAlgorithm(IntEnum):"
        assert analysis.sources.lines("sglang/srt/not_there.py") is None
        assert set(analysis.sources.read()) == {SPEC}


def test_a_file_changed_after_analysis_gives_no_lines_and_a_warning(tmp_path, caplog):
    file = _tree(tmp_path)
    analysis = analyze_tree(tmp_path, cache_dir=tmp_path / "cache", jobs=1)
    file.write_text("# something else entirely\n")
    with caplog.at_level(logging.WARNING):
        assert analysis.sources.lines(SPEC) is None
    assert "changed after it was analysed" in caplog.text


def test_a_warm_analysis_checks_the_same_way(tmp_path):
    file = _tree(tmp_path)
    analyze_tree(tmp_path, cache_dir=tmp_path / "cache", jobs=1)
    warm = analyze_tree(tmp_path, cache_dir=tmp_path / "cache", jobs=1)
    assert warm.sources.lines(SPEC)[4] == "    EAGLE = 1"
    file.write_text(file.read_text() + "    DFLASH = 2\n")
    assert warm.sources.lines(SPEC) is not None  # read (and checked) once: the first answer stands
    fresh = analyze_tree(tmp_path, cache_dir=tmp_path / "cache", jobs=1)
    assert fresh.sources.lines(SPEC)[-1] == "    DFLASH = 2"
