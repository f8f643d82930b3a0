"""`DDTreeWorker`'s decode path on CPU, against stand-ins for the SGLang 0.5.11 objects it uses.

SGLang itself needs a GPU, so these modules are replaced by stand-ins with the same module paths
and exactly the names and signatures the worker uses, taken from the snapshot's facts:
`sglang.srt.speculative.dflash_worker.DFlashWorker` (constructor, `forward_batch_generation`, `self.target_worker`),
`sglang.srt.speculative.dflash_info.DFlashVerifyInput` (its fields and `prepare_for_verify`) and the target
worker's `forward_batch_generation`, which computes a toy target's logits from the verify input's
tokens, positions and custom mask, and the engine pieces the draft step and the
commit use: the base worker's draft block and `self.draft_model_runner`, a token-to-KV allocator
that records alloc/free, a KV store keyed by slot, `DFlashVerifyInput.verify` (the release's linear accept: frees, maps, gathers),`_append_target_hidden_to_draft_kv` and `GenerationBatchResult`. Decoding must equal plain greedy decoding.
Batches the tree cannot run exactly must take the release's own step, and settings under which the
commit would corrupt state must be refused.
"""

import importlib
import re
import sys
import types
from types import SimpleNamespace

import pytest
import torch

# The stand-ins replace the SGLang modules in sys.modules for each test, so these tests run (and
# mean the same) whether or not a real SGLang is installed.

BASE_MODULE = "sglang.srt.speculative.dflash_worker"
BASE_NAME = "DFlashWorker"
INIT_PARAMS = ['server_args', 'gpu_id', 'tp_rank', 'dp_rank', 'moe_ep_rank', 'attn_cp_rank', 'moe_dp_rank', 'nccl_port', 'target_worker']
VOCAB = 19
PAD = 5  # the LM head's padding rows past the vocabulary (their logits would win if they were read)
BUDGET = 10
BLOCK = 7  # the drafter's trained block: the root and L = 6 draft positions (its config's block_size)
WIDTH = BUDGET + 1  # the tree's verify width, speculative_num_draft_tokens
_INHERITED = object()
# Server arguments DDTree runs exactly under: one rank, CUDA graphs on (the tree verify runs eager), a
# backend that applies the mask.
EXACT_ARGS = dict(tp_size=1, disable_cuda_graph=False, attention_backend="triton", speculative_num_draft_tokens=WIDTH, page_size=None,
                  speculative_draft_model_path="<drafter>")
VERIFY_MODULE = "sglang.srt.speculative.dflash_info"
VERIFY_NAME = "DFlashVerifyInput"
VERIFY_FIELDS = ('draft_token', 'positions', 'draft_token_num', 'topk', 'custom_mask', 'capture_hidden_mode', 'num_tokens_per_batch')
TARGET_ATTR = "target_worker"
BACKEND_GUARDS = ['update_mamba_state_after_mtp_verify']
RESULT_MODULE = "sglang.srt.managers.scheduler"
RESULT_NAME = "GenerationBatchResult"
FORWARD_MODE_MODULE = "sglang.srt.model_executor.forward_batch_info"
LOADER_MODULE, PARSER_MODULE = "sglang.srt.utils.hf_transformers_utils", "sglang.srt.speculative.dflash_utils"
PHASES = []


class _Bag:
    """The release's settings bag: read-only leaves, a scoped override (the stand-in of server_args)."""

    def __init__(self):
        self.values = {"speculative_num_draft_tokens": WIDTH}

    def __getattr__(self, name):
        return self.__dict__["values"][name]

    def override(self, **kwargs):
        import contextlib

        @contextlib.contextmanager
        def scope():
            saved = dict(self.values)
            self.values.update(kwargs)
            try:
                yield self
            finally:
                self.values = saved
        return scope()


_BAG = _Bag()


def _width_setting(server_args):
    """speculative_num_draft_tokens as the release's DFlash worker reads it."""
    return server_args.speculative_num_draft_tokens


# Backends whose verify applies the custom mask, as the toy target models them; any other backend
# verifies causally over the window, as fa3 does.
TOY_MASK_BACKENDS = ("flashinfer", "triton")


def _toy_target_logits(batch, spec, honours_mask=True):
    """Logits of the toy target after each tree node, reading only what a verify forward reads.

    With `honours_mask` False it ignores the custom mask, as a causal-only backend does: node i sees
    window columns 0..i whatever the tree.
    """
    width = int(spec.draft_token_num)
    tokens = spec.draft_token.view(-1, width)
    positions = spec.positions.view(-1, width)
    mask = spec.custom_mask
    assert mask is not None and mask.dtype == torch.bool
    if not honours_mask:
        rows = []
        for b, context in enumerate(batch.contexts):
            for i in range(width):
                rows.append(torch.nn.functional.one_hot(torch.tensor(_next_token(context + tokens[b, : i + 1].tolist())), VOCAB).float())
        return torch.stack(rows)
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


class _Allocator:
    """Token-to-KV pool allocator: hands out slots, records every alloc and free, keeps a KV store by slot."""

    def __init__(self):
        self.free_slots = list(range(1, 4000))
        self.allocs, self.freed = [], []
        self.kv = {}  # slot -> (request, tree node) whose KV the target wrote there

    def alloc(self, n):
        out, self.free_slots = self.free_slots[:n], self.free_slots[n:]
        self.allocs.append(out)
        return torch.tensor(out, dtype=torch.int64)

    def free(self, slots):
        slots = [int(x) for x in slots.reshape(-1)]
        self.freed.append(slots)
        self.free_slots = slots + self.free_slots

    def backup_state(self):
        return list(self.free_slots)

    def restore_state(self, state):
        self.free_slots = list(state)


class _StubVerifyInput:
    """`DFlashVerifyInput`: built from its fields by keyword; `prepare_for_verify` with the release's parameters."""

    def __init__(self, **fields):
        unknown = set(fields) - set(VERIFY_FIELDS)
        assert not unknown, unknown
        self.__dict__.update(fields)

    def prepare_for_verify(self, batch, page_size, *, build_custom_mask=True):
        batch = batch
        batch.input_ids = self.draft_token
        batch.prepared_with = (getattr(batch, "seq_lens_cpu", None), getattr(batch, "seq_lens_sum", None))
        # As the release's prepare: reserve one slot per verify token and map them after the prefix.
        width = int(self.draft_token_num)
        batch.out_cache_loc = batch.token_to_kv_pool_allocator.alloc(len(batch.input_ids))
        for b in range(len(batch.reqs)):
            start = int(batch.seq_lens[b])
            batch.req_to_token_pool.req_to_token[b, start : start + width] = batch.out_cache_loc[b * width : (b + 1) * width]
        self.custom_mask = None  # a prepare step may drop or rebuild the mask; the worker sets its own after

    def verify(self, *, batch, logits_output, page_size):
        """The release's linear accept: greedy match, append to the requests, free the uncommitted slots, gather hidden states."""
        width = int(self.draft_token_num)
        bs = len(batch.reqs)
        candidates = self.draft_token.view(bs, width)
        predict = torch.argmax(logits_output.next_token_logits, dim=-1).view(bs, width)
        commit_lens, roots, accepted = [], [], []
        for b, req in enumerate(batch.reqs):
            n = 0
            while n < width - 1 and int(candidates[b, n + 1]) == int(predict[b, n]):
                n += 1
            req.output_ids += candidates[b, 1 : n + 1].tolist() + [int(predict[b, n])]
            commit_lens.append(n + 1)
            roots.append(req.output_ids[-1])
            accepted.append(n)
        window = batch.out_cache_loc.view(bs, width)
        keep = torch.arange(width).unsqueeze(0) < torch.tensor(commit_lens).unsqueeze(1)
        batch.token_to_kv_pool_allocator.free(window[~keep])
        batch.out_cache_loc = window[keep]
        offset = 0
        for b, n in enumerate(commit_lens):
            start = int(batch.seq_lens[b])
            batch.req_to_token_pool.req_to_token[b, start : start + n] = batch.out_cache_loc[offset : offset + n]
            offset += n
        batch.seq_lens = batch.seq_lens + torch.tensor(commit_lens)
        hidden = logits_output.hidden_states.view(bs, width, -1)
        next_hidden = torch.cat([hidden[b, :n] for b, n in enumerate(commit_lens)])
        logits_output.hidden_states = None
        return torch.tensor(roots), torch.tensor(commit_lens, dtype=torch.int32), next_hidden, accepted


# The model runner's graph gates, as the release's model runner asks them (read by sgl-scan).
GRAPH_GATES = (
    ('piecewise_cuda_graph_runner', 'can_run', 'sglang/srt/model_executor/model_runner.py:3034'),
    ('graph_runner', 'can_run', 'sglang/srt/model_executor/model_runner.py:3211'),
)


def _GraphRunner(method):
    """A CUDA graph runner whose gate method (the release's name for it) would replay every batch."""
    return type("_GraphRunner", (), {method: lambda self, forward_batch: True})()


class _StubTarget:
    """The target worker's `forward_batch_generation` with the release's parameters; writes KV and hidden states per verify row."""

    backend_methods = ()  # methods its attention backend has

    def __init__(self, attention_backend="triton"):
        self.calls = 0
        self.attention_backend = attention_backend
        backend = SimpleNamespace(**{name: (lambda **kwargs: None) for name in self.backend_methods})
        head = torch.cat([torch.eye(VOCAB), torch.full((PAD, VOCAB), 100.0)])  # padding rows past the vocabulary
        self.model_runner = SimpleNamespace(model=SimpleNamespace(lm_head=SimpleNamespace(weight=head)), attn_backend=backend,
                                            model_config=SimpleNamespace(vocab_size=VOCAB))
        for attribute, method, _ in GRAPH_GATES:  # the release's graph runners, each willing to replay
            setattr(self.model_runner, attribute, _GraphRunner(method))
        self.gates_seen = []  # per verify forward: what every graph gate answered during it

    def gates(self):
        return [getattr(getattr(self.model_runner, attribute), method)(None) for attribute, method, _ in GRAPH_GATES]

    def forward_batch_generation(self, model_worker_batch, forward_batch=None, pp_proxy_tensors=None, is_verify=False, skip_attn_backend_init=False):
        assert is_verify is True
        self.calls += 1
        self.gates_seen.append(self.gates())
        batch = model_worker_batch
        spec = batch.spec_info
        assert batch.forward_mode == "TARGET_VERIFY"
        logits = _toy_target_logits(batch, spec, honours_mask=self.attention_backend in TOY_MASK_BACKENDS)
        width = int(spec.draft_token_num)
        assert batch.out_cache_loc.numel() == logits.shape[0]
        for row, slot in enumerate(batch.out_cache_loc.tolist()):
            batch.token_to_kv_pool_allocator.kv[slot] = (row // width, row % width)
        hidden = torch.tensor([[1000.0 * (row // width) + row % width] for row in range(logits.shape[0])])
        return SimpleNamespace(logits_output=SimpleNamespace(next_token_logits=logits, hidden_states=hidden), can_run_cuda_graph=False)


class _StubRunner:
    """`self.draft_model_runner`: the draft forward returns the block's hidden states (identity lm_head: they are the logits)."""

    def forward(self, forward_batch):
        return SimpleNamespace(logits_output=SimpleNamespace(hidden_states=forward_batch.hidden))


class _Result:
    def __init__(self, **fields):
        self.__dict__.update(fields)


class _StubBase:
    page_size_default = 1  # the base's page size when server_args gives none

    def __init__(self, *args, **kwargs):
        self.init_args, self.init_kwargs = args, kwargs
        self.server_args = kwargs.get("server_args")
        self.target_worker = _StubTarget(getattr(self.server_args, "attention_backend", None))
        self.draft_model_runner = _StubRunner()
        self.page_size = getattr(self.server_args, "page_size", None) or self.page_size_default
        self.appended = []
        self.ran_past_draft = False
        # as the release's DFlash worker: its block size is the speculative_num_draft_tokens setting
        self.block_size = int(_width_setting(self.server_args))
        self.phase_widths = {}

    def _draft_block(self, batch):
        """As the release: the block's own slots are taken and given back around the draft forward, on its block size."""
        assert batch.draft_rows.shape[1] == self.block_size - 1, f"the base drafts blocks of {self.block_size}, the drafter was trained on {BLOCK}"
        allocator = batch.token_to_kv_pool_allocator
        state = allocator.backup_state()
        try:
            allocator.alloc(len(batch.reqs) * BLOCK)
            rows = torch.cat([torch.zeros(len(batch.reqs), 1, VOCAB), batch.draft_rows], dim=1).reshape(-1, VOCAB)
            self.draft_model_runner.forward(SimpleNamespace(hidden=rows))
            self.ran_past_draft = True
        finally:
            allocator.restore_state(state)

    def forward_batch_generation(self, *args, **kwargs):
        batch = args[0] if args else kwargs["batch"]
        return ("dflash", args, kwargs)

    def _prepare_for_speculative_decoding(self, batch, draft_input):
        assert draft_input is batch.spec_info
        self._draft_block(batch)

    def _append_target_hidden_to_draft_kv(self, batch, draft_input):
        self.appended.append((draft_input.target_hidden.clone(), draft_input.ctx_lens.clone()))


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
    setattr(_stub_module(monkeypatch, RESULT_MODULE), RESULT_NAME, _Result)
    setattr(_stub_module(monkeypatch, FORWARD_MODE_MODULE), "ForwardMode", SimpleNamespace(TARGET_VERIFY="TARGET_VERIFY", DECODE="DECODE"))
    setattr(_stub_module(monkeypatch, LOADER_MODULE), "get_config", lambda path, **kwargs: SimpleNamespace(path=path, **kwargs))
    trained = SimpleNamespace(resolve_block_size=lambda default=None: BLOCK)
    setattr(_stub_module(monkeypatch, PARSER_MODULE), "parse_dflash_draft_config", lambda draft_hf_config: trained)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setenv("SGLANG_DDTREE_BUDGET", str(BUDGET))
    monkeypatch.setenv("SGLANG_DDTREE_TOPK", "3")
    name = "ddtree_sglang.worker"
    sys.modules.pop(name, None)
    module = importlib.import_module(name)
    # stand-in server arguments carry their model kind (the release's own producers are tested on the real package)
    monkeypatch.setattr(module, "model_kind", lambda settings: (getattr(settings, "ddtree_kinds", ("mha",)), getattr(settings, "ddtree_arch", None), None))
    yield module
    sys.modules.pop(name, None)


class _Mode:
    def __init__(self, decode):
        self.decode = decode

    def is_decode(self):
        return self.decode

    def __eq__(self, other):
        return other == ("DECODE" if self.decode else "EXTEND")


class _Batch(SimpleNamespace):
    def get_model_worker_batch(self):
        return self


def _next_token(seq):
    return (sum((i + 2) * t for i, t in enumerate(seq[-4:])) * 5 + len(seq)) % VOCAB


def _args(**changes):
    return SimpleNamespace(**{**EXACT_ARGS, **changes})


def _default(name):
    return _args() if name == "server_args" else f"<{name}>"


def _worker(module, **given):
    return module.DDTreeWorker(**{name: given.get(name, _default(name)) for name in INIT_PARAMS})


def _sampling(**changes):
    """Sampling info of an all-greedy batch the release edits no logits for; `changes` alter that."""
    fields = dict(
        is_all_greedy=True,
        has_custom_logit_processor=False,
        penalizer_orchestrator=SimpleNamespace(is_required=False),
        logit_bias=None,
        need_top_k_sampling=False,
        need_top_p_sampling=False,
        need_min_p_sampling=False,
        temperatures=torch.ones(1),
    )
    fields.update(changes)
    return SimpleNamespace(**fields)


def _batch(seqs, draft_rows):
    """A decode batch over sequences whose last token is the root (not yet in the KV cache)."""
    req_to_token = torch.zeros((len(seqs), 256), dtype=torch.int64)
    allocator = _Allocator()
    for b, seq in enumerate(seqs):
        req_to_token[b, : len(seq) + 2 * WIDTH] = allocator.alloc(len(seq) + 2 * WIDTH)  # prefix + the scheduler's reservation
    return _Batch(
        forward_mode=_Mode(True),
        draft_rows=draft_rows,
        seq_lens=torch.tensor([len(s) - 1 for s in seqs]),
        seq_lens_cpu=_host(torch.tensor([len(s) - 1 for s in seqs])),
        seq_lens_sum=sum(len(s) - 1 for s in seqs),
        spec_info=SimpleNamespace(verified_id=torch.tensor([s[-1] for s in seqs])),
        req_pool_indices=torch.arange(len(seqs)),
        req_to_token_pool=SimpleNamespace(req_to_token=req_to_token),
        token_to_kv_pool_allocator=allocator,
        reqs=[SimpleNamespace(output_ids=[]) for _ in seqs],
        contexts=[s[:-1] for s in seqs],
        sampling_info=None,
    )


class _HostTensor(torch.Tensor):
    """A tensor on the host (the schedule batch's seq_lens_cpu): reading it back syncs no device."""


def _host(tensor):
    return tensor.as_subclass(_HostTensor)


def _committed(batch, result, b):
    """The tokens request b committed in this step."""
    return list(batch.reqs[b].output_ids)


def _hand_trees(module, tokens, parents, committed):
    trees = [module.ddtree.DraftTree(torch.tensor(tokens), torch.tensor(parents), module.ddtree.depths_from_parents(torch.tensor(parents)))]
    toks, pars, sizes = module.ddtree.pack_trees(trees, WIDTH)
    depths = torch.zeros_like(pars)
    depths[0, : len(tokens)] = trees[0].depths
    return module.TreeBatch(toks, pars, sizes, module.ddtree.padded_masks(trees, WIDTH), depths, depths + committed, int(depths.max()))


def test_constructor_forwards_every_parameter(worker_module):
    given = {name: _default(name) for name in INIT_PARAMS}
    worker = worker_module.DDTreeWorker(**given)
    assert {**dict(zip(INIT_PARAMS, worker.init_args)), **worker.init_kwargs} == given
    assert (worker.ddtree_budget, worker.ddtree_topk) == (BUDGET, 3)


@pytest.mark.parametrize(("changes", "reason"), [
    ({"tp_size": 2}, "refuses tensor parallelism (tp_size=2)"),
    ({"attention_backend": "fa3"}, "needs an attention backend whose verify reads the tree mask"),
    ({"decode_attention_backend": "fa3"}, "decode_attention_backend=fa3"),
])
def test_constructor_refuses_what_would_not_be_exact_before_the_base_runs(worker_module, changes, reason):
    """A causal-only backend (fa3) and TP > 1 are refused in one line (CUDA graphs are not: see the graph tests)."""
    with pytest.raises(RuntimeError, match=re.escape(reason)) as info:
        _worker(worker_module, server_args=_args(**changes))
    assert "\n" not in str(info.value)


def _gpu(monkeypatch, module, arms, family="mha"):
    """The release's architecture tests answered as on a GPU where exactly the arms `arms` (indices into
    DEFAULT_ARMS[family]) hold; the final else always does."""
    holding = [module.DEFAULT_ARMS[family][i][0] for i in arms]
    monkeypatch.setattr(module, "_holds", lambda test: test[0] == "else" or test in holding)


def _causal_arm(module, kind="mha"):
    """(index, arm) of the first arm of the release's default chain for `kind` that picks a backend whose
    verify does not get the tree mask (fa3 on Hopper, trtllm_mha on sm100, flashinfer for MLA ...), or None."""
    family = "mla" if kind == "mla" else "mha"
    return next(((i, arm) for i, arm in enumerate(module.DEFAULT_ARMS[family])
                 if any(b not in module.MASK_READING[kind] and not (kind == "sinks" and b in arm[4]) for b in arm[1])), None)


def test_a_default_that_ignores_the_tree_mask_is_refused_naming_the_release_line(worker_module, monkeypatch):
    found = _causal_arm(worker_module)
    if found is None:
        pytest.skip("no arm of this release's default chain picks a backend that ignores the tree mask")
    index, (test, backends, _, where, _) = found
    causal = next(b for b in backends if b not in worker_module.MASK_READING["mha"])
    _gpu(monkeypatch, worker_module, [index])
    for chosen in (causal, None):  # resolved to the default, or not yet resolved
        with pytest.raises(RuntimeError, match=re.escape(f"default attention backend on this GPU")) as info:
            _worker(worker_module, server_args=_args(attention_backend=chosen))
        assert f"is {causal} ({where})" in str(info.value) and f"--attention-backend {worker_module.mask_backend()}" in str(info.value)
    reading = {**worker_module.MASK_READING, "mha": {**worker_module.MASK_READING["mha"], causal: "as if it read the mask"}}
    monkeypatch.setattr(worker_module, "MASK_READING", reading)
    _worker(worker_module, server_args=_args(attention_backend=causal))  # the refusal follows the facts


def test_the_server_args_hook_forces_a_mask_reading_backend_where_the_default_would_not(worker_module, monkeypatch):
    found = _causal_arm(worker_module)
    if found is None:
        pytest.skip("no arm of this release's default chain picks a backend that ignores the tree mask")
    index, (_, backends, _, _, _) = found
    causal = next(b for b in backends if b not in worker_module.MASK_READING["mha"])
    _gpu(monkeypatch, worker_module, [index])
    args = _args(attention_backend=causal)
    worker_module.ddtree_server_args(args)
    assert args.attention_backend == worker_module.mask_backend() in worker_module.MASK_READING["mha"]
    _worker(worker_module, server_args=args)  # and the worker then runs
    chosen = _args(attention_backend="fa3" if causal != "fa3" else "torch_native")  # chosen by the user, not the default here
    with pytest.raises(ValueError, match="needs an attention backend whose verify reads the tree mask"):
        worker_module.ddtree_server_args(chosen)


def test_an_mla_target_is_routed_to_a_backend_whose_mla_verify_gets_the_mask_or_refused(worker_module, monkeypatch):
    """MLA models build other classes (FlashInferMLAAttnBackend ...): the MLA facts decide, never the MHA ones."""
    if "mla" in worker_module.NO_READER:
        with pytest.raises(ValueError, match="refuses this MLA target"):
            worker_module.ddtree_server_args(_args(attention_backend="triton", ddtree_kinds=("mla",)))
        return
    found = _causal_arm(worker_module, "mla")
    if found is None:
        pytest.skip("no arm of this release's MLA default picks a backend that drops the tree mask")
    index, (_, backends, _, where, _) = found
    causal = next(b for b in backends if b not in worker_module.MASK_READING["mla"])
    _gpu(monkeypatch, worker_module, [index], "mla")
    args = _args(attention_backend=causal, ddtree_kinds=("mla",))
    worker_module.ddtree_server_args(args)
    assert args.attention_backend == worker_module.mask_backend(("mla",)) in worker_module.MASK_READING["mla"]
    with pytest.raises(RuntimeError, match=re.escape(f"is {causal} ({where})")):  # the worker alone can only refuse
        _worker(worker_module, server_args=_args(attention_backend=causal, ddtree_kinds=("mla",)))
    mha_only = [b for b in worker_module.MASK_READING["mha"] if b not in worker_module.MASK_READING["mla"]]
    for backend in mha_only:  # reads the mask for MHA models, drops it for MLA ones: chosen by the user, refused
        with pytest.raises(ValueError, match=f"got attention_backend={backend}"):
            worker_module.ddtree_server_args(_args(attention_backend=backend, ddtree_kinds=("mla",)))


def test_a_sinks_target_never_gets_a_backend_without_sinks(worker_module, monkeypatch):
    """gpt-oss: the release's own else arm skips flashinfer for attention sinks; a user's flashinfer is refused."""
    no_sinks = [b for b in worker_module.MASK_READING["mha"] if b not in worker_module.MASK_READING["sinks"]]
    for backend in no_sinks:
        with pytest.raises(ValueError, match=f"got attention_backend={backend}"):
            worker_module.ddtree_server_args(_args(attention_backend=backend, ddtree_kinds=("sinks",)))
    _gpu(monkeypatch, worker_module, [])  # only the else arm holds
    args = _args(attention_backend=None, ddtree_kinds=("sinks",))
    worker_module.ddtree_server_args(args)
    assert args.attention_backend in (None, *worker_module.MASK_READING["sinks"])


def test_a_backend_a_model_override_set_is_the_releases_choice(worker_module, monkeypatch):
    """A per-model override provider's backend is forced away like the default chain's, naming its line."""
    arch, entries = next(((a, e) for a, e in worker_module.MODEL_OVERRIDES.items()
                          if any(b not in worker_module.MASK_READING["mha"] for bs, _ in e for b in bs)), (None, ()))
    if arch is None:
        pytest.skip("no per-model override of this release sets a backend that ignores the tree mask")
    backend, where = next((b, w) for bs, w in entries for b in bs if b not in worker_module.MASK_READING["mha"])
    _gpu(monkeypatch, worker_module, [])
    force, line = worker_module.attention_decision(_args(attention_backend=backend, ddtree_arch=arch))
    assert force == worker_module.mask_backend() and f"{where}, the release's override for {arch}" in line


def test_a_release_predicate_that_cannot_answer_is_refused(worker_module, monkeypatch):
    if all(arm[0][0] == "else" for arm in worker_module.DEFAULT_ARMS["mha"]) and worker_module.DEFAULT_UNREAD["mha"] is None:
        pytest.skip("this release's default chain tests no architecture")

    def cannot_answer(test):
        if test[0] == "else":
            return True
        raise ImportError(f"no {test[1]} here")

    monkeypatch.setattr(worker_module, "_holds", cannot_answer)
    with pytest.raises(RuntimeError, match="cannot tell the default attention backend on this GPU") as info:
        _worker(worker_module, server_args=_args(attention_backend=None))
    assert "\n" not in str(info.value)


def test_a_gpu_whose_default_reads_the_tree_mask_needs_nothing(worker_module, monkeypatch):
    _gpu(monkeypatch, worker_module, [])  # only the else arm holds (e.g. sm120 where no arm names it)
    otherwise = worker_module.DEFAULT_ARMS["mha"][-1][1]
    args = _args(attention_backend=None)
    if all(b in worker_module.MASK_READING["mha"] for b in otherwise):
        worker_module.ddtree_server_args(args)
        assert args.attention_backend is None
        _worker(worker_module, server_args=args)
    else:
        with pytest.raises(RuntimeError, match="default attention backend on this GPU"):
            _worker(worker_module, server_args=args)


def test_constructor_refuses_missing_engine_glue(worker_module, monkeypatch):
    monkeypatch.setattr(worker_module, "ENGINE_GLUE_MISSING", ("no verify input",))
    with pytest.raises(RuntimeError, match="no verify input"):
        _worker(worker_module)


def test_constructor_refuses_a_base_without_the_attributes_used(worker_module, monkeypatch):
    monkeypatch.setattr(worker_module, "ENGINE_ATTRIBUTES", worker_module.ENGINE_ATTRIBUTES + ("ddtree_absent",))
    with pytest.raises(RuntimeError, match="ddtree_absent"):
        _worker(worker_module)


def test_prefill_goes_to_the_dflash_worker(worker_module):
    worker = _worker(worker_module)
    result = worker.forward_batch_generation(batch=SimpleNamespace(forward_mode=_Mode(False)))
    assert result[0] == "dflash"
    assert worker.target_worker.calls == 0


def test_draft_step_runs_the_release_block_and_stops_before_sampling(worker_module):
    worker = _worker(worker_module)
    draft = torch.randn(2, BLOCK - 1, VOCAB, generator=torch.Generator().manual_seed(1))
    batch = _batch([[1, 2, 3, 9], [4, 5, 6, 7, 8, 2]], draft)
    free_before = list(batch.token_to_kv_pool_allocator.free_slots)
    logits, roots, committed = worker.ddtree_draft_logits(batch)
    assert torch.equal(logits, draft)  # full vocabulary, positions 1.. of the block, through lm_head
    assert roots.tolist() == [9, 2] and committed.tolist() == [3, 5]
    assert not worker.ran_past_draft  # stopped right after the draft forward
    assert "forward" not in vars(worker.draft_model_runner)  # the runner's own forward is back
    assert batch.token_to_kv_pool_allocator.free_slots == free_before  # the block's own slots were given back


def test_draft_logits_stay_in_the_lm_head_dtype(worker_module):
    """No fp32 copy of the LM head per step: a bf16 head gives bf16 draft logits (the log-softmax is fp32 later)."""
    worker = _worker(worker_module)
    head = worker.target_worker.model_runner.model.lm_head
    head.weight = head.weight.to(torch.bfloat16)
    draft = torch.randn(2, BLOCK - 1, VOCAB, generator=torch.Generator().manual_seed(1))
    logits, _, _ = worker.ddtree_draft_logits(_batch([[1, 2, 3, 9], [4, 5, 6, 7, 8, 2]], draft))
    assert logits.dtype == torch.bfloat16
    assert torch.equal(logits, draft.to(torch.bfloat16))


def test_commit_keeps_exactly_the_accepted_path(worker_module):
    """Hand-checked tree: root r, children a (1) and b (2), a's child c (3), b's child d (4); the target accepts b then d."""
    worker = _worker(worker_module)
    seq = [1, 2, 3, 9]
    context = seq[:-1]
    b_tok = _next_token(context + [9])
    d_tok = _next_token(context + [9, b_tok])
    bonus = _next_token(context + [9, b_tok, d_tok])
    a_tok, c_tok = (b_tok + 1) % VOCAB, (d_tok + 2) % VOCAB
    batch = _batch([seq], torch.zeros(1, BLOCK - 1, VOCAB))
    worker.ddtree_draft_logits(batch)
    trees = _hand_trees(worker_module, [9, a_tok, b_tok, c_tok, d_tok], [-1, 0, 0, 1, 2], len(context))
    mask = worker_module.ddtree.verify_custom_mask(trees.mask, [len(context)])
    logits, verified = worker.ddtree_target_verify(batch, trees, mask)
    choice = torch.argmax(logits, dim=-1).view(1, WIDTH)
    accepted, counts, bonus_out = worker_module.walk_trees(trees, choice)
    assert accepted[0, :3].tolist() == [0, 2, 4] and counts.tolist() == [3] and bonus_out.tolist() == [bonus]
    window = batch.out_cache_loc.view(1, WIDTH).clone()
    result = worker.ddtree_commit(batch, trees, verified, accepted, counts, bonus_out)
    kv = batch.token_to_kv_pool_allocator.kv
    rows = batch.req_to_token_pool.req_to_token
    # the KV of r, b, d now lies, in that order, right after the committed prefix
    assert [kv[int(slot)] for slot in rows[0, 3:6]] == [(0, 0), (0, 2), (0, 4)]
    assert _committed(batch, result, 0) == [b_tok, d_tok, bonus]
    assert result.next_token_ids.tolist() == [bonus]
    assert result.num_accepted_drafts == 2 and result.num_accepted_drafts_per_req_cpu == [2]
    # every window slot but r's, b's and d's is freed, exactly once
    assert sorted(sum(batch.token_to_kv_pool_allocator.freed, [])) == sorted(window[0, [1, 3] + list(range(5, WIDTH))].tolist())
    assert batch.seq_lens.tolist() == [6]
    ((hidden, ctx_lens),) = worker.appended
    assert hidden.view(-1).tolist() == [0.0, 2.0, 4.0] and ctx_lens.tolist() == [3]
    assert batch.spec_info.verified_id.tolist() == [bonus]
    assert batch.forward_mode == "DECODE"


def test_decode_equals_greedy_decoding(worker_module):
    _decode_against_greedy(_worker(worker_module), exact=True)


# --- CUDA graphs: kept everywhere but the tree verify ------------------------------------------------


def test_with_cuda_graphs_on_only_the_tree_verify_runs_eager(worker_module):
    """Graphs on (the release's default): constructed, and during each tree verify forward every graph gate of
    the release's model runner answers no; before and after, each answers as the release's runner does."""
    assert GRAPH_GATES, "sgl-scan read no graph gate from this release's model runner"
    worker = _worker(worker_module, server_args=_args(disable_cuda_graph=False))
    target = worker.target_worker
    assert target.gates() == [True] * len(GRAPH_GATES)
    _decode_against_greedy(worker, exact=True)
    assert target.gates_seen and all(seen == [False] * len(GRAPH_GATES) for seen in target.gates_seen)
    assert target.gates() == [True] * len(GRAPH_GATES)  # reopened
    for attribute, method, _ in GRAPH_GATES:
        assert method not in vars(getattr(target.model_runner, attribute))  # no instance override left behind


def test_the_gates_reopen_when_the_verify_raises(worker_module):
    worker = _worker(worker_module)
    runner = worker.target_worker.model_runner
    with pytest.raises(KeyError):
        with worker_module.eager_verify(runner):
            raise KeyError("boom")
    assert worker.target_worker.gates() == [True] * len(GRAPH_GATES)


def test_the_eager_scope_is_what_keeps_the_verify_off_graphs(worker_module, monkeypatch):
    """Negative control: with the scope made a no-op, the verify forward sees open gates (would replay a graph
    captured without the tree mask), so the test above can fail."""
    import contextlib

    monkeypatch.setattr(worker_module, "eager_verify", lambda *a, **k: contextlib.nullcontext())
    worker = _worker(worker_module)
    _decode_against_greedy(worker, exact=True)  # the stand-in target ignores graphs; only the gates tell
    assert any(seen != [False] * len(GRAPH_GATES) for seen in worker.target_worker.gates_seen)


def test_graphs_are_refused_where_no_graph_gate_could_be_read(worker_module, monkeypatch):
    monkeypatch.setattr(worker_module, "GRAPH_GATES", ())
    with pytest.raises(RuntimeError, match="refuses CUDA graphs") as info:
        _worker(worker_module, server_args=_args(disable_cuda_graph=False))
    assert "\n" not in str(info.value) and "--disable-cuda-graph" in str(info.value)
    _worker(worker_module, server_args=_args(disable_cuda_graph=True))  # eager everywhere: nothing to close


# --- Draft logits through the base's head path -------------------------------------------------------


def test_draft_top_k_in_chunks_equals_top_k_of_the_full_logits(worker_module, monkeypatch):
    """The decode step never builds [B, L, V] logits or their fp32 copy: the head runs on HEAD_CHUNK rows at a time
    and gives the same top-K log-probs and ids as the full log-softmax."""
    monkeypatch.setattr(worker_module, "HEAD_CHUNK", 4)
    worker = _worker(worker_module)
    head = worker.target_worker.model_runner.model.lm_head
    head.weight = torch.randn(VOCAB + PAD, VOCAB, generator=torch.Generator().manual_seed(8))
    draft = torch.randn(2, BLOCK - 1, VOCAB, generator=torch.Generator().manual_seed(9))
    seqs = [[1, 2, 3, 9], [4, 5, 6, 7, 8, 2]]
    full, roots, committed = worker.ddtree_draft_logits(_batch(seqs, draft))
    rows_seen = []
    logits_of = worker_module.DraftHead.logits
    monkeypatch.setattr(worker_module.DraftHead, "logits", lambda self, rows: rows_seen.append(rows.shape[0]) or logits_of(self, rows))
    logprobs, ids, roots2, committed2 = worker.ddtree_draft_topk(_batch(seqs, draft), 6, None)
    expected_lp, expected_ids = worker_module.ddtree.topk_logprobs(full, 6)
    assert torch.equal(ids, expected_ids) and torch.allclose(logprobs, expected_lp, atol=1e-5)
    assert max(rows_seen) <= 4 and sum(rows_seen) == 2 * (BLOCK - 1)
    assert roots2.tolist() == roots.tolist() and committed2.tolist() == committed.tolist()
    assert int(ids.max()) < VOCAB  # never a padding row


def test_a_quantized_head_drafts_through_its_own_kernel(worker_module):
    """A head without a dense weight: refused in one line, as this release's DFlash has no quantized-head path."""
    worker = _worker(worker_module)
    runner = worker.target_worker.model_runner
    dense = runner.model.lm_head.weight
    calls = []

    def apply(layer, rows, bias):
        calls.append(rows.shape[0])
        return torch.matmul(rows.float(), dense.t())  # [rows, V + PAD], as a kernel over the padded head

    runner.model.lm_head = SimpleNamespace(weight=torch.zeros(3, 3, dtype=torch.int8), quant_method=SimpleNamespace(apply=apply))
    draft = torch.randn(1, BLOCK - 1, VOCAB, generator=torch.Generator().manual_seed(4))
    with pytest.raises(RuntimeError, match="lm_head has no dense weight") as info:
        worker.ddtree_draft_topk(_batch([[1, 2, 3, 9]], draft), 5, None)
    assert "\n" not in str(info.value) and not calls


def test_target_sampling_runs_in_chunks_of_rows(worker_module, monkeypatch):
    """Temperature sampling takes one HEAD_CHUNK of rows' fp32 softmax at a time, never [B * W, V]."""
    monkeypatch.setattr(worker_module, "HEAD_CHUNK", 3)
    seen = []
    softmax = torch.softmax
    monkeypatch.setattr(worker_module.torch, "softmax", lambda x, dim: seen.append(x.shape[0]) or softmax(x, dim=dim))
    logits = torch.randn(2, 5, VOCAB, generator=torch.Generator().manual_seed(1))
    info = SimpleNamespace(is_all_greedy=False, temperatures=torch.tensor([[0.0], [0.7]]))
    choice = worker_module.DDTreeWorker.ddtree_target_choice(SimpleNamespace(sampling_info=info), logits)
    assert choice.shape == (2, 5) and max(seen) <= 3 and sum(seen) == 10
    assert torch.equal(choice[0], logits[0].argmax(-1))  # temperature 0: argmax


def test_a_causal_only_backend_would_break_losslessness_so_it_is_refused(worker_module, monkeypatch):
    """fa3-like verify (mask ignored): the constructor refuses it; forced past the refusal, decoding diverges."""
    with pytest.raises(RuntimeError, match="needs an attention backend whose verify reads the tree mask"):
        _worker(worker_module, server_args=_args(attention_backend="fa3"))
    monkeypatch.setattr(worker_module, "ddtree_refusal", lambda server_args, budget: None)
    _decode_against_greedy(_worker(worker_module, server_args=_args(attention_backend="fa3")), exact=False)


def _decode_against_greedy(worker, exact):
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
        draft = torch.randn(len(seqs), BLOCK - 1, VOCAB, generator=g)
        for b, seq in enumerate(seqs):
            for j, token in enumerate(greedy[b][len(seq) : len(seq) + BLOCK - 1]):
                if float(torch.rand(1, generator=g)) < 0.7:
                    draft[b, j, token] += 5.0
        batch = _batch(seqs, draft)
        result = worker.forward_batch_generation(batch=batch)
        steps += 1
        for b in range(len(seqs)):
            tokens = _committed(batch, result, b)
            seqs[b] += tokens
            accepted_drafts += len(tokens) - 1
    same = all(seq == greedy[b][: len(seq)] for b, seq in enumerate(seqs))
    if not exact:
        assert not same, "a target that ignores the tree mask still decoded greedily: the decode test could not fail"
        return
    for b, seq in enumerate(seqs):
        assert seq == greedy[b][: len(seq)]
    assert accepted_drafts > 0
    assert worker.target_worker.calls == steps  # one target forward per step, through the release's verify path


ROUTED = [
    ("logprobs", {"return_logprob": True}, {}),
    ("grammar constraints", {"has_grammar": True}, {}),
    ("a custom logit processor", {}, {"has_custom_logit_processor": True}),
    ("penalties", {}, {"penalizer_orchestrator": SimpleNamespace(is_required=True)}),
    ("logit_bias", {}, {"logit_bias": torch.zeros(1, VOCAB)}),
    # the release's sampling accept may take a token the walk rejected: T > 0 never reaches it as a tree
    ("sampling (not all greedy)", {}, {"is_all_greedy": False}),
]


@pytest.mark.parametrize("reason, batch_fields, sampling", ROUTED, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROUTED)])
def test_batches_the_tree_cannot_run_exactly_take_the_dflash_step(worker_module, reason, batch_fields, sampling):
    worker = _worker(worker_module)
    batch = _batch([[1, 2, 3, 9]], torch.zeros(1, BLOCK - 1, VOCAB))
    batch.__dict__.update(batch_fields)
    batch.sampling_info = _sampling(**sampling)
    result = worker.forward_batch_generation(batch=batch)
    assert result[0] == "dflash"
    assert worker.target_worker.calls == 0  # no tree verify ran
    assert dict(worker.ddtree_fallbacks) == {reason: 1}


def test_a_plain_greedy_batch_runs_a_tree(worker_module):
    worker = _worker(worker_module)
    batch = _batch([[1, 2, 3, 9]], torch.zeros(1, BLOCK - 1, VOCAB))
    batch.sampling_info = _sampling()
    result = worker.forward_batch_generation(batch=batch)
    assert not isinstance(result, tuple) and worker.target_worker.calls == 1
    assert not worker.ddtree_fallbacks
    assert _committed(batch, result, 0)[0] == _next_token([1, 2, 3, 9])


def test_constructor_refuses_pages_larger_than_one_token(worker_module, monkeypatch):
    """The path-first window breaks page contiguity: server_args.page_size other than 1 is refused, naming it and its value."""
    with pytest.raises(RuntimeError, match=re.escape("server_args.page_size == 1, got 16")):
        _worker(worker_module, server_args=_args(page_size=16))
    assert _worker(worker_module, server_args=_args(page_size=1)).page_size == 1
    # the value the base itself settles on is checked too (here: none given, the base picks 4)
    monkeypatch.setattr(_StubBase, "page_size_default", 4)
    with pytest.raises(RuntimeError, match=re.escape("== 1, got 4")):
        _worker(worker_module, server_args=_args(page_size=None))


@pytest.mark.parametrize("name", BACKEND_GUARDS)
def test_a_target_backend_needing_a_skipped_base_step_is_refused(worker_module, monkeypatch, name):
    """A backend the base commits extra state for after each verify (hybrid Mamba) cannot run a tree."""
    worker = _worker(worker_module)
    batch = _batch([[1, 2, 3, 9]], torch.zeros(1, BLOCK - 1, VOCAB))
    allocs = list(batch.token_to_kv_pool_allocator.allocs)
    setattr(worker.target_worker.model_runner.attn_backend, name, lambda **kwargs: None)  # set up after construction
    with pytest.raises(RuntimeError, match=re.escape(f"attention backend has {name}()")):
        worker.forward_batch_generation(batch=batch)
    assert worker.target_worker.calls == 0 and batch.token_to_kv_pool_allocator.allocs == allocs  # refused before any work
    monkeypatch.setattr(_StubTarget, "backend_methods", (name,))
    with pytest.raises(RuntimeError, match=re.escape(f"attention backend has {name}()")):
        _worker(worker_module)  # already there at construction


def test_the_base_drafts_on_the_drafters_trained_block_not_the_tree_width(worker_module):
    """Fix 5: speculative_num_draft_tokens holds the tree's width (budget + 1 = {WIDTH}); the base, which takes its
    block from it, is built (and builds its draft side) on the drafter's trained block, so the tree is BLOCK - 1 deep."""
    worker = _worker(worker_module)
    assert worker.block_size == BLOCK and worker.ddtree_draft_width == BLOCK
    assert worker.phase_widths == {} or set(worker.phase_widths.values()) == {BLOCK}
    for name in PHASES:
        getattr(worker, name)()
    assert worker.phase_widths == {name: BLOCK for name in PHASES}
    assert _width_setting(worker.server_args) == WIDTH  # restored: the scheduler and the target verify see the tree width
    draft = torch.randn(1, BLOCK - 1, VOCAB, generator=torch.Generator().manual_seed(2))
    logits, _, _ = worker.ddtree_draft_logits(_batch([[1, 2, 3, 9]], draft))
    assert logits.shape == (1, BLOCK - 1, VOCAB)  # depth = block - 1, the DDTree reference's draft horizon


def test_the_draft_logits_span_the_vocabulary_without_the_heads_padding_rows(worker_module):
    """Fix 5: the LM head's rows past model_config.vocab_size are padding: never candidates."""
    worker = _worker(worker_module)
    draft = torch.randn(1, BLOCK - 1, VOCAB, generator=torch.Generator().manual_seed(4))
    logits, roots, committed = worker.ddtree_draft_logits(_batch([[1, 2, 3, 9]], draft))
    assert logits.shape[-1] == VOCAB
    trees = worker_module.build_tree_batch(logits, roots, committed, worker.ddtree_budget, worker.ddtree_topk)
    assert int(trees.tokens.max()) < VOCAB


_FROZEN = 2 * 32  # a run-time budget above anything fixed at generation (the budget, a --topk)


@pytest.mark.parametrize(("budget", "vocab", "cap", "expected"), [
    (_FROZEN, _FROZEN + 7, None, _FROZEN), (4, _FROZEN + 7, None, 4), (_FROZEN, VOCAB, None, VOCAB), (_FROZEN, _FROZEN + 7, "3", 3),
])
def test_top_k_per_depth_is_min_budget_vocabulary_at_run_time(worker_module, monkeypatch, budget, vocab, cap, expected):
    """Fix 5: K = min(budget, vocabulary), as the DDTree reference, from the run-time budget (not a number fixed at
    generation); SGLANG_DDTREE_TOPK, or a --topk given at generation, caps it."""
    monkeypatch.setenv("SGLANG_DDTREE_BUDGET", str(budget))
    if cap is None:
        monkeypatch.delenv("SGLANG_DDTREE_TOPK")
    worker = _worker(worker_module, server_args=_args(speculative_num_draft_tokens=max(budget + 1, BLOCK)))
    assert worker.ddtree_budget == budget
    seen = []
    topk_logprobs = worker_module.ddtree.topk_logprobs
    monkeypatch.setattr(worker_module.ddtree, "topk_logprobs", lambda logits, k: seen.append(k) or topk_logprobs(logits, k))
    logits = torch.randn(1, BLOCK - 1, vocab, generator=torch.Generator().manual_seed(4))
    worker_module.build_tree_batch(logits, torch.tensor([1]), torch.tensor([3]), worker.ddtree_budget, worker.ddtree_topk)
    generated_cap = worker_module.ddtree.DEFAULT_TOPK  # a --topk given at generation caps it too
    assert seen == [min(expected, generated_cap) if cap is None and generated_cap is not None else expected]


class _NoHostReads:
    """Tensor reads back to the host (item, tolist, int, float, bool) fail while `on`, when worker.py or tree.py does them."""

    NAMES = ("item", "tolist", "__int__", "__float__", "__bool__")

    def __init__(self, monkeypatch, module):
        self.on = False
        files = {module.__file__, module.ddtree.__file__}
        for name in self.NAMES:
            original = getattr(torch.Tensor, name)

            def guarded(tensor, *args, _original=original, _name=name, **kwargs):
                caller = sys._getframe(1).f_code
                if self.on and caller.co_filename in files and not isinstance(tensor, _HostTensor):
                    raise AssertionError(f"host sync: Tensor.{_name}() in {caller.co_name}")
                return _original(tensor, *args, **kwargs)

            monkeypatch.setattr(torch.Tensor, name, guarded)

    def off(self, fn):
        def call(*args, **kwargs):
            self.on = False
            try:
                return fn(*args, **kwargs)
            finally:
                self.on = True
        return call


def test_a_tree_step_reads_nothing_back_from_the_device(worker_module, monkeypatch):
    """Fix 5: outside the tree build and walk (Triton kernels on a GPU; their CPU fallback loops here), a decode step
    is batched tensor work: no per-request loop reading values back, no host sync."""
    guard = _NoHostReads(monkeypatch, worker_module)
    monkeypatch.setattr(worker_module, "build_tree_batch_topk", guard.off(worker_module.build_tree_batch_topk))
    monkeypatch.setattr(worker_module, "walk_trees", guard.off(worker_module.walk_trees))
    worker = _worker(worker_module)
    draft = torch.randn(2, BLOCK - 1, VOCAB, generator=torch.Generator().manual_seed(5))
    batch = _batch([[1, 2, 3, 9], [4, 5, 6, 7, 8, 2]], draft)
    batch.sampling_info = _sampling()
    guard.on = True
    result = worker.forward_batch_generation(batch=batch)
    guard.on = False
    assert not isinstance(result, tuple) and worker.target_worker.calls == 1


def test_a_traced_step_saves_the_accepted_paths_and_their_verify_log_probs(worker_module, monkeypatch, tmp_path):
    """SGLANG_DDTREE_TRACE (the GPU check's logits-level losslessness): per request, its tokens, the accepted path
    (root first) and the log-softmax of the verify row of each accepted node; off, nothing is written."""
    worker = _worker(worker_module)
    draft = torch.randn(1, BLOCK - 1, VOCAB, generator=torch.Generator().manual_seed(5))
    batch = _batch([[1, 2, 3, 9]], draft)
    batch.sampling_info = _sampling()
    batch.reqs[0].origin_input_ids, batch.reqs[0].output_ids = [1, 2, 3], [9]
    monkeypatch.setenv("SGLANG_DDTREE_TRACE", str(tmp_path / "trace"))
    worker.forward_batch_generation(batch=batch)
    (saved,) = list((tmp_path / "trace").iterdir())
    (record,) = torch.load(saved)
    assert record["tokens"] == [1, 2, 3, 9] and record["path"][0] == 9
    assert record["logprobs"].shape == (len(record["path"]), VOCAB) and record["logprobs"].dtype == torch.float32
    seq = [1, 2, 3]
    for i in range(len(record["path"])):  # the toy target puts all its mass on _next_token(context + path[:i + 1])
        assert int(record["logprobs"][i].argmax()) == _next_token(seq + record["path"][: i + 1])
