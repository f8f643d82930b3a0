"""`sgl-scan graph`: export the program graph, or list the sites that branch on one algorithm."""

from __future__ import annotations

import json
from pathlib import Path

import click

from sgl_scan.cli.options import latest_meaning, pop_source_params, source_options, source_or_latest
from sgl_scan.errors import ConfigError
from sgl_scan.reports.common import visible, visible_lines


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


def _with_tree(text: str, fmt: str, tree: dict) -> str:
    """The graph document with the tree it describes named in it: a DOT comment, an XML comment
    after GraphML's declaration, a "tree" field in JSON."""
    if fmt == "json":
        return json.dumps({"tree": tree, **json.loads(text)}, indent=1) + "\n"
    line = tree["line"]
    if fmt == "dot":
        return f"// tree: {line}\n{text}"
    comment = "<!-- tree: " + line.replace("--", "- -") + " -->"
    head, newline, rest = text.partition("\n")
    return f"{head}{newline}{comment}\n{rest}" if head.startswith("<?xml") else f"{comment}\n{text}"


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
        dispatch_listing,
        focus as focus_on,
        format_dispatch,
        format_like,
        PluginFileError,
        like_listing,
        parse_claims,
        plugin_file_predicates,
        render,
    )
    from sgl_scan.analyzer.pipeline import analyze
    from sgl_scan.cli.output import emit
    from sgl_scan.reports import dispatch_listing as listing_report
    from sgl_scan.reports.common import json_document
    from sgl_scan.snapshots.progress import Progress
    from sgl_scan.snapshots import scope as scopes
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
    head = visible(f"tree: {tree['line']}")
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
            listing = like_listing(analysis.inventory, dispatch, like, claimed, derived=derived)
            text = head + "\n" + "\n".join(visible(line) for line in format_like(listing)) + "\n"
            text += f"  ({scopes.statement(m.scope, len(m.files))})\n"
        elif dispatch:
            sites = dispatch_listing(analysis.inventory, dispatch)
            sides = listing_report.site_sides(analysis.inventory, sites.algorithm.name, sites.sites)
            if fmt == "json":
                text = json_document(
                    listing_report.document(sites, sides, tree, scopes.summary(m.scope, len(m.files)), __version__)
                )
            else:
                lines = listing_report.text_lines(list(format_dispatch(sites, scopes.qualifier(m.scope))), sides)
                text = head + "\n" + "\n".join(visible(line) for line in lines) + "\n"
                text += f"  ({scopes.statement(m.scope, len(m.files))})\n"
        else:
            graph = focus_on(analysis.graph, focus, depth) if focus else analysis.graph
            text = _with_tree(render(graph, fmt, scopes.summary(m.scope, len(m.files))), fmt, tree)
            if fmt != "json":  # JSON escapes controls itself; DOT and GraphML would carry them raw
                text = visible_lines(text)
    except FocusError as exc:
        raise ConfigError(str(exc)) from None
    emit(text, output)
