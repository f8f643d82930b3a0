"""The terminal report: header, inventory tables, findings by file, summary.

Plain ASCII layout that reads the same piped or on a TTY; colour (ANSI) only when asked for.
"""

from __future__ import annotations

import secrets
from collections import Counter
from typing import Sequence

import click

from sgl_scan.reports.common import (
    census_line,
    algorithm_matrix,
    loc_key,
    d2t_by_kind,
    describe_source,
    findings_by_file,
    git_label,
    plural,
    severity_counts,
    short_name,
    conditional_workers,
    source_line,
    visible,
)
from sgl_scan.reports.model import Report
from sgl_scan.snapshots.scope import statement as scope_statement

SEVERITY_COLOURS = {"error": "red", "warning": "yellow", "info": "cyan"}


class _Out:
    """Collects lines; applies colour only when enabled.

    Every line is made `visible` (control characters escaped) when the text is put together, so
    no tree text can send an escape sequence. The colour codes `style` adds carry a random marker
    instead of ESC until then; tree text cannot know the marker, so only ours turn back into ESC.
    """

    def __init__(self, color: bool) -> None:
        self.color = color
        self.lines: list[str] = []
        self.mark = "\ue000" + secrets.token_hex(8)

    def style(self, text: str, **kwargs) -> str:
        if not (self.color and text):
            return text
        shown = self.mark.join(visible(part) for part in text.split(self.mark))  # tree ESC shown, ours kept
        return click.style(shown, **kwargs).replace("\x1b", self.mark)

    def heading(self, text: str) -> None:
        if self.lines:
            self.lines.append("")
        self.lines.append(self.style(text, bold=True))

    def add(self, line: str = "") -> None:
        self.lines.append(line.rstrip())

    def table(self, header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> None:
        """Left-aligned columns two spaces apart; the header dimmed when coloured."""
        rows = [[visible(cell) for cell in row] for row in rows]  # escaped first: widths count what is shown
        widths = [len(h) for h in header]
        for row in rows:
            widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

        def fmt(cells):
            return indent + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))

        self.add(self.style(fmt(header).rstrip(), dim=True))
        for row in rows:
            self.add(fmt(row))

    def text(self) -> str:
        return "\n".join("\x1b".join(visible(part) for part in line.split(self.mark)) for line in self.lines) + "\n"


def severity_label(out: _Out, severity: str, width: int = 7) -> str:
    return out.style(severity.ljust(width), fg=SEVERITY_COLOURS.get(severity), bold=severity == "error")


def render(report: Report, *, color: bool = False) -> str:
    out = _Out(color)
    if report.review:
        return _render_review(out, report)
    _header(out, report)
    _algorithms(out, report)
    _options_and_hooks(out, report)
    _dispatch(out, report)
    _d2t(out, report)
    _findings(out, report)
    _parse_errors(out, report)
    _unread(out, report)
    _summary(out, report)
    return out.text()


def _render_review(out: _Out, report: Report) -> str:
    """A review run (`check`): the findings first, then one line of inventory, then the summary."""
    m = report.manifest
    git = git_label(m)
    out.add(
        out.style(f"sgl-scan {report.tool_version} review - SGLang {m.sglang_version or 'unknown version'}", bold=True)
        + f"  ({m.id}, {m.scope} scope, {len(m.files)} files; from {describe_source(m)}"
        + (f" at git {git}" if git else "")
        + (f"; {report.latest}" if report.latest else "")
        + ")"
    )
    _findings(out, report)
    _unread(out, report)
    _parse_errors(out, report)
    inv = report.inventory
    names = ", ".join(a.name for a in inv.algorithms) or "none"
    out.heading(
        f"Inventory: {plural(len(inv.algorithms), 'algorithm')} ({names}), "
        f"{plural(len(inv.predicates), 'predicate')}, {plural(len(inv.dispatch_sites), 'dispatch site')}, "
        f"{plural(len(inv.d2t_sites), 'd2t site')} (full inventory: sgl-scan scan)"
    )
    _summary(out, report)
    return out.text()


def _header(out: _Out, report: Report) -> None:
    m = report.manifest
    out.add(out.style(f"sgl-scan {report.tool_version} - SGLang {m.sglang_version or 'unknown version'}", bold=True))
    if report.config:
        out.add(f"  using settings from {report.config}")
    rows = [
        ("snapshot", m.id),
        ("source", describe_source(m)),
        ("root", m.root),
        ("git", git_label(m) or "-"),
        ("scope", f"{m.scope}, {len(m.files)} files, {len(m.skipped)} skipped, created {m.created}"),
    ]
    if report.latest:
        rows.append(("latest", report.latest.removeprefix("latest: ")))
    for key, value in rows:
        out.add(f"  {key.ljust(9)} {value}")


def _algorithms(out: _Out, report: Report) -> None:
    inv = report.inventory
    cls = inv.algorithm_class
    title = f"Algorithms ({len(inv.algorithms)})"
    if cls is not None:
        title += f" - {cls.qualname} ({cls.form}, {cls.location})"
    out.heading(title)
    if not inv.algorithms:
        out.add("  none found")
        return
    rows = [
        (a.name, a.kind, short_name(a.worker) or "-", str(a.location), str(a.worker_location or "-"))
        for a in inv.algorithms
    ]
    out.table(("ALGORITHM", "KIND", "WORKER", "DEFINED AT", "WORKER CHOSEN AT"), rows)
    chosen = [(a.name, conditional_workers(a)) for a in inv.algorithms if conditional_workers(a)]
    if chosen:
        out.add("  Workers chosen by flags (WORKER above: the default, with the flags off):")
        for name, choices in chosen:
            out.add(f"    {name}: " + "; ".join(choices))

    matrix = algorithm_matrix(inv)
    if not matrix:
        return
    out.heading(f"Predicates x algorithms ({len(matrix)} predicates; x = true)")
    names = [a.name for a in inv.algorithms]
    label_width = max(len(p) for p, _ in matrix) + 2
    # A staggered header: column i is marked by ",- NAME" on its own line, "|" below it after.
    for i, name in enumerate(names):
        cells = ["|  " for _ in range(i)] + [f",- {name}"]
        out.add(out.style("  " + " " * label_width + "".join(cells), dim=True))
    for pred, row in matrix:
        marks = "".join(("x" if hit else ".") + "  " for hit in row)
        out.add("  " + pred.ljust(label_width) + marks)


def _options_and_hooks(out: _Out, report: Report) -> None:
    inv = report.inventory
    out.heading("Algorithm option")
    opt = inv.algorithm_option
    if opt is None:
        out.add("  not found")
    else:
        values = ", ".join(opt.values) if opt.values else (opt.choices or "free-form")
        out.add(f"  {opt.name} ({opt.kind}) at {opt.location}: choices {values}")
    if inv.aliases:
        out.add("  aliases: " + ", ".join(f"{k} -> {v}" for k, v in sorted(inv.aliases.items())))
    if inv.plugin_base:
        preds = ", ".join(inv.plugin_base_predicates) or "none"
        out.add(f"  plugin base: {inv.plugin_base} (predicates: {preds})")

    out.heading(f"Choice hooks ({len(inv.choice_hooks)})")
    if not inv.choice_hooks:
        out.add("  none found")
        return
    rows = [
        (h.name, h.kind, h.choices or "-", "yes" if h.speculative else "no", str(h.location))
        for h in sorted(inv.choice_hooks, key=lambda h: (loc_key(h.location), h.name))
    ]
    out.table(("HOOK", "KIND", "CHOICES", "SPECULATIVE", "LOCATION"), rows)


def _dispatch(out: _Out, report: Report) -> None:
    sites = report.inventory.dispatch_sites
    functions = {s.function for s in sites}
    by_via = Counter(s.via for s in sites)
    vias = ", ".join(f"{via} {n}" for via, n in sorted(by_via.items()))
    out.heading(f"Dispatch sites ({len(sites)} in {len(functions)} functions{': ' + vias if vias else ''})")
    choosing = sorted((s for s in sites if s.worker), key=lambda s: loc_key(s.location))
    if not choosing:
        out.add("  no site chooses a worker class" if sites else "  none found")
        return
    out.add("  sites that choose a worker (every site: --format json or html):")
    rows = [
        (",".join(s.algorithms) or "-", short_name(s.worker), s.function, f"{s.via}:{s.detail}", str(s.location))
        for s in choosing
    ]
    out.table(("ALGORITHMS", "WORKER", "FUNCTION", "VIA", "LOCATION"), rows)


def _d2t(out: _Out, report: Report) -> None:
    groups = d2t_by_kind(report.inventory)
    out.heading(f"d2t sites ({len(report.inventory.d2t_sites)})")
    if not groups:
        out.add("  none found")
        return
    for kind, sites in groups:
        out.add(f"  {kind} ({len(sites)})")
        for site in sites:
            out.add(f"    {site.location}  {site.function}  {site.detail}")


def _findings(out: _Out, report: Report) -> None:
    out.heading(f"Findings ({len(report.findings)})")
    if not report.findings:
        out.add("  none")
        return
    for path, findings in findings_by_file(report.findings):
        out.add(out.style(path, underline=True))
        for f in findings:
            where = f"{f.line}:{f.column}".ljust(8)
            out.add(f"  {where} {severity_label(out, f.severity)}  {out.style(f.rule_id, bold=True)}  {f.message}")
            code = source_line(report.sources, f.path, f.line)
            if code is not None:
                out.add(out.style(f"  {f.line:>6} | {code.strip()}", dim=True))
            if f.hint:
                out.add(f"           hint: {f.hint}")


def _parse_errors(out: _Out, report: Report) -> None:
    if not report.parse_errors:
        return
    out.heading(f"Parse errors ({len(report.parse_errors)}): these files were not analysed")
    for err in sorted(report.parse_errors, key=lambda e: loc_key(e.location)):
        out.add(f"  {err.location}  {err.message}")


def _unread(out: _Out, report: Report) -> None:
    unread = report.inventory.unread
    if not unread:
        return
    out.heading(f"Could not read ({len(unread)}): answers that depend on these are incomplete")
    for item in unread:
        out.add(f"  {item.location}  {item.what} {item.name}: {item.reason}")


def _summary(out: _Out, report: Report) -> None:
    counts = severity_counts(report.findings)
    parts = [severity_label(out, sev, 0) + f" {n}" if n else f"{sev} {n}" for sev, n in counts.items()]
    unread = report.inventory.unread
    out.heading(
        "Summary: "
        + ", ".join(parts)
        + f" - {plural(len(report.findings), 'finding')}, {plural(len(report.parse_errors), 'parse error')}"
        + (f", {len(unread)} fact(s) could not be read" if unread else "")
        + (
            f"; {report.hidden.get('suppressed', 0)} suppressed, {report.hidden.get('baselined', 0)} baselined"
            if report.hidden
            else ""
        )
    )
    census = census_line(report.inventory)
    if census:
        out.add(f"  {census}")
    out.add(f"  {scope_statement(report.manifest.scope, len(report.manifest.files))}")  # last: its advice ends the run


DIFF_MARKS = {"added": "+", "removed": "-", "changed": "~", "moved": ">"}
DIFF_COLOURS = {"added": "green", "removed": "red", "changed": "yellow", "moved": "blue"}


def render_diff(diff, *, color: bool = False) -> str:
    from sgl_scan.compare import CATEGORIES

    out = _Out(color)
    out.add(out.style("sgl-scan diff: what changed from A to B", bold=True))
    for name, side in (("A", diff.a), ("B", diff.b)):
        extra = ", ".join(
            x
            for x in (
                f"SGLang {side.sglang_version or '?'}",
                f"snapshot {side.snapshot_id}",
                f"from {side.source}" if side.source else "",
                f"git {side.git}" if side.git else "",
            )
            if x
        )
        out.add(f"  {name}  {side.label}  ({extra})")
    if diff.empty:
        out.heading("No differences in the inventory or the findings.")
    for category, changes in diff.by_category():
        out.heading(f"{CATEGORIES[category]} ({len(changes)})")
        for c in changes:
            mark = out.style(DIFF_MARKS[c.status], fg=DIFF_COLOURS[c.status], bold=True)
            where = str(c.after or c.before)
            if c.status in ("changed", "moved") and c.before and c.after and str(c.before) != str(c.after):
                where = f"{c.before} -> {c.after}"
            out.add(f"  {mark} {c.status.ljust(7)}  {c.key}  {where}")
            for detail in c.details:
                out.add(f"      {detail}")
    for title, findings, mark, colour in (
        ("New findings", diff.new_findings, "+", "red"),
        ("Resolved findings", diff.resolved_findings, "-", "green"),
    ):
        if not findings:
            continue
        out.heading(f"{title} ({len(findings)})")
        for f in findings:
            sev = severity_label(out, f.severity)
            out.add(f"  {out.style(mark, fg=colour, bold=True)} {sev}  {f.rule_id}  {f.path}:{f.line}  {f.message}")
    counts = diff.counts()
    out.heading(
        "Summary: "
        + ", ".join(f"{counts[s]} {s}" for s in ("added", "removed", "changed", "moved"))
        + f"; {plural(counts['new_findings'], 'new finding')}, {counts['resolved_findings']} resolved, "
        + f"{diff.unchanged_findings} unchanged; {plural(diff.shifted, 'item')} only shifted lines"
    )
    for line in diff.scope_lines():
        out.add(f"  {line}")
    return out.text()
