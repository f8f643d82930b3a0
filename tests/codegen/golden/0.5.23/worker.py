"""DDTree worker for SGLang 0.5.23.

`DDTreeWorker` subclasses `sglang.srt.speculative.dflash_worker_v2.DFlashWorkerV2` (sglang/srt/speculative/dflash_worker_v2.py:378) and replaces its decode path
(`forward_batch_generation`, sglang/srt/speculative/dflash_worker_v2.py:2336): draft block -> top-K -> tree -> verify input with the
ancestor mask -> target forward -> greedy walk -> commit. Prefill and idle batches go to the DFlash
worker unchanged, so the drafter's KV and hidden-state bookkeeping stay the release's own.

The target verify is wired to the release: `DFlashVerifyInput` (sglang/srt/speculative/dflash_info.py:27) carries the
tree tokens, positions and the ancestor-only custom mask; `prepare_for_verify` (sglang/srt/speculative/dflash_info.py:66)
prepares the batch and `self.target_worker.forward_batch_generation` (sglang/srt/managers/tp_worker.py:622)
runs it with is_verify=True.

The draft step and the commit are wired to the release as well (spec v2: the verify window comes from the scheduler's reservation):
- draft block: DFlashWorkerV2.forward_batch_generation() runs self.draft_model_runner.forward(forward_batch); DDTree stops it there (sglang/srt/speculative/dflash_worker_v2.py:2688)
- root token: batch.spec_info.bonus_tokens (DFlashDraftInputV2) (sglang/srt/speculative/dflash_info_v2.py:42)
- draft KV: self._append_target_hidden_to_draft_kv_by_loc(target_hidden, cache_loc, cache_loc_2d, positions, commit_lens) after the commit, as the base does (sglang/srt/speculative/dflash_worker_v2.py:2986)
- next draft input: self._make_next_draft_input_decode(bonus_tokens=, new_seq_lens=) (sglang/srt/speculative/dflash_worker_v2.py:2997)
- verify window: assign_extend_cache_locs_func(req_pool_indices=, req_to_token=, start_offset=, end_offset=, batch_size=, draft_token_num=, device=) over committed length + [0, budget + 1) (sglang/srt/speculative/dflash_worker_v2.py:2542)
- KV compaction: sglang.srt.speculative.spec_utils.move_accept_tokens_to_target_kvcache(batch, accept_index, num_correct_drafts, batch.token_to_kv_pool_allocator) (sglang/srt/speculative/spec_utils.py:859)
- KV plan: self.target_worker.model_runner.kv_index_translator.plan(req_pool_indices=, seq_lens=, seq_lens_cpu=, write_virtual=, read_extent=) over the tree window, passed as DFlashVerifyInput(kv_loc_plan=) and to self._draft_write_ids() for the draft KV write ids, as the base does (sglang/srt/speculative/dflash_worker_v2.py:2588)
- the decode path calls its `on_publish` parameter with the new lengths; so does the commit (sglang/srt/speculative/dflash_worker_v2.py:2973)
- result: GenerationBatchResult(logits_output=, next_token_ids=, accept_lens=, can_run_cuda_graph=, next_draft_input=, speculative_num_draft_tokens=, new_seq_lens=, routed_experts_output=, indexer_topk_output=), as the decode path returns (sglang/srt/speculative/dflash_worker_v2.py:3002)
- window bound: the base reports its verify width as speculative_num_draft_tokens; DDTreeWorker() refuses a budget + 1 above self.speculative_num_draft_tokens (the scheduler reserves no more per step) (sglang/srt/speculative/dflash_worker_v2.py:3002)
- skipped base step: self._update_target_mamba_state_after_verify() runs when the target's attention backend has update_mamba_state_after_mtp_verify(); the tree commit does not, so DDTree refuses such a backend (sglang/srt/speculative/dflash_worker_v2.py:2085)

Decode batches the tree step cannot run exactly go to the release's own DFlash step
(`ddtree_fallback_reason`): logprobs, grammar, custom logit processors, penalties, logit bias and
other logit edits the release applies before it accepts, and
sampling with top-k, top-p or min-p (a tree samples the target at the request's temperature only).
`DDTreeWorker()` refuses what the commit would silently corrupt:
- a budget + 1 above the scheduler's per-step reservation (self.speculative_num_draft_tokens);
- a target attention backend that needs a base step the tree commit skips (hybrid Mamba state).
"""

from __future__ import annotations

import json
import importlib
import logging
import os
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from sglang.srt.speculative.dflash_worker_v2 import DFlashWorkerV2
from sglang.srt.speculative.dflash_info import DFlashVerifyInput
from sglang.srt.managers.scheduler import GenerationBatchResult
from sglang.kernels.ops.speculative.cache_locs import assign_extend_cache_locs_func
from sglang.srt.speculative.spec_utils import move_accept_tokens_to_target_kvcache

from . import tree as ddtree

BUDGET_ENV = "SGLANG_DDTREE_BUDGET"
TRACE_ENV = "SGLANG_DDTREE_TRACE"  # a folder: each tree step's accepted paths and their verify log-probs go there
TOPK_ENV = "SGLANG_DDTREE_TOPK"
logger = logging.getLogger(__name__)

# What this SGLang lacks for the DDTree target verify (from the snapshot's facts); non-empty: the
# worker refuses to construct.
ENGINE_GLUE_MISSING = (
)
# The keywords the base decode path builds its result with (sglang/srt/speculative/dflash_worker_v2.py:3002).
RESULT_KEYWORDS = ('logits_output', 'next_token_ids', 'accept_lens', 'can_run_cuda_graph', 'next_draft_input', 'speculative_num_draft_tokens', 'new_seq_lens', 'routed_experts_output', 'indexer_topk_output')
# Result values read on the host (a device sync), computed only when RESULT_KEYWORDS takes them.
HOST_VALUES = ("num_accepted_drafts", "num_accepted_drafts_per_req_cpu")
# Attributes of the base worker the glue reads (checked when the worker is constructed).
ENGINE_ATTRIBUTES = ('target_worker', 'draft_model_runner')
# Sampling-info fields that, when set, mean the release edits the verify logits before it accepts;
# the tree step reads the raw logits, so such batches run the release's own step.
LOGIT_EDITS = ("logit_bias", "acc_linear_penalties", "grammar_mask", "sampling_mask_batch_indices")
# Spec v2: the tree step commits the walked tokens itself, so it may sample the target per node at
# the request's temperature (exact for temperature-only sampling).
TREE_SAMPLING = True


class _DraftBlockDone(Exception):
    """Raised from the draft runner's forward: stops the base decode path right after the draft block."""

    def __init__(self, output):
        super().__init__("draft block done")
        self.output = output


def path_first_order(accepted: torch.Tensor, counts: torch.Tensor, width: int) -> torch.Tensor:
    """[B, W] permutation of window columns: the accepted path (root first), then the other nodes in index order.

    Batched tensor ops only (no per-request loop, no host sync).
    """
    batch = accepted.shape[0]
    columns = torch.arange(width, device=accepted.device).expand(batch, width)
    counts = counts.to(torch.int64).unsqueeze(1)
    path = accepted[:, :width].to(torch.int64).clamp(min=0)
    on_path = torch.zeros((batch, width), dtype=torch.int64, device=accepted.device)
    on_path.scatter_add_(1, path, (columns < counts).to(torch.int64))
    rest = torch.sort(torch.where(on_path > 0, columns + width, columns), dim=1, stable=True).indices
    return torch.where(columns < counts, path, rest.gather(1, (columns - counts).clamp(min=0)))


def ddtree_trace(folder: str, batch, trees, target_logits: torch.Tensor, accepted: torch.Tensor, counts: torch.Tensor) -> None:
    """Save, per request of this step, what the GPU check compares with the target's own teacher-forced
    log-probs: the request's tokens so far (its last one is the tree's root), the accepted path's tokens
    (root first) and the verify's log-softmax after each accepted node ([n, V], fp32, on the host)."""
    reqs = getattr(batch, "reqs", None) or []
    bs, width = int(trees.tokens.shape[0]), int(trees.tokens.shape[1])
    rows = target_logits.view(bs, width, -1)
    records = []
    for b, req in enumerate(reqs[:bs]):
        n = int(counts[b])
        nodes = accepted[b, :n].to(torch.int64)
        records.append({
            "tokens": list(getattr(req, "origin_input_ids", []) or []) + list(getattr(req, "output_ids", []) or []),
            "path": trees.tokens[b].gather(0, nodes).tolist(),
            "logprobs": torch.log_softmax(rows[b].index_select(0, nodes).float(), dim=-1).cpu(),
        })
    os.makedirs(folder, exist_ok=True)
    step = len(os.listdir(folder))
    torch.save(records, os.path.join(folder, f"{os.getpid()}-{step:07d}.pt"))


def _kernels():
    """The Triton kernels when they can run here (CUDA, or TRITON_INTERPRET=1), else None."""
    try:
        from . import kernels
    except ImportError:
        return None
    return kernels


def resolve_budget(server_args) -> int:
    """Node budget: server_args.speculative_ddtree_budget, else ${SGLANG_DDTREE_BUDGET}, else 32."""
    value = getattr(server_args, "speculative_ddtree_budget", None)
    if value is None:
        value = os.environ.get(BUDGET_ENV)
    return int(value) if value is not None else ddtree.DEFAULT_BUDGET


def resolve_topk(budget: int) -> int | None:
    """A cap on candidates per draft position: ${SGLANG_DDTREE_TOPK}, else the --topk given at generation, else
    None. Each step takes tree.candidates(budget, vocabulary, cap): min(budget, vocabulary) as the DDTree
    reference, the vocabulary being the target's (the LM head's padding rows excluded)."""
    value = os.environ.get(TOPK_ENV)
    return int(value) if value is not None else ddtree.DEFAULT_TOPK


def drafter_block_size(server_args) -> int:
    """The block size the DFlash drafter was trained for, read as the release infers it from the draft
    model's config (sglang/srt/arg_groups/speculative_hook.py:399; sglang/srt/speculative/dflash_worker_v2.py:509). DDTree drafts on it (depth =
    block - 1, as the DDTree reference) whatever the tree's width."""
    from sglang.srt.utils.hf_transformers_utils import get_config
    from sglang.srt.speculative.dflash_utils import parse_dflash_draft_config

    settings = _settings(server_args)
    path = getattr(settings, "speculative_draft_model_path", None)
    if path is None:
        raise RuntimeError("DDTree needs --speculative-draft-model-path (a DFlash drafter)")
    hf_config = get_config(
        path,
        trust_remote_code=bool(getattr(settings, "trust_remote_code", False)),
        revision=getattr(settings, "speculative_draft_model_revision", None),
        model_override_args=json.loads(getattr(settings, "json_model_override_args", None) or "{}"),
    )
    block = parse_dflash_draft_config(draft_hf_config=hf_config).resolve_block_size(default=None)
    if block is None or int(block) < 2:
        raise RuntimeError(
            f"DDTree needs the drafter's trained block size (block_size in {path}'s config, at least 2), got {block!r}: "
            "the tree's depth is that block minus one"
        )
    return int(block)


@contextmanager
def draft_width_scope(server_args, width: int):
    """While the base builds its draft side, speculative_num_draft_tokens reads the drafter's block: the release's
    DFlash worker takes its block size (and sizes its draft buffers) from that setting, which for DDTree
    holds the tree's verify width, budget + 1. Restored on exit."""
    from sglang.srt.runtime_context import get_spec

    with get_spec().override(speculative_num_draft_tokens=int(width)):  # the release's own scoped override (sglang/srt/runtime_context.py:849)
        yield


def verify_width_setting(server_args) -> int | None:
    """speculative_num_draft_tokens as the release reads it: the tree's verify width, budget + 1 (what the scheduler reserves per request and step)."""
    from sglang.srt.runtime_context import get_spec

    value = getattr(get_spec(), "speculative_num_draft_tokens", None)
    return int(value) if value is not None else None


# --- attention: per model kind (sgl-scan's attention plan; kept apart from the decode code) ---------
# The attention facts of SGLang 0.5.23, read from its source by sgl-scan (no fixed table), per model
# kind: "mha" (Llama, Qwen), "sinks" (MHA with learned attention sinks: gpt-oss), "mla" (DeepSeek-V3, Kimi-K2).
# Backends whose target verify hands the verify input's custom mask (the tree mask) on to its kernel, and where:
MASK_READING = {
    'mha': {
        'aiter': "AiterAttnBackend.init_forward_metadata reads spec_info.generate_attn_arg_prefill (the verify input's mask) at sglang/srt/layers/attention/aiter_backend.py:2282 (registered at sglang/srt/layers/attention/attention_registry.py:128)",
        'flashinfer': "FlashInferIndicesUpdaterPrefill.call_begin_forward reads spec_info.generate_attn_arg_prefill (the verify input's mask) at sglang/srt/layers/attention/flashinfer_backend.py:2273 (registered at sglang/srt/layers/attention/attention_registry.py:56)",
        'triton': 'TritonAttnBackend._update_target_verify_buffers reads custom_mask at sglang/srt/layers/attention/triton_backend.py:638 (registered at sglang/srt/layers/attention/attention_registry.py:207)',
        'wave': 'WaveAttnBackend.init_forward_metadata reads custom_mask at sglang/srt/layers/attention/wave_backend.py:284 (registered at sglang/srt/layers/attention/attention_registry.py:135)',
    },
    'sinks': {
        'aiter': "AiterAttnBackend.init_forward_metadata reads spec_info.generate_attn_arg_prefill (the verify input's mask) at sglang/srt/layers/attention/aiter_backend.py:2282 (registered at sglang/srt/layers/attention/attention_registry.py:128)",
        'triton': 'TritonAttnBackend._update_target_verify_buffers reads custom_mask at sglang/srt/layers/attention/triton_backend.py:638 (registered at sglang/srt/layers/attention/attention_registry.py:207)',
    },
    'mla': {
        'aiter': "AiterAttnBackend.init_forward_metadata reads spec_info.generate_attn_arg_prefill (the verify input's mask) at sglang/srt/layers/attention/aiter_backend.py:2282 (registered at sglang/srt/layers/attention/attention_registry.py:128)",
        'triton': 'TritonAttnBackend._update_target_verify_buffers reads custom_mask at sglang/srt/layers/attention/triton_backend.py:638 (registered at sglang/srt/layers/attention/attention_registry.py:207)',
        'wave': 'WaveAttnBackend.init_forward_metadata reads custom_mask at sglang/srt/layers/attention/wave_backend.py:284 (registered at sglang/srt/layers/attention/attention_registry.py:135)',
    },
}
# Backends whose verify does not (a causal verify checks a linear block, not the tree; an MLA plan that
# computes the mask and drops it; a forward_extend without sinks), or whose code could not be read:
# never used for DDTree on that kind of model.
NOT_MASK_READING = {
    'mha': {
        'ascend': "sglang/srt/hardware_backend/npu/attention/ascend_backend.py never reads the verify input's custom_mask (causal verify)",
        'cutedsl_mla': "sglang/srt/layers/attention/cutedsl_mla_backend.py never reads the verify input's custom_mask (causal verify)",
        'dsa': "sglang/srt/layers/attention/dsa_backend.py never reads the verify input's custom_mask (causal verify)",
        'dsv4': 'unread: no class built for MHA models at sglang/srt/layers/attention/attention_registry.py:178',
        'fa3': "reads custom_mask only under a topk test (sglang/srt/layers/attention/flashattention_backend.py:1136), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'fa4': "reads custom_mask only under a topk test (sglang/srt/layers/attention/flashattention_backend.py:1136), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'flashmla': "sglang/srt/layers/attention/flashmla_backend.py never reads the verify input's custom_mask (causal verify)",
        'flex_attention': "sglang/srt/layers/attention/torch_flex_backend.py never reads the verify input's custom_mask (causal verify)",
        'hpc_ops': "sglang/srt/layers/attention/hpc_ops_backend.py never reads the verify input's custom_mask (causal verify)",
        'intel_amx': "reads custom_mask only under a topk test (sglang/srt/layers/attention/intel_amx_backend.py:116), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'intel_xpu': "reads custom_mask only under a topk test (sglang/srt/layers/attention/xpu_backend.py:531), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'llada2_cfg_flashinfer': "sglang/srt/layers/attention/llada2_cfg_flashinfer_backend.py never reads the verify input's custom_mask (causal verify)",
        'minicpm_flashattn': 'unread: sglang.srt.layers.attention.minicpm.backend.MiniCPMSparseBackend is not in the files read',
        'minicpm_flashinfer': 'unread: sglang.srt.layers.attention.minicpm.backend.MiniCPMSparseBackend is not in the files read',
        'nsa': 'unread: sglang.srt.layers.attention.attention_registry.create_dsa_backend is not in the files read',
        'qsa': "sglang/srt/layers/attention/qwen_sparse_attn_backend.py never reads the verify input's custom_mask (causal verify)",
        'torch_native': "sglang/srt/layers/attention/torch_native_backend.py never reads the verify input's custom_mask (causal verify)",
        'trtllm_mha': "sglang/srt/layers/attention/trtllm_mha_backend.py never reads the verify input's custom_mask (causal verify)",
        'trtllm_mla': "sglang/srt/layers/attention/trtllm_mla_backend.py never reads the verify input's custom_mask (causal verify)",
    },
    'sinks': {
        'ascend': "sglang/srt/hardware_backend/npu/attention/ascend_backend.py never reads the verify input's custom_mask (causal verify)",
        'cutedsl_mla': "sglang/srt/layers/attention/cutedsl_mla_backend.py never reads the verify input's custom_mask (causal verify)",
        'dsa': "sglang/srt/layers/attention/dsa_backend.py never reads the verify input's custom_mask (causal verify)",
        'dsv4': 'unread: no class built for MHA models at sglang/srt/layers/attention/attention_registry.py:178',
        'fa3': "reads custom_mask only under a topk test (sglang/srt/layers/attention/flashattention_backend.py:1136), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'fa4': "reads custom_mask only under a topk test (sglang/srt/layers/attention/flashattention_backend.py:1136), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'flashinfer': "FlashInferAttnBackend.forward_extend (sglang/srt/layers/attention/flashinfer_backend.py:1357) takes no sinks (a TypeError on a sinks model's first forward)",
        'flashmla': "sglang/srt/layers/attention/flashmla_backend.py never reads the verify input's custom_mask (causal verify)",
        'flex_attention': "sglang/srt/layers/attention/torch_flex_backend.py never reads the verify input's custom_mask (causal verify)",
        'hpc_ops': "sglang/srt/layers/attention/hpc_ops_backend.py never reads the verify input's custom_mask (causal verify)",
        'intel_amx': "reads custom_mask only under a topk test (sglang/srt/layers/attention/intel_amx_backend.py:116), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'intel_xpu': "reads custom_mask only under a topk test (sglang/srt/layers/attention/xpu_backend.py:531), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'llada2_cfg_flashinfer': "sglang/srt/layers/attention/llada2_cfg_flashinfer_backend.py never reads the verify input's custom_mask (causal verify)",
        'minicpm_flashattn': 'unread: sglang.srt.layers.attention.minicpm.backend.MiniCPMSparseBackend is not in the files read',
        'minicpm_flashinfer': 'unread: sglang.srt.layers.attention.minicpm.backend.MiniCPMSparseBackend is not in the files read',
        'nsa': 'unread: sglang.srt.layers.attention.attention_registry.create_dsa_backend is not in the files read',
        'qsa': "sglang/srt/layers/attention/qwen_sparse_attn_backend.py never reads the verify input's custom_mask (causal verify)",
        'torch_native': "sglang/srt/layers/attention/torch_native_backend.py never reads the verify input's custom_mask (causal verify)",
        'trtllm_mha': "sglang/srt/layers/attention/trtllm_mha_backend.py never reads the verify input's custom_mask (causal verify)",
        'trtllm_mla': "sglang/srt/layers/attention/trtllm_mla_backend.py never reads the verify input's custom_mask (causal verify)",
        'wave': "WaveAttnBackend.forward_extend (sglang/srt/layers/attention/wave_backend.py:483) takes no sinks (a TypeError on a sinks model's first forward)",
    },
    'mla': {
        'ascend': "sglang/srt/hardware_backend/npu/attention/ascend_backend.py never reads the verify input's custom_mask (causal verify)",
        'cutedsl_mla': "sglang/srt/layers/attention/cutedsl_mla_backend.py never reads the verify input's custom_mask (causal verify)",
        'dsa': "sglang/srt/layers/attention/dsa_backend.py never reads the verify input's custom_mask (causal verify)",
        'dsv4': 'unread: no class built for MLA models at sglang/srt/layers/attention/attention_registry.py:178',
        'fa3': "reads custom_mask only under a topk test (sglang/srt/layers/attention/flashattention_backend.py:1136), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'fa4': "reads custom_mask only under a topk test (sglang/srt/layers/attention/flashattention_backend.py:1136), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'flashinfer': 'FlashInferMLAIndicesUpdaterPrefill.call_begin_forward computes the custom mask at sglang/srt/layers/attention/flashinfer_mla_backend.py:1099 into custom_mask and never hands it on: its verify is planned causal',
        'flashmla': "sglang/srt/layers/attention/flashmla_backend.py never reads the verify input's custom_mask (causal verify)",
        'flex_attention': "sglang/srt/layers/attention/torch_flex_backend.py never reads the verify input's custom_mask (causal verify)",
        'hpc_ops': "sglang/srt/layers/attention/hpc_ops_backend.py never reads the verify input's custom_mask (causal verify)",
        'intel_amx': "reads custom_mask only under a topk test (sglang/srt/layers/attention/intel_amx_backend.py:116), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'intel_xpu': "reads custom_mask only under a topk test (sglang/srt/layers/attention/xpu_backend.py:531), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'llada2_cfg_flashinfer': "sglang/srt/layers/attention/llada2_cfg_flashinfer_backend.py never reads the verify input's custom_mask (causal verify)",
        'minicpm_flashattn': 'unread: sglang.srt.layers.attention.minicpm.backend.MiniCPMSparseBackend is not in the files read',
        'minicpm_flashinfer': 'unread: sglang.srt.layers.attention.minicpm.backend.MiniCPMSparseBackend is not in the files read',
        'nsa': 'unread: sglang.srt.layers.attention.attention_registry.create_dsa_backend is not in the files read',
        'qsa': "sglang/srt/layers/attention/qwen_sparse_attn_backend.py never reads the verify input's custom_mask (causal verify)",
        'torch_native': "sglang/srt/layers/attention/torch_native_backend.py never reads the verify input's custom_mask (causal verify)",
        'trtllm_mha': "sglang/srt/layers/attention/trtllm_mha_backend.py never reads the verify input's custom_mask (causal verify)",
        'trtllm_mla': "sglang/srt/layers/attention/trtllm_mla_backend.py never reads the verify input's custom_mask (causal verify)",
    },
}
# Kinds no backend of this release can verify a tree for: refused, with what would change that.
NO_READER = {}
# The release's default backend (get_default_attn_backend), arm by arm, for MHA and for MLA models:
# (its architecture test: ("call", module, function, None) | ("platform", module, getter, attribute)
# | ("else", None, None, None); the backends the arm picks; whether other conditions share the test;
# where; the backends it picks only for models without attention sinks). Evaluated at run time with the
# release's own predicates, on this machine's GPU.
DEFAULT_ARMS = {
    'mha': (
        (('platform', 'sglang.srt.runtime_context', 'get_platform', 'is_hopper_with_cuda_12_3'), ('fa3',), True, 'sglang/srt/arg_groups/model_override_base.py:305', ()),
        (('platform', 'sglang.srt.runtime_context', 'get_platform', 'is_sm100'), ('fa4', 'trtllm_mha'), True, 'sglang/srt/arg_groups/model_override_base.py:313', ()),
        (('platform', 'sglang.srt.runtime_context', 'get_platform', 'is_hip'), ('aiter',), False, 'sglang/srt/arg_groups/model_override_base.py:326', ()),
        (('call', 'sglang.srt.utils.common', 'is_mps', None), ('torch_native',), False, 'sglang/srt/arg_groups/model_override_base.py:328', ()),
        (('else', None, None, None), ('flashinfer', 'triton'), False, 'sglang/srt/arg_groups/model_override_base.py:332', ('flashinfer',)),
    ),
    'mla': (
        (('platform', 'sglang.srt.runtime_context', 'get_platform', 'is_hopper_with_cuda_12_3'), ('fa3',), False, 'sglang/srt/arg_groups/model_override_base.py:337', ()),
        (('platform', 'sglang.srt.runtime_context', 'get_platform', 'is_sm100'), ('flashinfer',), False, 'sglang/srt/arg_groups/model_override_base.py:339', ()),
        (('platform', 'sglang.srt.runtime_context', 'get_platform', 'is_hip'), ('aiter', 'triton'), False, 'sglang/srt/arg_groups/model_override_base.py:341', ()),
        (('call', 'sglang.srt.utils.common', 'is_mps', None), ('torch_native',), False, 'sglang/srt/arg_groups/model_override_base.py:348', ()),
        (('else', None, None, None), ('triton',), False, 'sglang/srt/arg_groups/model_override_base.py:351', ()),
    ),
}
DEFAULT_UNREAD = {'mha': None, 'mla': None}
# How the release itself tells an MLA model and fetches the model config for its default chain (the
# producers of that chain's arguments: ("call", module, name, where) called with the server arguments,
# or ("method", None, name, where) of them), and the config attribute it tests for attention sinks.
KIND_PROBES = {'mla': ('call', 'sglang.srt.arg_groups.model_override_base', 'use_mla_backend', 'sglang/srt/arg_groups/model_overrides/qwen3_5.py:34'), 'config': ('call', 'sglang.srt.arg_groups.model_override_base', 'model_config_of', 'sglang/srt/arg_groups/model_overrides/qwen3_5.py:34')}
SINKS_ATTRIBUTE = 'has_attention_sinks'
# Per-model override providers that set an attention backend for an architecture (the backends they
# may set, () when computed; where): a backend one of them set is the release's choice, not the user's.
MODEL_OVERRIDES = {'BeamForCausalLM': ((('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/beam.py:31'),), 'DeepseekV32ForCausalLM': ((('dsa',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:103'), (('trtllm_mla',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:185')), 'DeepseekV3ForCausalLM': ((('dsa',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:103'), (('trtllm_mla',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:185')), 'DiffusionGemmaForBlockDiffusion': (((), 'sglang/srt/arg_groups/model_overrides/gemma4.py:39'), ((), 'sglang/srt/arg_groups/model_overrides/gemma4.py:44')), 'Dots3NoteForCausalLM': ((('dsa',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:103'), (('trtllm_mla',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:185')), 'EmbeddingGemma2Model': ((('triton',), 'sglang/srt/arg_groups/model_overrides/embedding_gemma2.py:41'),), 'Exaone4ForCausalLM': ((('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/exaone.py:25'), (('fa3',), 'sglang/srt/arg_groups/model_overrides/exaone.py:27'), (('triton',), 'sglang/srt/arg_groups/model_overrides/exaone.py:29')), 'ExaoneMoEForCausalLM': ((('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/exaone.py:25'), (('fa3',), 'sglang/srt/arg_groups/model_overrides/exaone.py:27'), (('triton',), 'sglang/srt/arg_groups/model_overrides/exaone.py:29')), 'ExaoneMoeForCausalLM': ((('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/exaone.py:25'), (('fa3',), 'sglang/srt/arg_groups/model_overrides/exaone.py:27'), (('triton',), 'sglang/srt/arg_groups/model_overrides/exaone.py:29')), 'Gemma4ForCausalLM': (((), 'sglang/srt/arg_groups/model_overrides/gemma4.py:39'), ((), 'sglang/srt/arg_groups/model_overrides/gemma4.py:44')), 'Gemma4ForConditionalGeneration': (((), 'sglang/srt/arg_groups/model_overrides/gemma4.py:39'), ((), 'sglang/srt/arg_groups/model_overrides/gemma4.py:44')), 'Gemma4UnifiedForConditionalGeneration': (((), 'sglang/srt/arg_groups/model_overrides/gemma4.py:39'), ((), 'sglang/srt/arg_groups/model_overrides/gemma4.py:44')), 'Glm5NextForConditionalGeneration': ((('dsa',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:103'), (('trtllm_mla',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:185')), 'GlmMoeDsaForCausalLM': ((('dsa',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:103'), (('trtllm_mla',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:185')), 'GptOssForCausalLM': ((('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/gpt_oss.py:31'), (('fa3',), 'sglang/srt/arg_groups/model_overrides/gpt_oss.py:33'), (('intel_amx',), 'sglang/srt/arg_groups/model_overrides/gpt_oss.py:35'), (('intel_xpu',), 'sglang/srt/arg_groups/model_overrides/gpt_oss.py:37'), (('aiter',), 'sglang/srt/arg_groups/model_overrides/gpt_oss.py:39'), (('triton',), 'sglang/srt/arg_groups/model_overrides/gpt_oss.py:44')), 'HYV4ForCausalLM': ((('dsa',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:103'), (('trtllm_mla',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:185')), 'HYV4ForCausalLMNextN': ((('dsa',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:103'), (('trtllm_mla',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:185')), 'IQuestQ1ForCausalLM': ((('fa3',), 'sglang/srt/arg_groups/model_overrides/iquest_q1.py:43'),), 'IQuestQ1MTP': ((('fa3',), 'sglang/srt/arg_groups/model_overrides/iquest_q1.py:43'),), 'InklingForConditionalGeneration': (((), 'sglang/srt/arg_groups/model_overrides/inkling.py:73'),), 'InklingForConditionalGenerationMTP': (((), 'sglang/srt/arg_groups/model_overrides/inkling.py:73'),), 'KimiK25ForConditionalGeneration': ((('dsa',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:103'), (('trtllm_mla',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:185')), 'Llama4ForCausalLM': (((), 'sglang/srt/arg_groups/model_overrides/llama4.py:37'),), 'Llama4ForConditionalGeneration': (((), 'sglang/srt/arg_groups/model_overrides/llama4.py:37'),), 'LongcatFlashForCausalLM': ((('dsa',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:103'), (('trtllm_mla',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:185')), 'LongcatFlashForCausalLMNextN': ((('dsa',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:103'), (('trtllm_mla',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:185')), 'MiMoV2FlashForCausalLM': ((('fa4',), 'sglang/srt/arg_groups/model_overrides/mimo_v2.py:28'),), 'MiMoV2ForCausalLM': ((('fa4',), 'sglang/srt/arg_groups/model_overrides/mimo_v2.py:28'),), 'MiniCPMForCausalLM': (((), 'sglang/srt/arg_groups/model_overrides/minicpm.py:37'), (('minicpm_flashinfer', 'minicpm_flashattn'), 'sglang/srt/arg_groups/model_overrides/minicpm.py:58')), 'MiniCPMSALAForCausalLM': (((), 'sglang/srt/arg_groups/model_overrides/minicpm.py:37'), (('minicpm_flashinfer', 'minicpm_flashattn'), 'sglang/srt/arg_groups/model_overrides/minicpm.py:58')), 'MiniMaxM3SparseForCausalLM': ((('fa3',), 'sglang/srt/arg_groups/model_overrides/minimax_m3.py:101'), (('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/minimax_m3.py:121'), (('triton',), 'sglang/srt/arg_groups/model_overrides/minimax_m3.py:126'), (('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/minimax_m3.py:158'), (('fa4',), 'sglang/srt/arg_groups/model_overrides/minimax_m3.py:160'), (('fa3',), 'sglang/srt/arg_groups/model_overrides/minimax_m3.py:180')), 'MiniMaxM3SparseForConditionalGeneration': ((('fa3',), 'sglang/srt/arg_groups/model_overrides/minimax_m3.py:101'), (('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/minimax_m3.py:121'), (('triton',), 'sglang/srt/arg_groups/model_overrides/minimax_m3.py:126'), (('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/minimax_m3.py:158'), (('fa4',), 'sglang/srt/arg_groups/model_overrides/minimax_m3.py:160'), (('fa3',), 'sglang/srt/arg_groups/model_overrides/minimax_m3.py:180')), 'MistralLarge3ForCausalLM': ((('dsa',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:103'), (('trtllm_mla',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:185')), 'NemotronHForCausalLM': ((('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/nemotron_h.py:130'), (('triton',), 'sglang/srt/arg_groups/model_overrides/nemotron_h.py:141'), (('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/nemotron_h.py:148')), 'NemotronHPuzzleForCausalLM': ((('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/nemotron_h.py:130'), (('triton',), 'sglang/srt/arg_groups/model_overrides/nemotron_h.py:141'), (('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/nemotron_h.py:148')), 'NemotronH_Omni_Reasoning_V3': ((('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/nemotron_h.py:130'), (('triton',), 'sglang/srt/arg_groups/model_overrides/nemotron_h.py:141'), (('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/nemotron_h.py:148')), 'Olmo2ForCausalLM': ((('trtllm_mha',), 'sglang/srt/arg_groups/model_overrides/olmo2.py:26'), (('fa3',), 'sglang/srt/arg_groups/model_overrides/olmo2.py:28'), (('triton',), 'sglang/srt/arg_groups/model_overrides/olmo2.py:30')), 'PixtralForConditionalGeneration': ((('dsa',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:103'), (('trtllm_mla',), 'sglang/srt/arg_groups/model_overrides/deepseek_v2.py:185')), 'Qwen4ExpForConditionalGeneration': (((), 'sglang/srt/arg_groups/model_overrides/qwen4_exp.py:70'),)}
# Where the release's CUDA-graph runners capture target verify, with DFlash's verify input: nothing in
# the release's code shows a replay of those graphs carrying the tree mask, so DDTree runs eager.
VERIFY_GRAPH_CAPTURE = ('sglang/srt/model_executor/runner/base_runner.py:515', 'sglang/srt/model_executor/runner/decode_cuda_graph_runner.py:367')

# --- CUDA graphs (worker side) -------------------------------------------------------------------
# Where the release's model runner asks a graph runner whether to replay a CUDA graph for a batch
# ((model-runner attribute, method, where)). The tree verify closes exactly these gates for its one
# forward (prepare and run), as the base forces its own single verify eager; the draft block, prefill,
# idle and fallback steps keep every graph the base keeps.
GRAPH_GATES = (
    ('decode_cuda_graph_runner', 'can_run_graph', 'sglang/srt/model_executor/model_runner.py:1994'),
    ('prefill_cuda_graph_runner', 'can_run_graph', 'sglang/srt/model_executor/model_runner.py:2040'),
)

# --- Draft head (worker side) ----------------------------------------------------------------------
# The base's own LM-head path, read from the release: LoRA unwrapping, the dense-or-quantized test and
# the quantized head's logits, and the rows per head matmul (the base's chunk).
LORA_UNWRAP = ('sglang.srt.lora.layers', 'sglang/srt/lora/layers.py:40')  # (module, where) of unwrap_lora_layer, or None: the release has none
DENSE_CHECK = ('sglang.srt.speculative.dflash_utils', 'sglang/srt/speculative/dflash_utils.py:820')  # (module, where) of is_dense_head_weight, or None
QUANTIZED_HEAD = 'sglang/srt/speculative/dflash_worker_v2.py:1563'  # where the base takes logits from a quantized head, or None
HEAD_CHUNK = 256  # rows per head matmul and per sampling softmax (sglang/srt/speculative/dflash_worker_v2.py:1599)


@contextmanager
def eager_verify(model_runner, forward_batch=None):
    """Inside: every graph gate of GRAPH_GATES answers no, so the release prepares and runs this forward eager.

    The gates are closed on the runner objects only (an instance attribute shadowing the method), and
    reopened on exit whatever happens. `forward_batch.can_run_decode_cuda_graph`, the base's own switch
    (read where DP attention syncs it), is cleared too when the batch has it.
    """
    closed = []
    for attribute, method, _ in GRAPH_GATES:
        runner = getattr(model_runner, attribute, None)
        if runner is None or not callable(getattr(runner, method, None)):
            continue
        own = runner.__dict__.get(method, _MISSING) if hasattr(runner, "__dict__") else _MISSING
        setattr(runner, method, _never)
        closed.append((runner, method, own))
    if forward_batch is not None and hasattr(forward_batch, "can_run_decode_cuda_graph"):
        forward_batch.can_run_decode_cuda_graph = False
    try:
        yield
    finally:
        for runner, method, own in reversed(closed):
            if own is _MISSING:
                delattr(runner, method)
            else:
                setattr(runner, method, own)


_MISSING = object()


def _never(*args, **kwargs) -> bool:
    return False


class DraftHead:
    """The target's LM head as the base drafts with it: `logits(rows)` -> [rows, V] in the head's dtype.

    V = model_config.vocab_size (the head's padding rows excluded). Dense heads: a matmul with
    `weight[:V]` in the weight's dtype (no fp32 copy); quantized heads (no dense weight): the head's own
    `quant_method.apply`, as the base's quantized-head path, padding columns dropped.
    """

    def __init__(self, model_runner):
        head = getattr(model_runner.model, "lm_head", None)
        if LORA_UNWRAP is not None:
            head = getattr(importlib.import_module(LORA_UNWRAP[0]), "unwrap_lora_layer")(head)
        self.vocab = int(model_runner.model_config.vocab_size)
        weight = getattr(head, "weight", None)
        if DENSE_CHECK is not None:
            dense = bool(getattr(importlib.import_module(DENSE_CHECK[0]), "is_dense_head_weight")(weight))
        else:
            dense = isinstance(weight, torch.Tensor) and weight.is_floating_point()
        apply = getattr(getattr(head, "quant_method", None), "apply", None)
        if not dense and (QUANTIZED_HEAD is None or not callable(apply)):
            raise RuntimeError(
                "DDTree on SGLang 0.5.23: the target's lm_head has no dense weight"
                + ("" if QUANTIZED_HEAD is None else " and no quant_method.apply")
                + " (the release's DFlash drafts only through such a head)"
            )
        self.head, self.weight, self.apply = head, (weight[: self.vocab] if dense else None), apply

    def logits(self, rows: torch.Tensor) -> torch.Tensor:
        if self.weight is not None:
            return torch.matmul(rows.to(self.weight.dtype), self.weight.t())
        out = self.apply(self.head, rows, None)
        return out[:, : self.vocab] if out.shape[-1] > self.vocab else out
ATTENTION_SETTINGS = ("attention_backend", "prefill_attention_backend", "decode_attention_backend")


def gpu_arch() -> str:
    """This machine's GPU for messages ("sm90", from torch.cuda.get_device_capability), else "no CUDA device"."""
    try:
        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return f"sm{major}{minor}"
    except (RuntimeError, AssertionError):  # a CUDA setup that cannot answer: the release's predicates still decide
        pass
    return "no CUDA device"


def _holds(test) -> bool:
    """One architecture test of the release, evaluated here with the release's own predicate."""
    kind, module, name, attribute = test
    if kind == "else":
        return True
    found = getattr(importlib.import_module(module), name)
    return bool(found() if kind == "call" else getattr(found(), attribute))


def _probe(probe, settings):
    kind, module, name, _where = probe
    if kind == "method":
        return getattr(settings, name)()
    return getattr(importlib.import_module(module), name)(settings)


def model_kind(settings) -> tuple[tuple[str, ...], str | None, str | None]:
    """(kinds, architecture, why unknown): ("mla",), ("sinks",) or ("mha",) read with the release's own
    producers; every kind when they cannot answer (then a backend must verify a tree for all of them)."""
    every = ("mha", "sinks", "mla")
    if KIND_PROBES["mla"] is None or KIND_PROBES["config"] is None:
        return every, None, "the release's MLA/model-config producers of its default chain were not read"
    try:
        mla = bool(_probe(KIND_PROBES["mla"], settings))
        config = _probe(KIND_PROBES["config"], settings)
    except Exception as exc:  # noqa: BLE001 - the release could not read the model: cannot tell its kind
        return every, None, f"the release could not read the model config ({type(exc).__name__}: {exc})"
    architectures = getattr(getattr(config, "hf_config", None), "architectures", None) or [None]
    sinks = bool(getattr(config, SINKS_ATTRIBUTE, False)) if SINKS_ATTRIBUTE else False
    return ("mla",) if mla else ("sinks",) if sinks else ("mha",), architectures[0], None


def release_defaults(kind: str = "mha") -> list:
    """(backends, where) of each arm of the release's default chain for this kind of model that may pick
    the backend on this machine, in its order: the first arm whose architecture test holds, and the
    later ones while a holding arm has other conditions that may fail. RuntimeError where that cannot be told."""
    family = "mla" if kind == "mla" else "mha"
    if DEFAULT_UNREAD[family] is not None:
        raise RuntimeError(f"the release's default attention backend could not be read ({DEFAULT_UNREAD[family]})")
    reachable = []
    for test, backends, conditional, where, sinks_skip in DEFAULT_ARMS[family]:
        try:
            holds = _holds(test)
        except Exception as exc:  # noqa: BLE001 - any failure of the release's predicate means: cannot tell
            raise RuntimeError(f"the release's architecture test at {where} failed here ({type(exc).__name__}: {exc})") from None
        if holds:
            reachable.append((tuple(b for b in backends if not (kind == "sinks" and b in sinks_skip)), where))
            if not conditional:
                break
    return reachable


def mask_backend(kinds=("mha",)) -> str | None:
    """The backend DDTree asks for: the release's own fallback order (its default chain's else arm)
    among the backends whose verify reads the tree mask for every kind in `kinds`."""
    reading = [b for b in MASK_READING[kinds[0]] if all(b in MASK_READING[k] for k in kinds)]
    order = []
    for kind in kinds:
        for test, backends, _, _, sinks_skip in DEFAULT_ARMS["mla" if kind == "mla" else "mha"]:
            if test[0] == "else":
                order += [b for b in backends if b in reading and not (kind == "sinks" and b in sinks_skip)]
    order += [b for b in reading if b not in order]
    return order[0] if order else None


def _refused(kinds, backend) -> str:
    return "; ".join(dict.fromkeys(NOT_MASK_READING[k].get(backend, "not among the backends this release registers")
                                   for k in kinds if backend not in MASK_READING[k]))


def attention_decision(settings) -> tuple[str | None, str | None]:
    """(backend to force, one line) for resolved server arguments on this machine.

    The model's kind (MHA, MHA with attention sinks, MLA) is read with the release's own producers. A
    backend the release picks for it on this GPU (its default chain, or a per-model override provider
    for its architecture) whose verify does not get the tree mask is to be replaced (the plugin's
    server-args hook does; the worker, built after the target model, can only refuse); a backend the user
    chose that does not, one that cannot be read, or a kind no backend verifies a tree for, is refused.
    (None, None) when the configuration verifies the tree.
    """
    version = "SGLang 0.5.23"
    kinds, architecture, unknown_kind = model_kind(settings)
    label = kinds[0].upper() if len(kinds) == 1 else f"(kind unknown: {unknown_kind})"
    for kind in kinds:
        if kind in NO_READER:
            return None, f"DDTree on {version} refuses this {kind.upper()} target: {NO_READER[kind]}"
    wanted = mask_backend(kinds)
    ask = f"pass --attention-backend {wanted}" if wanted else "no backend of this release reads the tree mask"
    reading = {b for b in MASK_READING[kinds[0]] if all(b in MASK_READING[k] for k in kinds)}
    chosen = {name: getattr(settings, name, None) for name in ATTENTION_SETTINGS}
    wrong = {name: value for name, value in chosen.items() if value is not None and value not in reading}
    unset = chosen["attention_backend"] is None and None in (chosen["prefill_attention_backend"], chosen["decode_attention_backend"])
    if not wrong and not unset:
        return None, None
    try:
        picked, unknown = [(b, where) for kind in kinds for backends, where in release_defaults(kind) for b in backends], None
    except RuntimeError as exc:
        picked, unknown = [], exc
    for backends, where in MODEL_OVERRIDES.get(architecture, ()):
        current = chosen["attention_backend"]
        picked += [(b, f"{where}, the release's override for {architecture}") for b in backends or (current,) if b is not None]
    if unset and not wrong:
        if unknown is not None:
            return None, f"DDTree on {version} cannot tell the default attention backend on this GPU ({gpu_arch()}): {unknown}; {ask}"
        causal = [(b, where) for b, where in picked if b not in reading]
        if not causal:
            return None, None
        backend, where = causal[0]
    elif list(wrong) == ["attention_backend"] and any(b == wrong["attention_backend"] for b, _ in picked):
        backend = wrong["attention_backend"]
        where = next(w for b, w in picked if b == backend)
    else:
        name, value = next(iter(wrong.items()))
        return None, (f"DDTree on {version} needs an attention backend whose verify reads the tree mask for this {label} "
                      f"target ({', '.join(sorted(reading)) or 'none'}); got {name}={value}: {_refused(kinds, value)}; {ask}")
    line = (f"DDTree on {version}: the release's default attention backend on this GPU ({gpu_arch()}) for this {label} target "
            f"is {backend} ({where}), whose verify does not read the tree mask ({_refused(kinds, backend)}); {ask}")
    return wanted, line


def ddtree_server_args(server_args) -> None:
    """The plugin's server-args hook: where the release's backend for this model on this GPU would not
    verify the tree, set one that does (logged); anything else that cannot verify a tree raises, one line."""
    force, line = attention_decision(server_args)
    if force is not None:
        logger.warning("%s: using --attention-backend %s", line.rsplit("; ", 1)[0], force)
        server_args.attention_backend = force
    elif line is not None:
        raise ValueError(line)
# --- end attention ------------------------------------------------------------------------------------


def _settings(server_args):
    """The resolved server arguments, read as the release reads them (sglang/srt/speculative/dflash_worker_v2.py:1325)."""
    from sglang.srt.arg_groups.overrides import resolving_view

    return resolving_view(server_args)


def _cuda_graphs_on(settings) -> bool:
    if getattr(settings, "disable_cuda_graph", False):
        return False
    decode = getattr(getattr(settings, "cuda_graph_config", None), "decode", None)  # per-phase graph settings, where the release has them
    if decode is not None:
        backend = getattr(decode, "backend", None)
        return str(getattr(backend, "value", backend)).lower() != "disabled"
    return True


def ddtree_refusal(server_args, budget: int) -> str | None:
    """One line naming why this server configuration cannot run DDTree exactly, or None.

    Read from the server arguments alone, so the worker refuses before the base loads any model.
    """
    version = "SGLang 0.5.23"
    server_args = _settings(server_args)
    tp_size = int(getattr(server_args, "tp_size", 1) or 1)
    if tp_size > 1:
        return (
            f"DDTree on {version} refuses tensor parallelism (tp_size={tp_size}): the draft logits come from the "
            "local LM-head shard and per-node sampling is not synchronised across ranks; run with --tp-size 1"
        )
    if _cuda_graphs_on(server_args) and not GRAPH_GATES:
        # the tree verify must run eager (the release's verify graphs are captured with DFlash's verify input,
        # not the tree mask), and no graph gate of this release's model runner could be read to close for it
        where = ", ".join(VERIFY_GRAPH_CAPTURE) or "its CUDA-graph runner (capture site unread)"
        return (
            f"DDTree on {version} refuses CUDA graphs: the release captures verify graphs with DFlash's verify input "
            f"({where}) and sgl-scan could not read where its model runner decides a replay, so the tree verify cannot "
            "be kept eager; run with --disable-cuda-graph"
        )
    return attention_decision(server_args)[1]  # a backend to force is refused here: the target model is already built


@dataclass(frozen=True)
class TreeBatch:
    """The trees of one decode step, padded to width W = budget + 1."""

    tokens: torch.Tensor  # [B, W] int64 (column 0: the last bonus token)
    parents: torch.Tensor  # [B, W] int64, -1 for the root and padding
    sizes: torch.Tensor  # [B] nodes per tree
    mask: torch.Tensor  # [B, W, W] bool, ancestor-only (padding rows see only themselves)
    depths: torch.Tensor  # [B, W] int64
    positions: torch.Tensor  # [B, W] int64: committed length + depth
    max_depth: int


def build_tree_batch(
    draft_logits: torch.Tensor, root_tokens: torch.Tensor, committed_lens: torch.Tensor, budget: int, topk: int | None = None
) -> TreeBatch:
    """Top-K log-probs, best-first trees, ancestor masks and positions for a batch.

    K per depth = tree.candidates(budget, V, topk): min(budget, V) as the DDTree reference, V being the
    draft logits' vocabulary (the target's, without the LM head's padding rows), `topk` an optional cap.
    """
    logprobs, ids = ddtree.topk_logprobs(draft_logits, ddtree.candidates(budget, draft_logits.shape[-1], topk))
    return build_tree_batch_topk(logprobs, ids, root_tokens, committed_lens, budget)


def build_tree_batch_topk(
    logprobs: torch.Tensor, ids: torch.Tensor, root_tokens: torch.Tensor, committed_lens: torch.Tensor, budget: int
) -> TreeBatch:
    """build_tree_batch from top-K log-probs and ids [B, L, K] (ddtree_draft_topk)."""
    max_depth = int(logprobs.shape[1])
    kernels = _kernels() if logprobs.is_cuda or os.environ.get("TRITON_INTERPRET") == "1" else None
    if kernels is not None:
        tokens, parents, _, sizes = kernels.best_first_build(logprobs, ids, root_tokens, budget)
        mask, depths, positions = kernels.tree_mask(parents, sizes, committed_lens, max_depth)
        return TreeBatch(tokens, parents, sizes, mask, depths, positions, max_depth)
    trees = [ddtree.build_tree(logprobs[b], ids[b], int(root_tokens[b]), budget) for b in range(logprobs.shape[0])]
    tokens, parents, sizes = ddtree.pack_trees(trees, budget + 1)
    depths = torch.zeros_like(parents)
    for b, t in enumerate(trees):
        depths[b, : t.size] = t.depths
    positions = depths + committed_lens.to("cpu", torch.int64).unsqueeze(1)
    mask = ddtree.padded_masks(trees, budget + 1)
    device = logprobs.device
    return TreeBatch(tokens.to(device), parents.to(device), sizes.to(device), mask.to(device), depths.to(device), positions.to(device), max_depth)


def walk_trees(trees: TreeBatch, choice: torch.Tensor):
    """Accepted node indices [B, W] (-1 padded, root first), accepted counts [B], bonus tokens [B]."""
    kernels = _kernels() if choice.is_cuda or os.environ.get("TRITON_INTERPRET") == "1" else None
    if kernels is not None:
        return kernels.greedy_walk(trees.tokens, trees.parents, choice, trees.sizes, trees.max_depth)
    batch, width = trees.tokens.shape
    accepted = torch.full((batch, width), -1, dtype=torch.int64)
    counts = torch.zeros((batch,), dtype=torch.int64)
    bonus = torch.zeros((batch,), dtype=torch.int64)
    for b in range(batch):
        n = int(trees.sizes[b])
        one = ddtree.DraftTree(trees.tokens[b, :n].cpu(), trees.parents[b, :n].cpu(), trees.depths[b, :n].cpu())
        path, token = ddtree.greedy_walk(one, choice[b, :n].cpu())
        accepted[b, : len(path)] = torch.tensor(path)
        counts[b], bonus[b] = len(path), token
    return accepted.to(choice.device), counts.to(choice.device), bonus.to(choice.device)


class DDTreeWorker(DFlashWorkerV2):
    """DFlash drafting, verified as a best-first draft tree (DDTree) instead of a single block."""

    def __init__(self, server_args, gpu_id, nccl_port, target_worker):
        if ENGINE_GLUE_MISSING:
            raise RuntimeError("DDTree cannot run on SGLang 0.5.23: " + "; ".join(ENGINE_GLUE_MISSING))
        refusal = ddtree_refusal(server_args, resolve_budget(server_args))
        if refusal is not None:  # before the base loads any model
            raise RuntimeError(refusal)
        budget = resolve_budget(server_args)
        draft_width = drafter_block_size(server_args)
        reserved = verify_width_setting(server_args)
        if reserved is None or budget + 1 > reserved or draft_width > reserved:
            # The verify window and the draft block are read from the scheduler's reservation
            # (sglang/srt/speculative/dflash_worker_v2.py:3002): slots past it belong to other requests or to no one.
            raise RuntimeError(
                f"DDTree on SGLang 0.5.23: the tree verifies budget + 1 = {budget + 1} tokens per request and the "
                f"drafter drafts blocks of {draft_width}, but speculative_num_draft_tokens = {reserved} (what the scheduler reserves "
                f"per request and step); launch with --speculative-num-draft-tokens {max(budget + 1, draft_width)} "
                f"and a budget of at least {draft_width - 1}"
            )
        with draft_width_scope(server_args, draft_width):  # the base drafts on the drafter's trained block
            super().__init__(server_args=server_args, gpu_id=gpu_id, nccl_port=nccl_port, target_worker=target_worker)
        self.ddtree_draft_width = draft_width
        self.speculative_num_draft_tokens = reserved  # the base set its draft block; a DDTree step verifies `reserved` tokens
        absent = [name for name in ENGINE_ATTRIBUTES if not hasattr(self, name)]
        if absent:
            raise RuntimeError(f"DDTree: DFlashWorkerV2 has no attribute(s) {absent} the tree verify uses")
        self.ddtree_budget = resolve_budget(getattr(self, "server_args", None))
        self.ddtree_topk = resolve_topk(self.ddtree_budget)
        self.ddtree_fallbacks = Counter()  # reason -> decode batches run by the release's own step
        self.ddtree_check_target()

    def alloc_memory_pool(self, *args, **kwargs):
        """DFlashWorkerV2.alloc_memory_pool (sglang/srt/speculative/dflash_worker_v2.py:665) builds the draft side: on the drafter's block."""
        with draft_width_scope(getattr(self, "server_args", None), self.ddtree_draft_width):
            return super().alloc_memory_pool(*args, **kwargs)

    def init_attention_backends(self, *args, **kwargs):
        """DFlashWorkerV2.init_attention_backends (sglang/srt/speculative/dflash_worker_v2.py:685) builds the draft side: on the drafter's block."""
        with draft_width_scope(getattr(self, "server_args", None), self.ddtree_draft_width):
            return super().init_attention_backends(*args, **kwargs)

    def init_cuda_graphs(self, *args, **kwargs):
        """DFlashWorkerV2.init_cuda_graphs (sglang/srt/speculative/dflash_worker_v2.py:698) builds the draft side: on the drafter's block."""
        with draft_width_scope(getattr(self, "server_args", None), self.ddtree_draft_width):
            return super().init_cuda_graphs(*args, **kwargs)

    def forward_batch_generation(self, batch, on_publish=None, grammar_barrier=None, pp_proxy_tensors=None):
        """Decode batches run a DDTree step; prefill and idle batches, and decode batches the tree cannot run exactly, the DFlash path."""
        if not self.ddtree_is_decode(batch):
            return super().forward_batch_generation(batch=batch, on_publish=on_publish, grammar_barrier=grammar_barrier, pp_proxy_tensors=pp_proxy_tensors)
        reason = self.ddtree_fallback_reason(batch)
        if reason is not None:
            if not self.ddtree_fallbacks[reason]:
                logger.warning("DDTree: decode batches with %s run the DFlash step (no tree)", reason)
            self.ddtree_fallbacks[reason] += 1
            return super().forward_batch_generation(batch=batch, on_publish=on_publish, grammar_barrier=grammar_barrier, pp_proxy_tensors=pp_proxy_tensors)
        return self.ddtree_decode(batch=batch, on_publish=on_publish, grammar_barrier=grammar_barrier, pp_proxy_tensors=pp_proxy_tensors)

    @staticmethod
    def ddtree_fallback_reason(batch) -> str | None:
        """Why this decode batch runs the release's own DFlash step instead of a tree; None: it runs a tree.

        The tree step chooses the target's tokens from the raw verify logits (argmax, or a sample at the request's temperature)
        and returns no logprobs; a batch that needs more goes to the release.
        """
        if getattr(batch, "return_logprob", False):
            return "logprobs"
        if getattr(batch, "has_grammar", False):
            return "grammar constraints"
        info = getattr(batch, "sampling_info", None)
        if info is None:
            return None
        if getattr(info, "has_custom_logit_processor", False):
            return "a custom logit processor"
        penalizer = getattr(info, "penalizer_orchestrator", None)
        if penalizer is not None and getattr(penalizer, "is_required", False):
            return "penalties"
        for name in LOGIT_EDITS:
            if getattr(info, name, None) is not None:
                return name
        if getattr(info, "is_all_greedy", False):
            return None
        if not TREE_SAMPLING:
            return "sampling (not all greedy)"
        if any(getattr(info, name, True) for name in ("need_top_k_sampling", "need_top_p_sampling", "need_min_p_sampling")):
            return "top-k, top-p or min-p sampling"
        return None

    def ddtree_check_target(self) -> None:
        """Refuse a target attention backend that needs a base step after the verify which the tree commit does not run."""
        backend = getattr(getattr(getattr(self, "target_worker", None), "model_runner", None), "attn_backend", None)
        if backend is not None and hasattr(backend, "update_mamba_state_after_mtp_verify"):
            # DFlashWorkerV2._update_target_mamba_state_after_verify (sglang/srt/speculative/dflash_worker_v2.py:2085)
            raise RuntimeError(
                "DDTree on SGLang 0.5.23 cannot run this target: its attention backend has "
                "update_mamba_state_after_mtp_verify(), so DFlashWorkerV2 runs _update_target_mamba_state_after_verify() "
                "after each verify, which the tree commit does not (a tree verify cannot advance recurrent state)"
            )

    @staticmethod
    def ddtree_is_decode(batch) -> bool:
        mode = getattr(batch, "forward_mode", None)
        if mode is None or getattr(batch, "is_extend_in_batch", False):
            return False
        return bool(mode.is_decode())

    def ddtree_decode(self, batch, *args, **kwargs):
        """draft block -> top-K -> tree -> verify layout -> target forward -> walk -> commit."""
        self.ddtree_check_target()  # the backend may be set up after construction
        logprobs, ids, root_tokens, committed_lens = self.ddtree_draft_topk(batch, self.ddtree_budget, self.ddtree_topk)
        trees = build_tree_batch_topk(logprobs, ids, root_tokens, committed_lens, self.ddtree_budget)
        host = getattr(batch, "seq_lens_cpu", None)  # a host copy of the committed lengths sizes the mask without a device sync
        total = int(((host.to(torch.int64) + trees.tokens.shape[1]) * trees.tokens.shape[1]).sum()) if host is not None else None
        custom_mask = ddtree.verify_custom_mask(trees.mask, committed_lens, total)
        target_logits, verified = self.ddtree_target_verify(batch, trees, custom_mask, *args, **kwargs)
        choice = self.ddtree_target_choice(batch, target_logits.view(trees.tokens.shape[0], trees.tokens.shape[1], -1))
        accepted, counts, bonus = walk_trees(trees, choice)
        if os.environ.get(TRACE_ENV):  # the GPU check's logits-level losslessness (host reads: only when tracing)
            ddtree_trace(os.environ[TRACE_ENV], batch, trees, target_logits, accepted, counts)
        return self.ddtree_commit(batch, trees, verified, accepted, counts, bonus, *args, **kwargs)

    @staticmethod
    def ddtree_target_choice(batch, target_logits: torch.Tensor) -> torch.Tensor:
        """The target's token after each node [B, W]: argmax when all greedy, else its own sample per request."""
        info = getattr(batch, "sampling_info", None)
        if info is None or getattr(info, "is_all_greedy", False):
            return torch.argmax(target_logits, dim=-1)
        temperatures = getattr(info, "temperatures", None)
        if temperatures is None:
            raise RuntimeError("DDTree: a batch that is not all greedy carries no sampling_info.temperatures")
        # batched over requests (no per-request loop or host sync): argmax where T = 0, else a sample at T
        temps = temperatures.view(-1).to(target_logits.device, torch.float32)
        greedy = torch.argmax(target_logits, dim=-1)
        bs, width, vocab = target_logits.shape
        scale = torch.where(temps > 0, temps, torch.ones_like(temps)).repeat_interleave(width).view(-1, 1)
        rows = target_logits.reshape(bs * width, vocab)
        sampled = torch.empty((bs * width,), dtype=torch.int64, device=target_logits.device)
        for start in range(0, bs * width, HEAD_CHUNK):  # one chunk's fp32 softmax at a time, not [B * W, V]
            end = min(start + HEAD_CHUNK, bs * width)
            probs = torch.softmax(rows[start:end].float() / scale[start:end], dim=-1)
            sampled[start:end] = torch.multinomial(probs, 1).view(-1)
        return torch.where((temps > 0).view(-1, 1), sampled.view(bs, width), greedy)

    def ddtree_head(self) -> DraftHead:
        """The target's LM head through the base's own head path (LoRA unwrapped, quantized heads by their kernel)."""
        return DraftHead(self.target_worker.model_runner)

    def ddtree_draft_logits(self, batch):
        """Full-vocabulary draft logits [B, L, V], root tokens [B], committed lengths [B] (tests and checks only:
        the decode step takes top-K per chunk of rows, ddtree_draft_topk)."""
        hidden, roots, committed = self.ddtree_draft_hidden(batch)
        head = self.ddtree_head()
        return head.logits(hidden.reshape(-1, hidden.shape[-1])).view(hidden.shape[0], hidden.shape[1], -1), roots, committed

    def ddtree_draft_topk(self, batch, budget: int, cap: int | None):
        """Top-K draft log-probs and ids [B, L, K], roots [B], committed lengths [B], K = candidates(budget, V, cap).

        The head runs on HEAD_CHUNK rows at a time, in its own dtype; only one chunk's log-softmax is fp32.
        """
        hidden, roots, committed = self.ddtree_draft_hidden(batch)
        head = self.ddtree_head()
        k = ddtree.candidates(budget, head.vocab, cap)
        logprobs, ids = ddtree.topk_logprobs_chunked(head.logits, hidden, k, HEAD_CHUNK)
        return logprobs, ids, roots, committed

    def ddtree_draft_hidden(self, batch):
        """The draft block's hidden states of positions 1.. [B, L, H], root (last bonus) tokens [B], committed lengths [B].

        L = the drafter's block - 1 (the base drafts on its trained block, see draft_width_scope); V = the
        target's vocabulary (model_config.vocab_size), without the LM head's padding rows.

        Runs the release's own draft block (sglang/srt/speculative/dflash_worker_v2.py:2688) and stops it right after
        `self.draft_model_runner.forward`, before it samples (the draft forward keeps the CUDA graphs the
        base captured for it).
        Reserves the verify window `batch.out_cache_loc` (B * (budget + 1) slots) from the
        scheduler's req_to_token reservation, as the base does for its block (sglang/srt/speculative/dflash_worker_v2.py:2542).
        """
        draft_input = batch.spec_info
        self.ddtree_draft_input = draft_input
        roots = getattr(draft_input, "bonus_tokens").reshape(-1).to(torch.int64)
        committed = batch.seq_lens.clone()
        runner = self.draft_model_runner
        own = runner.__dict__.get("forward") if hasattr(runner, "__dict__") else None
        original = runner.forward

        def stop_after_forward(forward_batch, *args, **kwargs):
            raise _DraftBlockDone(original(forward_batch, *args, **kwargs))

        runner.forward = stop_after_forward
        try:
            super().forward_batch_generation(batch)
        except _DraftBlockDone as done:
            output = done.output
        else:
            raise RuntimeError("DDTree: DFlashWorkerV2.forward_batch_generation returned without running self.draft_model_runner.forward")
        finally:
            if own is None:
                del runner.forward
            else:
                runner.forward = own
        hidden = getattr(getattr(output, "logits_output", None), "hidden_states", None)
        if hidden is None:
            raise RuntimeError("DDTree: the draft block returned no hidden states")
        bs = int(roots.shape[0])
        hidden = hidden.view(bs, -1, hidden.shape[-1])[:, 1:, :]
        width = self.ddtree_budget + 1
        batch.out_cache_loc = assign_extend_cache_locs_func(
            req_pool_indices=batch.req_pool_indices,
            req_to_token=batch.req_to_token_pool.req_to_token,
            start_offset=committed,
            end_offset=committed + width,
            batch_size=bs,
            draft_token_num=width,
            device=committed.device,
        ).reshape(-1)
        return hidden, roots, committed

    def ddtree_target_verify(self, batch, trees: TreeBatch, custom_mask: torch.Tensor, *args, **kwargs):
        """Target logits [B * W, V] for the flattened tree, and the release's logits output (hidden states).

        The tree goes through the release's own verify input (sglang/srt/speculative/dflash_info.py:27) with the
        ancestor-only `custom_mask`, so every backend that honours DFlash's verify mask sees the tree.
        """
        width = int(trees.tokens.shape[1])
        slots = getattr(batch, "out_cache_loc", None)
        if slots is None or slots.numel() != trees.tokens.numel():
            raise RuntimeError(
                f"DDTree verify needs batch.out_cache_loc to hold the {trees.tokens.numel()} tree slots "
                "(B * (budget + 1)), reserved by ddtree_draft_logits"
            )
        host = getattr(batch, "seq_lens_cpu", None)
        # the tree window's KV-location plan, planned as the base plans its block's (sglang/srt/speculative/dflash_worker_v2.py:2588)
        kv_plan = self.target_worker.model_runner.kv_index_translator.plan(
            req_pool_indices=batch.req_pool_indices,
            seq_lens=batch.seq_lens,
            seq_lens_cpu=host,
            write_virtual=slots,
            read_extent=width,
        )
        self.ddtree_kv_plan = kv_plan
        verify_input = DFlashVerifyInput(
            draft_token=trees.tokens.reshape(-1),
            positions=trees.positions.reshape(-1),
            draft_token_num=width,
            custom_mask=custom_mask,
            kv_loc_plan=kv_plan,
        )
        # host-side lengths cover the tree window while the release plans the verify (the base widens them by
        # its block the same way), then go back to the committed lengths
        saved = (getattr(batch, "seq_lens_cpu", None), getattr(batch, "seq_lens_sum", None))
        if saved[0] is not None:
            batch.seq_lens_cpu = saved[0] + width
            batch.seq_lens_sum = int(batch.seq_lens_cpu.sum())  # a host tensor: no device sync
        # eager, prepare included (the release plans graph or eager attention there): the only forward without graphs
        with eager_verify(self.target_worker.model_runner):
            try:
                prepared = verify_input.prepare_for_verify(batch, self.target_worker)
            finally:
                if saved[0] is not None:
                    batch.seq_lens_cpu, batch.seq_lens_sum = saved
            forward_batch = prepared[0] if isinstance(prepared, tuple) else prepared
            if hasattr(forward_batch, "can_run_decode_cuda_graph"):
                forward_batch.can_run_decode_cuda_graph = False  # the base's own switch for its single eager verify
            verify_input.custom_mask = custom_mask  # a prepare step may reset or rebuild it as a causal block mask
            result = self.target_worker.forward_batch_generation(None, forward_batch=forward_batch, is_verify=True)
        self.ddtree_target_result = result
        output = getattr(result, "logits_output", None)
        logits = getattr(output, "next_token_logits", None)
        if logits is None:
            raise RuntimeError("DDTree verify: the target's result carries no logits_output.next_token_logits")
        return logits, output

    def ddtree_commit(self, batch, trees: TreeBatch, verified, accepted, counts, bonus, *args, **kwargs):
        """Keep the KV and hidden states of the accepted nodes, free the rest, return the batch result.

        The accepted nodes' KV moves to the front of each request's window with
        `move_accept_tokens_to_target_kvcache` (sglang/srt/speculative/spec_utils.py:859); the rest of the window stays the
        scheduler's reservation, as after the base's linear verify. Their target hidden states go
        to the draft KV through `_append_target_hidden_to_draft_kv_by_loc` (sglang/srt/speculative/dflash_worker_v2.py:2986).
        """
        bs, width = int(trees.tokens.shape[0]), int(trees.tokens.shape[1])
        order = path_first_order(accepted, counts, width)
        tokens = trees.tokens.gather(1, order)
        hidden = verified.hidden_states
        if hidden is None:
            raise RuntimeError("DDTree commit needs the target verify's hidden states")
        hidden = hidden.view(bs, width, -1)
        hidden = hidden.gather(1, order.unsqueeze(-1).expand(-1, -1, hidden.shape[-1])).reshape(bs * width, -1)
        target = getattr(self, "ddtree_target_result", None)
        values = {
            "logits_output": verified,
            "can_run_cuda_graph": bool(getattr(target, "can_run_cuda_graph", False)),
            "speculative_num_draft_tokens": width,
            "routed_experts_output": getattr(target, "routed_experts_output", None),
            "indexer_topk_output": getattr(target, "indexer_topk_output", None),
        }
        columns = torch.arange(width, device=order.device).unsqueeze(0)
        base_rows = (torch.arange(bs, device=order.device) * width).unsqueeze(1)
        kept = columns < counts.unsqueeze(1)
        accept_index = torch.where(kept, order + base_rows, torch.full_like(order, -1))
        move_accept_tokens_to_target_kvcache(batch, accept_index, counts - 1, batch.token_to_kv_pool_allocator)
        commit_lens = counts.to(torch.int32)
        committed = trees.positions[:, 0].to(torch.int64)
        new_seq_lens = committed + counts.to(torch.int64)
        window = batch.out_cache_loc
        # the accepted path (at most the drafter's block: depth <= block - 1, plus the root) leads each row: the draft
        # KV append gets the block-wide window the base was built for
        span = min(width, self.ddtree_draft_width)
        write_ids = self._draft_write_ids(self.ddtree_kv_plan)  # the draft KV's ids for the tree window, as the base reads its own
        self._append_target_hidden_to_draft_kv_by_loc(
            target_hidden=hidden.view(bs, width, -1)[:, :span].reshape(bs * span, -1),
            cache_loc=write_ids.view(bs, width)[:, :span].reshape(-1),
            cache_loc_2d=write_ids.view(bs, width)[:, :span].contiguous(),
            positions=(committed.unsqueeze(1) + columns[:, :span]).reshape(-1),
            commit_lens=commit_lens,
        )
        verified.hidden_states = None
        # the accepted path after the root, then the bonus token; batched (no per-request loop)
        last = (counts.to(torch.int64) - 1).unsqueeze(1)
        shifted = torch.cat([tokens[:, 1:], torch.zeros_like(tokens[:, :1])], dim=1).to(torch.int64)
        out_tokens = torch.where(columns < last, shifted, torch.zeros_like(shifted))
        out_tokens.scatter_(1, last, bonus.to(torch.int64).unsqueeze(1))
        publish = kwargs.get("on_publish")
        if publish is not None:
            publish(new_seq_lens)
        values.update(
            next_token_ids=out_tokens.reshape(-1),
            accept_lens=commit_lens,
            new_seq_lens=new_seq_lens,
            next_draft_input=self._make_next_draft_input_decode(bonus_tokens=bonus, new_seq_lens=new_seq_lens),
        )
        # host values (a device sync each), read only where the release's result takes them
        values.update(
            num_accepted_drafts=lambda: int((counts - 1).sum()),
            num_accepted_drafts_per_req_cpu=lambda: (counts - 1).tolist(),
        )
        return GenerationBatchResult(**{name: values[name]() if callable(values[name]) and name in HOST_VALUES else values[name] for name in RESULT_KEYWORDS})
