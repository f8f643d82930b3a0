"""A mapping tensor stored in several shards: every copy is read, and copies that differ fail the check
naming the shards (issue 18, case 5). Real safetensors files; expectations computed from what is written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sgl_scan.cli import main
from sgl_scan.drafter.checkpoint import read_checkpoint
from sgl_scan.drafter.checks import run_checks
from sgl_scan.drafter.target import read_target_config
from tests.drafter import factory

FIRST, SECOND = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"


def _shards(ids, second: dict) -> list[dict]:
    """Shard 1: a correct drafter (offsets d2t, t2d, head); shard 2: `second`."""
    return [factory.tensors(factory.offsets(ids), factory.mask(ids)), second]


def _check(folder, target_cfg, capsys) -> tuple[int, dict]:
    with pytest.raises(SystemExit) as exc:
        main(["drafter", "check", str(folder), "--target-config", str(target_cfg), "--format", "json", "--no-snapshot"])
    return exc.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("index", [False, True], ids=["no-index", "index"])
def test_a_second_d2t_holding_a_direct_map_fails_naming_both_shards(tmp_path, ids, target_cfg, capsys, index):
    # shard 2 also holds a layer, so an index lists it (its d2t copy is where the index does not look)
    second = {"d2t": ids.copy(), "midlayer.weight": np.zeros((4, 4), dtype=np.float16)}
    folder = factory.write_shards(tmp_path / "dup", _shards(ids, second), factory.config(), index=index)
    ckpt = read_checkpoint(folder)
    assert ckpt.copies["d2t"] == (f"d2t in {FIRST}", f"d2t in {SECOND}")
    assert ckpt.d2t is None and ckpt.t2d is not None
    differing = int(np.count_nonzero(factory.offsets(ids) != ids))  # every id past the first 800
    assert ckpt.conflicts["d2t"].startswith(f"d2t in {FIRST} and d2t in {SECOND} differ in {differing:,} of 32,000 entries")
    rc, data = _check(folder, target_cfg, capsys)
    assert rc == 1
    [mapping] = [c for c in data["checks"] if c["name"] == "mapping-tensors"]
    assert mapping["status"] == "fail" and FIRST in mapping["message"] and SECOND in mapping["message"]
    assert mapping["message"].startswith("2 different d2t tensors:")


def test_a_second_t2d_of_another_shape_fails(tmp_path, ids, target_cfg):
    folder = factory.write_shards(tmp_path / "dup", _shards(ids, {"t2d": factory.mask(ids)[:-1]}), factory.config())
    report = run_checks(read_checkpoint(folder), read_target_config(target_cfg))
    [mapping] = [c for c in report.checks if c.name == "mapping-tensors"]
    assert mapping.status == "fail"
    assert mapping.message == (f"2 different t2d tensors: t2d in {FIRST} and t2d in {SECOND} differ: BOOL [163840] vs "
                               "BOOL [163839]; the engine keeps whichever it loads last")


def test_identical_copies_in_two_shards_pass(tmp_path, ids, target_cfg):
    folder = factory.write_shards(tmp_path / "same", _shards(ids, {"d2t": factory.offsets(ids)}), factory.config())
    ckpt = read_checkpoint(folder)
    assert ckpt.conflicts == {} and ckpt.copies["d2t"] == (f"d2t in {FIRST}", f"d2t in {SECOND}")
    assert np.array_equal(ckpt.d2t.values, factory.offsets(ids))
    report = run_checks(ckpt, read_target_config(target_cfg))
    assert {c.name: c.status for c in report.checks if c.status != "pass"} == {}
