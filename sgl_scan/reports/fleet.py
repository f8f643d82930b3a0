"""The fleet report in text, JSON, Markdown and HTML: hosts, groups of identical builds, drift.

Reporters never filter and never exit. Host names come from the user; everything else (versions,
algorithm and worker names, patch file names, remote error text) comes from the hosts and is kept
inert: control characters are shown escaped in text, Markdown cells are code spans, HTML is escaped.
"""

from __future__ import annotations

import json
from collections import Counter

from sgl_scan.fleet.model import FleetGroup, FleetReport
from sgl_scan.reports import serialize
from sgl_scan.reports.common import plural, severity_counts, short_name, tree_fields, tree_line
from sgl_scan.reports.common import visible
from sgl_scan.reports.serialize_diff import document as diff_document

SCHEMA_VERSION = 1
FORMATS = ("text", "json", "markdown", "html")


def render_fleet(report: FleetReport, fmt: str, *, color: bool = False) -> str:
    renderers = {"text": render_text, "json": render_json, "markdown": render_markdown, "html": render_html}
    return renderers[fmt](report, color=color)


def algorithm_names(report: FleetReport) -> list[str]:
    """Every algorithm any group has, in the baseline's order first, then as they appear."""
    names: list[str] = []
    ordered = sorted(report.groups, key=lambda g: g.id != report.baseline)
    for group in ordered:
        for alg in group.inventory.algorithms:
            if alg.name not in names:
                names.append(alg.name)
    return names


def drift_counts(report: FleetReport) -> dict[str, dict[str, int]]:
    return {d.group: d.diff.counts() for d in report.diffs}


def headline(report: FleetReport) -> str:
    scanned = len(report.hosts) - len(report.failed)
    return (
        f"{plural(len(report.hosts), 'host')}: {scanned} scanned, {len(report.failed)} failed; "
        f"{plural(len(report.groups), 'distinct build')} (scope {report.scope})"
    )


# -- text --------------------------------------------------------------------------------------------


def render_text(report: FleetReport, *, color: bool = False) -> str:
    from sgl_scan.reports.text import _Out, render_diff

    out = _Out(color)
    out.add(out.style(f"sgl-scan fleet: {headline(report)}", bold=True))
    for note in report.notes:
        out.add(f"note: {visible(note)}")
    out.heading("Hosts")
    rows = []
    for h in report.hosts:
        if h.ok:
            pulled = "unchanged" if h.unchanged else f"{plural(h.fetched, 'file')} fetched"
            rows.append(
                [
                    visible(h.label),
                    h.group or "-",
                    visible(h.sglang_version or "?"),
                    visible(h.git or "-"),
                    h.snapshot_id or "-",
                    pulled,
                    f"{h.seconds:.1f}s",
                    "ok",
                ]
            )
        else:
            assert h.error is not None  # not ok
            rows.append(
                [
                    visible(h.label),
                    "-",
                    "-",
                    "-",
                    "-",
                    "-",
                    f"{h.seconds:.1f}s",
                    out.style("error", fg="red") + ": " + visible(h.error),
                ]
            )
    out.table(["host", "group", "SGLang", "git", "snapshot", "pulled", "time", "status"], rows)
    for group in report.groups:
        mark = "  [baseline]" if group.id == report.baseline else ""
        out.heading(
            f"{group.id}: SGLang {visible(group.manifest.sglang_version or '?')}, "
            f"{plural(len(group.hosts), 'host')}{mark}"
        )
        out.add(f"  hosts: {visible(', '.join(group.hosts))}")
        out.add(f"  tree: {visible(tree_line(group.manifest))}")
        out.add(f"  local patch: {_patch_text(group)}")
        algorithms = ", ".join(
            f"{visible(a.name)} -> {visible(short_name(a.worker)) if a.worker else 'no worker'}"
            for a in group.inventory.algorithms
        )
        out.add(f"  algorithms ({len(group.inventory.algorithms)}): {algorithms or 'none'}")
        counts = severity_counts(group.findings)
        by_rule = Counter(f.rule_id for f in group.findings if f.severity != "info")
        rules = f" ({', '.join(f'{rule} x{n}' for rule, n in sorted(by_rule.items()))})" if by_rule else ""
        out.add("  findings: " + ", ".join(plural(n, sev) for sev, n in counts.items()) + rules)
        for f in group.findings:
            if f.severity == "error":
                out.add(f"    error  {f.rule_id}  {visible(f.path)}:{f.line}  {visible(f.message)}")
    if report.diffs:
        out.heading(f"Drift against {report.baseline}")
        for d in report.diffs:
            c = d.diff.counts()
            out.add(
                f"  {d.group}: {c['added']} added, {c['removed']} removed, {c['changed']} changed, "
                f"{c['moved']} moved; {plural(c['new_findings'], 'new finding')}, {c['resolved_findings']} resolved"
            )
            for line in render_diff(d.diff, color=color).splitlines()[3:]:
                out.add(f"    {visible(line)}" if line else "")
    return out.text()


def _patch_text(group: FleetGroup) -> str:
    if not group.patch_files:
        return "none"
    return f"{plural(len(group.patch_files), 'file')}: " + visible(", ".join(group.patch_files))


# -- JSON --------------------------------------------------------------------------------------------


def to_document(report: FleetReport) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "sgl-scan/fleet",
        "tool": {"name": "sgl-scan", "version": report.tool_version},
        "scope": report.scope,
        "baseline_group": report.baseline,
        "notes": list(report.notes),
        "hosts": [
            {
                "host": h.label,
                "status": "ok" if h.ok else "error",
                "error": h.error,
                "group": h.group,
                "snapshot_id": h.snapshot_id,
                "remote_root": h.remote_root,
                "sglang_version": h.sglang_version,
                "git": h.git,
                "fetched": h.fetched,
                "unchanged": h.unchanged,
                "seconds": h.seconds,
            }
            for h in report.hosts
        ],
        "groups": [
            {
                "id": g.id,
                "hosts": list(g.hosts),
                "content_key": g.content_key,
                "tree": tree_fields(g.manifest),
                "snapshot": serialize.manifest_summary(g.manifest),
                "patch_files": list(g.patch_files),
                "algorithms": [serialize.algorithm(a) for a in g.inventory.algorithms],
                "summary": serialize.summary(g.findings, ()),
                "findings": [serialize.finding(f) for f in g.findings],
            }
            for g in report.groups
        ],
        "diffs": [
            {"group": d.group, "against": d.against, "diff": diff_document(d.diff, report.tool_version)}
            for d in report.diffs
        ],
    }


def render_json(report: FleetReport, *, color: bool = False) -> str:
    del color
    return json.dumps(to_document(report), indent=2, ensure_ascii=False) + "\n"


# -- Markdown and HTML (templates) ---------------------------------------------------------------------


def _context(report: FleetReport) -> dict:
    return {
        "report": report,
        "headline": headline(report),
        "algorithms": algorithm_names(report),
        "groups": {g.id: g for g in report.groups},
        "drift": drift_counts(report),
        "workers": {g.id: g.workers for g in report.groups},
        "counts": {g.id: severity_counts(g.findings) for g in report.groups},
        "tool_version": report.tool_version,
    }


def render_markdown(report: FleetReport, *, color: bool = False) -> str:
    del color
    from sgl_scan.reports.templating import markdown_env

    return markdown_env().get_template("fleet.md.j2").render(**_context(report))


def render_html(report: FleetReport, *, color: bool = False) -> str:
    del color
    from sgl_scan.reports.templating import html_env

    return html_env().get_template("fleet.html.j2").render(**_context(report))
