"""The attention part of the plan and of the generated worker follows the release's facts: change a
fact and the generated forcing/refusal changes with it."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import logging
from types import SimpleNamespace

import pytest
import torch

from sgl_scan.codegen.ddtree.plan import plan_ddtree
from sgl_scan.codegen.ddtree.render import render_ddtree

pytestmark = pytest.mark.slow

NAMES = {"MASK_READING", "NOT_MASK_READING", "DEFAULT_ARMS", "DEFAULT_UNREAD", "VERIFY_GRAPH_CAPTURE", "ATTENTION_SETTINGS",
         "gpu_arch", "_holds", "release_defaults", "mask_backend", "attention_decision", "ddtree_server_args",
         "NO_READER", "KIND_PROBES", "SINKS_ATTRIBUTE", "MODEL_OVERRIDES", "_probe", "model_kind", "_refused"}


def attention_code(worker: str) -> dict:
    """The generated worker's attention constants and functions, run on their own (the rest of
    worker.py imports the release)."""
    tree = ast.parse(worker)
    keep = [node for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name in NAMES
            or isinstance(node, ast.Assign) and any(getattr(t, "id", None) in NAMES for t in node.targets)]
    assert {getattr(n, "name", None) or n.targets[0].id for n in keep} == NAMES
    space = {"importlib": importlib, "torch": torch, "logger": logging.getLogger("ddtree-test")}
    exec(compile(ast.Module(body=keep, type_ignores=[]), "worker.py", "exec"), space)  # generated code, from our templates
    space["model_kind"] = lambda settings: (getattr(settings, "kinds", ("mha",)), getattr(settings, "arch", None), None)
    return space


def generated(plan) -> dict:
    return attention_code(render_ddtree(plan, "ddtree_gen", None, "sgl-scan gen ddtree")["worker.py"])


def on_gpu(space: dict, holding: set[int]) -> None:
    """Answer the release's architecture tests as a GPU where the arms `holding` hold (else always)."""
    tests = [arm[0] for family in ("mha", "mla") for i, arm in enumerate(space["DEFAULT_ARMS"][family]) if i in holding]
    space["_holds"] = lambda test: test[0] == "else" or test in tests


@pytest.fixture(scope="module")
def plan_0_5_23(release_0_5_23):
    return plan_ddtree(release_0_5_23[1], budget=16, topk=16)


def test_the_plan_reads_the_default_per_architecture_and_the_mask_reading_backends(release_0_5_11, plan_0_5_23):
    plan_11 = plan_ddtree(release_0_5_11[1], budget=16, topk=16)
    for plan, first in ((plan_11, "sglang/srt/server_args.py:2492"), (plan_0_5_23, "sglang/srt/arg_groups/model_override_base.py:305")):
        att = plan.attention
        assert att.unread is None and str(att.arms[0].location) == first and att.arms[0].backends == ("fa3",)
        assert att.arms[-1].kind == "else" and att.arms[-1].backends == ("flashinfer", "triton")
        assert {"flashinfer", "triton"} <= set(att.mask_reading) and not {"fa3", "trtllm_mha", "flashmla"} & set(att.mask_reading)


def test_the_generated_constants_are_the_plan_facts(plan_0_5_23):
    space = generated(plan_0_5_23)
    att = plan_0_5_23.attention
    for kind in ("mha", "sinks", "mla"):
        assert set(space["MASK_READING"][kind]) == set(att.reading(kind))
        assert set(space["NOT_MASK_READING"][kind]) == {b.backend for b in att.backends if not b.reads(kind)}
    assert [(arm[1], arm[3]) for arm in space["DEFAULT_ARMS"]["mha"]] == [(a.backends, str(a.location)) for a in att.arms]
    assert [(arm[1], arm[3]) for arm in space["DEFAULT_ARMS"]["mla"]] == [(a.backends, str(a.location)) for a in att.mla_arms]
    assert space["VERIFY_GRAPH_CAPTURE"] == tuple(str(g) for g in att.verify_graphs)


def test_hopper_default_is_forced_and_follows_the_facts(plan_0_5_23):
    space = generated(plan_0_5_23)
    on_gpu(space, {0})  # the release's Hopper arm holds
    force, line = space["attention_decision"](SimpleNamespace(attention_backend="fa3"))
    assert force == "flashinfer" and "is fa3 (sglang/srt/arg_groups/model_override_base.py:305)" in line
    args = SimpleNamespace(attention_backend=None)
    space["ddtree_server_args"](args)
    assert args.attention_backend == "flashinfer"
    # the same GPU with a fact changed: fa3's verify reading the mask -> nothing is forced
    fa3_reads = dataclasses.replace(plan_0_5_23.attention, backends=tuple(
        dataclasses.replace(b, reads_mask=True) if b.backend == "fa3" else b for b in plan_0_5_23.attention.backends))
    changed = generated(dataclasses.replace(plan_0_5_23, attention=fa3_reads))
    on_gpu(changed, {0})
    assert changed["attention_decision"](SimpleNamespace(attention_backend="fa3")) == (None, None)


def test_sm120_needs_nothing_and_sm100_is_forced(plan_0_5_23):
    space = generated(plan_0_5_23)
    on_gpu(space, set())  # no arm names sm120: the else arm (flashinfer, else triton) picks
    assert space["attention_decision"](SimpleNamespace(attention_backend=None)) == (None, None)
    on_gpu(space, {1})  # is_sm100
    force, line = space["attention_decision"](SimpleNamespace(attention_backend="trtllm_mha"))
    assert force == "flashinfer" and "model_override_base.py:313" in line


def test_a_causal_only_backend_chosen_by_the_user_is_refused(plan_0_5_23):
    space = generated(plan_0_5_23)
    on_gpu(space, set())
    force, line = space["attention_decision"](SimpleNamespace(attention_backend="trtllm_mha"))
    assert force is None and "needs an attention backend whose verify reads the tree mask" in line
    assert "trtllm_mha_backend.py never reads the verify input's custom_mask" in line
    with pytest.raises(ValueError, match="attention_backend=trtllm_mha"):
        space["ddtree_server_args"](SimpleNamespace(attention_backend="trtllm_mha"))


def test_an_unread_default_chain_is_refused_never_guessed(plan_0_5_23):
    unread = dataclasses.replace(plan_0_5_23.attention, arms=(), unread="several default-backend chains: a.py:1, b.py:2")
    space = generated(dataclasses.replace(plan_0_5_23, attention=unread))
    assert space["DEFAULT_ARMS"]["mha"] == () and space["DEFAULT_UNREAD"]["mha"] == "several default-backend chains: a.py:1, b.py:2"
    force, line = space["attention_decision"](SimpleNamespace(attention_backend=None))
    assert force is None and "could not be read (several default-backend chains" in line
    assert space["attention_decision"](SimpleNamespace(attention_backend="triton")) == (None, None)  # an explicit mask reader is fine


def test_an_arm_naming_a_predicate_outside_the_release_is_unread():
    from sgl_scan.analyzer.attention import Arm, AttentionFacts
    from sgl_scan.analyzer.model import Location
    from sgl_scan.codegen.ddtree.attention import attention_plan

    at = Location("sglang/srt/server_args.py", 7)
    facts = AttentionFacts("pick", (Arm("call:os.getpid", (), ("fa3",), at), Arm("else", (), ("triton",), at)), None, (), ())
    plan = attention_plan(None, facts)
    assert plan.arms == () and plan.unread == "the architecture test at sglang/srt/server_args.py:7 names no predicate the worker can call"
    ok = AttentionFacts("pick", (Arm("call:sglang.srt.utils.is_hip", (), ("aiter",), at), Arm("else", (), ("triton",), at)), None, (), ())
    assert [a.getter for a in attention_plan(None, ok).arms] == ["is_hip", None]


def test_mla_on_sm100_flashinfer_drops_the_mask_and_is_forced_to_triton(plan_0_5_23):
    """0.5.23 model_override_base.py:339 picks flashinfer for MLA on sm100; FlashInferMLAAttnBackend computes the
    mask and plans a causal verify (flashinfer_mla_backend.py:1099, "TODO: Support topk > 1 with custom mask")."""
    space = generated(plan_0_5_23)
    mla_sm100 = space["DEFAULT_ARMS"]["mla"][1][0]
    space["_holds"] = lambda test: test[0] == "else" or test == mla_sm100
    mla = SimpleNamespace(attention_backend="flashinfer", kinds=("mla",))
    force, line = space["attention_decision"](mla)
    assert force == "triton" and "model_override_base.py:339" in line and "flashinfer_mla_backend.py:1099" in line
    assert "never hands it on" in line and "\n" not in line
    # the same backend for an MHA model on the same GPU is not the release's MHA pick there: left as chosen
    assert space["attention_decision"](SimpleNamespace(attention_backend="flashinfer", kinds=("mha",))) == (None, None)


def test_mla_is_refused_on_a_release_where_no_mla_backend_gets_the_mask(plan_0_5_23):
    """Change one fact (triton's MLA verify drops the mask too, like wave and aiter): MLA is refused, saying why."""
    att = plan_0_5_23.attention
    none_read = dataclasses.replace(att, backends=tuple(dataclasses.replace(b, mla_reads_mask=False) for b in att.backends))
    space = generated(dataclasses.replace(plan_0_5_23, attention=none_read))
    force, line = space["attention_decision"](SimpleNamespace(attention_backend="triton", kinds=("mla",)))
    assert force is None and "refuses this MLA target: no attention backend of SGLang 0.5.23 hands the tree mask" in line
    assert space["attention_decision"](SimpleNamespace(attention_backend="triton", kinds=("mha",))) == (None, None)


def test_sinks_model_never_gets_flashinfer(plan_0_5_23):
    """0.5.23 model_override_base.py:332: flashinfer only `not model_config.has_attention_sinks`; its forward_extend
    takes no sinks. A user's flashinfer is refused; the gpt-oss override's fa3 on Hopper is forced to triton."""
    space = generated(plan_0_5_23)
    on_gpu(space, set())
    force, line = space["attention_decision"](SimpleNamespace(attention_backend="flashinfer", kinds=("sinks",)))
    assert force is None and "takes no sinks" in line and "pass --attention-backend triton" in line
    force, line = space["attention_decision"](SimpleNamespace(attention_backend="fa3", kinds=("sinks",), arch="GptOssForCausalLM"))
    assert force == "triton" and "model_overrides/gpt_oss.py:33, the release's override for GptOssForCausalLM" in line
