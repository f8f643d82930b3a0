"""Plain-dict forms of an `InventoryDiff` (the JSON diff document; SARIF diff run properties)."""

from __future__ import annotations

from typing import Any, cast

from sgl_scan.compare import Change, InventoryDiff, Side
from sgl_scan.reports import serialize
from sgl_scan.snapshots import scope as scopes

SCHEMA_VERSION = 2


def side(s: Side) -> dict[str, Any]:
    return {
        "snapshot_id": s.snapshot_id,
        "sglang_version": s.sglang_version,
        "label": s.label,
        "source": s.source,
        "git": s.git,
        "scope": scopes.summary(s.scope, s.files) if s.scope else None,
    }


def scope(diff: InventoryDiff) -> dict[str, Any]:
    """What the comparison covers: complete only when both sides read the whole srt/ tree."""
    sides = [s for s in (diff.a, diff.b) if s.scope]  # each with a scope
    return {
        "complete": bool(sides) and all(scopes.is_complete(cast(str, s.scope)) for s in sides),
        "note": "; ".join(diff.scope_lines()) or None,
    }


def change(c: Change) -> dict[str, Any]:
    return {
        "category": c.category,
        "status": c.status,
        "key": c.key,
        "before": serialize.location(c.before),
        "after": serialize.location(c.after),
        "details": list(c.details),
    }


def document(diff: InventoryDiff, tool_version: str) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "sgl-scan/diff",
        "tool": {"name": "sgl-scan", "version": tool_version},
        "a": side(diff.a),
        "b": side(diff.b),
        "scope": scope(diff),
        "summary": {**diff.counts(), "unchanged_findings": diff.unchanged_findings, "shifted": diff.shifted},
        "changes": [change(c) for c in diff.changes],
        "new_findings": [serialize.finding(f) for f in diff.new_findings],
        "resolved_findings": [serialize.finding(f) for f in diff.resolved_findings],
    }
