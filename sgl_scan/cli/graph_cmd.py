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
              help="Instead of the graph, list the sites whose branch ALGO reaches, with file:line, the worker, and "
                   "'negated' where it gets there as one of all-but-the-named algorithms (in the files the scope "
                   "takes; --scope full for the whole srt/ tree).")
@click.option("--like", "like", metavar="BASE",
              help="With --dispatch NEW: list every test where the new algorithm NEW takes another branch than BASE.")
@click.option("--plugin", "plugin", type=click.Path(exists=True, dir_okay=False),
              help="With --like: the plugin file that registers NEW; the spec_class registered under NEW (over the "
                   "plugin base) says which predicates NEW answers True. Other classes of the file are ignored.")
@click.option("--claims", "claims", metavar="PREDICATES",
              help="With --like: predicates to add to or override what the tree says of NEW, comma-separated "
                   "(is_x: true; is_x=false or !is_x: false). Without --plugin, NEW is read as a new enum member: "
                   "each predicate's definition evaluated for it.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to FILE instead of stdout.")
def command(fmt: str, focus: str | None, depth: int, dispatch: str | None, like: str | None, plugin: str | None,
            claims: str | None, output: str | None, **kwargs) -> None:
    """Export the call/dispatch graph of an SGLang tree (the files the scope takes). Examples:

    \b
      sgl-scan graph --pip sglang==0.5.23 --dispatch DFLASH
      sgl-scan graph --path ~/sglang/python --focus EAGLE --depth 2 --format dot -o eagle.dot
      sgl-scan graph --pip sglang==0.5.23 --dispatch DDTREE --like DFLASH --claims is_dflash,is_dflash_family
    """
    from sgl_scan.analyzer.graph_views import (FocusError, dispatch_listing, focus as focus_on, format_dispatch, format_like,
                                               PluginFileError, like_listing, parse_claims, plugin_file_predicates,
                                               render)
    from sgl_scan.analyzer.pipeline import analyze
    from sgl_scan.snapshots.progress import Progress
    from sgl_scan.snapshots import scope as scopes
    from sgl_scan.snapshots.resolve import obtain_snapshot

    source = source_or_latest(pop_source_params(kwargs))
    if dispatch and focus:
        raise click.UsageError("--dispatch and --focus do not combine")
    if (plugin or claims) and not like:
        raise click.UsageError("--plugin and --claims go with --like")
    if like and not dispatch:
        raise click.UsageError("--like needs --dispatch NEW (the new algorithm's name)")
    claimed: dict[str, bool] = {}
    plugin_source = None
    if claims:
        try:
            claimed = parse_claims(claims)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--claims") from None
    if plugin:
        try:
            plugin_source = Path(plugin).read_text(encoding="utf-8")
            compile(plugin_source, plugin, "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST: syntax only
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
            raise click.BadParameter(f"cannot read {plugin}: {exc}", param_hint="--plugin") from None
    snapshot = obtain_snapshot(source)
    bar = Progress("analysing")
    try:
        analysis = analyze(snapshot, progress=lambda done, total: bar.update(f"{done}/{total} files", force=done == total),
                           walk_all=True)  # the graph reads every file's facts
    finally:
        bar.done()
    m = snapshot.manifest
    try:
        if like:
            derived = None
            if plugin_source is not None:
                try:
                    derived = plugin_file_predicates(plugin_source, dispatch, analysis.inventory, Path(plugin).name)
                except PluginFileError as exc:
                    raise click.BadParameter(str(exc), param_hint="--plugin") from None
            listing = like_listing(analysis.inventory, dispatch, like, claimed, derived=derived)
            text = "\n".join(visible(line) for line in format_like(listing)) + "\n"
            text += f"  ({scopes.statement(m.scope, len(m.files))})\n"
        elif dispatch:
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
