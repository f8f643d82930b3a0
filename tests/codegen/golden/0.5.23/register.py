"""Registers DDTREE with SGLang 0.5.23 as a plugin algorithm; no patch to SGLang needed.

`SpeculativeAlgorithm.register` (sglang/srt/speculative/spec_info.py:68) takes a `CustomSpecAlgo` subclass
(sglang/srt/speculative/spec_registry.py:26). `DDTreeSpecAlgo` answers every `is_*`/`supports_*` predicate of
`SpeculativeAlgorithm` as DFLASH does, so DDTREE counts as DFlash family wherever
DFLASH does. Its server-args hook, where the release has one, also sets an attention
backend whose verify reads the tree mask where the release's default on this GPU would not
(`ddtree_server_args` in worker.py). Call `register()` once per process before SGLang reads
`--speculative-algorithm` (see README.md).
"""

from __future__ import annotations

from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
from sglang.srt.speculative.spec_registry import CustomSpecAlgo

NAME = "DDTREE"
_registered = False


class DDTreeSpecAlgo(CustomSpecAlgo):
    """DDTREE: the predicates of DFLASH, the DDTree worker."""

    def is_some(self) -> bool:  # sglang/srt/speculative/spec_info.py:93
        return True

    def is_none(self) -> bool:  # sglang/srt/speculative/spec_info.py:96
        return False

    def is_speculative(self) -> bool:  # sglang/srt/speculative/spec_info.py:99
        return True

    def is_eagle(self) -> bool:  # sglang/srt/speculative/spec_info.py:102
        return False

    def is_eagle3(self) -> bool:  # sglang/srt/speculative/spec_info.py:111
        return False

    def is_frozen_kv_mtp(self) -> bool:  # sglang/srt/speculative/spec_info.py:114
        return False

    def is_dflash(self) -> bool:  # sglang/srt/speculative/spec_info.py:117
        return True

    def is_uno(self) -> bool:  # sglang/srt/speculative/spec_info.py:120
        return False

    def is_dspark(self) -> bool:  # sglang/srt/speculative/spec_info.py:123
        return False

    def is_dflash_family(self) -> bool:  # sglang/srt/speculative/spec_info.py:126
        return True

    def is_standalone(self) -> bool:  # sglang/srt/speculative/spec_info.py:129
        return False

    def is_ngram(self) -> bool:  # sglang/srt/speculative/spec_info.py:132
        return False

    def supports_target_verify_for_draft(self) -> bool:  # sglang/srt/speculative/spec_info.py:135
        return True

    def supports_prefill_shared_read_done(self) -> bool:  # sglang/srt/speculative/spec_info.py:138
        return True

    def supports_mixed_chunk(self) -> bool:  # sglang/srt/speculative/spec_info.py:147
        return True

    def supports_ragged_verify(self) -> bool:  # sglang/srt/speculative/spec_info.py:160
        return False

    def supports_grammar_overlap(self) -> bool:  # sglang/srt/speculative/spec_info.py:166
        return True

    def has_draft_kv(self) -> bool:  # sglang/srt/speculative/spec_info.py:174
        return True

    def carries_draft_hidden_states(self) -> bool:  # sglang/srt/speculative/spec_info.py:180
        return False

    def need_topk(self) -> bool:  # sglang/srt/speculative/spec_info.py:232
        return False

    def build_disagg_draft_input(self, batch, last_tokens_tensor, future_map):  # sglang/srt/speculative/spec_info.py:202 branches on DFLASH
        return SpeculativeAlgorithm.DFLASH.build_disagg_draft_input(batch=batch, last_tokens_tensor=last_tokens_tensor, future_map=future_map)

    def handle_server_args(self, server_args):  # sglang/srt/speculative/spec_info.py:235 branches on DFLASH
        result = SpeculativeAlgorithm.DFLASH.handle_server_args(server_args=server_args)
        from .worker import ddtree_server_args

        ddtree_server_args(server_args)  # the attention backend DDTree verifies with, on this GPU (worker.py)
        return result

    def create_future_map(self, device, req_to_token_pool, needs_cpu_seq_lens=True, needs_confidence_relay=False):  # sglang/srt/speculative/spec_info.py:185: CustomSpecAlgo lacks it; the release's own code, run on this object
        return SpeculativeAlgorithm.create_future_map(self, device=device, req_to_token_pool=req_to_token_pool, needs_cpu_seq_lens=needs_cpu_seq_lens, needs_confidence_relay=needs_confidence_relay)

    def get_platform_worker_cls(self):  # sglang/srt/speculative/spec_info.py:303: CustomSpecAlgo lacks it; the release's own code, run on this object
        return SpeculativeAlgorithm.get_platform_worker_cls(self)


def worker_factory(server_args):
    """The worker class SGLang instantiates for DDTREE."""
    from .worker import DDTreeWorker

    return DDTreeWorker


def register() -> None:
    """Register DDTREE (idempotent within a process)."""
    global _registered
    if _registered:
        return
    SpeculativeAlgorithm.register(NAME, supports_overlap=True, spec_class=DDTreeSpecAlgo)(worker_factory)
    _registered = True
