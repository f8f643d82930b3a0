"""The JSON report: a versioned document (schema in docs/json-schema.md)."""

from __future__ import annotations


from sgl_scan.reports import serialize
from sgl_scan.reports.common import json_document, loc_key, sorted_findings, tree_fields
from sgl_scan.reports.model import Report
from sgl_scan.snapshots import scope as scopes

# Bump on any change that could break a reader (removed or renamed field, changed meaning);
# adding a field is not a break.
SCHEMA_VERSION = 2


def to_document(report: Report) -> dict:
    """The report as plain JSON types."""
    findings = sorted_findings(report.findings)
    document = {
        "schema_version": SCHEMA_VERSION,
        "kind": "sgl-scan/report",
        "tool": {"name": "sgl-scan", "version": report.tool_version},
        "tree": tree_fields(report.manifest, report.latest),
        "snapshot": serialize.manifest_summary(report.manifest),
        "scope": scopes.summary(report.manifest.scope, len(report.manifest.files)),
        "summary": {
            **serialize.summary(findings, report.parse_errors),
            **(dict(report.hidden) if report.hidden else {}),
        },
        "inventory": serialize.inventory(report.inventory),
        "findings": [serialize.finding(f) for f in findings],
        "parse_errors": [
            serialize.parse_error(e) for e in sorted(report.parse_errors, key=lambda e: loc_key(e.location))
        ],
        "rules": [
            {"id": r.id, "name": r.name, "severity": r.severity, "message": r.message}
            for r in sorted(report.rules, key=lambda r: r.id)
        ],
    }
    if report.config:
        document["config"] = report.config  # the settings file the run used
    return document


def render(report: Report, *, color: bool = False) -> str:
    del color  # JSON is never coloured
    return json_document(to_document(report))


def render_diff(diff, *, color: bool = False) -> str:
    """The diff document (schema in docs/json-schema.md, kind "sgl-scan/diff")."""
    del color
    from sgl_scan import __version__
    from sgl_scan.reports.serialize_diff import document

    return json_document(document(diff, __version__))
