"""Broken source trees: the scan completes, every bad file is a parse-error notification (text, JSON
and SARIF `toolExecutionNotifications`), and everything else is analysed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sgl_scan.analyzer.parse import parse_file
from sgl_scan.analyzer.pipeline import load_extractors, matching_extractors
from tests.reliability.remote import run_cli
from tests.support.releases import release_tree

SPEC_INFO = "srt/speculative/spec_info.py"

# relative path -> bytes; each must come out as one parse error, the scan carrying on
BROKEN = {
    "srt/speculative/syntax_error.py": b"def broken(:\n    pass\n",
    "srt/speculative/python2.py": b'print "hello"\nexec "x = 1"\n',
    "srt/speculative/null_bytes.py": b"x = 1\n\x00\x00\x00\n",
    "srt/speculative/latin1_no_cookie.py": b"name = 'caf\xe9'\n",
    "srt/speculative/bad_cookie.py": b"# -*- coding: no-such-codec -*-\nx = 1\n",
    "srt/speculative/utf16.py": "x = 'utf16'\n".encode("utf-16"),
    "srt/speculative/binary.py": bytes(range(256)) * 4,
    "srt/speculative/unterminated.py": b"s = '''never closed\n",
    "srt/speculative/tabs.py": b"if True:\n\tx = 1\n        y = 2\n",
    # deep nesting in a file the speculative extractors read (their trigger matches)
    "srt/speculative/deep_sum.py": b"from x import SpeculativeAlgorithm\nd2t = " + b" + ".join([b"a"] * 1200) + b"\n",
    "srt/speculative/deep_brackets.py": b"SpeculativeAlgorithm = " + b"[" * 250 + b"]" * 250 + b"\n",
}
# files that look odd but are valid Python: analysed, no error
ODD_BUT_FINE = {
    "srt/speculative/mixed_endings.py": b"A = 1\r\nB = 2\rC = 3\nclass D:\r\n    x = 1\r\n",
    "srt/speculative/bom.py": b"\xef\xbb\xbfX = 'bom'\n",
    "srt/speculative/latin1_cookie.py": b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n",
    "srt/speculative/empty.py": b"",
    "srt/speculative/only_comments.py": b"# nothing\n# here\n",
    "srt/speculative/deep_parens.py": b"SpeculativeAlgorithm = " + b"(" * 150 + b"1" + b")" * 150 + b"\n",
}


def _tree(tmp_path: Path, big_mb: int = 0) -> Path:
    root = tmp_path / "broken" / "sglang"
    (root / "srt/speculative").mkdir(parents=True)
    shutil.copy(release_tree("0.5.23") / "sglang" / SPEC_INFO, root / SPEC_INFO)
    (root / "version.py").write_text('__version__ = "0.0.1"\n')
    for rel, data in {**BROKEN, **ODD_BUT_FINE}.items():
        (root / rel).write_bytes(data)
    spec = root / "srt/speculative"
    (spec / "loop_a.py").symlink_to(spec / "loop_b.py")
    (spec / "loop_b.py").symlink_to(spec / "loop_a.py")
    (spec / "cycle").symlink_to(spec, target_is_directory=True)
    if big_mb:
        line = b"VALUE_%08d = %d  # generated\n"
        with open(spec / "generated.py", "wb") as handle:
            i = 0
            while handle.tell() < big_mb * 1024**2:
                handle.write(b"".join(line % (n, n) for n in range(i, i + 10000)))
                i += 10000
    return root


def _assert_report(data: dict, sarif: dict) -> None:
    errors = {e["location"]["path"] for e in data["parse_errors"]}
    assert errors == {"sglang/" + p for p in BROKEN}, errors
    notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    by_kind = {}
    assert [n["descriptor"]["id"] for n in notes if "locations" not in n] == ["census"]  # counts, for the whole run
    for note in notes:
        if "locations" not in note:
            continue
        uri = note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        by_kind.setdefault(note["descriptor"]["id"], set()).add(uri)
    assert by_kind["parse-error"] == {"sglang/" + p for p in BROKEN}
    assert by_kind["skipped-file"] == {"sglang/srt/speculative/loop_a.py", "sglang/srt/speculative/loop_b.py",
                                       "sglang/srt/speculative/cycle"}  # the folder cycle is recorded, not dropped
    assert sarif["runs"][0]["invocations"][0]["executionSuccessful"] is True
    # everything else was analysed: the real SpeculativeAlgorithm is there, in full
    names = {a["name"] for a in data["inventory"]["algorithms"]}
    assert {"EAGLE", "EAGLE3", "STANDALONE", "NGRAM"} <= names


def test_a_broken_tree_is_scanned_and_each_bad_file_reported(tmp_path):
    root = _tree(tmp_path)
    home = tmp_path / "home"
    results = {}
    for fmt in ("json", "sarif", "text"):
        result = run_cli(["scan", "--path", str(root), "--format", fmt], home)
        assert result.returncode in (0, 1), result.stderr
        assert "Traceback" not in result.stderr
        results[fmt] = result.stdout
    _assert_report(json.loads(results["json"]), json.loads(results["sarif"]))
    for rel in BROKEN:
        assert rel.rsplit("/", 1)[1] in results["text"]


@pytest.mark.slow
def test_a_50_mb_generated_file_is_analysed(tmp_path):
    root = _tree(tmp_path, big_mb=50)
    assert (root / "srt/speculative/generated.py").stat().st_size >= 50 * 1024**2
    result = run_cli(["scan", "--path", str(root), "--format", "json"], tmp_path / "home", timeout=900)
    assert result.returncode in (0, 1), result.stderr
    data = json.loads(result.stdout)
    assert "sglang/srt/speculative/generated.py" not in {e["location"]["path"] for e in data["parse_errors"]}
    assert {e["location"]["path"] for e in data["parse_errors"]} == {"sglang/" + p for p in BROKEN}


def test_a_file_over_max_file_size_is_a_recorded_skip(tmp_path):
    root = _tree(tmp_path)
    (root / "srt/speculative/large.py").write_text("X = 1\n" * 50_000)
    result = run_cli(["scan", "--path", str(root), "--format", "sarif", "--max-file-size", "100K"], tmp_path / "home")
    assert result.returncode in (0, 1), result.stderr
    notes = json.loads(result.stdout)["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    skipped = {n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: n["message"]["text"]
               for n in notes if n["descriptor"]["id"] == "skipped-file"}
    assert skipped["sglang/srt/speculative/large.py"].startswith("skipped: larger than --max-file-size")


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_unreadable_files_are_skipped(tmp_path):
    """Root reads every file whatever its mode; the scan runs as root without the capabilities
    that bypass permission checks (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), like an ordinary user."""
    root = _tree(tmp_path)
    secret = root / "srt/speculative/secret.py"
    secret.write_text("SECRET = 1\n")
    secret.chmod(0o000)
    locked = root / "srt/speculative/locked"
    locked.mkdir()
    (locked / "inner.py").write_text("INNER = 1\n")
    locked.chmod(0o000)
    probe = subprocess.run(["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "cat", str(secret)],
                           capture_output=True)
    if probe.returncode == 0:
        pytest.skip("dropping the capabilities did not make the file unreadable here")
    result = run_cli(["scan", "--path", str(root), "--format", "sarif"], tmp_path / "home",
                     prefix=["setpriv", "--bounding-set", "-dac_override,-dac_read_search"])
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    notes = json.loads(result.stdout)["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    skipped = {n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: n["message"]["text"]
               for n in notes if n["descriptor"]["id"] == "skipped-file"}
    assert skipped["sglang/srt/speculative/secret.py"] == "skipped: unreadable: Permission denied"
    assert skipped["sglang/srt/speculative/locked"].startswith("skipped: unreadable folder")


@pytest.mark.parametrize("depth", [500, 1200, 5000])
def test_deep_nesting_is_a_parse_error_not_a_crash(depth):
    extractors = load_extractors()
    for data in (
        b"from x import SpeculativeAlgorithm\nx = " + b" + ".join([b"a"] * depth) + b"\n",
        b"x = " + b" + ".join([b"a"] * depth) + b"\n",
        b"x = " + b"[" * min(depth, 3000) + b"]" * min(depth, 3000) + b"\n",
    ):
        facts = parse_file("sglang/srt/deep.py", data, "0" * 64, matching_extractors(data, extractors))
        assert facts.path == "sglang/srt/deep.py"
        if facts.parse_error is not None:
            assert facts.parse_error.location.path == "sglang/srt/deep.py"
