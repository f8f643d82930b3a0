"""Reads of a drafter checkpoint bounded by sgl-scan, not by the checkpoint (issue 31): a d2t/t2d
whose header declares more entries than the checkpoint's vocabularies allow is never allocated (a
sparse file can back any declared length), and config/index JSON is checked by size first."""

from __future__ import annotations

import json
import struct

import pytest

from sgl_scan.drafter.checkpoint import MAPPING_FLOOR, MAX_JSON_BYTES, mapping_limit, read_checkpoint
from sgl_scan.drafter.errors import CheckpointError
from tests.drafter.factory import good_drafter


def _sparse_safetensors(path, name: str, entries: int) -> None:
    header = json.dumps({name: {"dtype": "I64", "shape": [entries], "data_offsets": [0, entries * 8]}}).encode()
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(header)) + header)
        handle.truncate(8 + len(header) + entries * 8)  # a hole: no disk, any length


@pytest.mark.parametrize("kind", ["d2t", "t2d"])
def test_a_mapping_declaring_more_than_any_vocabulary_is_not_loaded(tmp_path, kind):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    entries = 1 << 25  # 256 MiB of int64 if it were loaded
    _sparse_safetensors(folder / "model.safetensors", kind, entries)
    (folder / "config.json").write_text(json.dumps({"vocab_size": 128256, "draft_vocab_size": 32000}))
    ckpt = read_checkpoint(folder)
    tensor = ckpt.mapping(kind)
    assert tensor is not None and tensor.values is None
    assert f"declares {entries:,} entries" in tensor.error and "not loaded" in tensor.error


def test_the_bound_follows_the_declared_vocabularies():
    assert mapping_limit({"vocab_size": 128256}, {}) == MAPPING_FLOOR  # real vocabularies: always loadable
    assert mapping_limit({"vocab_size": 3_000_000}, {}) == 3_000_000
    assert mapping_limit({"vocab_size": 10**12}, {}) == 1 << 24  # the checkpoint cannot raise the cap
    assert mapping_limit({"vocab_size": True, "draft_vocab_size": "9" * 40}, {}) == MAPPING_FLOOR


def test_an_oversized_config_json_is_refused_by_size(tmp_path):
    folder = good_drafter(tmp_path / "ckpt")
    with open(folder / "config.json", "r+b") as handle:
        handle.truncate(MAX_JSON_BYTES + 1)
    with pytest.raises(CheckpointError, match="larger than 16 MiB"):
        read_checkpoint(folder)
