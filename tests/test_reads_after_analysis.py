"""After the analyzer's pass, no stage opens a file of the snapshot: rules, the filter step and every
reporter read the text the analyzer hands on (`Analysis.sources`, checked against the sha256 it
analysed), so fingerprints, suppression comments and excerpts come from the bytes that were analysed.

Every `open` of the process is watched through an audit hook; a file under the snapshot's tree opened
by code outside `sgl_scan/analyzer/` (the innermost frame of the package on the stack) is a violation.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import sgl_scan
from sgl_scan.analyzer.pipeline import analyze
from sgl_scan.pipeline import FindingOptions, check_snapshot, findings_report, kept_findings, prepare
from sgl_scan.reports import FORMATS, render
from sgl_scan.snapshots.resolve import obtain_snapshot
from sgl_scan.cli.options import SOURCE_PARAM_NAMES

PACKAGE = str(Path(sgl_scan.__file__).resolve().parent) + "/"
ANALYZER = PACKAGE + "analyzer/"


class OpenWatch:
    """The snapshot files opened while `active`, with the package file that opened each."""

    def __init__(self) -> None:
        self.tree: tuple[str, ...] | None = None  # the tree's folder, as given and resolved
        self.opened: list[tuple[str, str]] = []

    def __call__(self, event: str, args: tuple) -> None:
        if self.tree is None or event != "open" or not isinstance(args[0], (str, Path)):
            return
        path = str(args[0])
        tree = next((t for t in self.tree if path.startswith(t)), None)
        if tree is None:
            return
        frame = sys._getframe(1)
        while frame is not None and not frame.f_code.co_filename.startswith(PACKAGE):
            frame = frame.f_back
        self.opened.append((path[len(tree) :], frame.f_code.co_filename[len(PACKAGE) :] if frame else "?"))

    def outside_the_analyzer(self) -> list[tuple[str, str]]:
        return [(path, by) for path, by in self.opened if not (PACKAGE + by).startswith(ANALYZER)]


_WATCH = OpenWatch()
sys.addaudithook(_WATCH)  # an audit hook cannot be removed; it does nothing while `tree` is None


@pytest.fixture
def watch():
    _WATCH.opened = []
    yield _WATCH
    _WATCH.tree = None


@pytest.fixture(scope="module")
def scanned(sglang_0_4_6, tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:  # the store of this module's tests, restored after them
        patch.setenv("SGLSCAN_HOME", str(tmp_path_factory.mktemp("home")))
        params = {name: None for name in SOURCE_PARAM_NAMES}
        params["local_path"] = str(sglang_0_4_6)
        snapshot = obtain_snapshot(params)
        yield snapshot, analyze(snapshot)


def _folders(tree) -> tuple[str, ...]:
    return (str(Path(tree)) + "/", str(Path(tree).resolve()) + "/")


def _report_everything(snapshot, analysis) -> list[str]:
    options = FindingOptions()
    prepared = prepare(options)
    checked = check_snapshot(snapshot, analysis, prepared)
    assert checked.filtered.kept, "the release must have findings, else nothing needs their lines"
    report = findings_report(snapshot, analysis, checked, prepared)
    kept_findings(snapshot, analysis, prepared)
    return [render(report, fmt) for fmt in FORMATS]


def test_rules_filter_and_reports_open_no_file_of_the_snapshot(scanned, watch):
    snapshot, analysis = scanned
    watch.tree = _folders(snapshot.tree)
    documents = _report_everything(snapshot, analysis)
    watch.tree = None
    assert watch.outside_the_analyzer() == []
    # the excerpts and neighbour lines were there: they came from the analyzer's reads
    assert any(by.startswith("analyzer/sources.py") for _, by in watch.opened)
    assert '<pre class="excerpt">' in documents[FORMATS.index("html")]


def test_the_watch_sees_a_stage_that_reads_the_tree_itself(scanned, watch, monkeypatch):
    """The old pipeline read each finding's file itself: put that back and the watch reports it."""
    import sgl_scan.pipeline as stage

    snapshot, analysis = scanned
    code = (
        "def source_text(analysis):\n"
        "    from sgl_scan.analyzer.sources import SourceText\n"
        "    class Reread(SourceText):\n"
        "        def lines(self, path):\n"
        "            return tuple((self._tree / path).read_bytes().decode().splitlines())\n"
        "    return Reread(TREE, lambda path: None)\n"
    )
    namespace = {"TREE": Path(snapshot.tree)}
    exec(compile(code, stage.__file__, "exec"), namespace)  # frames of sgl_scan/pipeline.py
    monkeypatch.setattr(stage, "source_text", namespace["source_text"])
    watch.tree = _folders(snapshot.tree)
    _report_everything(snapshot, analysis)
    watch.tree = None
    assert {by for _, by in watch.outside_the_analyzer()} == {"pipeline.py"}
