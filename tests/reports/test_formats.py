"""The reporters' entry points: format names, inference from file names, errors."""

from __future__ import annotations

import pytest

from sgl_scan.errors import ConfigError
from sgl_scan.reports import FORMATS, format_for_path, render, render_diff
from tests.reports import fixtures as fx
from tests.reports.diff_fixtures import sample_diff


@pytest.mark.parametrize(
    "path, fmt",
    [
        ("out.json", "json"),
        ("out.sarif", "sarif"),
        ("results.sarif.json", "sarif"),
        ("REPORT.MD", "markdown"),
        ("a/b/report.html", "html"),
        ("report.htm", "html"),
        ("report.txt", "text"),
        ("report", None),
        ("report.pdf", None),
    ],
)
def test_format_for_path(path, fmt):
    assert format_for_path(path) == fmt


def test_unknown_format_is_a_configuration_error():
    with pytest.raises(ConfigError, match="unknown report format 'yaml'"):
        render(fx.report(), "yaml")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_report_and_diff_ending_in_a_newline(fmt):
    for document in (render(fx.report(), fmt), render_diff(sample_diff(), fmt)):
        assert document.endswith("\n") and len(document) > 200


@pytest.mark.parametrize("fmt", FORMATS)
def test_reporters_never_drop_findings(fmt):
    document = render(fx.report(), fmt)
    for f in fx.findings():
        assert f.rule_id in document
        assert f.path in document
