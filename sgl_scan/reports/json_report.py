"""The JSON report: a versioned document (schema in docs/json-schema.md)."""

from __future__ import annotations

import json

from sgl_scan.reports import serialize
from sgl_scan.reports.common import loc_key, sorted_findings
from sgl_scan.reports.model import Report

# Bump on any change that could break a reader (removed or renamed field, changed meaning);
# adding a field is not a break.
SCHEMA_VERSION = 2


def to_document(report: Report) -> dict:
    """The report as plain JSON types."""
    findings = sorted_findings(report.findings)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "sgl-scan/report",
        "tool": {"name": "sgl-scan", "version": report.tool_version},
        "snapshot": serialize.manifest_summary(report.manifest),
        "summary": serialize.summary(findings, report.parse_errors),
        "inventory": serialize.inventory(report.inventory),
        "findings": [serialize.finding(f) for f in findings],
        "parse_errors": [serialize.parse_error(e) for e in sorted(report.parse_errors, key=lambda e: loc_key(e.location))],
        "rules": [
            {"id": r.id, "name": r.name, "severity": r.severity, "message": r.message}
            for r in sorted(report.rules, key=lambda r: r.id)
        ],
    }


def render(report: Report, *, color: bool = False) -> str:
    del color  # JSON is never coloured
    return json.dumps(to_document(report), indent=2, ensure_ascii=False) + "\n"


def render_diff(diff, *, color: bool = False) -> str:
    """The diff document (schema in docs/json-schema.md, kind "sgl-scan/diff")."""
    del color
    from sgl_scan import __version__
    from sgl_scan.reports.serialize_diff import document

    return json.dumps(document(diff, __version__), indent=2, ensure_ascii=False) + "\n"
