"""`sgl-scan snapshot pull|list|show|rm`: manage the snapshot store."""

from __future__ import annotations

import json

import click

from sgl_scan.reports.common import visible, visible_lines

from sgl_scan.cli.options import pop_source_params, source_options


@click.group("snapshot")
def command() -> None:
    """Pull, list, show and remove stored snapshots ($SGL_SCAN_HOME/snapshots)."""


@command.command("pull")
@source_options
def pull(**kwargs) -> None:
    """Pull a new snapshot from a source (--host, --path, --git or --pip) and print its id.

    An SSH pull fetches only files that changed since the last snapshot of the same host and root;
    when nothing changed it prints that snapshot's id again.
    """
    from sgl_scan.errors import ConfigError
    from sgl_scan.snapshots.resolve import check_params, obtain_snapshot

    params = pop_source_params(kwargs)
    if check_params(params) in (None, "snapshot_ref"):
        raise ConfigError("snapshot pull needs a source: --host, --path, --git or --pip")
    snapshot = obtain_snapshot(params)
    click.echo(snapshot.id)


@command.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per snapshot, one per line.")
def list_(as_json: bool) -> None:
    """List stored snapshots, oldest first."""
    from sgl_scan.snapshots.store import Store
    from sgl_scan.snapshots.summary import describe_source

    manifests = Store().list()
    if as_json:
        for m in manifests:
            click.echo(json.dumps({"id": m.id, "source_kind": m.source_kind, "sglang_version": m.sglang_version,
                                   "scope": m.scope, "files": len(m.files), "created": m.created,
                                   "source": describe_source(m)}, sort_keys=True))
        return
    rows = [("ID", "VERSION", "SCOPE", "FILES", "SOURCE")]
    rows += [tuple(visible(c) for c in (m.id, m.sglang_version or "-", m.scope, str(len(m.files)), describe_source(m)))
             for m in manifests]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths)) + "  " + row[4])


@command.command("show")
@click.argument("ref")
@click.option("--files", "show_files", is_flag=True, help="Also list every file with its size and sha256.")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
def show(ref: str, show_files: bool, as_json: bool) -> None:
    """Show a snapshot's manifest summary (REF: id, unique prefix or 'latest'); files are verified."""
    from sgl_scan.snapshots.store import Store
    from sgl_scan.snapshots.summary import format_summary

    snapshot = Store().open(ref)
    if as_json:
        click.echo(snapshot.manifest.to_json())
        return
    click.echo(visible_lines(format_summary(snapshot)))
    for skipped in snapshot.manifest.skipped:
        click.echo(visible(f"  skipped  {skipped.path}: {skipped.reason}"))
    if show_files:
        for entry in snapshot.manifest.files:
            click.echo(visible(f"  {entry.sha256[:16]}  {entry.size:>9}  {entry.path}"))


@command.command("rm")
@click.argument("refs", nargs=-1, required=True)
def rm(refs: tuple[str, ...]) -> None:
    """Remove snapshots (REFS: ids or unique prefixes); shared files stay while others use them."""
    from sgl_scan.snapshots.store import Store

    store = Store()
    for ref in refs:
        if ref == "latest":
            raise click.BadParameter("name the snapshot to remove by its id, not 'latest'", param_hint="REFS")
        click.echo(f"removed {store.remove(ref)}")
