"""A real report on sglang==0.5.23, built once per session the way `sgl-scan scan` builds it."""

from __future__ import annotations

import pytest

from sgl_scan import __version__
from sgl_scan.cli.options import SOURCE_PARAM_NAMES
from sgl_scan.reports.model import Report


@pytest.fixture(autouse=True)
def _python_drawing(monkeypatch):
    """Draw the dispatch graph in pure Python whether or not Graphviz is installed, so the HTML is
    the same on every machine (the Graphviz path has its own test)."""
    monkeypatch.setattr("sgl_scan.reports.dispatch_graph.graphviz_available", lambda: False)


@pytest.fixture(scope="session")
def reports_home(tmp_path_factory):
    """An $SGLSCAN_HOME shared by the real-release tests, so each release's facts are parsed once."""
    return tmp_path_factory.mktemp("reports-home")


@pytest.fixture(scope="session")
def real_report_0_5_23(reports_home, sglang_0_5_23) -> Report:
    from sgl_scan.analyzer.pipeline import analyze
    from sgl_scan.rules.engine import run_rules
    from sgl_scan.rules.registry import load_rules
    from sgl_scan.snapshots.resolve import obtain_snapshot
    from sgl_scan.snapshots.store import Store

    home = reports_home
    params = {name: None for name in SOURCE_PARAM_NAMES}
    params["local_path"] = str(sglang_0_5_23)
    snapshot = obtain_snapshot(params, store=Store(home / "snapshots"))
    analysis = analyze(snapshot, cache_dir=home / "facts")
    rules = load_rules()
    findings = run_rules(analysis, rules)
    return Report(
        manifest=snapshot.manifest,
        inventory=analysis.inventory,
        findings=findings,
        parse_errors=analysis.parse_errors,
        rules=rules.docs(),
        tool_version=__version__,
        sources={f.path: analysis.sources.lines(f.path) for f in findings if analysis.sources.lines(f.path)},
    )
