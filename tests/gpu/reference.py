"""The GPU check's computations that need no GPU: each is unit-tested on CPU (tests/gpu/test_reference.py).

- `teacher_forced_errors`: (a) logits-level losslessness. For each traced tree step (SGLANG_DDTREE_TRACE,
  worker.py), the verify log-probs after each accepted node must equal the target's own log-probs for
  the same prefix (teacher-forced, from a server without speculation).
- `homogeneity`: (b) a chi-square test that two samples of tokens come from one distribution
  (DDTree at temperature T vs the target alone at T); p-value without scipy (Wilson-Hilferty).
- `budget_sweep` / `best_budget`: (d) DDTree's budgets to try and the best one against DFlash with
  CUDA graphs (the tuning users did by hand).
- `mla_outcome`: (c) an MLA target must be refused in one line naming DDTree, or be lossless.
- `kv_back_to_start`: (e) the KV pool's used tokens after the run equal those before it.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

# A tiny DeepSeek-V3-shaped target (MLA: q/kv LoRA ranks, rope/nope head dims, MoE with shared experts).
DEEPSEEK_V3_TINY = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 256,
    "intermediate_size": 512, "moe_intermediate_size": 128, "num_hidden_layers": 3, "first_k_dense_replace": 1,
    "num_attention_heads": 8, "num_key_value_heads": 8, "q_lora_rank": 96, "kv_lora_rank": 64,
    "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "n_routed_experts": 8,
    "n_shared_experts": 1, "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1, "routed_scaling_factor": 2.5,
    "norm_topk_prob": True, "scoring_func": "sigmoid", "topk_method": "noaux_tc", "moe_layer_freq": 1,
    "vocab_size": 1024, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
    "torch_dtype": "bfloat16", "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2,
}


def teacher_forced_errors(records: Sequence[Mapping], reference) -> list[float]:
    """Max |verify log-prob - target log-prob| per accepted node, over every traced record.

    A record: {"tokens": the request's tokens, the last being the tree's root; "path": accepted tokens,
    root first; "logprobs": [len(path), V] verify log-probs after each path node}. `reference(tokens, n)`
    returns the target's own log-probs [n, V] after each of the last n tokens of `tokens`.
    """
    errors = []
    for record in records:
        tokens, path, logprobs = list(record["tokens"]), list(record["path"]), record["logprobs"]
        if not tokens or tokens[-1] != path[0]:
            raise ValueError(f"a traced record whose last token {tokens[-1:]} is not its root {path[:1]}")
        sequence = tokens + path[1:]
        expected = reference(sequence, len(path))
        if len(expected) != len(path):
            raise ValueError(f"the reference gave {len(expected)} rows for {len(path)} accepted nodes")
        for row, want in zip(logprobs, expected):
            errors.append(max(abs(float(a) - float(b)) for a, b in zip(row, want)))
    return errors


def _chi2_sf(statistic: float, dof: int) -> float:
    """P(X >= statistic) for chi-square with `dof` degrees of freedom (Wilson-Hilferty normal approximation)."""
    if dof <= 0:
        return 1.0
    z = ((statistic / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2))


def homogeneity(sample_a: Sequence[int], sample_b: Sequence[int], min_expected: float = 5.0) -> tuple[float, int, float]:
    """(chi-square, degrees of freedom, p-value) that two samples come from one distribution.

    Categories expected fewer than `min_expected` times in either sample are pooled into one.
    """
    if not sample_a or not sample_b:
        raise ValueError("two non-empty samples are needed")
    na, nb = len(sample_a), len(sample_b)
    counts: dict[int, list[int]] = {}
    for token in sample_a:
        counts.setdefault(token, [0, 0])[0] += 1
    for token in sample_b:
        counts.setdefault(token, [0, 0])[1] += 1
    total = na + nb
    kept, pooled = [], [0, 0]
    for a, b in counts.values():
        share = (a + b) / total
        if min(share * na, share * nb) < min_expected:
            pooled[0] += a
            pooled[1] += b
        else:
            kept.append((a, b))
    if pooled != [0, 0]:
        kept.append(tuple(pooled))
    statistic = 0.0
    for a, b in kept:
        share = (a + b) / total
        statistic += (a - share * na) ** 2 / (share * na) + (b - share * nb) ** 2 / (share * nb)
    dof = len(kept) - 1
    return statistic, dof, _chi2_sf(statistic, dof)


def budget_sweep(block: int, limit: int = 63) -> list[int]:
    """DDTree budgets to try: from the drafter's block - 1 (a tree as deep as the block, no wider) up to `limit`."""
    start = max(block - 1, 1)
    budgets = sorted({b for b in (start, 2 * block - 1, 3 * block - 1, 4 * block - 1, limit) if start <= b <= limit})
    return budgets


def best_budget(ddtree: Mapping[int, float], dflash: float) -> tuple[int, float]:
    """(budget with the most tokens/s, its ratio to DFlash's tokens/s)."""
    if not ddtree or dflash <= 0:
        raise ValueError("need DDTree results and a positive DFlash throughput")
    budget = max(sorted(ddtree), key=lambda b: ddtree[b])
    return budget, ddtree[budget] / dflash


def mla_outcome(exit_code: int | None, log: str, greedy_equal: bool | None) -> str:
    """"refused" (the server stopped with a one-line DDTree refusal), "lossless" (it served and matched the
    target) or a failure sentence."""
    refusals = [line for line in log.splitlines() if "DDTree" in line and ("refuse" in line or "needs" in line)]
    if exit_code not in (None, 0):
        return "refused" if refusals else f"the server exited ({exit_code}) without a DDTree refusal"
    if greedy_equal is None:
        return "the server served but no output was compared"
    return "lossless" if greedy_equal else "served an MLA target and its greedy output differs from the target's: lossy"


def kv_back_to_start(before: int, after: int) -> str | None:
    """None when the pool's used tokens are back to where they started, else what differs."""
    if before == after:
        return None
    return f"{before} KV tokens in use before the run, {after} after ({'kept' if after > before else 'lost'} {abs(after - before)})"
