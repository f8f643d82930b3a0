"""`sgl-scan snapshot pull|list|show|rm|gc`: manage the snapshot store."""

from __future__ import annotations

import json
import shutil

import click

from sgl_scan.reports.visible import visible, visible_lines

from sgl_scan.cli.options import pop_source_params, source_options


@click.group("snapshot")
def command() -> None:
    """Pull, list, show, remove and collect stored snapshots ($SGLSCAN_HOME/snapshots)."""


@command.command("pull")
@source_options
def pull(**kwargs) -> None:
    """Pull a snapshot from a source (--host, --path, --git or --pip) and print its id.

    A source whose content is stored already gives that snapshot back ('reused snapshot ID' on
    stderr) instead of storing a copy; an SSH pull fetches only files that changed since the last
    snapshot of the same host and root. Either way the snapshot becomes 'latest'.
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
    """List stored snapshots, oldest first: the one 'latest' names is marked '*'; SSH snapshots show
    the host alias and remote root, local and git ones the commit and dirty state."""
    from sgl_scan.snapshots.store import Store
    from sgl_scan.snapshots.summary import describe_source, git_label

    store = Store()
    manifests = store.list()
    latest = store.latest_id()
    if as_json:
        for m in manifests:
            git = None if m.git is None else {"commit": m.git.commit, "branch": m.git.branch, "dirty": m.git.dirty}
            click.echo(
                json.dumps(
                    {
                        "id": m.id,
                        "source_kind": m.source_kind,
                        "sglang_version": m.sglang_version,
                        "scope": m.scope,
                        "files": len(m.files),
                        "created": m.created,
                        "source": describe_source(m),
                        "git": git,
                        "latest": m.id == latest,
                    },
                    sort_keys=True,
                )
            )
        return
    rows: list[tuple[str, ...]] = [("", "ID", "VERSION", "SCOPE", "FILES", "GIT", "SOURCE")]
    rows += [
        ("*" if m.id == latest else "",)
        + tuple(
            visible(c)
            for c in (
                m.id,
                m.sglang_version or "-",
                m.scope,
                str(len(m.files)),
                git_label(m) or "-",
                describe_source(m),
            )
        )
        for m in manifests
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row[:6], widths, strict=True)) + "  " + row[6])
    if latest is not None and manifests:
        click.echo("* latest: what a command with no source (or --snapshot latest) reads")


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


@command.command("gc")
@click.option(
    "--keep",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    metavar="N",
    help="Snapshots to keep per source (kind, where from, root and scope), newest first.",
)
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
def gc(keep: int, dry_run: bool) -> None:
    """Remove old snapshots (all but the N newest of each source; never 'latest'), the blobs no
    snapshot uses, and facts-cache entries no scan can use any more: those of other analyzer
    builds, and the packed facts, inventories and graphs of trees no longer stored."""
    from sgl_scan.analyzer.cache import signature, size_of, stale_entries, tree_key
    from sgl_scan.paths import facts_cache_dir
    from sgl_scan.snapshots.store import Store
    from sgl_scan.snapshots.summary import describe_source
    from sgl_scan.snapshots.tarstream import human

    verb = "would remove" if dry_run else "removed"
    result = Store().gc(keep, dry_run=dry_run)
    for manifest in result.removed:
        click.echo(f"{verb} snapshot {manifest.id}  ({describe_source(manifest)})")
    click.echo(
        f"{verb} {len(result.removed)} snapshot(s) and {result.blobs} unused blob(s) ({human(result.blob_bytes)}); "
        f"kept {len(result.kept)} snapshot(s)"
    )
    live = {tree_key((e.path, e.sha256) for e in m.files if e.path.endswith(".py")) for m in result.kept}
    facts = facts_cache_dir()
    stale = stale_entries(facts, signature(None, facts), live)
    folders = sum(1 for path in stale if path.parent == facts)
    freed = 0
    for path in stale:
        freed += size_of(path)
        if not dry_run:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    path.unlink()
                except OSError:
                    pass
    click.echo(
        f"{verb} {len(stale)} facts-cache entr{'y' if len(stale) == 1 else 'ies'} ({human(freed)}): "
        f"{folders} of other analyzer builds, {len(stale) - folders} of trees no longer stored"
    )
