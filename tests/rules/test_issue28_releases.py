"""Issue 28 on real releases (`--scope full`): SGL202 on `reach()`, SGL208 (raw name before the
server-args pipeline normalises it) and SGL209 (plugin-base predicates that do not derive), with the
exact file:line a maintainer reads in docs/precision-0.5.23.md, -0.5.20.md and -0.5.16.md.
"""

from __future__ import annotations

import functools

import pytest

from sgl_scan.analyzer.inventory import NEW
from sgl_scan.analyzer.reach import Reach, reach, shape_of
from sgl_scan.rules.common import predicate_sets
from sgl_scan.rules.engine import run_rules
from tests.support.releases import analyse_release_full

pytestmark = pytest.mark.slow
SRT = "sglang/srt/"


@functools.lru_cache(maxsize=None)
def findings(version: str):
    return run_rules(analyse_release_full(version))


def at(version: str, rule_id: str) -> dict:
    return {(f.path.removeprefix(SRT), f.line): f for f in findings(version) if f.rule_id == rule_id}


EXPECTED = {
    "0.5.23": {
        # nemotron_h.py:137/144 compare `cfg.speculative_algorithm.upper()` (:125) and list NEXTN: only a
        # new algorithm (or EAGLE3, STANDALONE) skips them, so they are SGL202's
        "SGL202": {("arg_groups/speculative_hook.py", 1437), ("configs/model_config.py", 1022),
                   ("configs/model_config.py", 1052), ("lora/utils.py", 20), ("speculative/spec_utils.py", 412),
                   ("arg_groups/model_overrides/nemotron_h.py", 137), ("arg_groups/model_overrides/nemotron_h.py", 144),
                   # read since the analyzer resolves `SA.DFLASH.name`, `str(get_spec().x).upper()` and
                   # `(c.x or "").upper()` in a lambda; `.upper()` there, so no SGL208
                   ("arg_groups/model_override_base.py", 274), ("disaggregation/utils.py", 1897),
                   ("kernel_plugins/amd/binding.py", 108)},
        "SGL208": {("arg_groups/kimi_k3_hook.py", 43), ("arg_groups/model_overrides/gigachat35.py", 18),
                   ("arg_groups/model_overrides/kimi_k3.py", 63), ("arg_groups/model_overrides/mimo_v2.py", 23),
                   ("arg_groups/overrides.py", 346), ("arg_groups/overrides.py", 858)},
        "SGL209": {("speculative/spec_registry.py", n) for n in (90, 99, 102, 106, 109)},
    },
    "0.5.20": {
        "SGL202": {("arg_groups/speculative_hook.py", 1151), ("configs/model_config.py", 803), ("lora/utils.py", 20),
                   ("speculative/spec_utils.py", 268), ("arg_groups/model_overrides/nemotron_h.py", 121),
                   ("arg_groups/model_overrides/nemotron_h.py", 128)},
        "SGL208": {("arg_groups/kimi_k3_hook.py", 43), ("arg_groups/model_overrides/kimi_k3.py", 66),
                   ("arg_groups/model_overrides/mimo_v2.py", 24), ("arg_groups/overrides.py", 417),
                   ("arg_groups/overrides.py", 917)},
        "SGL209": {("speculative/spec_registry.py", n) for n in (91, 100, 103, 106)},
    },
    "0.5.16": {
        "SGL202": {("arg_groups/speculative_hook.py", 768), ("configs/model_config.py", 575),
                   ("speculative/spec_utils.py", 258)},
        "SGL208": {("arg_groups/overrides.py", 451), ("arg_groups/overrides.py", 1084), ("arg_groups/overrides.py", 1429)},
        "SGL209": {("speculative/spec_registry.py", n) for n in (83, 92, 95)},
    },
}


@pytest.mark.parametrize("version", sorted(EXPECTED))
@pytest.mark.parametrize("rule_id", ["SGL202", "SGL208", "SGL209"])
def test_exact_findings(version, rule_id):
    assert set(at(version, rule_id)) == EXPECTED[version][rule_id]


@pytest.mark.parametrize("version, resolver, registry", [
    ("0.5.23", 109, 63), ("0.5.20", 70, 61), ("0.5.16", 52, 51)])
def test_the_three_false_patterns_are_gone(version, resolver, registry):
    """The alias resolver passes unknown names through (exempt by what it does); the FlashInfer plan
    stream branch only sets an attribute nothing else mentions; neither is reported by any rule."""
    places = {(f.path.removeprefix(SRT), f.line) for f in findings(version) if f.rule_id in ("SGL202", "SGL208")}
    assert ("arg_groups/speculative_hook.py", resolver) not in places
    assert ("layers/attention/attention_registry.py", registry) not in places
    analysis = analyse_release_full(version)
    site = next(s for s in analysis.inventory.dispatch_sites
                if s.location.path == SRT + "arg_groups/speculative_hook.py" and s.location.line == resolver)
    shape = shape_of(analysis, site)
    assert shape.passes_through and shape.body_exit == "value"
    plan = next(s for s in analysis.inventory.dispatch_sites
                if s.location.path == SRT + "layers/attention/attention_registry.py" and s.location.line == registry)
    assert shape_of(analysis, plan).writes == ("plan_stream_for_flashinfer",)


def test_0_5_23_early_exit_and_none_hint():
    """overrides.py:858 `if not (... == "EAGLE" ...): return {}`: a new algorithm enters the `if`,
    which is the skip (reach says SKIPS, EAGLE may enter the code below); it runs in
    handle_model_specific_adjustments (pipeline.py:225), before handle_speculative_decoding (:306).
    model_config.py:1052 `in (None, "DSPARK")`: the hint keeps None."""
    analysis = analyse_release_full("0.5.23")
    site = next(s for s in analysis.inventory.dispatch_sites
                if s.location.path == SRT + "arg_groups/overrides.py" and s.location.line == 858)
    shape = shape_of(analysis, site)
    assert shape.body_exit == "neutral"
    predicates = predicate_sets(analysis.inventory)
    assert reach(site, NEW, predicates, shape) is Reach.SKIPS
    early = at("0.5.23", "SGL208")[("arg_groups/overrides.py", 858)]
    assert early.data["early_exit"] and early.data["before_normalisation"]
    assert "pipeline.py:225, before `handle_speculative_decoding` at :306" in early.message
    assert "`--speculative-algorithm NEXTN` / `eagle` and any new algorithm leave here early" in early.message
    assert "`dspark` and any new algorithm skip this" in at("0.5.23", "SGL208")[("arg_groups/kimi_k3_hook.py", 43)].message
    none = at("0.5.23", "SGL202")[("configs/model_config.py", 1052)]
    assert none.data["with_none"] and "keep `None`" in none.hint


def test_0_5_16_pipeline_of_methods():
    """0.5.16: `self._handle_model_specific_adjustments()` (server_args.py:2969) before
    `handle_speculative_decoding(self)` (:3031)."""
    early = at("0.5.16", "SGL208")[("arg_groups/overrides.py", 1429)]
    assert "server_args.py:2969, before `handle_speculative_decoding` at :3031" in early.message


@pytest.mark.parametrize("version, line, sites", [("0.5.23", 90, 28), ("0.5.20", 91, 18), ("0.5.16", 83, 13)])
def test_is_dflash_family_fires_once_with_its_sites(version, line, sites):
    found = [f for f in findings(version) if f.rule_id == "SGL209" and f.data["predicate"] == "is_dflash_family"]
    assert [(f.path, f.line, f.data["sites"], f.data["claims"]) for f in found] == [
        (SRT + "speculative/spec_registry.py", line, sites, ["is_dflash", "is_dspark"])]
