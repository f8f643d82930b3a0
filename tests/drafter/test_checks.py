"""Each check's verdict on real safetensors drafters, correct and broken (draft 32,000, target 163,840).

Expected counts are computed here from the tensors written, independently of the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

from sgl_scan.drafter.checkpoint import read_checkpoint
from sgl_scan.drafter.checks import run_checks
from sgl_scan.drafter.target import Target, read_target_config
from tests.drafter import factory
from tests.drafter.factory import DRAFT, TARGET


def _run(tmp_path, weights, cfg=None, target=None, name="d"):
    cfg = factory.config() if cfg is None else cfg
    folder = factory.write_drafter(tmp_path / name, weights, cfg or None)
    if target is None:
        target = read_target_config(factory.target_config(tmp_path / "target"))
    return run_checks(read_checkpoint(folder), target)


def _status(report) -> dict[str, str]:
    return {c.name: c.status for c in report.checks}


def _check(report, name):
    return next(c for c in report.checks if c.name == name)


def _not_passing(report) -> dict[str, str]:
    return {n: s for n, s in _status(report).items() if s != "pass"}


def test_correct_drafter_passes_everything(tmp_path, ids):
    report = _run(tmp_path, factory.tensors(factory.offsets(ids), factory.mask(ids)))
    assert _not_passing(report) == {}
    assert not report.failed
    assert report.d2t.fits == "offset" and report.d2t.decided_by_t2d
    assert report.draft_vocab == DRAFT and report.draft_vocab_source == "config.json draft_vocab_size"
    assert report.target.vocab_size == TARGET and report.target.num_layers == 61
    assert _check(report, "config-aux-layers").message == (
        "eagle_config.eagle_aux_hidden_state_layer_ids [1, 29, 57] within the target's 61 layers"
    )


def test_missing_d2t_says_the_engine_falls_back_to_identity(tmp_path, ids):
    report = _run(tmp_path, factory.tensors(None, factory.mask(ids)))
    mapping = _check(report, "mapping-tensors")
    assert mapping.status == "fail"
    assert mapping.message.startswith("d2t missing (draft vocab 32,000 < target vocab 163,840): the engine would fall back to the identity map")
    assert "first 32,000 target ids" in mapping.message
    assert _not_passing(report) == {
        "mapping-tensors": "fail",
        "d2t-format": "skip",
        "d2t-offset-range": "skip",
        "d2t-offset-distinct": "skip",
        "d2t-reading": "skip",
        "d2t-trivial": "skip",
        "t2d-matches-d2t": "skip",
    }


def test_missing_both_mapping_tensors(tmp_path):
    report = _run(tmp_path, factory.tensors(None, None))
    mapping = _check(report, "mapping-tensors")
    assert mapping.status == "fail" and mapping.message.startswith("d2t and t2d missing (draft vocab 32,000 < target vocab 163,840)")
    assert "identity" in mapping.message


def test_missing_t2d_only(tmp_path, ids):
    report = _run(tmp_path, factory.tensors(factory.offsets(ids), None))
    mapping = _check(report, "mapping-tensors")
    assert mapping.status == "fail" and mapping.message.startswith("t2d missing (draft vocab 32,000 < target vocab 163,840): the checkpoint is incomplete")
    assert _status(report)["d2t-reading"] == "pass"  # the offset reading alone decides
    assert report.d2t.fits == "offset" and not report.d2t.decided_by_t2d


def test_full_vocabulary_drafter_needs_no_mapping(tmp_path):
    cfg = factory.config(draft_vocab_size=TARGET)
    report = _run(tmp_path, factory.tensors(None, None, draft=TARGET), cfg)
    mapping = _check(report, "mapping-tensors")
    assert mapping.status == "pass" and "none needed" in mapping.message
    assert not report.failed


def test_direct_map_is_detected_and_named(tmp_path, ids):
    report = _run(tmp_path, factory.tensors(ids.copy(), factory.mask(ids)))
    out_of_range = int(np.count_nonzero(ids + np.arange(DRAFT) >= TARGET))
    assert out_of_range > 0
    assert report.d2t.fits == "direct" and report.d2t.decided_by_t2d
    assert _not_passing(report) == {"d2t-offset-range": "fail", "d2t-reading": "fail"}
    assert _check(report, "d2t-offset-range").details["count"] == out_of_range
    reading = _check(report, "d2t-reading").message
    assert reading.startswith("written as a direct map: d2t[i] are themselves 32,000 distinct target ids in [0, 163,840) (t2d agrees)")
    assert reading.endswith("store d2t[i] - i instead")
    # t2d is consistent with the direct reading, so it is compared that way
    assert _check(report, "t2d-matches-d2t").message == "t2d is True at exactly the ids d2t[i] (direct reading) maps to"


def test_all_zero_d2t_is_a_warning(tmp_path):
    d2t = np.zeros(DRAFT, dtype=np.int64)
    report = _run(tmp_path, factory.tensors(d2t, factory.mask(np.arange(DRAFT))))
    assert _not_passing(report) == {"d2t-trivial": "warn"}
    trivial = _check(report, "d2t-trivial")
    assert trivial.message.startswith("d2t is all zero: draft id i maps to target id i, the first 32,000 target ids")
    assert "never built from token frequencies" in trivial.message


def test_identity_slice_written_directly(tmp_path):
    """d2t[i] = i with t2d[:N] = True: a direct map of the first N ids (fits direct, t2d decides)."""
    d2t = np.arange(DRAFT, dtype=np.int64)
    report = _run(tmp_path, factory.tensors(d2t, factory.mask(np.arange(DRAFT))))
    assert report.d2t.fits == "direct" and report.d2t.identity_direct
    assert _not_passing(report) == {"d2t-reading": "fail", "d2t-trivial": "warn"}
    assert _check(report, "d2t-trivial").details == {"kind": "identity"}


def test_identity_without_t2d_fits_both_readings(tmp_path):
    d2t = np.arange(DRAFT, dtype=np.int64)
    report = _run(tmp_path, factory.tensors(d2t, None))
    assert report.d2t.fits == "both"
    assert _status(report)["d2t-reading"] == "warn"


def test_duplicate_targets(tmp_path, ids):
    d2t = factory.offsets(ids)
    d2t[5000] = ids[4999] - 5000  # draft 5000 now lands on draft 4999's target
    report = _run(tmp_path, factory.tensors(d2t, factory.mask(ids)))
    distinct = _check(report, "d2t-offset-distinct")
    assert distinct.status == "fail"
    assert distinct.details == {"count": 1, "first": [4999, 5000, int(ids[4999])]}
    matches = _check(report, "t2d-matches-d2t")
    assert matches.status == "fail"
    assert matches.details["mapped_but_false"] == 0 and matches.details["true_but_unmapped"] == 1
    assert matches.details["first_mismatch"] == int(ids[5000])
    assert _not_passing(report) == {"d2t-offset-distinct": "fail", "d2t-reading": "fail", "t2d-matches-d2t": "fail"}


def test_out_of_range_offsets(tmp_path, ids):
    d2t = factory.offsets(ids)
    d2t[-1] += TARGET  # last draft id points past the target vocabulary
    d2t[10] = -20  # and draft 10 below zero
    report = _run(tmp_path, factory.tensors(d2t, factory.mask(ids)))
    check = _check(report, "d2t-offset-range")
    assert check.status == "fail"
    assert check.details == {"count": 2, "first": [10, -10]}
    assert check.message == "2 of 32,000 ids i + d2t[i] fall outside [0, 163,840) (first: draft 10 -> -10)"
    assert report.d2t.fits == "neither"


def test_t2d_mismatch(tmp_path, ids):
    t2d = factory.mask(ids)
    dropped = int(ids[100])
    unmapped = int(np.flatnonzero(~t2d)[0])
    t2d[dropped] = False
    t2d[unmapped] = True
    report = _run(tmp_path, factory.tensors(factory.offsets(ids), t2d))
    assert _not_passing(report) == {"t2d-matches-d2t": "fail"}
    matches = _check(report, "t2d-matches-d2t")
    assert matches.details == {"reading": "offset", "mapped_but_false": 1, "true_but_unmapped": 1, "first_mismatch": min(dropped, unmapped)}
    assert report.d2t.fits == "offset" and not report.d2t.decided_by_t2d


def test_t2d_first_n_mask_against_a_real_d2t(tmp_path, ids):
    """The default `t2d[:N] = True` that has nothing to do with d2t."""
    report = _run(tmp_path, factory.tensors(factory.offsets(ids), factory.mask(np.arange(DRAFT))))
    matches = _check(report, "t2d-matches-d2t")
    differ = int(np.count_nonzero(~np.isin(ids, np.arange(DRAFT))))
    assert matches.status == "fail"
    assert matches.details["mapped_but_false"] == differ and matches.details["true_but_unmapped"] == differ


def test_t2d_wrong_dtype_and_count(tmp_path, ids):
    t2d = factory.mask(ids).astype(np.uint8)
    t2d[np.flatnonzero(t2d == 0)[:3]] = 1
    report = _run(tmp_path, factory.tensors(factory.offsets(ids), t2d))
    assert _check(report, "t2d-format").message == "t2d is U8, not BOOL (one flag per target id)"
    assert _check(report, "t2d-count").details == {"true": 32_003, "expected": 32_000}


def test_t2d_length_differs_from_target(tmp_path, ids):
    report = _run(tmp_path, factory.tensors(factory.offsets(ids), factory.mask(ids, target=163_842)))
    assert _check(report, "t2d-format").message == (
        f"t2d has 163,842 entries but the target vocab is 163,840 (--target-config {tmp_path / 'target' / 'config.json'})"
    )
    assert _status(report)["t2d-matches-d2t"] == "skip"


def test_d2t_not_integer(tmp_path, ids):
    report = _run(tmp_path, factory.tensors(factory.offsets(ids).astype(np.float32), factory.mask(ids)))
    assert _check(report, "d2t-format").message == "d2t is F32, not an integer tensor; target ids must be exact integers"
    assert _status(report)["d2t-reading"] == "skip"


def test_wrong_config_sizes(tmp_path, ids):
    cfg = factory.config(draft_vocab_size=32_768, vocab_size=151_936)
    report = _run(tmp_path, factory.tensors(factory.offsets(ids), factory.mask(ids)), cfg)
    vocab = _check(report, "config-vocab")
    assert vocab.status == "fail"
    assert vocab.message == (
        "draft_vocab_size 32768 != d2t length 32,000; draft_vocab_size 32768 != lm_head.weight rows 32,000; "
        f"vocab_size 151936 != target vocab 163,840 (--target-config {tmp_path / 'target' / 'config.json'}); "
        "vocab_size 151936 != t2d length 163,840"
    )
    assert _check(report, "d2t-format").message == "d2t has 32,000 entries but the draft vocab is 32,768 (config.json draft_vocab_size)"


def test_missing_draft_vocab_size_is_a_warning(tmp_path, ids):
    report = _run(tmp_path, factory.tensors(factory.offsets(ids), factory.mask(ids)), factory.config(draft_vocab_size=None))
    assert report.draft_vocab_source == "lm_head.weight rows"
    assert _not_passing(report) == {"config-vocab": "warn"}


def test_max_position_embeddings_missing(tmp_path, ids):
    report = _run(tmp_path, factory.tensors(factory.offsets(ids), factory.mask(ids)), factory.config(max_position_embeddings=None))
    assert _not_passing(report) == {"config-max-position-embeddings": "fail"}


def test_no_config_json(tmp_path, ids):
    report = _run(tmp_path, factory.tensors(factory.offsets(ids), factory.mask(ids)), cfg={})
    assert _status(report)["config"] == "fail"
    assert {_status(report)[n] for n in ("config-vocab", "config-max-position-embeddings")} == {"skip"}


@pytest.mark.parametrize(
    "cfg_update, status, message",
    [
        ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 30, 61]}}, "fail",
         "eagle_config.eagle_aux_hidden_state_layer_ids [1, 30, 61]: [61] outside the target's 61 layers (0..60)"),
        ({"eagle_config": None, "eagle_aux_hidden_state_layer_ids": [2, 30, 58]}, "pass",
         "eagle_aux_hidden_state_layer_ids [2, 30, 58] within the target's 61 layers"),
        ({"eagle_config": None}, "pass", "eagle_aux_hidden_state_layer_ids not set: the engine captures its default layers"),
        ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 1, 57]}}, "fail",
         "eagle_config.eagle_aux_hidden_state_layer_ids [1, 1, 57]: a layer appears twice"),
        ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, -2, 57]}}, "fail",
         "eagle_config.eagle_aux_hidden_state_layer_ids [1, -2, 57]: -2 is not a layer index"),
    ],
)
def test_aux_layer_ids(tmp_path, ids, cfg_update, status, message):
    report = _run(tmp_path, factory.tensors(factory.offsets(ids), factory.mask(ids)), factory.config(**cfg_update))
    check = _check(report, "config-aux-layers")
    assert (check.status, check.message) == (status, message)


def test_target_vocab_from_option_and_from_the_drafter(tmp_path, ids):
    weights = factory.tensors(factory.offsets(ids), factory.mask(ids))
    by_option = _run(tmp_path, weights, target=Target(vocab_size=TARGET, vocab_source="--target-vocab"), name="a")
    assert by_option.target.vocab_source == "--target-vocab" and _not_passing(by_option) == {"config-aux-layers": "skip"}
    unknown = _run(tmp_path, weights, target=Target(), name="b")
    assert unknown.target.vocab_size == TARGET and unknown.target.vocab_source == "t2d length"
    no_t2d = _run(tmp_path, factory.tensors(factory.offsets(ids), None), target=Target(), name="c")
    assert no_t2d.target.vocab_source == "drafter config.json vocab_size"


def test_nested_target_config(tmp_path):
    target = read_target_config(factory.target_config(tmp_path / "k25", nested=True))
    assert (target.vocab_size, target.num_layers) == (TARGET, 61)


def test_several_d2t_tensors_fail(tmp_path, ids):
    weights = factory.tensors(factory.offsets(ids), factory.mask(ids))
    weights["draft.d2t"] = factory.offsets(ids)
    report = _run(tmp_path, weights)
    assert _check(report, "mapping-tensors").message.startswith("several tensors named d2t: d2t, draft.d2t")
    assert _check(report, "d2t-format").message == "several d2t tensors (see mapping-tensors)"


def test_full_vocabulary_drafter_with_only_t2d(tmp_path):
    cfg = factory.config(draft_vocab_size=TARGET)
    report = _run(tmp_path, factory.tensors(None, np.ones(TARGET, dtype=bool), draft=TARGET), cfg)
    assert _check(report, "mapping-tensors").message == "no d2t, none needed: draft and target share one vocabulary (163,840)"
