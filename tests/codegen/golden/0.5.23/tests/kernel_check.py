"""Run every kernel against `tree.py` (under TRITON_INTERPRET=1 on CPU) or compile them for sm_90 and sm_120.

Usage: python kernel_check.py interpret | compile
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from ddtree_sglang import kernels, tree  # noqa: E402


def interpret() -> None:
    g = torch.Generator().manual_seed(0)
    cases = [(3, 7, 50, 4, 5), (3, 7, 50, 4, 20), (2, 5, 30, 3, 32), (2, 2, 9, 2, 20), (2, 6, 40, 5, 16)]
    for case, (batch, depth, vocab, k, budget) in enumerate(cases):
        logits = torch.randn(batch, depth, vocab, generator=g) * 3
        if case == 4:
            logits[:] = 0.0  # every score ties: the push order decides
        roots = torch.randint(0, vocab, (batch,), generator=g)
        logp, ids = tree.topk_logprobs(logits, k)
        trees = [tree.build_tree(logp[b], ids[b], int(roots[b]), budget) for b in range(batch)]
        tokens, parents, depths, sizes = kernels.best_first_build(logp, ids, roots, budget)
        for b, t in enumerate(trees):
            n = t.size
            assert int(sizes[b]) == n, (case, b, int(sizes[b]), n)
            assert torch.equal(tokens[b, :n], t.tokens) and torch.equal(parents[b, :n], t.parents), (case, b)
            assert torch.equal(depths[b, :n], t.depths), (case, b)
        width = budget + 1
        ptokens, pparents, psizes = tree.pack_trees(trees, width)
        committed = torch.randint(0, 100, (batch,), generator=g)
        mask, kdepths, positions = kernels.tree_mask(pparents, psizes, committed, depth)
        assert torch.equal(mask, tree.padded_masks(trees, width)), case
        for b, t in enumerate(trees):
            assert torch.equal(kdepths[b, : t.size], t.depths), (case, b)
            assert torch.equal(positions[b, : t.size], tree.tree_positions(t.depths, int(committed[b]))), (case, b)
        choice = torch.randint(0, vocab, (batch, width), generator=g)
        for b, t in enumerate(trees):
            for i in range(t.size):
                kids = [j for j in range(t.size) if int(t.parents[j]) == i]
                if kids and float(torch.rand(1, generator=g)) < 0.8:
                    choice[b, i] = t.tokens[kids[int(torch.randint(0, len(kids), (1,), generator=g))]]
        accepted, counts, bonus = kernels.greedy_walk(ptokens, pparents, choice, psizes, depth)
        for b, t in enumerate(trees):
            path, token = tree.greedy_walk(t, choice[b, : t.size])
            assert accepted[b, : int(counts[b])].tolist() == path, (case, b)
            assert int(bonus[b]) == token, (case, b)
    print("kernels match tree.py")


def compile_targets() -> None:
    """Compile every kernel for sm_90 (Hopper) and sm_120 (Blackwell workstation, e.g. RTX PRO 6000), no GPU needed."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    specs = [
        (
            kernels._tree_mask_kernel,
            {"parents_ptr": "*i32", "sizes_ptr": "*i32", "committed_ptr": "*i64", "mask_ptr": "*i8", "depths_ptr": "*i64", "positions_ptr": "*i64", "width": "i32", "BLOCK": "constexpr", "MAX_DEPTH": "constexpr"},
            {"BLOCK": 64, "MAX_DEPTH": 15},
        ),
        (
            kernels._greedy_walk_kernel,
            {"tokens_ptr": "*i64", "parents_ptr": "*i32", "choice_ptr": "*i64", "sizes_ptr": "*i32", "accepted_ptr": "*i32", "accept_len_ptr": "*i32", "bonus_ptr": "*i64", "width": "i32", "BLOCK": "constexpr", "MAX_DEPTH": "constexpr"},
            {"BLOCK": 64, "MAX_DEPTH": 15},
        ),
        (
            kernels._best_first_kernel,
            {"logp_ptr": "*fp32", "ids_ptr": "*i64", "root_ptr": "*i64", "tokens_ptr": "*i64", "parents_ptr": "*i32", "depths_ptr": "*i32", "sizes_ptr": "*i32", "budget": "i32", "depth_limit": "i32", "k": "i32", "width": "i32", "SLOTS": "constexpr"},
            {"SLOTS": 128},
        ),
    ]
    for arch in (90, 120):
        target = GPUTarget("cuda", arch, 32)
        for fn, signature, constexprs in specs:
            compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs), target=target)
            assert compiled.asm.get("cubin"), (fn, arch)
        print(f"kernels compile for sm_{arch}")


if __name__ == "__main__":
    {"interpret": interpret, "compile": compile_targets}[sys.argv[1]]()
