"""`DDTreeWorker`'s decode path on CPU, against a stand-in for `sglang.srt.speculative.dflash_worker.DFlashWorker`.

The base class is replaced by a stub with the same module path, constructor and `forward_batch_generation`
(SGLang itself needs a GPU), and the three engine hooks by a toy engine: a deterministic target
and noisy draft logits. Decoding must then equal plain greedy decoding of the toy target.
"""

import importlib
import importlib.util
import sys
import types
from types import SimpleNamespace

import pytest
import torch

pytestmark = pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="real SGLang installed: run it on a GPU box")

BASE_MODULE = "sglang.srt.speculative.dflash_worker"
BASE_NAME = "DFlashWorker"
INIT_PARAMS = ['server_args', 'gpu_id', 'tp_rank', 'dp_rank', 'moe_ep_rank', 'attn_cp_rank', 'moe_dp_rank', 'nccl_port', 'target_worker']
VOCAB = 19


class _StubBase:
    def __init__(self, *args, **kwargs):
        self.init_args, self.init_kwargs = args, kwargs
        self.server_args = kwargs.get("server_args")

    def forward_batch_generation(self, *args, **kwargs):
        return ("dflash", args, kwargs)


@pytest.fixture
def worker_module(monkeypatch):
    parts = BASE_MODULE.split(".")
    for i in range(1, len(parts) + 1):
        monkeypatch.setitem(sys.modules, ".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    setattr(sys.modules[BASE_MODULE], BASE_NAME, _StubBase)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setenv("SGLANG_DDTREE_BUDGET", "10")
    monkeypatch.setenv("SGLANG_DDTREE_TOPK", "3")
    name = "ddtree_sglang.worker"
    sys.modules.pop(name, None)
    module = importlib.import_module(name)
    yield module
    sys.modules.pop(name, None)


class _Mode:
    def __init__(self, decode):
        self.decode = decode

    def is_decode(self):
        return self.decode


def _next_token(seq):
    return (sum((i + 2) * t for i, t in enumerate(seq[-4:])) * 5 + len(seq)) % VOCAB


def _toy_worker(module):
    class ToyWorker(module.DDTreeWorker):
        def ddtree_draft_logits(self, batch):
            return batch.draft_logits, batch.roots, batch.committed

        def ddtree_target_verify(self, batch, trees, custom_mask, *args, **kwargs):
            width = trees.tokens.shape[1]
            assert custom_mask.numel() == sum(width * (int(c) + width) for c in batch.committed)
            rows = []
            for b, context in enumerate(batch.contexts):
                for i in range(width):
                    path = trees.tokens[b][trees.mask[b, i]].tolist()
                    rows.append(torch.nn.functional.one_hot(torch.tensor(_next_token(context + path)), VOCAB).float())
            return torch.stack(rows)

        def ddtree_commit(self, batch, trees, accepted, counts, bonus, *args, **kwargs):
            return [trees.tokens[b, accepted[b, 1 : int(counts[b])]].tolist() + [int(bonus[b])] for b in range(len(batch.contexts))]

    return ToyWorker(**{name: f"<{name}>" for name in INIT_PARAMS})


def test_constructor_forwards_every_parameter(worker_module):
    worker = _toy_worker(worker_module)
    assert {**dict(zip(INIT_PARAMS, worker.init_args)), **worker.init_kwargs} == {name: f"<{name}>" for name in INIT_PARAMS}
    assert (worker.ddtree_budget, worker.ddtree_topk) == (10, 3)


def test_prefill_goes_to_the_dflash_worker(worker_module):
    worker = _toy_worker(worker_module)
    result = worker.forward_batch_generation(batch=SimpleNamespace(forward_mode=_Mode(False)))
    assert result[0] == "dflash"


def test_decode_equals_greedy_decoding(worker_module):
    worker = _toy_worker(worker_module)
    g = torch.Generator().manual_seed(3)
    prompts = [[1, 2, 3], [4, 5, 6, 7, 8]]
    greedy = []
    for prompt in prompts:
        seq = list(prompt)
        while len(seq) < 80:
            seq.append(_next_token(seq))
        greedy.append(seq)
    seqs = [p + [_next_token(p)] for p in prompts]
    accepted_drafts = 0
    while min(len(s) for s in seqs) < 50:
        draft = torch.randn(len(seqs), 6, VOCAB, generator=g)
        for b, seq in enumerate(seqs):
            for j, token in enumerate(greedy[b][len(seq) : len(seq) + 6]):
                if float(torch.rand(1, generator=g)) < 0.7:
                    draft[b, j, token] += 5.0
        batch = SimpleNamespace(
            forward_mode=_Mode(True),
            draft_logits=draft,
            roots=torch.tensor([s[-1] for s in seqs]),
            committed=torch.tensor([len(s) - 1 for s in seqs]),
            contexts=[s[:-1] for s in seqs],
        )
        committed = worker.forward_batch_generation(batch=batch)
        for b, tokens in enumerate(committed):
            seqs[b] += tokens
            accepted_drafts += len(tokens) - 1
    for b, seq in enumerate(seqs):
        assert seq == greedy[b][: len(seq)]
    assert accepted_drafts > 0
