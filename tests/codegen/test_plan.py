"""The DDTree plan from real releases: base worker, registration mode, predicates, sites, refusal."""

from __future__ import annotations

import pytest

from sgl_scan.codegen.ddtree.plan import FIRST_DFLASH_RELEASE, plan_ddtree
from sgl_scan.errors import CodegenError
from tests.codegen.conftest import release_analysis

pytestmark = pytest.mark.slow

SPEC_INFO = "sglang/srt/speculative/spec_info.py"


def test_0_5_23_plugin_mode_on_the_v2_worker(release_0_5_23):
    _, analysis = release_0_5_23
    plan = plan_ddtree(analysis, budget=32, topk=8)
    assert plan.mode == "plugin"
    assert plan.base.qualname == "sglang.srt.speculative.dflash_worker_v2.DFlashWorkerV2"
    assert str(plan.base.location) == "sglang/srt/speculative/dflash_worker_v2.py:378"
    assert [p.name for p in plan.base.init.params] == ["server_args", "gpu_id", "nccl_port", "target_worker"]
    assert str(plan.base.init.location) == "sglang/srt/speculative/dflash_worker_v2.py:388"
    assert plan.base.entry.name == "forward_batch_generation"
    assert str(plan.base.entry.location) == "sglang/srt/speculative/dflash_worker_v2.py:2336"
    assert plan.plugin.base_qualname == "sglang.srt.speculative.spec_registry.CustomSpecAlgo"
    assert str(plan.plugin.register.location) == f"{SPEC_INFO}:68"
    values = {p.name: p.value for p in plan.predicates}
    # every predicate of the enum (spec_info.py:93-232), answered as DFLASH does: the is_*/supports_*
    # ones and those the plugin base lacks (need_topk, carries_draft_hidden_states: SGL206)
    assert set(values) == {
        "is_some", "is_none", "is_speculative", "is_eagle", "is_eagle3", "is_frozen_kv_mtp", "is_dflash",
        "is_uno", "is_dspark", "is_dflash_family", "is_standalone", "is_ngram",
        "supports_target_verify_for_draft", "supports_prefill_shared_read_done", "supports_mixed_chunk",
        "supports_ragged_verify", "supports_grammar_overlap", "has_draft_kv", "carries_draft_hidden_states", "need_topk",
    }
    assert {n for n, v in values.items() if v} == {
        "is_some", "is_speculative", "is_dflash", "is_dflash_family", "supports_target_verify_for_draft",
        "supports_prefill_shared_read_done", "supports_mixed_chunk", "supports_grammar_overlap", "has_draft_kv",
    }
    # the other methods an algorithm object has and CustomSpecAlgo lacks run the release's own code
    assert [(d.name, str(d.location)) for d in plan.inherited] == [
        ("create_future_map", f"{SPEC_INFO}:185"), ("get_platform_worker_cls", f"{SPEC_INFO}:303"),
    ]
    assert plan.supports_overlap  # create_worker's DFLASH branch (spec_info.py:324) does not raise
    assert [d.name for d in plan.delegated] == ["build_disagg_draft_input", "handle_server_args"]
    sites = {str(j.site.location): j for j in plan.sites}
    assert sites[f"{SPEC_INFO}:324"].joined and "create_worker" in sites[f"{SPEC_INFO}:324"].how
    assert sites["sglang/srt/managers/scheduler.py:1231"].joined  # is_dflash_family()
    assert not sites["sglang/srt/speculative/spec_utils.py:412"].joined  # `in ("STANDALONE", "DFLASH", "DSPARK")`
    assert f"{SPEC_INFO}:316" not in sites  # `assert not self.is_none()` is not a DFLASH branch


def test_0_5_11_patch_mode_on_the_v1_worker(release_0_5_11):
    _, analysis = release_0_5_11
    plan = plan_ddtree(analysis, budget=16, topk=4)
    assert plan.mode == "patch" and plan.plugin is None
    assert plan.base.qualname == "sglang.srt.speculative.dflash_worker.DFlashWorker"
    assert str(plan.base.location) == "sglang/srt/speculative/dflash_worker.py:50"
    assert [p.name for p in plan.base.init.params] == [
        "server_args", "gpu_id", "tp_rank", "dp_rank", "moe_ep_rank", "attn_cp_rank", "moe_dp_rank", "nccl_port",
        "target_worker",
    ]
    assert str(plan.base.entry.location) == "sglang/srt/speculative/dflash_worker.py:1112"
    assert {p.name for p in plan.predicates if p.value} == {"is_speculative", "is_dflash"}
    assert not plan.supports_overlap and f"{SPEC_INFO}:70" in plan.overlap_reason
    # the model runner's `spec_algorithm.is_dflash()` tests (model_executor/) are read since the default
    # scope takes every srt/ file that names the algorithm
    runner = "sglang/srt/model_executor/cuda_graph_runner.py"
    assert {str(j.site.location) for j in plan.sites} == {
        "sglang/srt/managers/scheduler.py:2069", "sglang/srt/server_args.py:3319", f"{SPEC_INFO}:68",
        f"{runner}:752", f"{runner}:1137", f"{runner}:1227", f"{runner}:1251", f"{runner}:1306", f"{runner}:1387",
        "sglang/srt/model_executor/model_runner.py:416", "sglang/srt/model_executor/model_runner.py:2588",
        "sglang/srt/model_executor/pool_configurator.py:96",
    }
    assert all(j.joined for j in plan.sites)


def test_0_5_10_is_refused_naming_the_first_dflash_release(release_0_5_10):
    _, analysis = release_0_5_10
    with pytest.raises(CodegenError) as info:
        plan_ddtree(analysis, budget=32, topk=8)
    message = str(info.value)
    assert "0.5.10" in message and "no DFlash worker" in message
    assert f"sglang {FIRST_DFLASH_RELEASE}" in message and FIRST_DFLASH_RELEASE == "0.5.11"
    assert "\n" not in message


def test_plugin_mode_is_refused_without_the_plugin_api(release_0_5_11):
    _, analysis = release_0_5_11
    with pytest.raises(CodegenError, match="no plugin API"):
        plan_ddtree(analysis, budget=32, topk=8, mode="plugin")


def test_patch_mode_can_be_forced_on_a_plugin_release(release_0_5_23):
    _, analysis = release_0_5_23
    plan = plan_ddtree(analysis, budget=32, topk=8, mode="patch")
    assert plan.mode == "patch" and plan.delegated == ()
    assert {str(j.site.location) for j in plan.sites if not j.joined} == set()


def test_0_5_23_verify_glue_goes_through_the_v2_forward_batch(release_0_5_23):
    _, analysis = release_0_5_23
    glue = plan_ddtree(analysis, budget=32, topk=8).verify
    assert glue.missing == ()
    # dflash_worker_v2.py:2824 builds it; the class and its prepare (dflash_info.py:27, :66)
    assert glue.verify_class == "sglang.srt.speculative.dflash_info.DFlashVerifyInput"
    assert str(glue.verify_location) == "sglang/srt/speculative/dflash_info.py:27"
    assert {"draft_token", "positions", "draft_token_num", "custom_mask", "kv_loc_plan"} <= set(glue.fields)
    assert str(glue.prepare.location) == "sglang/srt/speculative/dflash_info.py:66"
    assert glue.prepare_args == (("batch", "batch"), ("target_worker", "target"))  # defer_metadata_init keeps its default
    assert glue.returns_forward_batch  # -> tuple[ForwardBatch, bool]
    assert glue.target_attr == "target_worker"
    assert str(glue.target_forward.location) == "sglang/srt/managers/tp_worker.py:622"
    assert {"forward_batch", "is_verify"} <= {p.name for p in glue.target_forward.params}
    assert glue.worker_batch_method is None and glue.forward_mode_module is None
    assert glue.result_field == "logits_output" and str(glue.result_location) == "sglang/srt/managers/utils.py:56"


def test_0_5_11_verify_glue_goes_through_the_v1_model_worker_batch(release_0_5_11):
    _, analysis = release_0_5_11
    glue = plan_ddtree(analysis, budget=16, topk=4).verify
    assert glue.missing == ()
    assert str(glue.verify_location) == "sglang/srt/speculative/dflash_info.py:148"
    assert str(glue.prepare.location) == "sglang/srt/speculative/dflash_info.py:178"
    # prepare_for_verify(batch, page_size, *, build_custom_mask=True): the tree mask replaces the causal one
    assert glue.prepare_args == (("batch", "batch"), ("page_size", "page_size"), ("build_custom_mask", "false"))
    assert not glue.returns_forward_batch
    assert str(glue.target_forward.location) == "sglang/srt/managers/tp_worker.py:445"
    assert glue.worker_batch_method == "get_model_worker_batch"  # dflash_worker.py:1195
    assert glue.forward_mode_module == "sglang.srt.model_executor.forward_batch_info"
    assert str(glue.result_location) == "sglang/srt/managers/utils.py:26"


V1_WORKER = "sglang/srt/speculative/dflash_worker.py"
V2_WORKER = "sglang/srt/speculative/dflash_worker_v2.py"


def _where(glue):
    return {d.key: str(d.location) for d in glue.decisions}


def test_0_5_11_draft_and_commit_glue_reuse_the_v1_verify_input(release_0_5_11):
    _, analysis = release_0_5_11
    glue = plan_ddtree(analysis, budget=32, topk=8).engine
    assert glue.missing == () and glue.shape == "batch"
    # _prepare_for_speculative_decoding runs the block: `self.draft_model_runner.forward(` at dflash_worker.py:660
    assert (glue.draft_method, glue.draft_args, glue.draft_runner) == ("_prepare_for_speculative_decoding", ("batch", "draft_input"), "draft_model_runner")
    assert glue.draft_input_class == "sglang.srt.speculative.dflash_info.DFlashDraftInput"
    # DFlashDraftInput's fields: verified_id (dflash_info.py:70), target_hidden (:76), ctx_lens (:79)
    assert (glue.root_field, glue.hidden_field, glue.ctx_field) == ("verified_id", "target_hidden", "ctx_lens")
    assert (glue.accept_method, glue.accept_keywords) == ("verify", ("batch", "logits_output", "page_size"))
    assert glue.append_method == "_append_target_hidden_to_draft_kv"
    assert glue.result_class == "sglang.srt.managers.scheduler.GenerationBatchResult"
    assert glue.result_keywords == ("logits_output", "next_token_ids", "num_accepted_drafts", "num_accepted_drafts_per_req_cpu", "can_run_cuda_graph")
    assert glue.window_func is None and glue.kv_mover is None  # the verify input's prepare reserves, its verify frees
    assert glue.kv_plan is None and glue.write_ids_method is None  # no KV-location plan in spec v1
    assert _where(glue) == {
        "draft": f"{V1_WORKER}:660",
        "root": "sglang/srt/speculative/dflash_info.py:70",
        "handoff": "sglang/srt/speculative/dflash_info.py:76",
        "accept": "sglang/srt/speculative/dflash_info.py:312",
        "append": f"{V1_WORKER}:1238",
        "result": f"{V1_WORKER}:1250",
        "pages": "sglang/srt/server_args.py:377",  # ServerArgs.page_size, the field DFlashWorker.__init__'s server_args has
        "guard": f"{V1_WORKER}:1066",  # _update_target_mamba_state_after_verify
    }
    # the path-first window needs one-token pages; the base reads the setting from its server_args
    assert glue.page_setting == "server_args.page_size" and glue.reservation_attr is None
    # called after the verify at dflash_worker.py:1227, gated on the target's attention backend (:1080)
    assert glue.backend_guards == (("_update_target_mamba_state_after_verify", "update_mamba_state_after_mtp_verify"),)


def test_0_5_23_draft_and_commit_glue_follow_the_v2_window(release_0_5_23):
    _, analysis = release_0_5_23
    glue = plan_ddtree(analysis, budget=32, topk=8).engine
    assert glue.missing == () and glue.shape == "forward_batch"
    assert (glue.draft_method, glue.draft_args, glue.draft_runner) == ("forward_batch_generation", ("batch",), "draft_model_runner")
    assert glue.draft_input_class == "sglang.srt.speculative.dflash_info_v2.DFlashDraftInputV2"
    assert glue.root_field == "bonus_tokens"  # dflash_info_v2.py:42 (topk_index at :41 is no token field)
    assert glue.append_keywords == ("target_hidden", "cache_loc", "cache_loc_2d", "positions", "commit_lens")
    assert (glue.next_input_method, glue.next_input_keywords) == ("_make_next_draft_input_decode", ("bonus_tokens", "new_seq_lens"))
    assert glue.window_func == "sglang.kernels.ops.speculative.cache_locs.assign_extend_cache_locs_func"
    assert glue.kv_mover == "sglang.srt.speculative.spec_utils.move_accept_tokens_to_target_kvcache"
    assert glue.publish_param == "on_publish"
    assert "accept_lens" in glue.result_keywords and "speculative_num_draft_tokens" in glue.result_keywords
    assert _where(glue) == {
        "draft": f"{V2_WORKER}:2688",
        "root": "sglang/srt/speculative/dflash_info_v2.py:42",
        "append": f"{V2_WORKER}:2986",
        "next_input": f"{V2_WORKER}:2997",
        "window": f"{V2_WORKER}:2542",
        "mover": "sglang/srt/speculative/spec_utils.py:859",
        "publish": f"{V2_WORKER}:2973",
        "result": f"{V2_WORKER}:3002",
        "reservation": f"{V2_WORKER}:3002",
        "guard": f"{V2_WORKER}:2085",
        "kv_plan": f"{V2_WORKER}:2588",
    }
    # the base plans its window's KV locations once (`kv_index_translator.plan(...)` at :2588), passes the plan
    # to DFlashVerifyInput(kv_loc_plan=) (:2824) and reads the draft KV's write ids from it (:2985)
    assert glue.kv_plan == "self.target_worker.model_runner.kv_index_translator.plan"
    assert glue.kv_plan_keywords == ("req_pool_indices", "seq_lens", "seq_lens_cpu", "write_virtual", "read_extent")
    assert (glue.kv_field, glue.write_ids_method) == ("kv_loc_plan", "_draft_write_ids")
    # spec v2 moves KV contents inside the window (slot ids stay), so pages need no refusal; the window
    # must fit what the scheduler reserves, which the base reports as speculative_num_draft_tokens
    assert glue.page_setting is None and glue.reservation_attr == "speculative_num_draft_tokens"
    assert glue.backend_guards == (("_update_target_mamba_state_after_verify", "update_mamba_state_after_mtp_verify"),)


def test_facts_missing_the_accept_method_make_the_worker_refuse_naming_it(release_0_5_11):
    import dataclasses

    from sgl_scan.codegen.ddtree.patch import build_patch
    from sgl_scan.codegen.ddtree.render import render_ddtree

    tree, analysis = release_0_5_11
    path = "sglang/srt/speculative/dflash_info.py"
    facts = analysis.files[path]
    cls = next(c for c in facts.classes if c.qualname == "DFlashVerifyInput")
    without = dataclasses.replace(
        facts,
        classes=tuple(dataclasses.replace(c, methods=tuple(m for m in c.methods if m != "verify")) if c is cls else c for c in facts.classes),
        functions=tuple(f for f in facts.functions if not (f.owner == "DFlashVerifyInput" and f.name == "verify")),
    )
    files = {**{p: analysis.files[p] for p in analysis.files}, path: without}
    lacking = dataclasses.replace(analysis, files=files)
    plan = plan_ddtree(lacking, budget=32, topk=8)
    assert plan.engine.missing == (
        "sglang.srt.speculative.dflash_worker.DFlashWorker.forward_batch_generation "
        f"({V1_WORKER}:1112) calls no method of the verify input after the target verify",
    )
    worker = render_ddtree(plan, "ddtree_gen", build_patch(plan, lacking, tree, "ddtree_gen"), "x")["worker.py"]
    assert repr(plan.engine.missing[0]) in worker.split("ENGINE_GLUE_MISSING = (")[1].split(")\n")[0]
    assert "def ddtree_commit" in worker and 'raise NotImplementedError("DDTree: " + "; ".join(ENGINE_GLUE_MISSING))' in worker


@pytest.mark.parametrize("version", ["0.5.23", "0.5.11"])
def test_the_drafter_keeps_its_trained_block_read_as_the_release_reads_it(version, facts_cache):
    """The base takes its block from speculative_num_draft_tokens (the tree's width for DDTree); the plan finds how
    the release infers the drafter's block from its config and how the base reads the setting, to scope it."""
    _, analysis = release_analysis(version, facts_cache)
    width = plan_ddtree(analysis, budget=32).width
    assert width.missing == ()
    assert width.parser == "sglang.srt.speculative.dflash_utils.parse_dflash_draft_config"
    assert width.loader == "sglang.srt.utils.hf_transformers_utils.get_config"
    assert width.loader_keywords == ("trust_remote_code", "revision", "model_override_args")
    if version == "0.5.23":
        # `if get_spec().speculative_num_draft_tokens is None:` (dflash_worker_v2.py:507); the bag's scoped override
        assert width.settings_bag == "sglang.srt.runtime_context.get_spec"
        assert str(width.where("scope")) == "sglang/srt/runtime_context.py:849"
        assert width.phases == ("alloc_memory_pool", "init_attention_backends", "init_cuda_graphs")
        assert (str(width.where("parser")), str(width.where("loader"))) == (f"{V2_WORKER}:509", "sglang/srt/arg_groups/speculative_hook.py:399")
    else:
        # `if server_args.speculative_num_draft_tokens is None:` (dflash_worker.py:164): the attribute is scoped
        assert width.settings_bag is None and width.phases == ()
        assert (str(width.where("parser")), str(width.where("loader"))) == (f"{V1_WORKER}:166", "sglang/srt/server_args.py:3397")
