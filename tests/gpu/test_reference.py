"""The GPU check's CPU pieces (tests/gpu/reference.py): each can fail, and does on the wrong input."""

from __future__ import annotations

import random

import pytest

from tests.gpu import reference


def _toy_logprobs(sequence):
    """A deterministic 'target': log-probs over 5 tokens after a sequence."""
    weights = [((sum(sequence) * (t + 3)) % 7) + 1.0 for t in range(5)]
    total = sum(weights)
    import math

    return [math.log(w / total) for w in weights]


def _reference(sequence, n):
    return [_toy_logprobs(sequence[: len(sequence) - n + i + 1]) for i in range(n)]


def test_teacher_forced_errors_are_zero_for_a_lossless_trace_and_large_for_a_shifted_one():
    tokens, path = [4, 1, 3], [3, 2, 0]
    sequence = tokens + path[1:]
    exact = [_toy_logprobs(sequence[: len(tokens) + i]) for i in range(len(path))]
    assert max(reference.teacher_forced_errors([{"tokens": tokens, "path": path, "logprobs": exact}], _reference)) == 0
    # the verify saw the wrong context for node 2 (e.g. a causal verify over a sibling): caught
    wrong = exact[:2] + [_toy_logprobs(sequence[:-1] + [4])]
    assert max(reference.teacher_forced_errors([{"tokens": tokens, "path": path, "logprobs": wrong}], _reference)) > 0.01


def test_a_record_whose_root_is_not_its_last_token_is_an_error():
    with pytest.raises(ValueError, match="is not its root"):
        reference.teacher_forced_errors([{"tokens": [1, 2], "path": [3], "logprobs": [[0.0]]}], _reference)


def test_homogeneity_accepts_one_distribution_and_rejects_two():
    rng = random.Random(0)
    p = [0.5, 0.3, 0.15, 0.05]
    q = [0.35, 0.35, 0.2, 0.1]
    draw = lambda dist, n: rng.choices(range(4), weights=dist, k=n)  # noqa: E731
    _, dof, same = reference.homogeneity(draw(p, 2000), draw(p, 2000))
    _, _, different = reference.homogeneity(draw(p, 2000), draw(q, 2000))
    assert dof == 3 and same > 0.01 and different < 1e-6


def test_the_chi_square_tail_matches_known_quantiles():
    # 95th percentiles: dof 1 -> 3.841, dof 10 -> 18.307, dof 100 -> 124.342
    for dof, q95 in ((1, 3.841), (10, 18.307), (100, 124.342)):
        assert reference._chi2_sf(q95, dof) == pytest.approx(0.05, abs=0.01)


def test_rare_categories_are_pooled():
    statistic, dof, _ = reference.homogeneity([0] * 100 + [1, 2, 3], [0] * 100 + [4, 5])
    assert dof == 1  # {0} and the pooled rare tokens


def test_budget_sweep_and_best_budget():
    assert reference.budget_sweep(16) == [15, 31, 47, 63]
    assert reference.budget_sweep(8, limit=40) == [7, 15, 23, 31, 40]
    assert reference.best_budget({15: 90.0, 31: 130.0, 63: 120.0}, 100.0) == (31, pytest.approx(1.3))
    assert reference.best_budget({15: 80.0, 31: 80.0}, 100.0) == (15, pytest.approx(0.8))  # ties: the smaller budget
    with pytest.raises(ValueError):
        reference.best_budget({}, 100.0)


def test_mla_outcome():
    assert reference.mla_outcome(1, "ValueError: DDTree on SGLang 0.5.23 refuses MLA targets: ...", None) == "refused"
    assert "without a DDTree refusal" in reference.mla_outcome(1, "CUDA error: illegal memory access", None)
    assert reference.mla_outcome(None, "", True) == "lossless"
    assert "lossy" in reference.mla_outcome(None, "", False)


def test_kv_back_to_start():
    assert reference.kv_back_to_start(12, 12) is None
    assert "kept 3" in reference.kv_back_to_start(12, 15)
    assert "lost 2" in reference.kv_back_to_start(12, 10)
