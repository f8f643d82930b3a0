"""`sgl-scan scan`: obtain a snapshot, analyse it, run the rules, filter, report, exit code.

The rules and the filter step run in `sgl_scan/pipeline.py`; the report is written by
`cli/output.report_findings`, as in `sgl-scan check`.
"""

from __future__ import annotations

from pathlib import Path

import click

from sgl_scan.cli.options import (
    finding_options,
    latest_meaning,
    pop_finding_options,
    pop_source_params,
    prepare_findings,
    source_options,
    source_or_latest,
)
from sgl_scan.cli.output import report_findings
from sgl_scan.pipeline import require_speculative_files


@click.command("scan")
@source_options
@finding_options
@click.option(
    "--sarif-root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="SARIF: make locations relative to this folder (your repository root) so code scanning can place them.",
)
@click.pass_context
def command(ctx: click.Context, sarif_root: Path | None = None, **kwargs) -> None:
    """Scan an SGLang tree: inventory (SGL1xx) and checks (SGL2xx dispatch, SGL3xx d2t).

    Exit status: 0 clean, 1 findings at or above --fail-on, 2 usage or configuration error,
    3 snapshot or analysis failure. Examples:

    \b
      sgl-scan scan --pip sglang==0.5.23
      sgl-scan scan --path ~/sglang/python --select SGL3 --fail-on warning
      sgl-scan scan --snapshot latest --format sarif -o sgl-scan.sarif
    """
    from sgl_scan.analyzer.pipeline import analyze
    from sgl_scan.reports.model import ArtifactRoot
    from sgl_scan.snapshots.progress import Progress
    from sgl_scan.snapshots.resolve import obtain_snapshot
    from sgl_scan.snapshots.store import stamp_pulled_files

    options = pop_finding_options(kwargs)
    prepared = prepare_findings(options)  # usage errors before any download or parse
    source = source_or_latest(pop_source_params(kwargs))
    snapshot = obtain_snapshot(source)
    require_speculative_files(snapshot)
    anchor = ArtifactRoot.containing(snapshot.manifest, sarif_root) if sarif_root is not None else None
    bar = Progress("analysing")  # a cold full-scope scan reads thousands of files: say so on a TTY
    try:
        analysis = analyze(
            snapshot, progress=lambda done, total: bar.update(f"{done}/{total} files", force=done == total)
        )
    finally:
        bar.done()
    code = report_findings(
        snapshot, analysis, options, prepared, artifact_root=anchor, latest=latest_meaning(source, snapshot)
    )
    stamp_pulled_files(snapshot)
    ctx.exit(code)
