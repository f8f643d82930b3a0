"""Golden files pin every format for the hand-built report and diff (volatile fields redacted)."""

from __future__ import annotations

import pytest

from sgl_scan.reports import render, render_diff
from tests.reports import fixtures as fx
from tests.reports.diff_fixtures import sample_diff
from tests.reports.golden import REFRESH, check_golden, redact

EXTENSIONS = {"text": "txt", "json": "json", "sarif": "sarif", "markdown": "md", "html": "html"}


def _redacted(text: str) -> str:
    m = fx.manifest()
    return redact(text, snapshot_ids=(m.id, "A-0.5.20", "B-0.5.23"), created=(m.created,))


@pytest.mark.parametrize("fmt", list(EXTENSIONS))
def test_report_matches_golden(fmt):
    check_golden(f"report.{EXTENSIONS[fmt]}", _redacted(render(fx.report(), fmt)))


@pytest.mark.parametrize("fmt", list(EXTENSIONS))
def test_diff_matches_golden(fmt):
    check_golden(f"diff.{EXTENSIONS[fmt]}", _redacted(render_diff(sample_diff(), fmt)))


def test_golden_redacts_volatile_fields():
    text = _redacted(render(fx.report(), "json"))
    assert fx.manifest().id not in text and fx.manifest().created not in text
    assert '"id": "<SNAPSHOT-ID>"' in text and '"created": "<CREATED>"' in text
    assert '"version": "<VERSION>"' in text


def test_a_differing_golden_fails_and_prints_the_refresh_command(tmp_path, monkeypatch):
    monkeypatch.delenv("SGLSCAN_UPDATE_GOLDEN", raising=False)
    (tmp_path / "x.txt").write_text("old line\n")
    with pytest.raises(pytest.fail.Exception) as failure:
        check_golden("x.txt", "new line\n", golden_dir=tmp_path)
    message = str(failure.value)
    assert REFRESH in message and "-old line" in message and "+new line" in message
    check_golden("x.txt", "old line\n", golden_dir=tmp_path)  # equal: passes


def test_update_mode_rewrites_the_golden(tmp_path, monkeypatch):
    monkeypatch.setenv("SGLSCAN_UPDATE_GOLDEN", "1")
    check_golden("y.md", "fresh\n", golden_dir=tmp_path)
    assert (tmp_path / "y.md").read_text() == "fresh\n"
