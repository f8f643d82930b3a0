"""`sgl-scan graph`: export the program graph, or list the sites that branch on one algorithm."""

from __future__ import annotations

from pathlib import Path

import click

from sgl_scan.cli.options import pop_source_params, source_options, source_or_latest
from sgl_scan.errors import ConfigError
from sgl_scan.reports.common import visible, visible_lines


@click.command("graph")
@source_options
@click.option("--format", "fmt", type=click.Choice(["dot", "graphml", "json"]), default="dot", show_default=True,
              help="Output format of the graph.")
@click.option("--focus", help="Keep only the neighbourhood of an algorithm (EAGLE) or a symbol (qualified name or suffix).")
@click.option("--depth", type=click.IntRange(min=0), default=1, show_default=True, help="Edges around --focus to keep.")
@click.option("--dispatch", "dispatch", metavar="ALGO",
              help="Instead of the graph, list the sites that branch on ALGO, with file:line and the worker "
                   "(in the files the scope takes; --scope full for the whole srt/ tree).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to FILE instead of stdout.")
def command(fmt: str, focus: str | None, depth: int, dispatch: str | None, output: str | None, **kwargs) -> None:
    """Export the call/dispatch graph of an SGLang tree (the files the scope takes). Examples:

    \b
      sgl-scan graph --pip sglang==0.5.23 --dispatch DFLASH
      sgl-scan graph --path ~/sglang/python --focus EAGLE --depth 2 --format dot -o eagle.dot
    """
    from sgl_scan.analyzer.graph_views import FocusError, dispatch_listing, focus as focus_on, format_dispatch, render
    from sgl_scan.analyzer.pipeline import analyze
    from sgl_scan.snapshots.progress import Progress
    from sgl_scan.snapshots import scope as scopes
    from sgl_scan.snapshots.resolve import obtain_snapshot

    source = source_or_latest(pop_source_params(kwargs))
    if dispatch and focus:
        raise click.UsageError("--dispatch and --focus do not combine")
    snapshot = obtain_snapshot(source)
    bar = Progress("analysing")
    try:
        analysis = analyze(snapshot, progress=lambda done, total: bar.update(f"{done}/{total} files", force=done == total))
    finally:
        bar.done()
    m = snapshot.manifest
    try:
        if dispatch:
            listing = dispatch_listing(analysis.inventory, dispatch)
            text = "\n".join(visible(line) for line in format_dispatch(listing, scopes.qualifier(m.scope))) + "\n"
            text += f"  ({scopes.statement(m.scope, len(m.files))})\n"
        else:
            graph = focus_on(analysis.graph, focus, depth) if focus else analysis.graph
            text = render(graph, fmt, scopes.summary(m.scope, len(m.files)))
            if fmt != "json":  # JSON escapes controls itself; DOT and GraphML would carry them raw
                text = visible_lines(text)
    except FocusError as exc:
        raise ConfigError(str(exc)) from None
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
