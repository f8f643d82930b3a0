"""SARIF 2.1.0 for code scanning (GitHub and other SARIF viewers).

Each rule that ran is listed once in `tool.driver.rules` with its documentation; result levels come
from severity; `partialFingerprints` carry the finding's fingerprint (its statement and neighbours,
never its line); parse errors and skipped files are tool execution notifications.

Locations: with an `ArtifactRoot` (`check`: the repository root; `scan --sarif-root DIR`) every uri is
relative to that folder (`python/sglang/srt/...`, `uriBaseId` SRCROOT, its file URI in
`originalUriBaseIds`), which is what code scanning needs. Otherwise uris are relative to the snapshot
tree root (`sglang/srt/...`, `uriBaseId` SNAPSHOTROOT), whose file URI (the folder holding the
package) is given when the snapshot was read from a local `sglang` folder.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Iterable, Mapping, Sequence

from sgl_scan.analyzer.model import Location, ParseError
from sgl_scan.reports.common import (
    census_line,
    describe_source,
    json_document,
    loc_key,
    sorted_findings,
    source_line,
    tree_line,
)
from sgl_scan.reports.model import ArtifactRoot, Report
from sgl_scan.rules.doc import RuleDoc
from sgl_scan.rules.finding import Finding
from sgl_scan.snapshots.manifest import Manifest

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
ROOT_ID = "SNAPSHOTROOT"
SRCROOT_ID = "SRCROOT"
FINGERPRINT_KEY = "sglScanFingerprint/v1"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def render(report: Report, *, color: bool = False) -> str:
    del color
    anchor = _Anchor(report.artifact_root)
    run = _run(
        report.tool_version,
        report.rules,
        [(f, None) for f in sorted_findings(report.findings)],
        report.sources,
        _notifications(
            report.parse_errors, report.manifest, anchor, report.inventory.unread, census_line(report.inventory)
        ),
        _root(report.manifest, report.artifact_root),
        {
            "tree": tree_line(report.manifest, report.latest),
            **({"latest": report.latest} if report.latest else {}),
            "snapshotId": report.manifest.id,
            "sglangVersion": report.manifest.sglang_version,
            "source": describe_source(report.manifest),
            "git": None
            if report.manifest.git is None
            else {
                "commit": report.manifest.git.commit,
                "branch": report.manifest.git.branch,
                "dirty": report.manifest.git.dirty,
            },
            **({"config": report.config} if report.config else {}),
        },
    )
    if report.artifact_root is not None:
        run["originalUriBaseIds"] = {SRCROOT_ID: run["originalUriBaseIds"][ROOT_ID]}
        for result in run["results"]:
            for location in result["locations"]:
                anchor.place(location["physicalLocation"]["artifactLocation"])
    return _dump(run)


class _Anchor:
    """Rewrites a snapshot-relative artifact location for a declared root (or leaves it)."""

    def __init__(self, root: ArtifactRoot | None):
        self.root = root

    def place(self, artifact: dict) -> dict:
        if self.root is not None and artifact.get("uriBaseId") == ROOT_ID:
            artifact["uri"] = self.root.uri(artifact["uri"])
            artifact["uriBaseId"] = SRCROOT_ID
        return artifact


def render_diff(diff, *, color: bool = False) -> str:
    """New findings (baselineState "new") and resolved ones ("absent"); inventory changes as run properties."""
    del color
    from sgl_scan import __version__
    from sgl_scan.reports import serialize_diff

    results = [(f, "new") for f in diff.new_findings] + [(f, "absent") for f in diff.resolved_findings]
    properties = {
        "before": serialize_diff.side(diff.a),
        "after": serialize_diff.side(diff.b),
        "inventoryChanges": [serialize_diff.change(c) for c in diff.changes],
    }
    run = _run(
        __version__, diff.rules, results, None, [], {"description": {"text": "the snapshot tree root"}}, properties
    )
    return _dump(run)


def _dump(run: dict) -> str:
    document = {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
    return json_document(document)


def _run(
    tool_version: str,
    rules: Sequence[RuleDoc],
    results: Sequence[tuple[Finding, str | None]],
    sources: Mapping | None,
    notifications: list,
    root: dict,
    properties: dict,
) -> dict:
    descriptors = _rule_descriptors(rules, (f for f, _ in results))
    index = {d["id"]: i for i, d in enumerate(descriptors)}
    return {
        "tool": {
            "driver": {
                "name": "sgl-scan",
                "version": tool_version,
                "semanticVersion": tool_version,
                "rules": descriptors,
            }
        },
        "originalUriBaseIds": {ROOT_ID: root},
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notifications}],
        "results": [_result(f, state, index[f.rule_id], sources) for f, state in results],
        "columnKind": "unicodeCodePoints",
        "properties": properties,
    }


def _rule_descriptors(rules: Sequence[RuleDoc], findings: Iterable[Finding]) -> list[dict]:
    """One descriptor per rule id: the rules that ran, plus any rule a finding names that is not among them."""
    by_id: dict[str, dict] = {}
    for rule in sorted(rules, key=lambda r: r.id):
        by_id.setdefault(rule.id, _descriptor(rule))
    for f in findings:
        if f.rule_id not in by_id:
            by_id[f.rule_id] = {
                "id": f.rule_id,
                "shortDescription": {"text": f.message},
                "defaultConfiguration": {"level": LEVELS.get(f.severity, "warning")},
            }
    return list(by_id.values())


def _descriptor(rule: RuleDoc) -> dict:
    docs = rule.docs.strip() or rule.message
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.message},
        "fullDescription": {"text": _first_paragraph(docs)},
        "help": {"text": docs, "markdown": docs},
        "defaultConfiguration": {"level": LEVELS.get(rule.severity, "warning")},
        "properties": {"tags": ["speculative-decoding", _family(rule.id)], "severity": rule.severity},
    }


def _family(rule_id: str) -> str:
    families = {"1": "inventory", "2": "dispatch", "3": "vocabulary-mapping", "4": "configuration"}
    digits = rule_id.lstrip("SGLsgl")
    return families.get(digits[:1], "other")


def _first_paragraph(markdown: str) -> str:
    """The first prose paragraph of a rule's docs (headings skipped), as plain text."""
    for block in markdown.split("\n\n"):
        lines = [ln for ln in block.strip().splitlines() if not ln.lstrip().startswith("#")]
        text = " ".join(ln.strip() for ln in lines).strip()
        if text and not text.startswith("```"):
            return text
    return markdown.strip().splitlines()[0].lstrip("# ")


def _result(f: Finding, baseline_state: str | None, rule_index: int, sources: Mapping | None) -> dict:
    result = {
        "ruleId": f.rule_id,
        "ruleIndex": rule_index,
        "level": LEVELS.get(f.severity, "warning"),
        "message": {"text": f.message + (f"\nHint: {f.hint}" if f.hint else "")},
        "locations": [{"physicalLocation": _physical(f.path, f.line, f.column, f.end_line, f.end_column, sources)}],
    }
    if f.fingerprint:
        result["partialFingerprints"] = {FINGERPRINT_KEY: f.fingerprint}
    if baseline_state:
        result["baselineState"] = baseline_state
    if f.data:
        from sgl_scan.reports.serialize import _plain

        result["properties"] = {"data": _plain(f.data)}
    return result


def _physical(
    path: str, line: int, column: int, end_line: int | None, end_column: int | None, sources: Mapping | None = None
) -> dict:
    region: dict = {"startLine": max(1, line), "startColumn": max(1, column)}
    if end_line is not None and end_line >= line:
        region["endLine"] = end_line
        if end_column is not None and (end_line > line or end_column > column):
            region["endColumn"] = end_column
    code = source_line(sources, path, line)
    if code is not None:
        region["snippet"] = {"text": code}
    return {"artifactLocation": {"uri": path, "uriBaseId": ROOT_ID}, "region": region}


def _notifications(
    parse_errors: Sequence[ParseError],
    manifest: Manifest,
    anchor: "_Anchor",
    unread: Sequence = (),
    census: str | None = None,
) -> list[dict]:
    out: list[dict] = []
    if census:  # the census's counts (analyzer/census.py): every reference read or listed below
        out.append({"level": "note", "message": {"text": census}, "descriptor": {"id": "census"}})
    for item in unread:  # already in location order
        text = f"could not read {item.what} {item.name}: {item.reason}"
        out.append(_located_note("warning", text, "could-not-read", item.location, anchor))
    for err in sorted(parse_errors, key=lambda e: loc_key(e.location)):
        out.append(_located_note("error", f"not analysed: {err.message}", "parse-error", err.location, anchor))
    for skipped in sorted(manifest.skipped, key=lambda s: s.path):
        out.append(
            {
                "level": "note",
                "message": {"text": f"skipped: {skipped.reason}"},
                "descriptor": {"id": "skipped-file"},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": anchor.place({"uri": skipped.path, "uriBaseId": ROOT_ID})
                        }
                    }
                ],
            }
        )
    return out


def _located_note(level: str, text: str, descriptor: str, loc: Location, anchor: "_Anchor") -> dict:
    """A tool notification about one place in the tree (a file not analysed, a reference not read)."""
    return {
        "level": level,
        "message": {"text": text},
        "descriptor": {"id": descriptor},
        "locations": [{"physicalLocation": _placed(_physical(loc.path, loc.line, loc.column, None, None), anchor)}],
    }


def _placed(physical: dict, anchor: "_Anchor") -> dict:
    anchor.place(physical["artifactLocation"])
    return physical


def _root(manifest: Manifest, declared: ArtifactRoot | None = None) -> dict:
    """The base of every uri: the declared root, or SNAPSHOTROOT — the folder holding `sglang/` as a
    file URI where the tree is a local folder named `sglang`, else a description only."""
    if declared is not None:
        return {
            "uri": declared.base_uri,
            "description": {"text": "the repository root (uris as code scanning reads them)"},
        }
    description = {"text": f"the snapshot tree root ({describe_source(manifest)})"}
    root = PurePosixPath(manifest.root)
    if manifest.source_kind == "local" and root.is_absolute() and root.name == "sglang":
        return {"uri": root.parent.as_uri().rstrip("/") + "/", "description": description}
    return {"description": description}
