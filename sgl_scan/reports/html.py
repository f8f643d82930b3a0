"""The HTML report: one self-contained page (inline CSS and SVG, no scripts, no network).

Inventory tables, the dispatch graph, findings with code excerpts and anchors to their lines, and
the documentation of every rule that ran. Rendered by jinja2 with autoescaping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markupsafe import Markup

from sgl_scan.reports.common import (
    SEVERITIES_DESC,
    algorithm_matrix,
    d2t_by_kind,
    describe_source,
    excerpt,
    findings_by_file,
    git_label,
    loc_key,
    severity_counts,
)
from sgl_scan.reports.dispatch_graph import to_svg
from sgl_scan.reports.model import Report
from sgl_scan.reports.templating import anchor, html_env


# Info findings are folded when there are more than this many (they are all in the page).
OPEN_INFO = 20


@dataclass(frozen=True)
class DocBlock:
    kind: str  # "heading" | "code" | "para"
    text: str = ""
    parts: tuple[tuple[bool, str], ...] = ()  # (is_code, text) for paragraphs


def doc_blocks(markdown: str) -> tuple[DocBlock, ...]:
    """A rule's Markdown docs as blocks the template renders (headings, fenced code, paragraphs)."""
    blocks: list[DocBlock] = []
    lines = markdown.strip().splitlines()
    i = 0
    para: list[str] = []

    def flush():
        if para:
            text = " ".join(s.strip() for s in para)
            pieces = re.split(r"(`[^`]+`)", text)
            parts = tuple(
                (p.startswith("`") and p.endswith("`") and len(p) > 1, p.strip("`") if p.startswith("`") else p)
                for p in pieces
                if p
            )
            blocks.append(DocBlock("para", parts=parts))
            para.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            code = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                code.append(lines[i])
                i += 1
            blocks.append(DocBlock("code", "\n".join(code)))
        elif line.lstrip().startswith("#"):
            flush()
            blocks.append(DocBlock("heading", line.lstrip("# ").strip()))
        elif not line.strip():
            flush()
        else:
            para.append(line)
        i += 1
    flush()
    return tuple(blocks)


def algorithm_keys(inventory) -> dict[str, int]:
    """A small number per algorithm, for the CSS classes and ids that tie the graph's focus buttons
    and the site filters to rows and SVG shapes (names are tree text, so they never enter CSS)."""
    names = [a.name for a in inventory.algorithms]
    names += sorted({name for s in inventory.dispatch_sites for name in s.algorithms} - set(names))
    return {name: i for i, name in enumerate(names)}


@dataclass(frozen=True)
class FilterOption:
    id: str  # the <option>'s id; a row passes the filter when it has the class of the same text
    label: str
    count: int


@dataclass(frozen=True)
class SiteFilter:
    title: str
    options: tuple[FilterOption, ...]


@dataclass(frozen=True)
class SiteRow:
    site: object  # DispatchSite
    anchor: str | None  # the first row at each location carries the anchor id
    classes: str  # "site" and one class per filter option the row passes


def _site_table(inventory, keys: dict[str, int]) -> tuple[list[SiteRow], tuple[SiteFilter, ...]]:
    """Dispatch sites in location order, and the algorithm, via and file filters over them."""
    sites = sorted(inventory.dispatch_sites, key=lambda s: (loc_key(s.location), s.detail))
    vias = {via: i for i, via in enumerate(sorted({s.via for s in sites}))}
    files = {path: i for i, path in enumerate(sorted({s.location.path for s in sites}))}
    seen = set()
    rows = []
    for site in sites:
        key = anchor(f"site-{site.location}")
        classes = [
            "site",
            *(f"sa-{keys[name]}" for name in dict.fromkeys(site.algorithms)),
            f"sv-{vias[site.via]}",
            f"sf-{files[site.location.path]}",
        ]
        rows.append(SiteRow(site, None if key in seen else key, " ".join(classes)))
        seen.add(key)

    def options(prefix: str, labels: dict[str, int], count) -> tuple[FilterOption, ...]:
        return tuple(FilterOption(f"{prefix}-{i}", label, count(label)) for label, i in labels.items() if count(label))

    filters = (
        SiteFilter("Algorithm", options("sa", keys, lambda name: sum(name in s.algorithms for s in sites))),
        SiteFilter("Via", options("sv", vias, lambda via: sum(s.via == via for s in sites))),
        SiteFilter("File", options("sf", files, lambda path: sum(s.location.path == path for s in sites))),
    )
    return rows, filters


def render(report: Report, *, color: bool = False) -> str:
    del color
    inv = report.inventory
    keys = algorithm_keys(inv)
    svg, note = to_svg(inv, algorithm_class={name: f"a-{i}" for name, i in keys.items()})
    site_rows, site_filters = _site_table(inv, keys)
    findings = []  # (severity, count, open, [(path, [(n, finding, excerpt)])]), worst first
    counter = 0
    for severity in SEVERITIES_DESC + tuple(sorted({f.severity for f in report.findings} - set(SEVERITIES_DESC))):
        chosen = [f for f in report.findings if f.severity == severity]
        if not chosen:
            continue
        groups = []
        for path, group in findings_by_file(chosen):
            items = []
            for f in group:
                counter += 1
                items.append((counter, f, excerpt(report.sources, f.path, f.line, f.end_line, context=3)))
            groups.append((path, items))
        findings.append((severity, len(chosen), severity != "info" or len(chosen) <= OPEN_INFO, groups))
    rules = sorted(report.rules, key=lambda r: r.id)
    known = {r.id for r in rules}
    return (
        html_env()
        .get_template("report.html.j2")
        .render(
            report=report,
            m=report.manifest,
            inv=inv,
            source=describe_source(report.manifest),
            git=git_label(report.manifest),
            counts=severity_counts(report.findings),
            matrix=algorithm_matrix(inv),
            d2t=d2t_by_kind(inv),
            site_rows=site_rows,
            site_filters=site_filters,
            graph_algorithms=[(keys[a.name], a.name) for a in inv.algorithms],
            svg=Markup(svg),  # built from an autoescaped template (or Graphviz's own escaped output)
            graph_note=note,
            findings=findings,
            rules=[(r, doc_blocks(r.docs)) for r in rules],
            unknown_rules=sorted({f.rule_id for f in report.findings} - known),
            tool_version=report.tool_version,
        )
    )


def render_diff(diff, *, color: bool = False) -> str:
    del color
    from sgl_scan import __version__
    from sgl_scan.compare import CATEGORIES

    return (
        html_env()
        .get_template("diff.html.j2")
        .render(
            diff=diff,
            groups=diff.by_category(),
            titles=CATEGORIES,
            counts=diff.counts(),
            tool_version=__version__,
            rules={r.id: r for r in diff.rules},
        )
    )
