"""A hand-built pair of snapshots with one change of every kind, and their diff."""

from __future__ import annotations

import dataclasses

from sgl_scan.analyzer.model import Algorithm, DispatchSite, Location
from sgl_scan.compare import InventoryDiff, compute_diff
from tests.reports import fixtures as fx


def after_inventory():
    """B: NGRAM removed, UNO added, is_speculative gains UNO, EAGLE's worker renamed, a hook moved to
    another file, every d2t site shifted 30 lines, one d2t site moved to another function, one
    dispatch site with new algorithms, one removed."""
    inv = fx.inventory()
    algs = []
    for a in inv.algorithms:
        if a.name == "NGRAM":
            continue
        if a.name == "EAGLE":
            a = dataclasses.replace(a, worker="sglang.srt.speculative.eagle_worker_v3.EAGLEWorkerV3")
        algs.append(a)
    algs.append(Algorithm("UNO", "enum", Location(fx.SPEC, 50), ("is_speculative",), None))
    preds = tuple(
        dataclasses.replace(p, members=tuple(m for m in p.members if m != "NGRAM") + (("UNO",) if p.name == "is_speculative" else ()))
        for p in inv.predicates
    )
    hooks = tuple(
        dataclasses.replace(h, location=Location("sglang/srt/arg_groups/speculative.py", 10))
        if h.name == "add_spec_choices" else h
        for h in inv.choice_hooks
    )
    d2t = []
    for s in inv.d2t_sites:
        s = dataclasses.replace(s, location=dataclasses.replace(s.location, line=s.location.line + 30))
        if s.kind == "load_token_map":
            s = dataclasses.replace(s, function="sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2._load_token_map")
        d2t.append(s)
    sites = []
    for s in inv.dispatch_sites:
        if s.detail == "is_ngram":
            continue
        if s.detail == "is_speculative":
            s = dataclasses.replace(s, algorithms=tuple(x for x in s.algorithms if x != "NGRAM") + ("UNO",))
        sites.append(s)
    sites.append(DispatchSite("sglang.srt.managers.scheduler.Scheduler.__init__", Location(fx.SCHED, 530, 12),
                              "member", "SpeculativeAlgorithm.UNO", ("UNO",)))
    return dataclasses.replace(inv, algorithms=tuple(algs), predicates=preds, choice_hooks=hooks,
                               d2t_sites=tuple(d2t), dispatch_sites=tuple(sites))


def sample_diff() -> InventoryDiff:
    a_findings = fx.findings("A-0.5.20")
    b_findings = fx.findings("B-0.5.23")[:2] + (
        dataclasses.replace(fx.findings("B-0.5.23")[0], rule_id="SGL301", severity="info",
                            message="d2t is read as offsets", line=40, fingerprint="fp-new"),
    )
    b_findings = tuple(dataclasses.replace(f, line=f.line + 30) for f in b_findings)  # moved, same fingerprint
    return compute_diff(
        fx.analysis("A-0.5.20", fx.inventory(), "0.5.20"), a_findings,
        fx.analysis("B-0.5.23", after_inventory(), "0.5.23"), b_findings,
        a_manifest=fx.manifest(id="A-0.5.20", sglang_version="0.5.20", git=None),
        b_manifest=fx.manifest(id="B-0.5.23"),
        a_label="pip:sglang==0.5.20", b_label="ssh:root@gpu-box:/root/sglang/python",
        rules=fx.RULES,
    )
