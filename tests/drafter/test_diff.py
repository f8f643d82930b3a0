"""`diff_mappings`: two drafters' draft->target maps compared as target ids (the K2 vs K2.5 check)."""

from __future__ import annotations

import numpy as np
import pytest

from sgl_scan.drafter.checkpoint import read_checkpoint
from sgl_scan.drafter.diff import diff_mappings
from sgl_scan.drafter.errors import CheckpointError
from tests.drafter import factory


def test_drafters_for_different_targets_differ_almost_everywhere(tmp_path):
    a_ids, b_ids = factory.hot_ids(0), factory.hot_ids(1)
    a = read_checkpoint(factory.good_drafter(tmp_path / "k2", seed=0))
    b = read_checkpoint(factory.good_drafter(tmp_path / "k25", seed=1))
    diff = diff_mappings(a, b, limit=5)
    expected_differ = np.flatnonzero(a_ids != b_ids)
    shared = len(set(a_ids.tolist()) & set(b_ids.tolist()))
    assert diff.compared == 32_000 and diff.differing == expected_differ.size
    assert 30_000 < diff.differing < 32_000  # the shared head of 800 frequent ids keeps its place
    assert diff.shared_targets == shared and diff.only_a == 32_000 - shared and diff.only_b == 32_000 - shared
    assert diff.first_differences == tuple((int(i), int(a_ids[i]), int(b_ids[i])) for i in expected_differ[:5])
    assert (diff.reading_a, diff.reading_b) == ("offset", "offset")


def test_same_vocabulary_written_two_ways_does_not_differ(tmp_path, ids):
    a = read_checkpoint(factory.good_drafter(tmp_path / "a"))
    b = read_checkpoint(factory.write_drafter(tmp_path / "b", factory.tensors(ids.copy(), factory.mask(ids)), factory.config()))
    diff = diff_mappings(a, b)
    assert (diff.reading_a, diff.reading_b) == ("offset", "direct")
    assert diff.differing == 0 and diff.shared_targets == 32_000 and diff.first_differences == ()


def test_different_lengths_compare_the_common_prefix(tmp_path, ids):
    short = ids[:31_000]
    b = factory.write_drafter(tmp_path / "b", factory.tensors(factory.offsets(short), factory.mask(short), draft=31_000), factory.config(draft_vocab_size=31_000))
    diff = diff_mappings(read_checkpoint(factory.good_drafter(tmp_path / "a")), read_checkpoint(b))
    assert (diff.length_a, diff.length_b, diff.compared, diff.differing) == (32_000, 31_000, 31_000, 0)
    assert (diff.only_a, diff.only_b) == (1_000, 0)


def test_a_drafter_without_d2t_cannot_be_compared(tmp_path, ids):
    b = factory.write_drafter(tmp_path / "b", factory.tensors(None, factory.mask(ids)), factory.config())
    with pytest.raises(CheckpointError, match=r"^B .*/b: no d2t tensor$"):
        diff_mappings(read_checkpoint(factory.good_drafter(tmp_path / "a")), read_checkpoint(b))
