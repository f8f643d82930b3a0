"""compute_diff: items matched by meaning, not by line."""

from __future__ import annotations

import dataclasses

from sgl_scan.analyzer.model import Location
from sgl_scan.compare import compute_diff
from tests.reports import fixtures as fx
from tests.reports.diff_fixtures import sample_diff


def _diff(b_inv, a_inv=None, a_findings=(), b_findings=()):
    return compute_diff(fx.analysis("A", a_inv or fx.inventory()), a_findings, fx.analysis("B", b_inv), b_findings)


def _summary(diff):
    return sorted((c.category, c.status, c.key) for c in diff.changes)


def test_identical_snapshots_have_no_changes():
    diff = _diff(fx.inventory(), a_findings=fx.findings(), b_findings=fx.findings())
    assert diff.empty and diff.changes == () and diff.unchanged_findings == 3 and diff.shifted == 0


def test_lines_that_only_shifted_are_not_changes():
    inv = fx.inventory()
    shift = lambda loc: dataclasses.replace(loc, line=loc.line + 100)  # noqa: E731
    moved = dataclasses.replace(
        inv,
        algorithms=tuple(dataclasses.replace(a, location=shift(a.location)) for a in inv.algorithms),
        predicates=tuple(dataclasses.replace(p, location=shift(p.location)) for p in inv.predicates),
        dispatch_sites=tuple(dataclasses.replace(s, location=shift(s.location)) for s in inv.dispatch_sites),
        d2t_sites=tuple(dataclasses.replace(s, location=shift(s.location)) for s in inv.d2t_sites),
        choice_hooks=tuple(dataclasses.replace(h, location=shift(h.location)) for h in inv.choice_hooks),
    )
    findings = tuple(dataclasses.replace(f, line=f.line + 100) for f in fx.findings())
    diff = _diff(moved, a_findings=fx.findings(), b_findings=findings)
    assert diff.changes == () and diff.new_findings == () and diff.resolved_findings == ()
    counted = len(inv.algorithms) + len(inv.predicates) + len(inv.dispatch_sites) + len(inv.d2t_sites) + len(inv.choice_hooks)
    assert diff.shifted == counted


def test_every_kind_of_change_in_the_sample():
    diff = sample_diff()
    assert _summary(diff) == sorted([
        ("algorithm", "added", "UNO"),
        ("algorithm", "removed", "NGRAM"),
        ("algorithm", "changed", "EAGLE"),
        ("predicate", "changed", "is_ngram"),
        ("predicate", "changed", "is_speculative"),
        ("choice_hook", "moved", "add_spec_choices (alias)"),
        ("dispatch_site", "added", "sglang.srt.managers.scheduler.Scheduler.__init__ [member: SpeculativeAlgorithm.UNO]"),
        ("dispatch_site", "removed", "sglang.srt.speculative.spec_info.SpeculativeAlgorithm.create_worker [predicate: is_ngram]"),
        ("dispatch_site", "changed", "sglang.srt.managers.scheduler.Scheduler.__init__ [predicate: is_speculative]"),
        ("d2t_site", "moved", "load_token_map in sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2._load_token_map: "
                              "load_token_map(server_args.speculative_token_map)"),
    ])
    details = {c.key: c.details for c in diff.changes}
    assert details["EAGLE"] == ("worker EAGLEWorkerV2 -> EAGLEWorkerV3",)
    assert details["is_speculative"] == ("members +UNO -NGRAM",)
    assert diff.counts() == {"added": 2, "removed": 2, "changed": 4, "moved": 2, "new_findings": 1, "resolved_findings": 1}
    assert [f.rule_id for f in diff.new_findings] == ["SGL301"]
    assert [f.rule_id for f in diff.resolved_findings] == ["SGL401"]
    assert diff.unchanged_findings == 2  # matched by fingerprint although their lines moved by 30
    assert diff.a.git is None and diff.b.git == "0123456789ab (main, dirty)"


def test_duplicate_sites_pair_up_in_line_order():
    inv = fx.inventory()
    site = inv.d2t_sites[3]  # hot_token_use in EAGLEWorkerV2.__init__
    twice = dataclasses.replace(inv, d2t_sites=inv.d2t_sites + (dataclasses.replace(site, location=Location(site.location.path, 9)),))
    assert _summary(_diff(twice)) == [("d2t_site", "added", f"hot_token_use in {site.function}: {site.detail}")]
    added = _diff(twice).changes[0]
    assert added.after.line == 9  # the later one is the new one


def test_an_edited_expression_in_the_same_function_is_a_change():
    inv = fx.inventory()
    old = inv.d2t_sites[1]  # offset_conversion
    new = dataclasses.replace(old, detail="self.hot_token_id = loaded_weight")
    diff = _diff(dataclasses.replace(inv, d2t_sites=(inv.d2t_sites[0], new) + inv.d2t_sites[2:]))
    [change] = diff.changes
    assert change.status == "changed" and change.details == (f"expression {old.detail} -> {new.detail}",)


def test_findings_without_fingerprints_match_on_rule_path_and_message():
    plain = tuple(dataclasses.replace(f, fingerprint=None) for f in fx.findings())
    moved = tuple(dataclasses.replace(f, line=f.line + 5) for f in plain)
    diff = _diff(fx.inventory(), a_findings=plain, b_findings=moved[:2])
    assert diff.unchanged_findings == 2 and [f.rule_id for f in diff.resolved_findings] == ["SGL401"]


def test_algorithm_option_values_change():
    inv = fx.inventory()
    option = dataclasses.replace(inv.algorithm_option, values=inv.algorithm_option.values + ("UNO",))
    [change] = _diff(dataclasses.replace(inv, algorithm_option=option)).changes
    assert (change.category, change.status, change.details) == ("algorithm_option", "changed", ("values +UNO",))
    [gone] = _diff(dataclasses.replace(inv, algorithm_option=None)).changes
    assert (gone.category, gone.status, gone.after) == ("algorithm_option", "removed", None)


def test_a_dispatch_site_whose_class_moved_to_another_module_is_moved():
    inv = fx.inventory()
    site = inv.dispatch_sites[4]  # Scheduler.__init__, is_speculative
    moved = dataclasses.replace(site, function="sglang.srt.managers.scheduler_core.Scheduler.__init__",
                                location=Location("sglang/srt/managers/scheduler_core.py", 40, 12))
    sites = inv.dispatch_sites[:4] + (moved,) + inv.dispatch_sites[5:]
    [change] = _diff(dataclasses.replace(inv, dispatch_sites=sites)).changes
    assert change.status == "moved"
    assert change.details == ("function sglang.srt.managers.scheduler.Scheduler.__init__ -> "
                              "sglang.srt.managers.scheduler_core.Scheduler.__init__",)


def test_module_level_sites_in_different_files_are_not_matched():
    inv = fx.inventory()
    a_site = dataclasses.replace(inv.dispatch_sites[6], function="<module>", location=Location("sglang/srt/a.py", 3))
    b_site = dataclasses.replace(a_site, location=Location("sglang/srt/b.py", 3))
    a = dataclasses.replace(inv, dispatch_sites=(a_site,))
    statuses = sorted(c.status for c in _diff(dataclasses.replace(inv, dispatch_sites=(b_site,)), a_inv=a).changes)
    assert statuses == ["added", "removed"]


def test_workers_chosen_by_flags_change():
    """A new flag-chosen worker (0.5.7 -> 0.5.8: `create_worker` gains the multi-layer branches)."""
    inv = fx.inventory()
    eagle = next(a for a in inv.algorithms if a.name == "EAGLE")
    extra = dataclasses.replace(eagle.workers[0], qualname="pkg.ThirdWorker", condition="flag_c")
    algorithms = tuple(dataclasses.replace(a, workers=a.workers + (extra,)) if a.name == "EAGLE" else a
                       for a in inv.algorithms)
    [change] = _diff(dataclasses.replace(inv, algorithms=algorithms)).changes
    assert (change.category, change.key, change.details) == ("algorithm", "EAGLE", ("workers +ThirdWorker if flag_c",))
