"""The Markdown report: compact, for a pull-request comment."""

from __future__ import annotations

from sgl_scan.reports.common import (
    SEVERITY_RANK,
    d2t_by_kind,
    describe_source,
    finding_sort_key,
    git_label,
    severity_counts,
)
from sgl_scan.reports.model import Report
from sgl_scan.reports.templating import markdown_env

# Findings beyond this many go inside a collapsed <details> block (all of them are still listed).
OPEN_FINDINGS = 20
# A diff category with more changes than this goes inside a collapsed <details> block.
FOLD_CHANGES = 15


def render(report: Report, *, color: bool = False) -> str:
    del color
    findings = sorted(report.findings, key=lambda f: (-SEVERITY_RANK.get(f.severity, -1), finding_sort_key(f)))
    return (
        markdown_env()
        .get_template("report.md.j2")
        .render(
            report=report,
            m=report.manifest,
            inv=report.inventory,
            source=describe_source(report.manifest),
            git=git_label(report.manifest),
            counts=severity_counts(report.findings),
            shown=findings[:OPEN_FINDINGS],
            folded=findings[OPEN_FINDINGS:],
            d2t=d2t_by_kind(report.inventory),
            functions=len({s.function for s in report.inventory.dispatch_sites}),
        )
    )


def render_diff(diff, *, color: bool = False) -> str:
    del color
    from sgl_scan.compare import CATEGORIES

    return (
        markdown_env()
        .get_template("diff.md.j2")
        .render(diff=diff, groups=diff.by_category(), counts=diff.counts(), titles=CATEGORIES, fold_after=FOLD_CHANGES)
    )
