"""CPU tests of the DDTree reference (`tree.py`)."""

import torch

from ddtree_sglang import tree


def test_topk_logprobs_are_a_full_vocabulary_log_softmax():
    logits = torch.tensor([[2.0, 0.0, 1.0, -1.0]])
    values, ids = tree.topk_logprobs(logits, 2)
    assert ids.tolist() == [[0, 2]]
    expected = torch.log_softmax(logits, dim=-1)[0, [0, 2]]
    assert torch.allclose(values[0], expected)


def test_best_first_order_on_a_hand_checked_example():
    # depth 1: a=-0.1, b=-1.0; depth 2: c=-0.2, d=-3.0
    logp = torch.tensor([[-0.1, -1.0], [-0.2, -3.0]])
    ids = torch.tensor([[10, 11], [20, 21]])
    t = tree.build_tree(logp, ids, root_token=7, budget=4)
    # pops: a(-0.1), a>c(-0.3), b(-1.0), b>c(-1.2)
    assert t.tokens.tolist() == [7, 10, 20, 11, 20]
    assert t.parents.tolist() == [-1, 0, 1, 0, 3]
    assert t.depths.tolist() == [0, 1, 2, 1, 2]


def test_budget_parents_and_depths_hold_for_random_drafts():
    g = torch.Generator().manual_seed(0)
    for budget in (1, 7, 30, 32):
        logp, ids = tree.topk_logprobs(torch.randn(6, 40, generator=g), 8)
        t = tree.build_tree(logp, ids, root_token=3, budget=budget)
        assert t.size == 1 + min(budget, sum(ids.shape[1] ** d for d in range(1, 7)))
        for i in range(1, t.size):
            p = int(t.parents[i])
            assert 0 <= p < i and int(t.depths[i]) == int(t.depths[p]) + 1 <= 6
        assert torch.equal(tree.depths_from_parents(t.parents), t.depths)


def test_mask_positions_and_walk():
    parents = torch.tensor([-1, 0, 0, 1, 3])
    mask = tree.ancestor_mask(parents)
    assert mask[4].tolist() == [True, True, False, True, True]
    assert mask[2].tolist() == [True, False, True, False, False]
    depths = tree.depths_from_parents(parents)
    assert tree.tree_positions(depths, 100).tolist() == [100, 101, 101, 102, 103]
    t = tree.DraftTree(torch.tensor([5, 6, 8, 7, 9]), parents, depths)
    # target picks 6 after the root, 7 after node 1, 4 after node 3: accept 0 -> 1 -> 3, bonus 4
    assert tree.greedy_walk(t, torch.tensor([6, 7, 0, 4, 0])) == ([0, 1, 3], 4)
    assert tree.greedy_walk(t, torch.tensor([1, 7, 0, 4, 0])) == ([0], 1)


def test_verify_custom_mask_layout():
    masks = tree.padded_masks([tree.DraftTree(torch.tensor([1, 2]), torch.tensor([-1, 0]), torch.tensor([0, 1]))], 3)
    flat = tree.verify_custom_mask(masks, [2])
    rows = flat.view(3, 5)
    assert rows[:, :2].all()
    assert rows[:, 2:].tolist() == [[True, False, False], [True, True, False], [False, False, True]]


def test_retrieve_links():
    first, sibling = tree.retrieve_links(torch.tensor([[-1, 0, 0, 1]]), torch.tensor([4]))
    assert first.tolist() == [[1, 3, -1, -1]]
    assert sibling.tolist() == [[-1, 2, -1, -1]]


VOCAB = 23


def _next_token(seq):
    return (sum((i + 1) * t for i, t in enumerate(seq[-3:])) * 7 + len(seq)) % VOCAB


def _target(context):
    def logits_fn(tokens, positions, mask):
        rows = []
        for i in range(tokens.numel()):
            path = [int(t) for t, seen in zip(tokens.tolist(), mask[i].tolist()) if seen]
            assert int(positions[i]) == len(context) + len(path) - 1
            rows.append(torch.nn.functional.one_hot(torch.tensor(_next_token(context + path)), VOCAB).float() * 9)
        return torch.stack(rows)

    return logits_fn


def test_round_is_lossless_against_greedy_decoding():
    g = torch.Generator().manual_seed(1)
    prompt = [1, 2, 3]
    greedy = list(prompt)
    while len(greedy) < 60:
        greedy.append(_next_token(greedy))
    seq = prompt + [_next_token(prompt)]
    accepted_total = 0
    while len(seq) < 50:
        truth = greedy[len(seq) : len(seq) + 7]
        draft = torch.randn(7, VOCAB, generator=g)
        for j, token in enumerate(truth):
            if torch.rand(1, generator=g) < 0.6:
                draft[j, token] += 4.0
        accepted, bonus, _ = tree.ddtree_round(draft, seq[-1], len(seq) - 1, _target(seq[:-1]), budget=12, topk=3)
        seq += accepted + [bonus]
        accepted_total += len(accepted)
    assert seq == greedy[: len(seq)]
    assert accepted_total > 0
