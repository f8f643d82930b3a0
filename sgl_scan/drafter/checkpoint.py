"""Read a drafter checkpoint: tensor metadata of every shard, the d2t/t2d values, and config.json.

Accepts a folder (sharded with `*.safetensors.index.json`, or plain `*.safetensors` files), a
`.safetensors` file, or an index file. Only the mapping tensors are loaded (numpy backend of
safetensors); every other tensor is known by its header entry alone, so a multi-GB drafter costs a
few header reads. Unreadable input raises `CheckpointError` with one line saying what is wrong.

A mapping tensor may be stored more than once: under the same name in several shards (with or
without an index; an engine loads every shard and keeps whichever copy it loads last), or under
several names. Every copy is read; copies that differ are a conflict naming each shard, and then
no copy is taken as *the* d2t/t2d.

The checkpoint is untrusted: only regular files are opened (a FIFO or device named
`model.safetensors` is refused, never waited on), shard names in an index must stay inside the
checkpoint folder, and JSON that Python would turn into an error of its own (`Infinity`, `NaN`,
nesting deeper than the parser's recursion) is a `CheckpointError` like any other bad input.
"""

from __future__ import annotations

import json
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

from sgl_scan.drafter.errors import CheckpointError, MissingBackendError
from sgl_scan.drafter.model_config import config_field

MAPPING_KINDS = ("d2t", "t2d")
INDEX_SUFFIX = ".safetensors.index.json"
INTEGER_DTYPES = frozenset({"I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64"})
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
_MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit on the JSON header
MAPPING_FLOOR = 1 << 20  # entries: a d2t/t2d this short is always loaded (8 MiB as int64)
MAPPING_CAP = 1 << 24  # entries: never more, whatever the checkpoint declares (128 MiB as int64)
MAX_JSON_BYTES = 16 << 20  # config.json, *.safetensors.index.json (a real index is well under 1 MiB)


def backend():
    """(numpy, safetensors.safe_open), or MissingBackendError saying how to install them."""
    try:
        import numpy
        from safetensors import safe_open
    except ImportError as exc:
        raise MissingBackendError(
            f"drafter checks need numpy and safetensors ({exc.name or exc} is missing): pip install 'sgl-scan[drafter]'"
        ) from None
    return numpy, safe_open


@dataclass(frozen=True)
class TensorInfo:
    """One tensor as its safetensors header describes it."""

    name: str
    dtype: str  # safetensors dtype code: "I64", "I32", "BOOL", "BF16", ...
    shape: tuple[int, ...]
    file: str  # the shard file that holds it


@dataclass(frozen=True)
class MappingTensor:
    """A loaded d2t or t2d tensor (values is a read-only numpy array, or None if numpy can't hold it)."""

    info: TensorInfo
    values: Any = None
    error: str | None = None  # why values is None


@dataclass(frozen=True)
class Checkpoint:
    path: str  # what the user named
    files: tuple[str, ...]  # safetensors files read
    index: str | None  # the index file of a sharded checkpoint
    tensors: Mapping[str, TensorInfo]
    config: Mapping[str, Any] | None
    config_path: str | None
    candidates: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # "d2t" -> names found
    d2t: MappingTensor | None = None
    t2d: MappingTensor | None = None
    # "d2t" -> every copy ("name in shard"), when a kind is stored more than once
    copies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # "d2t" -> why its copies disagree ("d2t in a.safetensors: I64 [8] differs from ..."); none is loaded
    conflicts: Mapping[str, str] = field(default_factory=dict)

    def mapping(self, kind: str) -> MappingTensor | None:
        return self.d2t if kind == "d2t" else self.t2d

    @property
    def head_rows(self) -> int | None:
        """Rows of the draft `lm_head.weight` (the draft vocabulary the head predicts over)."""
        for name, info in self.tensors.items():
            if (name == "lm_head.weight" or name.endswith(".lm_head.weight")) and len(info.shape) == 2:
                return info.shape[0]
        return None


def is_mapping_name(name: str, kind: str) -> bool:
    """`d2t`, or `d2t` behind a dotted prefix (`model.d2t`); never `d2t_proj` or `x.d2t.weight`."""
    return name == kind or name.endswith("." + kind)


def _open_regular(file: Path):
    """`file` opened for reading if it is a regular file (checked on the open descriptor, never blocking)."""
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise CheckpointError(f"{file}: not a regular file (a {_kind(mode)}); refusing to read it")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISDIR(mode):
        return "folder"
    return "special file"


def _read_text(file: Path) -> str:
    """A JSON file of the checkpoint (config, index), checked by size on the open descriptor first."""
    with _open_regular(file) as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(MAX_JSON_BYTES + 1)
    if max(size, len(data)) > MAX_JSON_BYTES:
        raise CheckpointError(
            f"{file}: larger than {MAX_JSON_BYTES >> 20} MiB, not a checkpoint's JSON; refusing to read it"
        )
    return data.decode("utf-8")


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _json(text: str | bytes):
    """json.loads without NaN/Infinity; nesting past the parser's depth is a ValueError."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def read_json_file(file: Path):
    """A JSON file that must be a regular file, without NaN/Infinity (OSError, ValueError, CheckpointError)."""
    return _json(_read_text(file))


def read_header(file: Path) -> dict[str, TensorInfo]:
    """The tensor table of one safetensors file, after checking it is whole."""
    try:
        with _open_regular(file) as handle:
            size = os.fstat(handle.fileno()).st_size
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise CheckpointError(f"{file}: not a safetensors file ({size} bytes, too short for a header)")
            (length,) = struct.unpack("<Q", prefix)
            if length > _MAX_HEADER or length > size - 8:
                raise CheckpointError(f"{file}: {_not_safetensors_or_truncated(prefix, length, size)}")
            raw = handle.read(length)
    except OSError as exc:
        raise CheckpointError(f"{file}: cannot read: {exc.strerror or exc}") from None
    try:
        header = _json(raw)
        if not isinstance(header, dict):
            raise ValueError("header is not a JSON object")
        tensors, data_end = {}, 0
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            begin, end = entry["data_offsets"]
            tensors[name] = TensorInfo(name, str(entry["dtype"]), tuple(int(d) for d in entry["shape"]), file.name)
            data_end = max(data_end, int(end))
    except (ValueError, KeyError, TypeError, OverflowError) as exc:
        raise CheckpointError(f"{file}: not a safetensors file (unreadable header: {exc})") from None
    if 8 + length + data_end > size:
        raise CheckpointError(
            f"{file}: truncated: the header places tensor data up to byte {8 + length + data_end:,}, "
            f"the file has {size:,} bytes"
        )
    return tensors


def _not_safetensors_or_truncated(prefix: bytes, length: int, size: int) -> str:
    if prefix.startswith(b"PK\x03\x04"):
        return "not a safetensors file (a zip archive: torch.save's format; convert it to safetensors)"
    if prefix[:1] == b"\x80":
        return "not a safetensors file (a Python pickle, e.g. pytorch_model.bin; convert it to safetensors)"
    if length <= _MAX_HEADER:
        return f"truncated: the header alone needs {length + 8:,} bytes, the file has {size:,}"
    return "not a safetensors file (its first 8 bytes are not a plausible header length)"


def _resolve_files(path: Path) -> tuple[list[Path], Path | None, Path]:
    """(safetensors files, index file or None, folder holding config.json)."""
    if not path.exists():
        raise CheckpointError(f"{path}: no such file or folder")
    if path.is_dir():
        indexes = sorted(path.glob("*" + INDEX_SUFFIX))
        if indexes:
            preferred = [p for p in indexes if p.name == "model" + INDEX_SUFFIX]
            return _index_shards(preferred[0] if preferred else indexes[0]), (preferred or indexes)[0], path
        files = sorted(path.glob("*.safetensors"))
        if not files:
            pickles = sorted(p.name for p in path.iterdir() if p.suffix in PICKLE_SUFFIXES)
            found = (
                f" (found {', '.join(pickles)}: a PyTorch pickle checkpoint; convert it to safetensors)"
                if pickles
                else ""
            )
            raise CheckpointError(f"{path}: no .safetensors files in this folder{found}")
        return files, None, path
    if path.name.endswith(INDEX_SUFFIX):
        return _index_shards(path), path, path.parent
    return [path], None, path.parent


def _weight_map(index: Path) -> dict[str, str]:
    try:
        weight_map = _json(_read_text(index))["weight_map"]
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise TypeError("weight_map is not an object of file names")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CheckpointError(f"{index}: not a safetensors index (no readable weight_map: {exc})") from None
    for shard in weight_map.values():
        parts = PurePosixPath(shard).parts
        if not shard or PurePosixPath(shard).is_absolute() or ".." in parts or "\\" in shard or "\0" in shard:
            raise CheckpointError(f"{index}: shard {shard!r} is outside the checkpoint folder; refusing to read it")
    return weight_map


def _index_shards(index: Path) -> list[Path]:
    shards = sorted(set(_weight_map(index).values()))
    missing = [s for s in shards if not (index.parent / s).is_file()]
    if missing:
        raise CheckpointError(f"{index}: shard {missing[0]} listed in the index is missing")
    return [index.parent / s for s in shards]


def _check_index(index: Path, headers: Mapping[str, Mapping[str, TensorInfo]]) -> None:
    for name, shard in _weight_map(index).items():
        if name not in headers.get(Path(shard).name, {}):
            raise CheckpointError(f"{index.parent / shard}: tensor {name} listed in {index.name} is missing from it")


def _read_config(folder: Path) -> tuple[Mapping[str, Any] | None, Path | None]:
    config_path = folder / "config.json"
    if not config_path.is_file():
        return None, None
    try:
        config = _json(_read_text(config_path))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{config_path}: not readable JSON: {exc}") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{config_path}: not a JSON object")
    return config, config_path


def mapping_limit(config: Mapping[str, Any] | None, tensors: Mapping[str, TensorInfo]) -> int:
    """The most entries a d2t/t2d may have before it is loaded: the largest vocabulary the checkpoint
    declares (config `vocab_size`/`draft_vocab_size`, the rows of `lm_head`/`embed_tokens`), never
    less than `MAPPING_FLOOR` (every real vocabulary is smaller) nor more than `MAPPING_CAP`."""
    sizes = [config_field(config or {}, key) for key in ("vocab_size", "draft_vocab_size")]
    for name, info in tensors.items():
        if name.endswith(("lm_head.weight", "embed_tokens.weight")) and len(info.shape) == 2:
            sizes.append(info.shape[0])
    known = [s for s in sizes if isinstance(s, int) and not isinstance(s, bool) and s > 0]
    return min(MAPPING_CAP, max([MAPPING_FLOOR, *known]))


def _entries(shape: tuple[int, ...]) -> int:
    count = 1
    for dim in shape:
        count *= max(dim, 0)
    return count


def _load_mapping(file: Path, info: TensorInfo, safe_open, limit: int = 1 << 24) -> MappingTensor:
    entries = _entries(info.shape)
    if entries > limit:  # a header can declare any length (a sparse file holds it): never allocated
        return MappingTensor(
            info,
            None,
            f"it declares {entries:,} entries, more than this checkpoint's vocabulary "
            f"sizes allow ({limit:,}); not loaded",
        )
    try:
        with safe_open(str(file), framework="numpy") as handle:
            values = handle.get_tensor(info.name)
    except (TypeError, ValueError) as exc:  # a dtype numpy cannot hold (BF16, F8)
        return MappingTensor(info, None, f"numpy cannot load {info.dtype}: {exc}")
    except Exception as exc:  # SafetensorError has no importable base class across versions
        raise CheckpointError(f"{file}: cannot read tensor {info.name}: {exc}") from None
    values.flags.writeable = False
    return MappingTensor(info, values)


def read_checkpoint(path: str | Path) -> Checkpoint:
    """Read a drafter checkpoint: a folder, a `.safetensors` file, or a `*.safetensors.index.json`."""
    _, safe_open = backend()
    given = Path(path)
    files, index, folder = _resolve_files(given)
    headers = {file.name: read_header(file) for file in files}
    if index is not None:
        _check_index(index, headers)
    tensors: dict[str, TensorInfo] = {}
    for header in headers.values():
        for name, info in header.items():
            tensors.setdefault(name, info)
    config, config_path = _read_config(folder)
    candidates = {kind: tuple(n for n in tensors if is_mapping_name(n, kind)) for kind in MAPPING_KINDS}
    by_name = {f.name: f for f in files}
    limit = mapping_limit(config, tensors)
    loaded: dict[str, MappingTensor] = {}
    copies: dict[str, tuple[str, ...]] = {}
    conflicts: dict[str, str] = {}
    for kind in MAPPING_KINDS:
        every = [info for header in headers.values() for name, info in header.items() if is_mapping_name(name, kind)]
        if not every:
            continue
        tensors_read = [_load_mapping(by_name[info.file], info, safe_open, limit) for info in every]
        if len(every) > 1:
            copies[kind] = tuple(f"{info.name} in {info.file}" for info in every)
            conflict = _disagreement(tensors_read)
            if conflict:
                conflicts[kind] = conflict
                continue
        if len(candidates[kind]) == 1:
            loaded[kind] = tensors_read[-1]  # all copies are equal; the engine keeps the last it loads
    return Checkpoint(
        path=str(given),
        files=tuple(str(f) for f in files),
        index=str(index) if index else None,
        tensors=tensors,
        config=config,
        config_path=str(config_path) if config_path else None,
        candidates=candidates,
        d2t=loaded.get("d2t"),
        t2d=loaded.get("t2d"),
        copies=copies,
        conflicts=conflicts,
    )


def _disagreement(copies: list[MappingTensor]) -> str | None:
    """Why copies of one mapping tensor differ (dtype, shape or values), naming their shards; None if equal."""
    import numpy

    first = copies[0]
    for other in copies[1:]:
        a, b = first.info, other.info
        where = f"{a.name} in {a.file} and {b.name} in {b.file}"
        if (a.dtype, a.shape) != (b.dtype, b.shape):
            return f"{where} differ: {a.dtype} {list(a.shape)} vs {b.dtype} {list(b.shape)}"
        if first.values is None or other.values is None:
            if first.values is not other.values:
                return f"{where} differ: only one can be loaded"
            continue  # neither loads (BF16...): the format check reports that
        if not numpy.array_equal(first.values, other.values):
            differing = numpy.flatnonzero(first.values.reshape(-1) != other.values.reshape(-1))
            index = int(differing[0])
            return (
                f"{where} differ in {differing.size:,} of {first.values.size:,} entries "
                f"(first at index {index:,}: {first.values.reshape(-1)[index]} vs {other.values.reshape(-1)[index]})"
            )
    return None
