"""Reading drafter checkpoints: single files, sharded folders, prefixes, and every unreadable case."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from sgl_scan.drafter.checkpoint import is_mapping_name, read_checkpoint
from sgl_scan.drafter.errors import CheckpointError
from tests.drafter import factory


def test_reads_folder_with_mapping_and_config(tmp_path, ids):
    folder = factory.good_drafter(tmp_path / "d")
    ckpt = read_checkpoint(folder)
    assert ckpt.d2t.info.dtype == "I64" and ckpt.d2t.info.shape == (32_000,)
    assert ckpt.t2d.info.dtype == "BOOL" and ckpt.t2d.info.shape == (163_840,)
    assert np.array_equal(ckpt.d2t.values + np.arange(32_000), ids)
    assert ckpt.head_rows == 32_000
    assert ckpt.config["draft_vocab_size"] == 32_000
    assert ckpt.config_path == str(folder / "config.json")
    assert ckpt.index is None and len(ckpt.files) == 1
    assert not ckpt.d2t.values.flags.writeable


def test_reads_a_single_file_and_its_config(tmp_path):
    folder = factory.good_drafter(tmp_path / "d")
    ckpt = read_checkpoint(folder / "model.safetensors")
    assert ckpt.d2t is not None and ckpt.config is not None


def test_prefixed_names_are_found_and_lookalikes_are_not(tmp_path, ids):
    weights = factory.tensors(factory.offsets(ids), factory.mask(ids), prefix="model.")
    weights["model.d2t_proj.weight"] = np.zeros((2, 2), np.float16)
    weights["d2t.bias"] = np.zeros(2, np.float16)
    ckpt = read_checkpoint(factory.write_drafter(tmp_path / "d", weights, factory.config()))
    assert ckpt.candidates == {"d2t": ("model.d2t",), "t2d": ("model.t2d",)}
    assert ckpt.d2t.info.name == "model.d2t"
    assert is_mapping_name("draft_model.d2t", "d2t") and not is_mapping_name("xd2t", "d2t")


def test_several_candidates_are_recorded_and_none_loaded(tmp_path, ids):
    weights = factory.tensors(factory.offsets(ids), factory.mask(ids))
    weights["model.d2t"] = factory.offsets(ids)
    ckpt = read_checkpoint(factory.write_drafter(tmp_path / "d", weights, factory.config()))
    assert ckpt.candidates["d2t"] == ("d2t", "model.d2t")
    assert ckpt.d2t is None and ckpt.t2d is not None


def _shard(tmp_path, ids):
    folder = tmp_path / "sharded"
    folder.mkdir()
    weights = factory.tensors(factory.offsets(ids), factory.mask(ids))
    first = {k: weights[k] for k in ("lm_head.weight", "d2t")}
    second = {k: weights[k] for k in ("fc.weight", "t2d")}
    save_file(first, str(folder / "model-00001-of-00002.safetensors"))
    save_file(second, str(folder / "model-00002-of-00002.safetensors"))
    weight_map = {**{k: "model-00001-of-00002.safetensors" for k in first}, **{k: "model-00002-of-00002.safetensors" for k in second}}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (folder / "config.json").write_text(json.dumps(factory.config()))
    return folder, weight_map


def test_sharded_checkpoint_with_index(tmp_path, ids):
    folder, _ = _shard(tmp_path, ids)
    ckpt = read_checkpoint(folder)
    assert ckpt.index == str(folder / "model.safetensors.index.json")
    assert [p.rsplit("/", 1)[1] for p in ckpt.files] == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    assert ckpt.d2t.info.file == "model-00001-of-00002.safetensors"
    assert ckpt.t2d.info.file == "model-00002-of-00002.safetensors"
    assert int(ckpt.t2d.values.sum()) == 32_000
    # the index file itself names the same checkpoint
    assert read_checkpoint(folder / "model.safetensors.index.json").d2t.info.file == "model-00001-of-00002.safetensors"


def test_index_naming_a_tensor_its_shard_lacks(tmp_path, ids):
    folder, weight_map = _shard(tmp_path, ids)
    weight_map["midlayer.norm.weight"] = "model-00002-of-00002.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    with pytest.raises(CheckpointError, match=r"model-00002-of-00002.safetensors: tensor midlayer.norm.weight listed in model.safetensors.index.json is missing"):
        read_checkpoint(folder)


def test_index_naming_a_missing_shard(tmp_path, ids):
    folder, _ = _shard(tmp_path, ids)
    (folder / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"shard model-00002-of-00002.safetensors listed in the index is missing"):
        read_checkpoint(folder)


def test_truncated_file(tmp_path):
    folder = factory.good_drafter(tmp_path / "d")
    path = folder / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 4096])
    with pytest.raises(CheckpointError, match=r"model.safetensors: truncated: the header places tensor data up to byte [\d,]+, the file has [\d,]+ bytes"):
        read_checkpoint(folder)


def test_truncated_inside_the_header(tmp_path):
    folder = factory.good_drafter(tmp_path / "d")
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(CheckpointError, match=r"truncated: the header alone needs"):
        read_checkpoint(path)


@pytest.mark.parametrize(
    "content, why",
    [
        (b"PK\x03\x04" + b"\0" * 200, "a zip archive"),
        (b"\x80\x02}q\x00(X\x03\x00\x00\x00d2tq" + b"\0" * 100, "a Python pickle"),
        (b'{"vocab_size": 163840}\n' * 10, "not a plausible header length"),
        (b"abc", "too short for a header"),
        (b"\x10\x00\x00\x00\x00\x00\x00\x00[1, 2, 3]       ", "unreadable header"),
    ],
)
def test_not_safetensors(tmp_path, content, why):
    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match="not a safetensors file") as err:
        read_checkpoint(path)
    assert why in str(err.value)


def test_folder_with_only_a_pickle_checkpoint(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x02")
    with pytest.raises(CheckpointError, match=r"no .safetensors files in this folder \(found pytorch_model.bin: a PyTorch pickle"):
        read_checkpoint(tmp_path)


def test_missing_path_and_bad_config(tmp_path):
    with pytest.raises(CheckpointError, match="no such file or folder"):
        read_checkpoint(tmp_path / "nope")
    folder = factory.good_drafter(tmp_path / "d")
    (folder / "config.json").write_text("{broken")
    with pytest.raises(CheckpointError, match=r"config.json: not readable JSON"):
        read_checkpoint(folder)


def _raw_safetensors(path, entries):
    """Write a safetensors file by hand: [(name, dtype code, shape, raw bytes)], for dtypes numpy lacks."""
    header, offset = {}, 0
    for name, dtype, shape, raw in entries:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"".join(e[3] for e in entries))


def test_bf16_mapping_is_reported_not_loaded(tmp_path):
    """numpy has no bfloat16: the tensor is known by its header, its values are not."""
    folder = tmp_path / "d"
    folder.mkdir()
    _raw_safetensors(folder / "model.safetensors", [("d2t", "BF16", (32_000,), b"\0" * 64_000), ("t2d", "BOOL", (163_840,), b"\0" * 163_840)])
    ckpt = read_checkpoint(folder)
    assert ckpt.d2t.info.dtype == "BF16" and ckpt.d2t.values is None and "BF16" in ckpt.d2t.error
    assert ckpt.t2d.values.dtype == np.bool_ and ckpt.t2d.values.shape == (163_840,)
