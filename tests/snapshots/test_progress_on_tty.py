"""Long work says what it is doing on a terminal (a pip download, a cold scan) and stays silent
when stderr is piped."""

from __future__ import annotations

import io
import os
import re
import sys

import pytest

from sgl_scan.cli import main
from sgl_scan.snapshots.progress import Progress
from sgl_scan.snapshots.wheel import run_with_ticker
from tests.snapshots.conftest import make_mini_package


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Releasing(Progress):
    """A progress line that, at its first update, lets the waiting child finish (no sleeps)."""

    def __init__(self, fifo):
        super().__init__("pip", stream=_Terminal(), enabled=True)
        self.fifo, self.texts = fifo, []

    def update(self, text, *, force=False):
        self.texts.append(text)
        super().update(text, force=force)
        if len(self.texts) == 1:
            with open(self.fifo, "w") as writer:
                writer.write("go\n")


def test_a_silent_download_shows_elapsed_time_until_it_ends(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    child = [sys.executable, "-c", f"import sys; sys.stdout.write(open({str(fifo)!r}).read())"]
    progress = _Releasing(fifo)
    result = run_with_ticker(child, "downloading sglang==9.9 from the package index", progress, interval=0.05)
    assert result.returncode == 0 and result.stdout == "go\n"
    assert progress.texts and all(t.startswith("downloading sglang==9.9 from the package index (") and t.endswith(" s)")
                                  for t in progress.texts)
    assert "\r\x1b[Kpip: downloading sglang==9.9" in progress.stream.getvalue()


def test_without_a_progress_line_the_command_just_runs(tmp_path):
    result = run_with_ticker([sys.executable, "-c", "import sys; sys.exit(3)"], "x", None, interval=0.01)
    assert result.returncode == 3


def _scan(monkeypatch, stream, *args):
    monkeypatch.setattr(sys, "stderr", stream)
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    return exc.value.code


def test_a_scan_reports_analysis_progress_on_a_terminal_only(tmp_path, monkeypatch, capsys):
    package = make_mini_package(tmp_path / "src")
    terminal = _Terminal()
    code = _scan(monkeypatch, terminal, "scan", "--path", str(package), "--scope", "full", "--format", "json")
    assert code in (0, 1)
    written = terminal.getvalue()
    # every file counted, then the line cleared before the report
    assert re.search(r"\r\x1b\[Kanalysing: ([1-9]\d*)/\1 files\r\x1b\[K$", written), written
    report = capsys.readouterr().out
    assert report.lstrip().startswith("{") and "analysing" not in report  # stdout holds only the report

    piped = io.StringIO()
    code = _scan(monkeypatch, piped, "scan", "--path", str(package), "--scope", "full", "--format", "json")
    assert code in (0, 1) and "\r" not in piped.getvalue() and "analysing" not in piped.getvalue()
