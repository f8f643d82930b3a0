"""CPU proof on the release's own attention kernel: the generated tree mask, handed to the REAL Triton
extend kernel that the `triton` backend calls for target verify, gives ancestor-masked attention.

Under `TRITON_INTERPRET=1` (no GPU), in a subprocess with the real `sglang==V` package importable
(`scripts/real_sglang_env.sh`), for 0.5.23 and 0.5.11:
- the kernel is found from the release's facts: the module `TritonAttnBackend`'s file imports
  `extend_attention_fwd` from (0.5.23 `sglang.kernels.ops.attention.extend_attention`, 0.5.11
  `sglang.srt.layers.attention.triton_ops.extend_attention`), never named here;
- the mask is the generated `tree.py`'s (`ancestor_mask` per tree, `verify_custom_mask` for the batch),
  in the verify layout the backend builds (qo_indptr per request, the committed prefix through
  kv_indices, mask_indptr of (prefix + W) * W);
- MHA (GQA) head shapes, MLA head shapes (one latent KV head, K wider than V, V a prefix of K: what
  the triton backend runs for an MLA model's absorbed verify) and learned attention sinks, each against
  a reference attention that lets each node see the prefix, itself and its ancestors only;
- the same call with the mask dropped (`custom_mask=None`: the causal verify of a backend that
  computes the mask and never hands it on) is far from the reference, so these comparisons can fail.
Tiny shapes: the interpreter is slow.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from sgl_scan.analyzer.attention import attention_facts
from sgl_scan.codegen.ddtree.generate import generate_ddtree
from tests.codegen.conftest import release_analysis
from tests.support.real_sglang import real_sglang_site, run_python

pytestmark = pytest.mark.slow

KERNEL = "extend_attention_fwd"

SCRIPT = '''
import importlib, importlib.util, json, sys
import torch
kernel = getattr(importlib.import_module({module!r}), {kernel!r})
spec = importlib.util.spec_from_file_location("ddtree_tree", {tree!r})
tree = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tree)
torch.manual_seed(0)
PARENTS = [[-1, 0, 0, 1, 2, 1], [-1, 0, 1, 0, 3, 3]]  # two trees, width 6: siblings, chains, a deep branch
PREFIXES = [5, 3]  # committed tokens per request


def ancestors(parents):
    """The reference, independent of the generated code: node i sees itself and the chain of its parents."""
    seen = torch.zeros(len(parents), len(parents), dtype=torch.bool)
    for i in range(len(parents)):
        j = i
        while j >= 0:
            seen[i, j] = True
            j = parents[j]
    return seen


def case(heads, kv_heads, dq, dv, mla=False, sinks=False, drop_mask=False):
    width, batch = len(PARENTS[0]), len(PREFIXES)
    generated = torch.stack([tree.ancestor_mask(torch.tensor(p)) for p in PARENTS])
    custom = tree.verify_custom_mask(generated, torch.tensor(PREFIXES))  # what the worker hands the verify input
    masks = [ancestors(p) for p in PARENTS]
    total = sum(PREFIXES)
    k_buffer = torch.randn(total + 4, kv_heads, dq)
    v_buffer = k_buffer[..., :dv].clone() if mla else torch.randn(total + 4, kv_heads, dv)
    q = torch.randn(batch * width, heads, dq)
    k = torch.randn(batch * width, kv_heads, dq)
    v = k[..., :dv].clone() if mla else torch.randn(batch * width, kv_heads, dv)
    o = torch.zeros(batch * width, heads, dv)
    sink = torch.randn(heads) if sinks else None
    qo_indptr = torch.arange(0, (batch + 1) * width, width, dtype=torch.int32)
    kv_indptr = torch.tensor([0, *torch.cumsum(torch.tensor(PREFIXES), 0).tolist()], dtype=torch.int32)
    kv_indices = torch.arange(total, dtype=torch.int64)
    mask_indptr = torch.tensor([0, *torch.cumsum(torch.tensor([(p + width) * width for p in PREFIXES]), 0).tolist()], dtype=torch.int64)
    scale = dq ** -0.5
    kernel(q, k, v, o, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, None if drop_mask else custom.to(torch.uint8), True,
           mask_indptr, width, 1.0, 1.0, scale, sinks=sink)
    ref = torch.zeros_like(o)
    group = heads // kv_heads
    for b in range(batch):
        p, start = PREFIXES[b], int(kv_indptr[b])
        keys = torch.cat([k_buffer[kv_indices[start:start + p]], k[b * width:(b + 1) * width]])
        values = torch.cat([v_buffer[kv_indices[start:start + p]], v[b * width:(b + 1) * width]])
        allow = torch.ones(width, p + width, dtype=torch.bool)
        allow[:, p:] = masks[b]
        for h in range(heads):
            scores = (q[b * width:(b + 1) * width, h] @ keys[:, h // group].T) * scale
            scores = scores.masked_fill(~allow, float("-inf"))
            if sink is not None:  # a learned sink: one more logit in each row's softmax, with no value
                scores = torch.cat([scores, sink[h].expand(width, 1)], dim=1)
            weights = torch.softmax(scores, dim=-1)[:, :p + width]
            ref[b * width:(b + 1) * width, h] = weights @ values[:, h // group]
    return float((o - ref).abs().max())


out = {{
    "mha": case(4, 2, 16, 16), "mla": case(4, 1, 48, 32, mla=True), "sinks": case(4, 2, 16, 16, sinks=True),
    "mha_dropped": case(4, 2, 16, 16, drop_mask=True), "mla_dropped": case(4, 1, 48, 32, mla=True, drop_mask=True),
}}
print(json.dumps(out))
'''


def kernel_module(analysis, backend: str = "triton") -> str:
    """The module the backend's class file imports the extend kernel from (the release's facts)."""
    facts = attention_facts(analysis)
    cls = facts.backend(backend).cls
    module = cls.rpartition(".")[0]
    found = next(f for f in analysis.files.values() if f.module == module)
    return next(i.module for i in found.imports if i.bound == KERNEL)


@pytest.fixture(scope="module", params=["0.5.23", "0.5.11"])
def proof(request, facts_cache, tmp_path_factory):
    version = request.param
    site = real_sglang_site(version)
    tree, analysis = release_analysis(version, facts_cache)
    gen = generate_ddtree(analysis, tree, package="ddtree_sglang", budget=5, topk=4)
    root = tmp_path_factory.mktemp(f"kernels-{version}")
    (root / "tree.py").write_text(gen.files["tree.py"])
    module = kernel_module(analysis)
    found = run_python(site, textwrap.dedent(SCRIPT.format(module=module, kernel=KERNEL, tree=str(root / "tree.py"))),
                       cwd=root, env_extra={"TRITON_INTERPRET": "1"})
    return version, gen.plan, module, found


def test_the_kernel_is_the_one_the_triton_backend_imports(proof):
    version, plan, module, _ = proof
    assert module == {"0.5.23": "sglang.kernels.ops.attention.extend_attention",
                      "0.5.11": "sglang.srt.layers.attention.triton_ops.extend_attention"}[version]
    for kind in ("mha", "sinks", "mla"):  # the backend the plan routes to for every kind on the else arm
        assert "triton" in plan.attention.reading(kind)


def test_the_generated_tree_mask_gives_ancestor_masked_attention_on_the_real_kernel(proof):
    _, _, _, found = proof
    assert found["mha"] < 1e-4 and found["mla"] < 1e-4 and found["sinks"] < 1e-4, json.dumps(found)


def test_dropping_the_mask_is_caught(proof):
    """The same kernel planned causal (what FlashInfer's MLA verify does with the mask it computes) is far off:
    the comparison above can fail, and a backend whose verify drops the mask is never one DDTree routes to."""
    _, plan, _, found = proof
    assert found["mha_dropped"] > 1e-2 and found["mla_dropped"] > 1e-2, json.dumps(found)
    flashinfer = next(b for b in plan.attention.backends if b.backend == "flashinfer")
    assert flashinfer.reads("mha") and flashinfer.reads("mla") is False and "never hands it on" in flashinfer.why("mla")
    assert "flashinfer" not in plan.attention.reading("mla")
