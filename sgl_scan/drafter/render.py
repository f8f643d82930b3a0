"""Text and JSON output of `drafter check` and `drafter diff` (renders values, never decides)."""

from __future__ import annotations

import json
import re
from typing import Any

from sgl_scan.drafter.checks import STATUSES, CheckReport
from sgl_scan.drafter.compat import EngineVerdict
from sgl_scan.drafter.diff import MappingDiff
from sgl_scan.reports.common import visible, visible_lines

FORMATS = ("text", "json")
UNKNOWN_AUX = "unknown for this snapshot"
READING_WORDS = {
    "offset": "offsets (target = i + d2t[i])",
    "direct": "a direct map (target = d2t[i])",
    "mixed": "both ways, by model class",
    "none": "nowhere: no site converts d2t",
}


def _n(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def _counts(report: CheckReport, engine: EngineVerdict | None) -> dict[str, int]:
    counts = {s: 0 for s in STATUSES}
    for check in report.checks:
        counts[check.status] += 1
    if engine is not None:
        counts[engine.status] += 1
    return counts


def check_data(report: CheckReport, engine: EngineVerdict | None, engine_note: str | None) -> dict[str, Any]:
    """The JSON document of one `drafter check`."""
    ckpt, target = report.checkpoint, report.target
    return {
        "path": ckpt.path,
        "files": list(ckpt.files),
        "index": ckpt.index,
        "config": ckpt.config_path,
        "architectures": list(report.architectures),
        "draft_vocab": {"size": report.draft_vocab, "source": report.draft_vocab_source},
        "target": {
            "vocab_size": target.vocab_size,
            "vocab_source": target.vocab_source,
            "num_layers": target.num_layers,
        },
        "d2t_reading": report.d2t.fits if report.d2t else None,
        "aux_layers": {
            "key": report.aux.key,
            "layer_ids": list(report.aux.layer_ids) if report.aux.layer_ids is not None else None,
            "sglang_default": (engine.default_aux_layers or UNKNOWN_AUX) if engine else None,
        },
        "checks": [
            {"name": c.name, "status": c.status, "message": c.message, "details": dict(c.details)}
            for c in report.checks
        ],
        "engine": _engine_data(engine),
        "engine_note": engine_note,
        "summary": _counts(report, engine),
        "failed": report.failed or (engine is not None and engine.status == "fail"),
    }


def _engine_data(engine: EngineVerdict | None) -> dict[str, Any] | None:
    if engine is None:
        return None
    return {
        "snapshot": engine.snapshot_id,
        "sglang_version": engine.sglang_version,
        "reading": engine.reading,
        "scope": engine.scope,
        "sites": [
            {"kind": s.kind, "location": str(s.location), "function": s.function, "detail": s.detail}
            for s in engine.sites
        ],
        "status": engine.status,
        "verdict": engine.verdict,
        "reason": engine.reason,
        "default_aux_layers": engine.default_aux_layers or UNKNOWN_AUX,
    }


def _check_text(
    report: CheckReport, engine: EngineVerdict | None, engine_note: str | None, tree: dict | None = None
) -> str:
    ckpt, target = report.checkpoint, report.target
    files = f"{len(ckpt.files)} file{'s' if len(ckpt.files) != 1 else ''}" + (
        f", index {ckpt.index}" if ckpt.index else ""
    )
    lines = [
        f"drafter {ckpt.path} ({files})",
        f"draft vocab {_n(report.draft_vocab)} ({report.draft_vocab_source}); "
        f"target vocab {_n(target.vocab_size)} ({target.vocab_source}); target layers {_n(target.num_layers)}",
        "",
    ]
    width = max(len(c.name) for c in report.checks)
    for check in report.checks:
        lines.append(f"  {check.status.upper():4}  {check.name:{width}}  {check.message}")
        if check.name == "config-aux-layers":
            default = (engine.default_aux_layers or UNKNOWN_AUX) if engine else "no snapshot"
            lines.append(f"  {'':4}  {'':{width}}  SGLang default capture: {default}")
    lines.append("")
    if engine is None:
        lines.append(f"SGLang: {engine_note or 'no snapshot'}")
    else:
        version = engine.sglang_version or "version unknown"
        if tree is not None:
            lines.append(f"tree: {tree['line']}")
        what = (
            f"SGLang {version} (snapshot {engine.snapshot_id})"
            if tree is None or tree["source_kind"] == "pip"
            else f"this tree ({tree['source']}{', dirty' if (tree['git'] or {}).get('dirty') else ''}; "
            f"read as it is, not as the published release its version file names, {version})"
        )
        lines.append(f"{what}: reads d2t as {READING_WORDS[engine.reading]} [{engine.scope}]")
        reason = engine.reason
        if tree is not None and tree["source_kind"] != "pip":  # the verdict is about this tree, not a release
            reason = re.sub(r"\b(?:the|this) release\b", "this tree", reason)
        for site in engine.sites:
            lines.append(f"  {site.kind:18}  {site.location}  {site.detail}")
        lines.append(f"  {engine.status.upper():4}  verdict: {engine.verdict}: {reason}")
    counts = _counts(report, engine)
    lines.append("")
    lines.append(
        "result: "
        + ", ".join(
            f"{counts[s]} {word}"
            for s, word in (("fail", "failed"), ("warn", "warnings"), ("pass", "passed"), ("skip", "skipped"))
        )
    )
    return "\n".join(lines)


def render_check(
    report: CheckReport,
    engine: EngineVerdict | None,
    engine_note: str | None,
    fmt: str = "text",
    tree: dict | None = None,
) -> str:
    """`tree` (snapshots.summary.tree_fields): the SGLang tree the engine verdict is about, named
    in the output; a tree that is not a published release is never called "SGLang X"."""
    if fmt == "json":
        data = check_data(report, engine, engine_note)
        if data.get("engine") is not None and tree is not None:
            data["engine"]["tree"] = tree
        return json.dumps(data, indent=2)
    return visible_lines(_check_text(report, engine, engine_note, tree))


def diff_data(diff: MappingDiff) -> dict[str, Any]:
    return {
        "a": {"path": diff.a, "reading": diff.reading_a, "length": diff.length_a, "only": diff.only_a},
        "b": {"path": diff.b, "reading": diff.reading_b, "length": diff.length_b, "only": diff.only_b},
        "compared": diff.compared,
        "differing": diff.differing,
        "shared_targets": diff.shared_targets,
        "first_differences": [{"draft_id": d, "a": ta, "b": tb} for d, ta, tb in diff.first_differences],
    }


def render_diff(diff: MappingDiff, fmt: str = "text") -> str:
    if fmt == "json":
        return json.dumps(diff_data(diff), indent=2)
    lines = [
        f"A {diff.a}: {diff.length_a:,} draft ids, d2t read as {diff.reading_a}",
        f"B {diff.b}: {diff.length_b:,} draft ids, d2t read as {diff.reading_b}",
        f"{diff.differing:,} of {diff.compared:,} draft positions map to different target ids",
        f"{diff.shared_targets:,} target ids in both draft vocabularies ({diff.only_a:,} only in A, "
        f"{diff.only_b:,} only in B)",
    ]
    if diff.first_differences:
        lines.append("first differing positions (draft id: A -> B):")
        lines.extend(f"  {d:>7,}: {ta:,} -> {tb:,}" for d, ta, tb in diff.first_differences)
    return "\n".join(visible(line) for line in lines)
