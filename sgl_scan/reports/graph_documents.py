"""The documents `sgl-scan graph` writes: the program graph (DOT, GraphML, JSON), one algorithm's
dispatch sites (text, JSON) and a new algorithm's sites read like an existing one (text).

Every document names the tree it describes (first line, or a "tree" field); tree text is made
inert (`reports/visible.py`) in every format that would carry it raw.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from sgl_scan.analyzer.model import SpecInventory
from sgl_scan.reports.common import json_document, visible, visible_lines
from sgl_scan.snapshots import scope as scopes
from sgl_scan.snapshots.manifest import Manifest


def _with_tree(text: str, fmt: str, tree: Mapping[str, Any]) -> str:
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


def _text(tree: Mapping[str, Any], lines, manifest: Manifest) -> str:
    head = visible(f"tree: {tree['line']}")
    text = head + "\n" + "\n".join(visible(line) for line in lines) + "\n"
    return text + f"  ({scopes.statement(manifest.scope, len(manifest.files))})\n"


def like_document(listing, tree: Mapping[str, Any], manifest: Manifest) -> str:
    """`--dispatch NEW --like OLD`: the sites a new algorithm would reach, read like OLD (text)."""
    from sgl_scan.analyzer.graph_views import format_like

    return _text(tree, format_like(listing), manifest)


def dispatch_document(
    inventory: SpecInventory, algorithm: str, fmt: str, tree: Mapping[str, Any], manifest: Manifest, version: str
) -> str:
    """`--dispatch ALGO`: every site that branches on the algorithm, with the side it takes."""
    from sgl_scan.analyzer.graph_views import dispatch_listing, format_dispatch
    from sgl_scan.reports import dispatch_listing as listing_report

    sites = dispatch_listing(inventory, algorithm)
    sides = listing_report.site_sides(inventory, sites.algorithm.name, sites.sites)
    if fmt == "json":
        summary = scopes.summary(manifest.scope, len(manifest.files))
        return json_document(listing_report.document(sites, sides, dict(tree), summary, version))
    lines = listing_report.text_lines(list(format_dispatch(sites, scopes.qualifier(manifest.scope))), sides)
    return _text(tree, lines, manifest)


def graph_document(graph, fmt: str, tree: Mapping[str, Any], manifest: Manifest) -> str:
    """The program graph (or the part of it --focus kept) as DOT, GraphML or JSON."""
    from sgl_scan.analyzer.graph_views import render

    text = _with_tree(render(graph, fmt, scopes.summary(manifest.scope, len(manifest.files))), fmt, tree)
    return text if fmt == "json" else visible_lines(text)  # JSON escapes controls itself; DOT and GraphML would not
