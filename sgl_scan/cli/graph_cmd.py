"""`sgl-scan graph`: export the program graph, or list the sites that branch on one algorithm."""

from __future__ import annotations

from pathlib import Path

import click

from sgl_scan.cli.options import latest_meaning, pop_source_params, source_options, source_or_latest
from sgl_scan.errors import ConfigError


GRAPH_FORMATS = ("dot", "graphml", "json")
LISTING_FORMATS = ("text", "json")  # --dispatch
_EXTENSIONS = {".dot": "dot", ".gv": "dot", ".graphml": "graphml", ".json": "json", ".txt": "text"}


def _format(fmt: str | None, output: str | None, listing: bool, like: bool) -> str:
    """The format to write (given, else from -o's extension, else text for a listing and dot for the
    graph), or a one-line usage error for one that kind of output cannot be written in."""
    if fmt is None and output:
        fmt = _EXTENSIONS.get(Path(output).suffix.lower())
    if like:
        if fmt not in (None, "text"):
            raise click.UsageError(f"--like writes text only, not {fmt}; drop --format (or write -o to a .txt file)")
        return "text"
    if listing:
        if fmt not in (None, *LISTING_FORMATS):
            raise click.UsageError(
                f"--dispatch lists sites as text or json, not {fmt}; "
                f"without --dispatch, graph writes the program graph as {fmt}"
            )
        return fmt or "text"
    if fmt not in (None, *GRAPH_FORMATS):
        raise click.UsageError(
            f"the graph is written as dot, graphml or json, not {fmt}; "
            "--dispatch ALGO lists one algorithm's sites as text"
        )
    return fmt or "dot"


@click.command("graph")
@source_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["dot", "graphml", "json", "text"]),
    default=None,
    help="Output format: the graph as dot (default), graphml or json; --dispatch as text (default) or json "
    "(schema in docs/json-schema.md). Default from -o's extension.",
)
@click.option(
    "--focus", help="Keep only the neighbourhood of an algorithm (EAGLE) or a symbol (qualified name or suffix)."
)
@click.option("--depth", type=click.IntRange(min=0), default=1, show_default=True, help="Edges around --focus to keep.")
@click.option(
    "--dispatch",
    "dispatch",
    metavar="ALGO",
    help="Instead of the graph, list the sites whose branch ALGO reaches, with file:line, the worker, the "
    "side ALGO takes (true/false/either) and the term that decides it, and 'negated' where it gets "
    "there as one of all-but-the-named algorithms (in the files the scope takes; --scope full for the "
    "whole srt/ tree).",
)
@click.option(
    "--like",
    "like",
    metavar="BASE",
    help="With --dispatch NEW: list every test where the new algorithm NEW takes another branch than BASE.",
)
@click.option(
    "--plugin",
    "plugin",
    type=click.Path(exists=True, dir_okay=False),
    help="With --like: the plugin file that registers NEW; the spec_class registered under NEW (over the "
    "plugin base) says which predicates NEW answers True. Other classes of the file are ignored.",
)
@click.option(
    "--claims",
    "claims",
    metavar="PREDICATES",
    help="With --like: predicates to add to or override what the tree says of NEW, comma-separated "
    "(is_x: true; is_x=false or !is_x: false). Without --plugin, NEW is read as a new enum member: "
    "each predicate's definition evaluated for it.",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to FILE instead of stdout.")
def command(
    fmt: str | None,
    focus: str | None,
    depth: int,
    dispatch: str | None,
    like: str | None,
    plugin: str | None,
    claims: str | None,
    output: str | None,
    **kwargs,
) -> None:
    """Export the call/dispatch graph of an SGLang tree (the files the scope takes). Every output
    names the tree it describes (first line, or a "tree" field). Examples:

    \b
      sgl-scan graph --pip sglang==0.5.23 --dispatch DFLASH
      sgl-scan graph --pip sglang==0.5.23 --dispatch EAGLE --format json | jq '.sites[] | select(.side == "true")'
      sgl-scan graph --path ~/sglang/python --focus EAGLE --depth 2 --format dot -o eagle.dot
      sgl-scan graph --pip sglang==0.5.23 --dispatch DDTREE --like DFLASH --claims is_dflash,is_dflash_family
    """
    from sgl_scan import __version__
    from sgl_scan.analyzer.graph_views import (
        FocusError,
        PluginFileError,
        focus as focus_on,
        like_listing,
        parse_claims,
        plugin_file_predicates,
    )
    from sgl_scan.analyzer.pipeline import analyze
    from sgl_scan.cli.output import emit
    from sgl_scan.reports.graph_documents import dispatch_document, graph_document, like_document
    from sgl_scan.snapshots.progress import Progress
    from sgl_scan.snapshots.resolve import obtain_snapshot
    from sgl_scan.snapshots.summary import tree_fields

    source = source_or_latest(pop_source_params(kwargs))
    if dispatch and focus:
        raise click.UsageError("--dispatch and --focus do not combine")
    if (plugin or claims) and not like:
        raise click.UsageError("--plugin and --claims go with --like")
    if like and not dispatch:
        raise click.UsageError("--like needs --dispatch NEW (the new algorithm's name)")
    fmt = _format(fmt, output, bool(dispatch), bool(like))
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
        analysis = analyze(
            snapshot,
            progress=lambda done, total: bar.update(f"{done}/{total} files", force=done == total),
            walk_all=True,
        )  # the graph reads every file's facts
    finally:
        bar.done()
    m = snapshot.manifest
    tree = tree_fields(m, latest_meaning(source, snapshot))
    try:
        if like:
            assert dispatch  # --like needs --dispatch (refused above)
            derived = None
            if plugin_source is not None:
                assert plugin is not None  # plugin_source was read from it
                try:
                    derived = plugin_file_predicates(plugin_source, dispatch, analysis.inventory, Path(plugin).name)
                except PluginFileError as exc:
                    raise click.BadParameter(str(exc), param_hint="--plugin") from None
            text = like_document(like_listing(analysis.inventory, dispatch, like, claimed, derived=derived), tree, m)
        elif dispatch:
            text = dispatch_document(analysis.inventory, dispatch, fmt, tree, m, __version__)
        else:
            text = graph_document(focus_on(analysis.graph, focus, depth) if focus else analysis.graph, fmt, tree, m)
    except FocusError as exc:
        raise ConfigError(str(exc)) from None
    emit(text, output)
