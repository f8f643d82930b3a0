"""DDTree worker for SGLang 0.5.11.

`DDTreeWorker` subclasses `sglang.srt.speculative.dflash_worker.DFlashWorker` (sglang/srt/speculative/dflash_worker.py:50) and replaces its decode path
(`forward_batch_generation`, sglang/srt/speculative/dflash_worker.py:1112): draft block -> top-K -> tree -> verify input with the
ancestor mask -> target forward -> greedy walk -> commit. Prefill and idle batches go to the DFlash
worker unchanged, so the drafter's KV and hidden-state bookkeeping stay the release's own.

The target verify is wired to the release: `DFlashVerifyInput` (sglang/srt/speculative/dflash_info.py:148) carries the
tree tokens, positions and the ancestor-only custom mask; `prepare_for_verify` (sglang/srt/speculative/dflash_info.py:178)
prepares the batch and `self.target_worker.forward_batch_generation` (sglang/srt/managers/tp_worker.py:445)
runs it with is_verify=True.

The draft step and the commit are wired to the release as well (spec v1: the verify input's prepare and accept manage the window):
- draft block: DFlashWorker._prepare_for_speculative_decoding() runs self.draft_model_runner.forward(forward_batch); DDTree stops it there (sglang/srt/speculative/dflash_worker.py:660)
- root token: batch.spec_info.verified_id (DFlashDraftInput) (sglang/srt/speculative/dflash_info.py:70)
- hidden-state handoff: batch.spec_info.target_hidden / .ctx_lens (sglang/srt/speculative/dflash_info.py:76)
- commit: DFlashVerifyInput.verify(batch=, logits_output=, page_size=) frees the uncommitted window slots, maps the kept ones and gathers their hidden states (sglang/srt/speculative/dflash_info.py:312)
- draft KV: self._append_target_hidden_to_draft_kv(batch, draft_input) after the commit, as the base does (sglang/srt/speculative/dflash_worker.py:1238)
- result: GenerationBatchResult(logits_output=, next_token_ids=, num_accepted_drafts=, num_accepted_drafts_per_req_cpu=, can_run_cuda_graph=), as the decode path returns (sglang/srt/speculative/dflash_worker.py:1250)
- pages: the path-first window needs server_args.page_size == 1; DDTreeWorker() refuses any other value (the release's accept frees and maps whole pages, which a reordered window breaks) (sglang/srt/server_args.py:377)
- skipped base step: self._update_target_mamba_state_after_verify() runs when the target's attention backend has update_mamba_state_after_mtp_verify(); the tree commit does not, so DDTree refuses such a backend (sglang/srt/speculative/dflash_worker.py:1066)

Decode batches the tree step cannot run exactly go to the release's own DFlash step
(`ddtree_fallback_reason`): logprobs, grammar, custom logit processors, penalties, logit bias and
other logit edits the release applies before it accepts, and
every batch that is not all greedy (spec v1 hands the walk to the release's accept as one-hot
logits, which only its greedy rule is sure to take as given).
`DDTreeWorker()` refuses what the commit would silently corrupt:
- a KV page size other than 1 (server_args.page_size);
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

from sglang.srt.speculative.dflash_worker import DFlashWorker
from sglang.srt.speculative.dflash_info import DFlashVerifyInput
from sglang.srt.model_executor.forward_batch_info import ForwardMode
from sglang.srt.managers.scheduler import GenerationBatchResult

from . import tree as ddtree

BUDGET_ENV = "SGLANG_DDTREE_BUDGET"
TRACE_ENV = "SGLANG_DDTREE_TRACE"  # a folder: each tree step's accepted paths and their verify log-probs go there
TOPK_ENV = "SGLANG_DDTREE_TOPK"
logger = logging.getLogger(__name__)

# What this SGLang lacks for the DDTree target verify (from the snapshot's facts); non-empty: the
# worker refuses to construct.
ENGINE_GLUE_MISSING = (
)
# The keywords the base decode path builds its result with (sglang/srt/speculative/dflash_worker.py:1250).
RESULT_KEYWORDS = ('logits_output', 'next_token_ids', 'num_accepted_drafts', 'num_accepted_drafts_per_req_cpu', 'can_run_cuda_graph')
# Result values read on the host (a device sync), computed only when RESULT_KEYWORDS takes them.
HOST_VALUES = ("num_accepted_drafts", "num_accepted_drafts_per_req_cpu")
# Attributes of the base worker the glue reads (checked when the worker is constructed).
ENGINE_ATTRIBUTES = ('target_worker', 'page_size', 'draft_model_runner')
# Sampling-info fields that, when set, mean the release edits the verify logits before it accepts;
# the tree step reads the raw logits, so such batches run the release's own step.
LOGIT_EDITS = ("logit_bias", "acc_linear_penalties", "grammar_mask", "sampling_mask_batch_indices")
# Spec v1: the walk reaches the release's accept (sglang/srt/speculative/dflash_info.py:312) as one-hot logits.
# Its greedy rule (argmax) takes them as given; its sampling rule draws uniform numbers against
# thresholds and may accept a token the walk rejected, so non-greedy batches run the release's step.
TREE_SAMPLING = False
# Spec v1 lays each verify window out accepted-path-first before the release's accept frees and maps
# it; with pages of more than one token that accept works on whole pages (sglang/srt/speculative/dflash_info.py:312),
# so a reordered window would free or map KV pages still in use (sglang/srt/server_args.py:377).
PAGE_REFUSAL = (
    "DDTree on SGLang 0.5.11 needs server_args.page_size == 1, got {!r}: its tree commit lays "
    "each verify window out accepted-path-first, which breaks the page-contiguous KV layout of pages "
    "larger than one token; run with a page size of 1"
)


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
    model's config (sglang/srt/server_args.py:3397; sglang/srt/speculative/dflash_worker.py:166). DDTree drafts on it (depth =
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
    saved = getattr(server_args, "speculative_num_draft_tokens", None)
    server_args.speculative_num_draft_tokens = int(width)
    try:
        yield
    finally:
        server_args.speculative_num_draft_tokens = saved


def verify_width_setting(server_args) -> int | None:
    """speculative_num_draft_tokens as the release reads it: the tree's verify width, budget + 1 (what the scheduler reserves per request and step)."""
    value = getattr(_settings(server_args), "speculative_num_draft_tokens", None)
    return int(value) if value is not None else None


# --- attention: per model kind (sgl-scan's attention plan; kept apart from the decode code) ---------
# The attention facts of SGLang 0.5.11, read from its source by sgl-scan (no fixed table), per model
# kind: "mha" (Llama, Qwen), "sinks" (MHA with learned attention sinks: gpt-oss), "mla" (DeepSeek-V3, Kimi-K2).
# Backends whose target verify hands the verify input's custom mask (the tree mask) on to its kernel, and where:
MASK_READING = {
    'mha': {
        'aiter': "AiterAttnBackend.init_forward_metadata reads spec_info.generate_attn_arg_prefill (the verify input's mask) at sglang/srt/layers/attention/aiter_backend.py:884 (registered at sglang/srt/layers/attention/attention_registry.py:66)",
        'flashinfer': "FlashInferIndicesUpdaterPrefill.call_begin_forward reads spec_info.generate_attn_arg_prefill (the verify input's mask) at sglang/srt/layers/attention/flashinfer_backend.py:1439 (registered at sglang/srt/layers/attention/attention_registry.py:32)",
        'triton': 'TritonAttnBackend.init_forward_metadata reads custom_mask at sglang/srt/layers/attention/triton_backend.py:374 (registered at sglang/srt/layers/attention/attention_registry.py:96)',
        'wave': 'WaveAttnBackend.init_forward_metadata reads custom_mask at sglang/srt/layers/attention/wave_backend.py:274 (registered at sglang/srt/layers/attention/attention_registry.py:73)',
    },
    'sinks': {
        'aiter': "AiterAttnBackend.init_forward_metadata reads spec_info.generate_attn_arg_prefill (the verify input's mask) at sglang/srt/layers/attention/aiter_backend.py:884 (registered at sglang/srt/layers/attention/attention_registry.py:66)",
        'triton': 'TritonAttnBackend.init_forward_metadata reads custom_mask at sglang/srt/layers/attention/triton_backend.py:374 (registered at sglang/srt/layers/attention/attention_registry.py:96)',
    },
    'mla': {
        'aiter': "AiterAttnBackend.init_forward_metadata reads spec_info.generate_attn_arg_prefill (the verify input's mask) at sglang/srt/layers/attention/aiter_backend.py:884 (registered at sglang/srt/layers/attention/attention_registry.py:66)",
        'triton': 'TritonAttnBackend.init_forward_metadata reads custom_mask at sglang/srt/layers/attention/triton_backend.py:374 (registered at sglang/srt/layers/attention/attention_registry.py:96)',
        'wave': 'WaveAttnBackend.init_forward_metadata reads custom_mask at sglang/srt/layers/attention/wave_backend.py:274 (registered at sglang/srt/layers/attention/attention_registry.py:73)',
    },
}
# Backends whose verify does not (a causal verify checks a linear block, not the tree; an MLA plan that
# computes the mask and drops it; a forward_extend without sinks), or whose code could not be read:
# never used for DDTree on that kind of model.
NOT_MASK_READING = {
    'mha': {
        'ascend': 'unread: sglang.srt.hardware_backend.npu.attention.ascend_backend.AscendAttnBackend is not in the files read',
        'cutlass_mla': "sglang/srt/layers/attention/cutlass_mla_backend.py never reads the verify input's custom_mask (causal verify)",
        'dual_chunk_flash_attn': "sglang/srt/layers/attention/dual_chunk_flashattention_backend.py never reads the verify input's custom_mask (causal verify)",
        'fa3': "reads custom_mask only under a topk test (sglang/srt/layers/attention/flashattention_backend.py:438), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'fa4': "reads custom_mask only under a topk test (sglang/srt/layers/attention/flashattention_backend.py:438), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'flashmla': "sglang/srt/layers/attention/flashmla_backend.py never reads the verify input's custom_mask (causal verify)",
        'flex_attention': "sglang/srt/layers/attention/torch_flex_backend.py never reads the verify input's custom_mask (causal verify)",
        'intel_amx': "sglang/srt/layers/attention/intel_amx_backend.py never reads the verify input's custom_mask (causal verify)",
        'intel_xpu': "reads custom_mask only under a topk test (sglang/srt/layers/attention/xpu_backend.py:271), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'nsa': "sglang/srt/layers/attention/nsa_backend.py never reads the verify input's custom_mask (causal verify)",
        'torch_native': "sglang/srt/layers/attention/torch_native_backend.py never reads the verify input's custom_mask (causal verify)",
        'trtllm_mha': "sglang/srt/layers/attention/trtllm_mha_backend.py never reads the verify input's custom_mask (causal verify)",
        'trtllm_mla': "sglang/srt/layers/attention/trtllm_mla_backend.py never reads the verify input's custom_mask (causal verify)",
    },
    'sinks': {
        'ascend': 'unread: sglang.srt.hardware_backend.npu.attention.ascend_backend.AscendAttnBackend is not in the files read',
        'cutlass_mla': "sglang/srt/layers/attention/cutlass_mla_backend.py never reads the verify input's custom_mask (causal verify)",
        'dual_chunk_flash_attn': "sglang/srt/layers/attention/dual_chunk_flashattention_backend.py never reads the verify input's custom_mask (causal verify)",
        'fa3': "reads custom_mask only under a topk test (sglang/srt/layers/attention/flashattention_backend.py:438), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'fa4': "reads custom_mask only under a topk test (sglang/srt/layers/attention/flashattention_backend.py:438), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'flashinfer': "FlashInferAttnBackend.forward_extend (sglang/srt/layers/attention/flashinfer_backend.py:780) takes no sinks (a TypeError on a sinks model's first forward)",
        'flashmla': "sglang/srt/layers/attention/flashmla_backend.py never reads the verify input's custom_mask (causal verify)",
        'flex_attention': "sglang/srt/layers/attention/torch_flex_backend.py never reads the verify input's custom_mask (causal verify)",
        'intel_amx': "sglang/srt/layers/attention/intel_amx_backend.py never reads the verify input's custom_mask (causal verify)",
        'intel_xpu': "reads custom_mask only under a topk test (sglang/srt/layers/attention/xpu_backend.py:271), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'nsa': "sglang/srt/layers/attention/nsa_backend.py never reads the verify input's custom_mask (causal verify)",
        'torch_native': "sglang/srt/layers/attention/torch_native_backend.py never reads the verify input's custom_mask (causal verify)",
        'trtllm_mha': "sglang/srt/layers/attention/trtllm_mha_backend.py never reads the verify input's custom_mask (causal verify)",
        'trtllm_mla': "sglang/srt/layers/attention/trtllm_mla_backend.py never reads the verify input's custom_mask (causal verify)",
        'wave': "WaveAttnBackend.forward_extend (sglang/srt/layers/attention/wave_backend.py:543) takes no sinks (a TypeError on a sinks model's first forward)",
    },
    'mla': {
        'ascend': 'unread: sglang.srt.hardware_backend.npu.attention.ascend_backend.AscendAttnBackend is not in the files read',
        'cutlass_mla': "sglang/srt/layers/attention/cutlass_mla_backend.py never reads the verify input's custom_mask (causal verify)",
        'dual_chunk_flash_attn': "sglang/srt/layers/attention/dual_chunk_flashattention_backend.py never reads the verify input's custom_mask (causal verify)",
        'fa3': "reads custom_mask only under a topk test (sglang/srt/layers/attention/flashattention_backend.py:438), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'fa4': "reads custom_mask only under a topk test (sglang/srt/layers/attention/flashattention_backend.py:438), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'flashinfer': 'FlashInferMLAIndicesUpdaterPrefill.call_begin_forward computes the custom mask at sglang/srt/layers/attention/flashinfer_mla_backend.py:859 into custom_mask and never hands it on: its verify is planned causal',
        'flashmla': "sglang/srt/layers/attention/flashmla_backend.py never reads the verify input's custom_mask (causal verify)",
        'flex_attention': "sglang/srt/layers/attention/torch_flex_backend.py never reads the verify input's custom_mask (causal verify)",
        'intel_amx': "sglang/srt/layers/attention/intel_amx_backend.py never reads the verify input's custom_mask (causal verify)",
        'intel_xpu': "reads custom_mask only under a topk test (sglang/srt/layers/attention/xpu_backend.py:271), the layout of EAGLE's topk > 1; otherwise a causal verify",
        'nsa': "sglang/srt/layers/attention/nsa_backend.py never reads the verify input's custom_mask (causal verify)",
        'torch_native': "sglang/srt/layers/attention/torch_native_backend.py never reads the verify input's custom_mask (causal verify)",
        'trtllm_mha': "sglang/srt/layers/attention/trtllm_mha_backend.py never reads the verify input's custom_mask (causal verify)",
        'trtllm_mla': "sglang/srt/layers/attention/trtllm_mla_backend.py never reads the verify input's custom_mask (causal verify)",
    },
}
# Kinds no backend of this release can verify a tree for: refused, with what would change that.
NO_READER = {}
# The release's default backend (ServerArgs._get_default_attn_backend), arm by arm, for MHA and for MLA models:
# (its architecture test: ("call", module, function, None) | ("platform", module, getter, attribute)
# | ("else", None, None, None); the backends the arm picks; whether other conditions share the test;
# where; the backends it picks only for models without attention sinks). Evaluated at run time with the
# release's own predicates, on this machine's GPU.
DEFAULT_ARMS = {
    'mha': (
        (('call', 'sglang.srt.utils.common', 'is_hopper_with_cuda_12_3', None), ('fa3',), True, 'sglang/srt/server_args.py:2492', ()),
        (('call', 'sglang.srt.utils.common', 'is_sm100_supported', None), ('trtllm_mha',), True, 'sglang/srt/server_args.py:2498', ()),
        (('call', 'sglang.srt.utils.common', 'is_hip', None), ('aiter',), False, 'sglang/srt/server_args.py:2506', ()),
        (('call', 'sglang.srt.utils.common', 'is_mps', None), ('torch_native',), False, 'sglang/srt/server_args.py:2508', ()),
        (('else', None, None, None), ('flashinfer', 'triton'), False, 'sglang/srt/server_args.py:2512', ('flashinfer',)),
    ),
    'mla': (
        (('call', 'sglang.srt.utils.common', 'is_hopper_with_cuda_12_3', None), ('fa3',), False, 'sglang/srt/server_args.py:2517', ()),
        (('call', 'sglang.srt.utils.common', 'is_sm100_supported', None), ('flashinfer',), False, 'sglang/srt/server_args.py:2519', ()),
        (('call', 'sglang.srt.utils.common', 'is_hip', None), ('aiter', 'triton'), False, 'sglang/srt/server_args.py:2521', ()),
        (('call', 'sglang.srt.utils.common', 'is_mps', None), ('torch_native',), False, 'sglang/srt/server_args.py:2528', ()),
        (('else', None, None, None), ('triton',), False, 'sglang/srt/server_args.py:2531', ()),
    ),
}
DEFAULT_UNREAD = {'mha': None, 'mla': None}
# How the release itself tells an MLA model and fetches the model config for its default chain (the
# producers of that chain's arguments: ("call", module, name, where) called with the server arguments,
# or ("method", None, name, where) of them), and the config attribute it tests for attention sinks.
KIND_PROBES = {'mla': ('method', None, 'use_mla_backend', 'sglang/srt/server_args.py:2225'), 'config': ('method', None, 'get_model_config', 'sglang/srt/server_args.py:2225')}
SINKS_ATTRIBUTE = 'has_attention_sinks'
# Per-model override providers that set an attention backend for an architecture (the backends they
# may set, () when computed; where): a backend one of them set is the release's choice, not the user's.
MODEL_OVERRIDES = {}
# Where the release's CUDA-graph runners capture target verify, with DFlash's verify input: nothing in
# the release's code shows a replay of those graphs carrying the tree mask, so DDTree runs eager.
VERIFY_GRAPH_CAPTURE = ('sglang/srt/model_executor/cuda_graph_runner.py:629', 'sglang/srt/model_executor/model_runner.py:2444')

# --- CUDA graphs (worker side) -------------------------------------------------------------------
# Where the release's model runner asks a graph runner whether to replay a CUDA graph for a batch
# ((model-runner attribute, method, where)). The tree verify closes exactly these gates for its one
# forward (prepare and run), as the base forces its own single verify eager; the draft block, prefill,
# idle and fallback steps keep every graph the base keeps.
GRAPH_GATES = (
    ('piecewise_cuda_graph_runner', 'can_run', 'sglang/srt/model_executor/model_runner.py:3034'),
    ('graph_runner', 'can_run', 'sglang/srt/model_executor/model_runner.py:3211'),
)

# --- Draft head (worker side) ----------------------------------------------------------------------
# The base's own LM-head path, read from the release: LoRA unwrapping, the dense-or-quantized test and
# the quantized head's logits, and the rows per head matmul (the base's chunk).
LORA_UNWRAP = None  # (module, where) of unwrap_lora_layer, or None: the release has none
DENSE_CHECK = None  # (module, where) of is_dense_head_weight, or None
QUANTIZED_HEAD = None  # where the base takes logits from a quantized head, or None
HEAD_CHUNK = 256  # rows per head matmul and per sampling softmax (sglang/srt/speculative/dflash_worker.py:702)


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
                "DDTree on SGLang 0.5.11: the target's lm_head has no dense weight"
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
    version = "SGLang 0.5.11"
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
    """The server arguments (this release resolves them in place)."""
    return server_args


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
    version = "SGLang 0.5.11"
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


class DDTreeWorker(DFlashWorker):
    """DFlash drafting, verified as a best-first draft tree (DDTree) instead of a single block."""

    def __init__(self, server_args, gpu_id, tp_rank, dp_rank, moe_ep_rank, attn_cp_rank, moe_dp_rank, nccl_port, target_worker):
        if ENGINE_GLUE_MISSING:
            raise RuntimeError("DDTree cannot run on SGLang 0.5.11: " + "; ".join(ENGINE_GLUE_MISSING))
        refusal = ddtree_refusal(server_args, resolve_budget(server_args))
        if refusal is not None:  # before the base loads any model
            raise RuntimeError(refusal)
        page_size = getattr(server_args, "page_size", None)
        if page_size not in (None, 1):  # refused before the base loads any model
            raise RuntimeError(PAGE_REFUSAL.format(page_size))
        budget = resolve_budget(server_args)
        draft_width = drafter_block_size(server_args)
        with draft_width_scope(server_args, draft_width):  # the base drafts on the drafter's trained block
            super().__init__(server_args=server_args, gpu_id=gpu_id, tp_rank=tp_rank, dp_rank=dp_rank, moe_ep_rank=moe_ep_rank, attn_cp_rank=attn_cp_rank, moe_dp_rank=moe_dp_rank, nccl_port=nccl_port, target_worker=target_worker)
        self.ddtree_draft_width = draft_width
        absent = [name for name in ENGINE_ATTRIBUTES if not hasattr(self, name)]
        if absent:
            raise RuntimeError(f"DDTree: DFlashWorker has no attribute(s) {absent} the tree verify uses")
        if self.page_size != 1:  # the value the base passes to the release's accept
            raise RuntimeError(PAGE_REFUSAL.format(self.page_size))
        for member in ("TARGET_VERIFY", "DECODE"):
            if not hasattr(ForwardMode, member):
                raise RuntimeError(f"DDTree: sglang.srt.model_executor.forward_batch_info.ForwardMode has no {member}")
        self.ddtree_budget = resolve_budget(getattr(self, "server_args", None))
        self.ddtree_topk = resolve_topk(self.ddtree_budget)
        self.ddtree_fallbacks = Counter()  # reason -> decode batches run by the release's own step
        self.ddtree_check_target()

    def forward_batch_generation(self, batch, **kwargs):
        """Decode batches run a DDTree step; prefill and idle batches, and decode batches the tree cannot run exactly, the DFlash path."""
        if not self.ddtree_is_decode(batch):
            return super().forward_batch_generation(batch=batch, **kwargs)
        reason = self.ddtree_fallback_reason(batch)
        if reason is not None:
            if not self.ddtree_fallbacks[reason]:
                logger.warning("DDTree: decode batches with %s run the DFlash step (no tree)", reason)
            self.ddtree_fallbacks[reason] += 1
            return super().forward_batch_generation(batch=batch, **kwargs)
        return self.ddtree_decode(batch=batch, **kwargs)

    @staticmethod
    def ddtree_fallback_reason(batch) -> str | None:
        """Why this decode batch runs the release's own DFlash step instead of a tree; None: it runs a tree.

        The tree step chooses the target's tokens from the raw verify logits (argmax)
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
            # DFlashWorker._update_target_mamba_state_after_verify (sglang/srt/speculative/dflash_worker.py:1066)
            raise RuntimeError(
                "DDTree on SGLang 0.5.11 cannot run this target: its attention backend has "
                "update_mamba_state_after_mtp_verify(), so DFlashWorker runs _update_target_mamba_state_after_verify() "
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

        Runs the release's own draft block (sglang/srt/speculative/dflash_worker.py:660) and stops it right after
        `self.draft_model_runner.forward`, before it samples (the draft forward keeps the CUDA graphs the
        base captured for it).
        The verify window (B * (budget + 1) slots) is reserved by `prepare_for_verify`
        (sglang/srt/speculative/dflash_info.py:178), which `ddtree_target_verify` calls, as the base does.
        """
        draft_input = batch.spec_info
        self.ddtree_draft_input = draft_input
        roots = getattr(draft_input, "verified_id").reshape(-1).to(torch.int64)
        committed = batch.seq_lens.clone()
        runner = self.draft_model_runner
        own = runner.__dict__.get("forward") if hasattr(runner, "__dict__") else None
        original = runner.forward

        def stop_after_forward(forward_batch, *args, **kwargs):
            raise _DraftBlockDone(original(forward_batch, *args, **kwargs))

        runner.forward = stop_after_forward
        try:
            super()._prepare_for_speculative_decoding(batch, draft_input)
        except _DraftBlockDone as done:
            output = done.output
        else:
            raise RuntimeError("DDTree: DFlashWorker._prepare_for_speculative_decoding returned without running self.draft_model_runner.forward")
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
        return hidden, roots, committed

    def ddtree_target_verify(self, batch, trees: TreeBatch, custom_mask: torch.Tensor, *args, **kwargs):
        """Target logits [B * W, V] for the flattened tree, and the release's logits output (hidden states).

        The tree goes through the release's own verify input (sglang/srt/speculative/dflash_info.py:148) with the
        ancestor-only `custom_mask`, so every backend that honours DFlash's verify mask sees the tree.
        """
        width = int(trees.tokens.shape[1])
        verify_input = DFlashVerifyInput(
            draft_token=trees.tokens.reshape(-1),
            positions=trees.positions.reshape(-1),
            draft_token_num=width,
            custom_mask=custom_mask,
        )
        # eager (the only forward without graphs): the release's model runner decides graph or eager in the forward
        with eager_verify(self.target_worker.model_runner):
            verify_input.prepare_for_verify(batch, self.page_size, build_custom_mask=False)
            verify_input.custom_mask = custom_mask  # a prepare step may reset or rebuild it as a causal block mask
            batch.forward_mode = ForwardMode.TARGET_VERIFY
            batch.spec_info = verify_input
            result = self.target_worker.forward_batch_generation(batch.get_model_worker_batch(), is_verify=True)
        self.ddtree_target_result = result
        output = getattr(result, "logits_output", None)
        logits = getattr(output, "next_token_logits", None)
        if logits is None:
            raise RuntimeError("DDTree verify: the target's result carries no logits_output.next_token_logits")
        return logits, output

    def ddtree_commit(self, batch, trees: TreeBatch, verified, accepted, counts, bonus, *args, **kwargs):
        """Keep the KV and hidden states of the accepted nodes, free the rest, return the batch result.

        The window is laid out path-first (accepted nodes, then the rest) and handed to the
        release's own `DFlashVerifyInput.verify` (sglang/srt/speculative/dflash_info.py:312), which
        frees the uncommitted slots, maps the kept ones, appends the tokens to the requests and gathers
        the committed hidden states; those go to the drafter through `_append_target_hidden_to_draft_kv`.
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
        # After the accepted path, a token the target did not choose, so the release's linear accept stops there.
        columns = torch.arange(width, device=tokens.device).unsqueeze(0)
        tokens = torch.where(columns == counts.unsqueeze(1), ((bonus + 1) % verified.next_token_logits.shape[-1]).unsqueeze(1), tokens)
        # The target's choice after each path node: the next path token, then the bonus token.
        choice = torch.cat([tokens[:, 1:], bonus.unsqueeze(1)], dim=1)
        choice = torch.where(columns == (counts - 1).unsqueeze(1), bonus.unsqueeze(1), choice)
        verify_input = batch.spec_info
        verify_input.draft_token = tokens.reshape(-1)
        batch.out_cache_loc = batch.out_cache_loc.view(bs, width).gather(1, order).reshape(-1)
        logits = verified.next_token_logits
        forced = torch.full_like(logits, float("-inf"))
        forced.scatter_(1, choice.reshape(-1, 1).to(forced.device), 0.0)
        verified.next_token_logits, verified.hidden_states = forced, hidden
        try:
            next_roots, commit_lens, next_hidden, accepted_per_req = verify_input.verify(batch=batch, logits_output=verified, page_size=self.page_size)
        finally:
            verified.next_token_logits = logits
        draft_input = self.ddtree_draft_input
        draft_input.verified_id = next_roots
        draft_input.target_hidden = next_hidden
        draft_input.ctx_lens = commit_lens
        self._append_target_hidden_to_draft_kv(batch, draft_input)
        batch.spec_info = draft_input
        batch.forward_mode = ForwardMode.DECODE
        values.update(
            next_token_ids=next_roots,
            accept_lens=commit_lens,
            num_accepted_drafts=sum(accepted_per_req),
            num_accepted_drafts_per_req_cpu=accepted_per_req,
        )
        return GenerationBatchResult(**{name: values[name]() if callable(values[name]) and name in HOST_VALUES else values[name] for name in RESULT_KEYWORDS})
