"""The engine verdict against hand-built SGL103 facts (sites as SGLang 0.5.23 has them, and variants)."""

from __future__ import annotations

import numpy as np
import pytest

from sgl_scan.analyzer.model import D2tSite, Location, SpecInventory
from sgl_scan.drafter.checkpoint import read_checkpoint
from sgl_scan.drafter.checks import run_checks
from sgl_scan.drafter.compat import judge
from sgl_scan.drafter.target import read_target_config
from tests.drafter import factory

LLAMA = "sglang.srt.models.llama_eagle3.LlamaForCausalLMEagle3.load_weights"
KIMI = "sglang.srt.models.kimi_k25_eagle3.Eagle3DeepseekV2ForCausalLM.load_weights"
LLAMA_PATH = "sglang/srt/models/llama_eagle3.py"
KIMI_PATH = "sglang/srt/models/kimi_k25_eagle3.py"


def site(kind, path, line, function, detail=""):
    return D2tSite(kind=kind, location=Location(path, line), function=function, detail=detail)


OFFSET_RELEASE = (
    site("name_test_in", LLAMA_PATH, 350, LLAMA, '"d2t" in name'),
    site("offset_conversion", LLAMA_PATH, 352, LLAMA, "self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])"),
    site("name_test_eq", KIMI_PATH, 437, KIMI, 'name == "d2t"'),
    site("name_test_endswith", KIMI_PATH, 437, KIMI, 'name.endswith(".d2t")'),
    site("offset_conversion", KIMI_PATH, 440, KIMI, "self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])"),
    site("name_test_in", LLAMA_PATH, 355, LLAMA, '"t2d" in name'),
    site("name_test_eq", KIMI_PATH, 442, KIMI, 'name == "t2d"'),
    site("hot_token_use", "sglang/srt/speculative/eagle_worker_v2.py", 758, "x.draft", "self.hot_token_id[topk_index]"),
)


def inventory(sites) -> SpecInventory:
    return SpecInventory(
        algorithm_class=None, algorithms=(), predicates=(), dispatch_sites=(), choice_hooks=(), algorithm_option=None, d2t_sites=tuple(sites)
    )


@pytest.fixture
def report_for(tmp_path):
    target = read_target_config(factory.target_config(tmp_path / "target"))

    def make(weights, cfg=None, name="d"):
        folder = factory.write_drafter(tmp_path / name, weights, cfg or factory.config())
        return run_checks(read_checkpoint(folder), target)

    return make


def test_offset_drafter_on_an_offset_release_is_compatible(report_for, ids):
    report = report_for(factory.tensors(factory.offsets(ids), factory.mask(ids)))
    verdict = judge(report, inventory(OFFSET_RELEASE), "snap1", "0.5.23")
    assert (verdict.status, verdict.verdict, verdict.reading) == ("pass", "compatible", "offset")
    assert verdict.scope == "class LlamaForCausalLMEagle3"
    assert [str(s.location) for s in verdict.sites] == [f"{LLAMA_PATH}:350", f"{LLAMA_PATH}:352"]
    assert f"{LLAMA_PATH}:352" in verdict.reason
    assert verdict.default_aux_layers is None


def test_direct_drafter_on_an_offset_release_is_not(report_for, ids):
    report = report_for(factory.tensors(ids.copy(), factory.mask(ids)))
    verdict = judge(report, inventory(OFFSET_RELEASE), "snap1", "0.5.23")
    assert (verdict.status, verdict.verdict) == ("fail", "incompatible")
    assert verdict.reason.startswith(f"the release adds arange to d2t ({LLAMA_PATH}:352) but the checkpoint's d2t holds target ids already")


def test_offset_drafter_on_a_release_that_reads_directly(report_for, ids):
    direct = [site("name_test_in", LLAMA_PATH, 182, LLAMA, '"d2t" in name'), site("direct_map", LLAMA_PATH, 184, LLAMA, "self.hot_token_id = loaded_weight")]
    report = report_for(factory.tensors(factory.offsets(ids), factory.mask(ids)))
    verdict = judge(report, inventory(direct), "snap2", None)
    assert (verdict.status, verdict.verdict, verdict.reading) == ("fail", "incompatible", "direct")
    assert "draft id i would become target id d2t[i] instead of i + d2t[i]" in verdict.reason
    # and a direct-written drafter suits that release
    direct_report = report_for(factory.tensors(ids.copy(), factory.mask(ids)), name="direct")
    assert judge(direct_report, inventory(direct), "snap2", None).verdict == "compatible"


def test_exact_name_lookup_misses_a_prefixed_tensor(report_for, ids):
    cfg = factory.config(architectures=["Eagle3DeepseekV2ForCausalLM"])
    weights = factory.tensors(factory.offsets(ids), factory.mask(ids), prefix="model.")
    sites = [
        site("name_test_eq", KIMI_PATH, 437, KIMI, 'name == "d2t"'),
        site("name_test_eq", KIMI_PATH, 442, KIMI, 'name == "t2d"'),
        site("offset_conversion", KIMI_PATH, 440, KIMI, "self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])"),
    ]
    verdict = judge(report_for(weights, cfg), inventory(sites), "s", "0.5.23")
    assert verdict.verdict == "incompatible"
    assert verdict.reason == f"this release looks d2t up by exact name ({KIMI_PATH}:437) and would not pick up 'model.d2t'"
    # with the endswith test as 0.5.23 has it, the prefixed name is found
    sites.insert(1, site("name_test_endswith", KIMI_PATH, 437, KIMI, 'name.endswith(".d2t")'))
    assert judge(report_for(weights, cfg, name="b"), inventory(sites), "s", "0.5.23").verdict == "compatible"


def test_missing_d2t_is_incompatible(report_for, ids):
    report = report_for(factory.tensors(None, factory.mask(ids)))
    verdict = judge(report, inventory(OFFSET_RELEASE), "s", "0.5.23")
    assert verdict.verdict == "incompatible" and "take draft id i as target id i" in verdict.reason


def test_release_without_d2t_support(report_for, ids):
    report = report_for(factory.tensors(factory.offsets(ids), factory.mask(ids)))
    verdict = judge(report, inventory([]), "s", "0.3.0")
    assert (verdict.status, verdict.reading, verdict.scope) == ("fail", "none", "all model files")


def test_mixed_readings_are_undecided(report_for, ids):
    report = report_for(factory.tensors(factory.offsets(ids), factory.mask(ids)), factory.config(architectures=["SomethingElse"]))
    sites = [*OFFSET_RELEASE, site("direct_map", "sglang/srt/models/other_eagle3.py", 90, "sglang.srt.models.other_eagle3.Other.load_weights")]
    verdict = judge(report, inventory(sites), "s", None)
    assert (verdict.status, verdict.verdict, verdict.reading, verdict.scope) == ("warn", "undecided", "mixed", "all model files")
    assert "as a direct map at sglang/srt/models/other_eagle3.py:90" in verdict.reason


def test_unusable_d2t(report_for, ids):
    report = report_for(factory.tensors(factory.offsets(ids).astype(np.float32), factory.mask(ids)))
    verdict = judge(report, inventory(OFFSET_RELEASE), "s", None)
    assert verdict.verdict == "incompatible" and "unusable" in verdict.reason


def test_several_d2t_tensors_are_incompatible(report_for, ids):
    weights = factory.tensors(factory.offsets(ids), factory.mask(ids))
    weights["model.d2t"] = factory.offsets(ids)
    verdict = judge(report_for(weights), inventory(OFFSET_RELEASE), "s", None)
    assert verdict.verdict == "incompatible" and verdict.reason.startswith("several d2t tensors (d2t, model.d2t)")


def test_exclusion_tests_are_not_lookups(report_for, ids):
    """0.4.6's `if "d2t" not in name and ...` skips the tensor; it does not look it up."""
    sites = [
        site("name_test_in", LLAMA_PATH, 182, LLAMA, '"d2t" in name'),
        site("offset_conversion", LLAMA_PATH, 184, LLAMA, "self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])"),
        site("name_test_in", LLAMA_PATH, 186, LLAMA, '"d2t" not in name'),
    ]
    verdict = judge(report_for(factory.tensors(factory.offsets(ids), factory.mask(ids))), inventory(sites), "s", "0.4.6")
    assert [s.location.line for s in verdict.sites] == [182, 184]
    assert verdict.verdict == "compatible"
