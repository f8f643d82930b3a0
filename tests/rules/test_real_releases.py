"""The rules on real SGLang releases from the package index: exact findings, file:line and data.

SGL101-SGL103 expectations come from `tests/data/expected/<version>.json` (hand-read from the
releases; the d2t sites and choice hooks of 0.5.23 and the members of 0.4.6 were re-read for these
tests) plus the literal assertions below. The checks (SGL2xx, SGL3xx) are pinned too. 0.5.6 is the
registry form (members only through `register...(...)` calls, workers from factory functions).
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path

import pytest

from sgl_scan.rules.engine import run_rules
from tests.support.releases import analyse_release

EXPECTED = Path(__file__).resolve().parents[1] / "data" / "expected"

pytestmark = pytest.mark.slow


def _at(text: str) -> tuple[str, int]:
    path, line = text.rsplit(":", 1)
    return path, int(line)


@functools.lru_cache(maxsize=None)
def analysed(version: str):
    """(version, analysis, findings, expected) for a release, computed once per test session."""
    analysis = analyse_release(version)
    expected = json.loads((EXPECTED / f"{version}.json").read_text())
    return version, analysis, run_rules(analysis), expected


@pytest.fixture(params=["0.4.6", "0.5.6", "0.5.23"])
def release(request):
    return analysed(request.param)


def by_rule(findings, rule_id):
    return [f for f in findings if f.rule_id == rule_id]


def test_sgl101_members(release):
    version, _, findings, expected = release
    got = {(f.path, f.line): dict(f.data) for f in by_rule(findings, "SGL101")}
    want = {
        _at(a["at"]): {"member": a["name"], "kind": a["kind"], "predicates": a["predicates"], "worker": a["worker"]}
        for a in expected["algorithms"]
    }
    assert got == want
    assert all(f.snapshot_id == f"pypi-{version}" and f.severity == "info" for f in by_rule(findings, "SGL101"))


def test_sgl102_hooks(release):
    _, _, findings, expected = release
    got = {(f.path, f.line): (f.data["hook"], f.data["kind"], f.data["choices"], f.data["speculative"], tuple(f.data["values"]))
           for f in by_rule(findings, "SGL102")}
    hooks = list(expected["choice_hooks"])
    if expected["algorithm_option"] and all(h["at"] != expected["algorithm_option"]["at"] for h in hooks):
        hooks.append(expected["algorithm_option"])
    want = {_at(h["at"]): (h["name"], h["kind"], h["choices"], h["speculative"], tuple(h["values"])) for h in hooks}
    assert got == want


def test_sgl103_d2t_sites(release):
    _, _, findings, expected = release
    got = Counter((f.path, f.line, f.data["kind"]) for f in by_rule(findings, "SGL103"))
    want = Counter((*_at(s["at"]), s["kind"]) for s in expected["d2t_sites"])
    assert got == want
    assert not any("nvtx" in f.path or "rpd_utils" in f.path for f in by_rule(findings, "SGL103"))


def test_0_4_6_literal_expectations():
    _, _, findings, _ = analysed("0.4.6")
    spec = "sglang/srt/speculative/spec_info.py"
    assert [(f.path, f.line, f.data["member"]) for f in by_rule(findings, "SGL101")] == [
        (spec, 5, "NONE"), (spec, 6, "EAGLE"), (spec, 7, "EAGLE3")
    ]
    (option,) = by_rule(findings, "SGL102")
    assert (option.path, option.data["values"]) == ("sglang/srt/server_args.py", ["EAGLE", "EAGLE3", "NEXTN"])
    model = "sglang/srt/models/llama_eagle3.py"
    assert [(f.path, f.line, f.data["tensor"]) for f in by_rule(findings, "SGL302")] == [
        (model, 182, "d2t"), (model, 186, "d2t"), (model, 186, "t2d")
    ]
    # server_args.py:321 `in ("EAGLE", "EAGLE3")`; :317 `== "NEXTN"` is the alias resolver (rewritten to
    # "EAGLE" right there), no branch a new algorithm skips (was reported before the flow facts);
    # model_runner.py:881 `== "EAGLE"` only sets `self.plan_stream_for_flashinfer`, which no other line
    # of the release mentions (grep: :882 only): a dead branch, not reported since issue 28
    assert [(f.path, f.line, f.data["literals"]) for f in by_rule(findings, "SGL202")] == [
        ("sglang/srt/server_args.py", 321, ["EAGLE", "EAGLE3"]),
    ]
    for rule_id in ("SGL201", "SGL203", "SGL204", "SGL205", "SGL206", "SGL207", "SGL301"):
        assert by_rule(findings, rule_id) == [], rule_id


def test_0_5_23_literal_expectations():
    _, _, findings, _ = analysed("0.5.23")
    model = "sglang/srt/models/llama_eagle3.py"
    assert [(f.path, f.line, f.data["tensor"]) for f in by_rule(findings, "SGL302")] == [(model, 350, "d2t"), (model, 355, "t2d")]
    assert "sglang/srt/models/kimi_k25_eagle3.py" not in {f.path for f in by_rule(findings, "SGL302")}
    strings = {}
    for f in by_rule(findings, "SGL202"):
        strings.setdefault((f.path, f.line), []).append(f.data["literals"])
    assert strings[("sglang/srt/speculative/spec_utils.py", 412)] == [["STANDALONE", "DFLASH", "DSPARK"]]
    # kv_cache_hook.py:608 `in ("EAGLE", "EAGLE3")` runs only after the assert allow-list at :590 refused
    # every other algorithm; hisparse_hook.py:116 `.upper() != "NONE"` lets a new algorithm in: neither is
    # a silent fall-through (both were reported before the flow facts)
    assert ("sglang/srt/arg_groups/kv_cache_hook.py", 608) not in strings
    assert ("sglang/srt/arg_groups/hisparse_hook.py", 116) not in strings
    # `speculative_algorithm == "NEXTN" or speculative_algorithm == "EAGLE"` in the alias resolver, which
    # returns every other name unchanged: a new algorithm is the caller's business (issue 28)
    assert ("sglang/srt/arg_groups/speculative_hook.py", 109) not in strings
    # speculative_hook.py:176 `not in (...)` then `raise`: a guard that refuses loudly
    assert ("sglang/srt/arg_groups/speculative_hook.py", 176) not in strings
    # lora_hook.py:272 `== "DSPARK" and ragged_mode != "static"` is a row of the `unsupported` table that
    # `for is_unsupported, reason in unsupported: if is_unsupported: raise` (:297-301) refuses
    assert ("sglang/srt/arg_groups/lora_hook.py", 272) not in strings
    lora = [s for s in analysed("0.5.23")[1].inventory.dispatch_sites
            if (s.location.path, s.location.line) == ("sglang/srt/arg_groups/lora_hook.py", 272)]
    assert [(s.detail, s.refuses) for s in lora] == [("DSPARK", "raise")]
    # is_eagle() (l.102) also covers FROZEN_KV_MTP (with a FIXME saying so).
    assert [(f.path, f.line, f.data["extra"]) for f in by_rule(findings, "SGL207")] == [
        ("sglang/srt/speculative/spec_info.py", 102, ["FROZEN_KV_MTP"])
    ]
    # CustomSpecAlgo lacks need_topk(), carries_draft_hidden_states() and create_future_map(), which are
    # called on the algorithm; create_future_map in Scheduler.init_overlap, which __init__ calls (l.692)
    # unconditionally. get_platform_worker_cls() (adaptive_spec_params.py:66) sits behind
    # `if cfg.speculative_algorithm not in ("EAGLE", "EAGLE3"): return`, and from_string/register are
    # classmethods: not flagged.
    assert [(f.path, f.line, f.data["method"]) for f in by_rule(findings, "SGL206")] == [
        ("sglang/srt/managers/overlap_utils.py", 381, "need_topk"),
        ("sglang/srt/managers/scheduler.py", 1540, "carries_draft_hidden_states"),
        ("sglang/srt/managers/scheduler.py", 1681, "create_future_map"),
    ]
    # Every literal compared in 0.5.23 is a member or the NEXTN alias; every member has a worker or is NONE;
    # CustomSpecAlgo has every is_*/supports_* predicate; the option has no literal choices.
    for rule_id in ("SGL201", "SGL203", "SGL204", "SGL205", "SGL301"):
        assert by_rule(findings, rule_id) == [], rule_id


def test_no_false_errors_in_released_code(release):
    """Released SGLang runs: none of its algorithms lacks a worker, no literal is a typo, the choices match.

    (0.5.23's three SGL206 calls are real: a plugin algorithm reaching them raises AttributeError.)
    """
    version, _, findings, _ = release
    errors = [(f.rule_id, f.path, f.line) for f in findings if f.severity == "error" and f.rule_id != "SGL206"]
    assert errors == [], version


@functools.lru_cache(maxsize=None)
def _findings_only(version: str):
    return run_rules(analyse_release(version))


@pytest.mark.parametrize("version", ["0.4.10", "0.5.3", "0.5.4", "0.5.7", "0.5.8", "0.5.12", "0.5.20", "0.5.21", "0.5.22"])
def test_no_sgl201_where_every_algorithm_has_a_worker(version):
    """0.5.4 chooses EAGLE's worker through `WorkerClass = EAGLEWorkerV2 if self.enable_overlap else
    EAGLEWorker` (managers/scheduler.py:564): it raised two false SGL201 errors before the flow facts."""
    assert [(f.path, f.line) for f in _findings_only(version) if f.rule_id == "SGL201"] == []
