"""`sgl-scan scan`: pull or open a snapshot and report on it."""

from __future__ import annotations

import click

from sgl_scan.cli.options import pop_source_params, source_options


@click.command("scan")
@source_options
def command(**kwargs) -> None:
    """Scan an SGLang tree (until the analyzer lands: print the snapshot summary)."""
    from sgl_scan.snapshots.resolve import obtain_snapshot
    from sgl_scan.snapshots.summary import format_summary

    snapshot = obtain_snapshot(pop_source_params(kwargs))
    click.echo(format_summary(snapshot))
