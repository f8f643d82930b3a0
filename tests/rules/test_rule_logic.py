"""Each check's decisions on hand-built inventories (the embedded examples test them on real parses)."""

from __future__ import annotations

import dataclasses

from sgl_scan.analyzer.model import Algorithm, ChoiceHook, D2tSite, DispatchSite, Predicate
from sgl_scan.rules.engine import run_rules
from sgl_scan.rules.registry import load_rules
from tests.rules.inventories import ARGS, EAGLE3, OWNER, SPEC, analysis, inventory, loc


def findings(rule_id, inv):
    rule = load_rules().get(rule_id)
    return list(rule.check(analysis(inv)))


def test_sgl101_data_names_predicates_and_worker():
    (none, eagle, eagle3) = findings("SGL101", inventory())
    assert eagle3.data == {
        "member": "EAGLE3",
        "kind": "enum",
        "predicates": ["is_eagle", "is_eagle3"],
        "worker": "sglang.srt.speculative.eagle_worker.EAGLEWorker",
    }
    assert none.data["worker"] is None
    assert "EAGLEWorker" in eagle.message


def test_sgl102_lists_hooks_and_the_option_once():
    hook = ChoiceHook("add_load_format_choices", "alias", "LOAD_FORMAT_CHOICES", False, loc("sglang/srt/arg_groups/choices.py", 215))
    option = inventory().algorithm_option
    result = findings("SGL102", inventory(choice_hooks=(hook, option)))
    assert [(f.data["hook"], f.data["kind"], f.data["choices"], f.data["speculative"]) for f in result] == [
        ("add_load_format_choices", "alias", "LOAD_FORMAT_CHOICES", False),
        ("--speculative-algorithm", "argument", None, True),
    ]
    assert result[1].data["values"] == ["EAGLE", "EAGLE3", "NEXTN"]


def test_sgl201_flags_members_without_worker_but_not_the_none_member():
    inv = inventory()
    ddtree = Algorithm("DDTREE", "enum", loc(SPEC, 8), ("is_ddtree",), None)
    plugin = Algorithm("MY_SPEC", "registered", loc("sglang/srt/plugins/mine.py", 3), (), None)
    result = findings("SGL201", dataclasses.replace(inv, algorithms=inv.algorithms + (ddtree, plugin)))
    assert [(f.line, f.data["member"], f.data["kind"]) for f in result] == [(8, "DDTREE", "enum"), (3, "MY_SPEC", "registered")]
    assert all(f.severity == "error" for f in result)


def test_sgl202_and_sgl203_read_the_literals():
    typo = DispatchSite("sglang.srt.layers.x.f", loc("sglang/srt/layers/x.py", 9), "string", '"EAGLE", "EAGEL3"', ("EAGLE",))
    inv = inventory(dispatch_sites=inventory().dispatch_sites + (typo,))
    strings = findings("SGL202", inv)
    assert [f.data["literals"] for f in strings] == [["NEXTN"], ["EAGLE", "EAGLE3"], ["EAGLE", "EAGEL3"]]
    unknown = findings("SGL203", inv)
    assert [(f.path, f.line, f.data["literal"], f.data["suggestion"]) for f in unknown] == [
        ("sglang/srt/layers/x.py", 9, "EAGEL3", "EAGLE3")
    ]


def test_sgl203_knows_nothing_without_an_algorithm_class():
    assert findings("SGL203", inventory(algorithms=(), predicates=())) == []


def test_sgl204_missing_plugin_predicate_and_unselectable_member():
    inv = inventory()
    some = Predicate("is_some", ("EAGLE", "EAGLE3", "DDTREE"), loc(SPEC, 20), OWNER)
    ddtree = Algorithm("DDTREE", "enum", loc(SPEC, 8), ("is_some",), "w.DDTreeWorker")
    inv = dataclasses.replace(
        inv,
        algorithms=inv.algorithms + (ddtree,),
        predicates=inv.predicates + (some,),
        plugin_base="sglang.srt.speculative.spec_registry.CustomSpecAlgo",
        plugin_base_predicates=("is_none", "is_eagle", "is_eagle3"),
    )
    result = findings("SGL204", inv)
    assert [(f.line, f.data["problem"]) for f in result] == [(20, "missing_on_plugin_base"), (8, "member_not_selectable")]
    assert result[0].data["predicate"] == "is_some"
    assert result[1].data == {"problem": "member_not_selectable", "member": "DDTREE", "predicates": ["is_some"]}


def test_sgl204_accepts_a_family_predicate_named_after_its_member():
    # 0.4.x: is_eagle() is true for EAGLE and EAGLE3, the only real members; it is named after EAGLE.
    assert findings("SGL204", inventory()) == []


def test_sgl205_reports_both_directions():
    inv = inventory()
    ddtree = Algorithm("DDTREE", "enum", loc(SPEC, 8), ("is_ddtree",), "w.DDTreeWorker")
    option = dataclasses.replace(inv.algorithm_option, values=("EAGLE", "EAGLE3", "NEXTN", "MEDUSA"))
    (finding,) = findings("SGL205", dataclasses.replace(inv, algorithms=inv.algorithms + (ddtree,), algorithm_option=option))
    assert (finding.path, finding.line) == (ARGS, 861)
    assert finding.data["missing_choices"] == ["DDTREE"]
    assert finding.data["unknown_choices"] == ["MEDUSA"]


def test_sgl205_is_silent_without_literal_choices():
    option = ChoiceHook("--speculative-algorithm", "config_field", None, True, loc("sglang/srt/arg_groups/fields/spec.py", 31))
    assert findings("SGL205", inventory(algorithm_option=option)) == []


def test_sgl301_and_sgl302_on_d2t_sites():
    sites = (
        D2tSite("direct_map", loc(EAGLE3, 40), "M.load_weights", "self.hot_token_id = loaded_weight"),
        D2tSite("name_test_in", loc(EAGLE3, 41), "M.load_weights", '"t2d" in name'),
        D2tSite("name_test_eq", loc(EAGLE3, 42), "M.load_weights", 'name == "d2t"'),
    )
    inv = inventory(d2t_sites=sites)
    (direct,) = findings("SGL301", inv)
    assert (direct.line, direct.severity, direct.data["detail"]) == (40, "error", "self.hot_token_id = loaded_weight")
    (substring,) = findings("SGL302", inv)
    assert (substring.line, substring.data["tensor"]) == (41, "t2d")
    assert 'name == "t2d"' in substring.hint


def test_all_rules_together_on_a_broken_tree_find_only_the_planted_problems():
    sites = (D2tSite("direct_map", loc(EAGLE3, 40), "M.load_weights", "self.hot_token_id = loaded_weight"),)
    ids = {f.rule_id for f in run_rules(analysis(inventory(d2t_sites=sites))) if f.severity == "error"}
    assert ids == {"SGL301"}


def test_sgl207_predicate_named_after_a_member_but_wider():
    inv = inventory()
    mtp = Algorithm("FROZEN_KV_MTP", "enum", loc(SPEC, 8), ("is_eagle",), "w.MTPWorker")
    wide = Predicate("is_eagle", ("EAGLE", "EAGLE3", "FROZEN_KV_MTP"), loc(SPEC, 12), OWNER)
    inv = dataclasses.replace(inv, algorithms=inv.algorithms + (mtp,), predicates=(inv.predicates[0], wide, inv.predicates[2]))
    (finding,) = findings("SGL207", inv)
    assert (finding.line, finding.data["extra"], finding.severity) == (12, ["FROZEN_KV_MTP"], "warning")
    assert findings("SGL207", inventory()) == []  # EAGLE3 is a variant of EAGLE
