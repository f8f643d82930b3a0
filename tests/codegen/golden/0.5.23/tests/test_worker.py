"""`DDTreeWorker`'s decode path on CPU, against stand-ins for the SGLang 0.5.23 objects it uses.

SGLang itself needs a GPU, so these modules are replaced by stand-ins with the same module paths
and exactly the names and signatures the worker uses, taken from the snapshot's facts:
`sglang.srt.speculative.dflash_worker_v2.DFlashWorkerV2` (constructor, `forward_batch_generation`, `self.target_worker`),
`sglang.srt.speculative.dflash_info.DFlashVerifyInput` (its fields and `prepare_for_verify`) and the target
worker's `forward_batch_generation`, which computes a toy target's logits from the verify input's
tokens, positions and custom mask. The draft block and the commit are a toy engine (noisy
draft logits; the commit returns the accepted tokens). Decoding must equal plain greedy decoding.
"""

import importlib
import importlib.util
import sys
import types
from types import SimpleNamespace

import pytest
import torch

pytestmark = pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="real SGLang installed: run it on a GPU box")

BASE_MODULE = "sglang.srt.speculative.dflash_worker_v2"
BASE_NAME = "DFlashWorkerV2"
INIT_PARAMS = ['server_args', 'gpu_id', 'nccl_port', 'target_worker']
VOCAB = 19
BUDGET = 10
WIDTH = BUDGET + 1
_INHERITED = object()
VERIFY_MODULE = "sglang.srt.speculative.dflash_info"
VERIFY_NAME = "DFlashVerifyInput"
VERIFY_FIELDS = ('draft_token', 'positions', 'draft_token_num', 'topk', 'custom_mask', 'capture_hidden_mode', 'num_tokens_per_req', 'ragged_verify_layout', 'live_seq_lens_cpu', 'candidate_max_seq_len_upper_bound', 'kv_loc_plan', 'kv_loc_cols')
TARGET_ATTR = "target_worker"


def _toy_target_logits(batch, spec):
    """Logits of the toy target after each tree node, reading only what a verify forward reads."""
    width = int(spec.draft_token_num)
    tokens = spec.draft_token.view(-1, width)
    positions = spec.positions.view(-1, width)
    mask = spec.custom_mask
    assert mask is not None and mask.dtype == torch.bool
    rows, offset = [], 0
    for b, context in enumerate(batch.contexts):
        keys = len(context) + width
        for i in range(width):
            allowed = mask[offset : offset + keys]
            offset += keys
            assert bool(allowed[: len(context)].all())  # the committed prefix is visible to every node
            in_tree = allowed[len(context) :]
            assert bool(in_tree[i])  # a node sees itself
            assert int(positions[b, i]) == len(context) + int(in_tree.sum()) - 1  # committed length + depth
            path = tokens[b][in_tree].tolist()
            rows.append(torch.nn.functional.one_hot(torch.tensor(_next_token(context + path)), VOCAB).float())
    assert offset == mask.numel()
    return torch.stack(rows)


class _StubVerifyInput:
    """`DFlashVerifyInput`: built from its fields by keyword; `prepare_for_verify` with the release's parameters."""

    def __init__(self, **fields):
        unknown = set(fields) - set(VERIFY_FIELDS)
        assert not unknown, unknown
        self.__dict__.update(fields)

    def prepare_for_verify(self, batch, target_worker, *, defer_metadata_init=False):
        batch.input_ids = self.draft_token
        batch.spec_info = self
        return SimpleNamespace(batch=batch, spec_info=self), False


class _StubTarget:
    """The target worker's `forward_batch_generation` with the release's parameters."""

    def __init__(self):
        self.calls = 0

    def forward_batch_generation(self, batch, forward_batch=None, pp_proxy_tensors=None, is_verify=False, skip_attn_backend_init=None, *, capture_hidden_mode=None, return_kv_loc_plan=False):
        assert is_verify is True
        self.calls += 1
        assert batch is None
        batch, spec = forward_batch.batch, forward_batch.spec_info
        logits = _toy_target_logits(batch, spec)
        return SimpleNamespace(logits_output=SimpleNamespace(next_token_logits=logits, hidden_states=None))


class _StubBase:
    def __init__(self, *args, **kwargs):
        self.init_args, self.init_kwargs = args, kwargs
        self.server_args = kwargs.get("server_args")
        self.target_worker = _StubTarget()

    def forward_batch_generation(self, *args, **kwargs):
        return ("dflash", args, kwargs)


def _stub_module(monkeypatch, dotted):
    parts = dotted.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if getattr(sys.modules.get(name), "__ddtree_stub__", False) is not True:
            module = types.ModuleType(name)
            module.__ddtree_stub__ = True
            monkeypatch.setitem(sys.modules, name, module)
    return sys.modules[dotted]


@pytest.fixture
def worker_module(monkeypatch):
    setattr(_stub_module(monkeypatch, BASE_MODULE), BASE_NAME, _StubBase)
    setattr(_stub_module(monkeypatch, VERIFY_MODULE), VERIFY_NAME, _StubVerifyInput)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setenv("SGLANG_DDTREE_BUDGET", str(BUDGET))
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


class _Batch(SimpleNamespace):
    pass


def _next_token(seq):
    return (sum((i + 2) * t for i, t in enumerate(seq[-4:])) * 5 + len(seq)) % VOCAB


def _toy_worker(module):
    class ToyWorker(module.DDTreeWorker):
        def ddtree_draft_logits(self, batch):
            batch.out_cache_loc = torch.arange(len(batch.contexts) * WIDTH)  # the verify window the draft step reserves
            return batch.draft_logits, batch.roots, batch.committed

        def ddtree_commit(self, batch, trees, verified, accepted, counts, bonus, *args, **kwargs):
            assert verified.next_token_logits.shape == (len(batch.contexts) * WIDTH, VOCAB)
            return [trees.tokens[b, accepted[b, 1 : int(counts[b])]].tolist() + [int(bonus[b])] for b in range(len(batch.contexts))]

    return ToyWorker(**{name: f"<{name}>" for name in INIT_PARAMS})


def test_constructor_forwards_every_parameter(worker_module):
    worker = _toy_worker(worker_module)
    assert {**dict(zip(INIT_PARAMS, worker.init_args)), **worker.init_kwargs} == {name: f"<{name}>" for name in INIT_PARAMS}
    assert (worker.ddtree_budget, worker.ddtree_topk) == (BUDGET, 3)


def test_constructor_refuses_missing_engine_glue(worker_module, monkeypatch):
    monkeypatch.setattr(worker_module, "ENGINE_GLUE_MISSING", ("no verify input",))
    with pytest.raises(RuntimeError, match="no verify input"):
        _toy_worker(worker_module)


def test_constructor_refuses_a_base_without_the_attributes_used(worker_module, monkeypatch):
    monkeypatch.setattr(worker_module, "ENGINE_ATTRIBUTES", worker_module.ENGINE_ATTRIBUTES + ("ddtree_absent",))
    with pytest.raises(RuntimeError, match="ddtree_absent"):
        _toy_worker(worker_module)


def test_prefill_goes_to_the_dflash_worker(worker_module):
    worker = _toy_worker(worker_module)
    result = worker.forward_batch_generation(batch=SimpleNamespace(forward_mode=_Mode(False)))
    assert result[0] == "dflash"
    assert worker.target_worker.calls == 0


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
    accepted_drafts = steps = 0
    while min(len(s) for s in seqs) < 50:
        draft = torch.randn(len(seqs), 6, VOCAB, generator=g)
        for b, seq in enumerate(seqs):
            for j, token in enumerate(greedy[b][len(seq) : len(seq) + 6]):
                if float(torch.rand(1, generator=g)) < 0.7:
                    draft[b, j, token] += 5.0
        batch = _Batch(
            forward_mode=_Mode(True),
            draft_logits=draft,
            roots=torch.tensor([s[-1] for s in seqs]),
            committed=torch.tensor([len(s) - 1 for s in seqs]),
            contexts=[s[:-1] for s in seqs],
        )
        committed = worker.forward_batch_generation(batch=batch)
        steps += 1
        for b, tokens in enumerate(committed):
            seqs[b] += tokens
            accepted_drafts += len(tokens) - 1
    for b, seq in enumerate(seqs):
        assert seq == greedy[b][: len(seq)]
    assert accepted_drafts > 0
    assert worker.target_worker.calls == steps  # one target forward per step, through the release's verify path
