"""Plain-dict forms of the stage values, shared by the JSON report and the JSON diff.

Each function spells its fields out, so the JSON schema (docs/json-schema.md) changes only when
this file does, never because a dataclass grew a field.
"""

from __future__ import annotations

from typing import Any

from sgl_scan.analyzer.model import (
    Algorithm,
    AlgorithmClass,
    ChoiceHook,
    D2tSite,
    DispatchSite,
    Location,
    ParseError,
    Predicate,
    SpecInventory,
)
from sgl_scan.reports.common import describe_source, severity_counts
from sgl_scan.rules.finding import Finding
from sgl_scan.snapshots.manifest import Manifest


def location(loc: Location | None) -> dict[str, Any] | None:
    if loc is None:
        return None
    return {
        "path": loc.path,
        "line": loc.line,
        "column": loc.column,
        "end_line": loc.end_line,
        "end_column": loc.end_column,
    }


def algorithm_class(cls: AlgorithmClass | None) -> dict[str, Any] | None:
    if cls is None:
        return None
    return {"qualname": cls.qualname, "form": cls.form, "location": location(cls.location)}


def algorithm(alg: Algorithm) -> dict[str, Any]:
    return {
        "name": alg.name,
        "kind": alg.kind,
        "location": location(alg.location),
        "predicates": list(alg.predicates),
        "worker": alg.worker,
        "worker_location": location(alg.worker_location),
        "workers": [
            {"class": w.qualname, "condition": w.condition, "location": location(w.location)} for w in alg.workers
        ],
    }


def predicate(pred: Predicate) -> dict[str, Any]:
    return {"name": pred.name, "members": list(pred.members), "owner": pred.owner, "location": location(pred.location)}


def dispatch_site(site: DispatchSite) -> dict[str, Any]:
    return {
        "function": site.function,
        "via": site.via,
        "detail": site.detail,
        "algorithms": list(site.algorithms),
        "worker": site.worker,
        "location": location(site.location),
        "negative": list(site.negative),
        "negated": site.negated,
        "decision": site.decision,
        "decision_location": location(site.decision_location),
        "refuses": site.refuses,
        "new_algorithm": site.new_algorithm,
        "guarded": site.guarded,
    }


def choice_hook(hook: ChoiceHook | None) -> dict[str, Any] | None:
    if hook is None:
        return None
    return {
        "name": hook.name,
        "kind": hook.kind,
        "choices": hook.choices,
        "speculative": hook.speculative,
        "values": list(hook.values),
        "location": location(hook.location),
    }


def d2t_site(site: D2tSite) -> dict[str, Any]:
    return {"kind": site.kind, "function": site.function, "detail": site.detail, "location": location(site.location)}


def inventory(inv: SpecInventory) -> dict[str, Any]:
    return {
        "algorithm_class": algorithm_class(inv.algorithm_class),
        "algorithms": [algorithm(a) for a in inv.algorithms],
        "predicates": [predicate(p) for p in inv.predicates],
        "dispatch_sites": [dispatch_site(s) for s in inv.dispatch_sites],
        "choice_hooks": [choice_hook(h) for h in inv.choice_hooks],
        "algorithm_option": choice_hook(inv.algorithm_option),
        "d2t_sites": [d2t_site(s) for s in inv.d2t_sites],
        "plugin_base": inv.plugin_base,
        "plugin_base_predicates": list(inv.plugin_base_predicates),
        "aliases": {k: inv.aliases[k] for k in sorted(inv.aliases)},
        "unread": [
            {"what": u.what, "name": u.name, "location": location(u.location), "reason": u.reason} for u in inv.unread
        ],
        "census": None
        if inv.census is None
        else {
            "references": inv.census.references,
            "read": inv.census.read,
            "unread": inv.census.unread,
            "forms": {form: n for form, n in inv.census.forms},
        },
    }


def finding(f: Finding) -> dict[str, Any]:
    return {
        "rule_id": f.rule_id,
        "severity": f.severity,
        "message": f.message,
        "path": f.path,
        "line": f.line,
        "column": f.column,
        "end_line": f.end_line,
        "end_column": f.end_column,
        "snapshot_id": f.snapshot_id,
        "hint": f.hint,
        "fingerprint": f.fingerprint,
        "data": _plain(f.data),
    }


def parse_error(err: ParseError) -> dict[str, Any]:
    return {"message": err.message, "location": location(err.location)}


def manifest_summary(m: Manifest) -> dict[str, Any]:
    git = m.git
    return {
        "id": m.id,
        "source_kind": m.source_kind,
        "source": _plain(m.source),
        "description": describe_source(m),
        "root": m.root,
        "sglang_version": m.sglang_version,
        "scope": m.scope,
        "created": m.created,
        "file_count": len(m.files),
        "git": None if git is None else {"commit": git.commit, "branch": git.branch, "dirty": git.dirty},
        "skipped": [{"path": s.path, "reason": s.reason} for s in m.skipped],
    }


def summary(findings: tuple[Finding, ...] | list[Finding], parse_errors) -> dict[str, Any]:
    return {"findings": severity_counts(findings), "total": len(findings), "parse_errors": len(parse_errors)}


def _plain(value: Any) -> Any:
    """Mappings and sequences as JSON types (keys sorted as strings); other scalars unchanged."""
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_plain(v) for v in value]
        return sorted(items, key=str) if isinstance(value, (set, frozenset)) else items
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
