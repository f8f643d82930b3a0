"""`sgl-scan scan`: obtain a snapshot, analyse it, run the rules, filter, report, exit code.

The rules and the filter step run in `sgl_scan/pipeline.py`; the report is written by
`cli/output.report_findings`, as in `sgl-scan check`.
"""

from __future__ import annotations

import logging
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
from sgl_scan.errors import ConfigError
from sgl_scan.pipeline import require_speculative_files

log = logging.getLogger(__name__)


def artifact_root_for(snapshot, base: Path):
    """SARIF locations relative to `base` (a folder holding the scanned local package)."""
    from sgl_scan.reports.model import ArtifactRoot

    m = snapshot.manifest
    if m.source_kind != "local":
        raise ConfigError(f"--sarif-root needs a local source (--path); snapshot {m.id} was read from {m.source_kind}")
    package = Path(m.root).resolve()
    folder = base.expanduser().resolve()
    try:
        relative = package.relative_to(folder)
    except ValueError:
        raise ConfigError(f"--sarif-root {base}: the scanned package {package} is not inside it") from None
    return ArtifactRoot(folder.as_uri().rstrip("/") + "/", relative.as_posix() if str(relative) != "." else "")


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
    from sgl_scan.snapshots.progress import Progress
    from sgl_scan.snapshots.resolve import obtain_snapshot

    options = pop_finding_options(kwargs)
    prepared = prepare_findings(options)  # usage errors before any download or parse
    source = source_or_latest(pop_source_params(kwargs))
    snapshot = obtain_snapshot(source)
    require_speculative_files(snapshot)
    anchor = artifact_root_for(snapshot, sarif_root) if sarif_root is not None else None
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
    settle(snapshot)
    ctx.exit(code)


def settle(snapshot) -> None:
    """After a pull that stored new files, and the analysis (seconds later, so they have settled):
    verify them once more and record their stamps, so the next scan trusts them without reading."""
    from sgl_scan.errors import SnapshotError
    from sgl_scan.snapshots.store import Store

    if snapshot.pulled is None or snapshot.pulled.reused:
        return
    try:
        Store(snapshot.folder.parent).verify(snapshot)
    except (SnapshotError, OSError) as exc:  # the next run that opens it says so
        log.debug("not settling %s: %s", snapshot.id, exc)
