"""Hostile checkpoints (issue 20, case 8 and the lower items): one CheckpointError line each, never a hang
or a read outside the folder or a Python error of the JSON parser."""

from __future__ import annotations

import json
import os
import struct

import pytest

from sgl_scan.drafter.checkpoint import read_checkpoint
from sgl_scan.drafter.errors import CheckpointError
from sgl_scan.drafter.target import read_target_config
from tests.drafter.factory import good_drafter


def test_a_fifo_named_model_safetensors_is_refused_without_waiting(tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    os.mkfifo(folder / "model.safetensors")  # nobody ever writes: an open() without O_NONBLOCK blocks forever
    with pytest.raises(CheckpointError, match="not a regular file \\(a FIFO\\)"):
        read_checkpoint(folder)


def test_a_fifo_index_is_refused_without_waiting(tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    os.mkfifo(folder / "model.safetensors.index.json")
    with pytest.raises(CheckpointError, match="not a regular file"):
        read_checkpoint(folder)


@pytest.mark.parametrize("shard", ["../outside.safetensors", "/etc/passwd", "sub/../../outside.safetensors"])
def test_index_shards_must_stay_inside_the_folder(tmp_path, shard):
    good_drafter(tmp_path / "outside-src")
    (tmp_path / "outside.safetensors").write_bytes((tmp_path / "outside-src/model.safetensors").read_bytes())
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"lm_head.weight": shard}}))
    with pytest.raises(CheckpointError, match="outside the checkpoint folder"):
        read_checkpoint(folder)


def _with_header(path, header: bytes):
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 64)


@pytest.mark.parametrize(
    "header",
    [
        b'{"d2t": {"dtype": "I64", "shape": [4], "data_offsets": [0, Infinity]}}',
        b'{"d2t": {"dtype": "I64", "shape": [NaN], "data_offsets": [0, 32]}}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a": ' * 50_000 + b"1" + b"}" * 50_000,
    ],
    ids=["infinity-offset", "nan-shape", "deep-list", "deep-object"],
)
def test_hostile_header_json_is_a_checkpoint_error(tmp_path, header):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    _with_header(folder / "model.safetensors", header)
    with pytest.raises(CheckpointError, match="not a safetensors file"):
        read_checkpoint(folder)


@pytest.mark.parametrize("text", ['{"vocab_size": Infinity}', "[" * 100_000 + "]" * 100_000])
def test_hostile_config_json_is_a_checkpoint_error(tmp_path, text):
    folder = good_drafter(tmp_path / "ckpt")
    (folder / "config.json").write_text(text)
    with pytest.raises(CheckpointError, match="config.json"):
        read_checkpoint(folder)
    (tmp_path / "target.json").write_text(text)
    with pytest.raises(CheckpointError, match="target config"):
        read_target_config(tmp_path / "target.json")
