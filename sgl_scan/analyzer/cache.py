"""The facts cache under `$SGLSCAN_HOME/facts/<signature>/`: packed trees and values derived from them.

Facts are a pure function of (path, bytes, analyzer signature), so they live in a folder named after
the signature (analyzer version, Python minor version, libcst version, extractor names and versions,
a digest of the analyzer's sources): changing any of them starts a fresh cache. A *pack* holds all
facts of one tree (keyed by the digest of its sorted (path, sha256) list) so reading them is one
read, and unpickles only the files it reads (`Pack`). A file of another tree is found by its path and
sha256 in the index of a stored pack (`FactsCache.get_files`): one file per tree is written, never
one per source file (creating thousands of small files was a tenth of a cold scan's CPU). Values
derived from a tree's facts (its inventory, graph, the rules' findings: `TreeValues`) live beside
them, each `MAGIC + sha256(payload) + payload` (a pickle). Anything truncated, corrupt or of another
format reads as missing and is rebuilt. The source digests are computed from stat-stamped hashes
(`source_shas`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import re
import sys
import time
from bisect import bisect_right
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, cast

from sgl_scan import python_sources

ANALYZER_VERSION = 1
MAGIC = b"SGLF1\n"
PACK_MAGIC = b"SGLP2\n"
_DIGEST = 32
_PACK_PREFIX = len(PACK_MAGIC) + 2 * _DIGEST + 8  # a pack's magic, sha256 of its index and of its blobs, index length
KEEP_PACKS = 12
PACK_READ_SHARE = 64  # another tree's pack is read for its files when they are this share of its files or more
# a tree has up to six: analysis, inventory by records, findings, findings with their reads, graph, stat index
KEEP_VALUES = 6 * KEEP_PACKS


def signature(extractors: Sequence[Any] | None, root: Path | None = None) -> str:
    """The cache namespace for this analyzer build and these extractors (None: the built-in ones).

    Besides the declared versions it covers the analyzer's own source files, so editing the
    analyzer (or an extractor) never serves facts an older build produced. The built-in
    extractors live in those files, so naming them needs no import (a warm scan never loads libcst).
    `root`: the facts cache, where the sources' stamps are kept (`source_shas`).
    """
    parts = [
        f"analyzer={ANALYZER_VERSION}",
        f"python={sys.version_info[0]}.{sys.version_info[1]}",
        f"libcst={_libcst_version()}",
    ]
    if extractors is None:
        parts.append("extractors=built-in")
    else:
        parts += sorted(f"{ex.name}={ex.version}" for ex in extractors)
    parts.append(f"code={_code_digest(root)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def _libcst_version() -> str:
    """libcst's installed version, without importing it: the name of the `libcst-<version>.dist-info`
    folder beside the package (one directory listing), else the package metadata (a search of sys.path)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("libcst")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        site = os.path.dirname(os.path.dirname(spec.origin))
        try:
            found = [name for name in os.listdir(site) if name.startswith("libcst-") and name.endswith(".dist-info")]
        except OSError:
            found = []
        if len(found) == 1:
            return found[0][len("libcst-") : -len(".dist-info")]
    from importlib import metadata

    try:
        return metadata.version("libcst")
    except metadata.PackageNotFoundError:
        return "?"


PACKAGE = Path(__file__).resolve().parent.parent  # the `sgl_scan` package
RACY_NS = 2_000_000_000  # a file changed this close to when it was hashed is hashed again


def source_shas(package: Path, stamps: Path | None = None) -> tuple[tuple[str, str], ...]:
    """(path relative to `package`, sha256) of every Python source under it, sorted.

    With `stamps` (a file), a source whose stat stamp (size, mtime, ctime, inode, device) is the one
    recorded there when it was last hashed, and had settled then (`RACY_NS`), is not read again:
    any write, rename or `touch` moves the ctime or the inode, and the import system itself trusts
    less (a module's mtime and size). Sources that changed are read and their stamps recorded.
    """
    known = _read_stamps(stamps) if stamps is not None else {}
    now = time.time_ns()
    out: list[tuple[str, str]] = []
    fresh: dict[str, tuple] = {}
    for rel, source in python_sources(str(package)):
        try:
            st = source.stat()
            stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
            recorded = known.get(rel)  # (stamp, when hashed, sha256)
            if (
                recorded is not None
                and recorded[0] == stamp
                and recorded[1] - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_NS
            ):
                out.append((rel, recorded[2]))
                fresh[rel] = recorded
                continue
            with open(source.path, "rb") as handle:
                sha = hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            continue
        out.append((rel, sha))
        fresh[rel] = (stamp, now, sha)
    if stamps is not None and fresh != known:
        try:
            _write_atomic(stamps, encode(fresh))
        except OSError:
            pass
    return tuple(sorted(out))


def _read_stamps(path: Path) -> dict:
    data = _read(path)
    value = decode(data) if data is not None else None
    return value if isinstance(value, dict) else {}


def sources_settled(since_ns: int, loaded: frozenset[str], package: Path = PACKAGE) -> bool:
    """Whether the Python sources under `package` are the ones `loaded` names (relative paths: no module
    added or removed) and none changed after `since_ns` (less `RACY_NS`, for coarse file clocks). Stats
    only; folder times are not read (a `__pycache__` written on first import changes them). A process
    that loaded the package at `since_ns` then runs the code on disk, so what that code computed may be
    stored under the digest of the code on disk."""
    limit = since_ns - RACY_NS
    found = set()
    try:
        for rel, entry in python_sources(str(package)):
            st = entry.stat()
            if max(st.st_mtime_ns, st.st_ctime_ns) > limit:
                return False
            found.add(rel)
    except OSError:
        return False
    return found == loaded


@functools.lru_cache(maxsize=None)
def _package_shas(root: Path | None) -> tuple[tuple[str, str], ...]:
    """`source_shas` of this package, stamped under the cache `root`; once per process, so the
    digests describe the code this process runs even when the files change under it."""
    if root is None:
        return source_shas(PACKAGE)
    where = hashlib.sha256(os.fsencode(PACKAGE)).hexdigest()[:16]  # installs sharing a cache keep apart
    return source_shas(PACKAGE, Path(root) / f"code-stamps-{where}.pkl")


def _digest_of(shas: Iterable[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for rel, sha in shas:
        h.update(f"{rel}\0{sha}\n".encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def _code_digest(root: Path | None = None) -> str:
    """Digest of the analyzer package's Python sources (facts, parsers, extractors, inventory, graph)."""
    return _digest_of((rel, sha) for rel, sha in _package_shas(root) if rel.startswith("analyzer/"))


@functools.lru_cache(maxsize=None)
def package_digest(root: Path | None = None) -> str:
    """Digest of every Python source of `sgl_scan`: names the code behind a value derived from facts
    by more than the analyzer (the rules' findings), whatever module that code lives in. `root`: the
    facts cache, where the sources' stamps are kept."""
    return _digest_of(_package_shas(root))


def tree_key(items: Iterable[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for path, sha in sorted(items):
        h.update(f"{path}\0{sha}\n".encode())
    return h.hexdigest()


RECORDS_ONLY = b"R"  # leads the pickled records (`FileFacts.extras`) of a file whose general facts are not walked yet


def unwalked(blob: bytes | memoryview) -> bool:
    """Whether a stored blob leaves the file's general facts to be walked when read: empty
    (`pipeline.DEFERRED`), or `RECORDS_ONLY` and the file's records (a pickle never starts so)."""
    return not blob or blob[:1] == RECORDS_ONLY


WALKED = b"W"  # leads a walked file's blob: its pickled records apart, then its whole pickled facts
_LENGTH = 8  # the records' length after `WALKED`, little-endian


def walked_blob(facts: Any, records: bytes | memoryview | None = None) -> bytes:
    """The stored blob of a file's walked facts: `WALKED`, the length of its pickled records
    (`FileFacts.extras`), those records, then the whole facts (records included). The records are
    read, and their digest taken (`records_bytes`), without unpickling the rest. `records`: their
    pickle as first made (a `RECORDS_ONLY` blob's), kept byte for byte (a pickle unpickled and
    pickled again may differ in its bytes). A file with a parse error is stored as its plain pickle:
    what it holds is found by unpickling it (`FileNote`)."""
    if getattr(facts, "parse_error", None) is not None:
        return dumps(facts)
    records = dumps(facts.extras or {}) if records is None else bytes(records)
    return WALKED + len(records).to_bytes(_LENGTH, "little") + records + dumps(facts)


def records_apart(blob: bytes | memoryview) -> bool:
    """Whether a stored blob's records are read without unpickling its facts: `DEFERRED`,
    `RECORDS_ONLY` or `WALKED` (every file that parsed cleanly), not a plain pickle."""
    return unwalked(blob) or blob[:1] == WALKED


def _records_end(blob: bytes | memoryview) -> int:
    return 1 + _LENGTH + int.from_bytes(blob[1 : 1 + _LENGTH], "little")


def facts_of(blob: bytes | memoryview) -> Any:
    """The facts a walked blob holds (`walked_blob`, or a plain pickle)."""
    if blob[:1] == WALKED:
        return pickle.loads(blob[_records_end(blob) :])
    return pickle.loads(blob)


_NO_RECORDS = pickle.dumps({}, protocol=pickle.HIGHEST_PROTOCOL)  # (`dumps` of no records)


def records_bytes(blob: bytes | memoryview) -> bytes | memoryview | None:
    """The pickled records (`FileFacts.extras`) a stored blob holds, as first made: the same bytes for
    the same extraction whether the file was walked or not (None: none, as for `DEFERRED`, where no
    extractor matched). A plain pickle (a file with a parse error) is unpickled for them."""
    if not blob:
        return None
    if blob[:1] == RECORDS_ONLY:
        raw: bytes | memoryview = blob[1:]
    elif blob[:1] == WALKED:
        raw = blob[1 + _LENGTH : _records_end(blob)]
    else:
        raw = dumps(pickle.loads(blob).extras or {})
    return None if raw == _NO_RECORDS else raw


def records_of(blob: bytes | memoryview) -> dict:
    """The records a stored blob holds (`records_bytes`, unpickled; {} for `DEFERRED`)."""
    raw = records_bytes(blob)
    return pickle.loads(raw) if raw else {}


def dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def wrap(payload: bytes) -> bytes:
    return MAGIC + hashlib.sha256(payload).digest() + payload


def encode(value: Any) -> bytes:
    return wrap(dumps(value))


def decode(data: bytes) -> Any | None:
    """The value stored in `data`, or None when it is not an intact entry."""
    head = len(MAGIC) + _DIGEST
    if len(data) < head or not data.startswith(MAGIC):
        return None
    payload = data[head:]
    if hashlib.sha256(payload).digest() != data[len(MAGIC) : head]:
        return None
    try:
        return pickle.loads(payload)
    except Exception:  # an intact digest over an unreadable pickle: another build's classes
        return None


def _write_atomic(target: Path, data: bytes | list[bytes | memoryview]) -> None:
    import tempfile  # a warm scan writes nothing

    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.writelines([data] if isinstance(data, bytes) else data)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


class FactsCache:
    """Packs and derived values in one signature folder; all I/O errors degrade to misses."""

    def __init__(self, root: Path, sig: str) -> None:
        self.root = Path(root)
        self.folder = self.root / sig

    def _pack_path(self, key: str) -> Path:
        return self.folder / "packs" / f"{key}.pkl"

    def get_files(self, wanted: Mapping[str, str]) -> dict[str, tuple[Any, bytes]]:
        """path -> (facts, their pickle) of the files `wanted` names (path -> sha256) that a stored
        pack holds with that content; (None, blob) for a file the pack holds unwalked (`unwalked`) or
        walked (`walked_blob`: unpickled only when read, and checked then). Packs are tried newest
        first; one is read whole only when its index (read alone) holds files still wanted that make
        up at least 1/`PACK_READ_SHARE` of its files (reading and checking a pack costs ~100x less
        per file than parsing the files again), and a plain pickle's facts must name its path and
        hash."""
        remaining = dict(wanted)
        out: dict[str, tuple[Any, bytes]] = {}
        for where in self._packs_newest_first():
            if not remaining:
                break
            index = Pack.read_index(where)
            if index is None:
                continue
            useful = sum(1 for path, sha in remaining.items() if (entry := index.get(path)) and entry[0] == sha)
            if not useful or useful * PACK_READ_SHARE < len(index):
                continue
            data = _read(where)
            pack = Pack.decode(data) if data is not None else None
            if pack is None:
                continue
            for path, sha in list(remaining.items()):
                if pack.sha(path) != sha:
                    continue
                blob = bytes(pack.blob(path))
                if records_apart(blob):  # unpickled when read (`facts_of`)
                    out[path] = (None, blob)
                    del remaining[path]
                    continue
                try:
                    facts = pickle.loads(blob)
                except Exception:  # another build's classes
                    continue
                if getattr(facts, "path", None) == path and getattr(facts, "sha256", None) == sha:
                    out[path] = (facts, blob)
                    del remaining[path]
        return out

    def _packs_newest_first(self) -> list[Path]:
        folder = self.folder / "packs"
        try:
            entries = [
                (entry.stat().st_mtime_ns, entry.name)
                for entry in os.scandir(folder)
                if _PACK.match(entry.name) and entry.is_file(follow_symlinks=False)
            ]
        except OSError:
            return []
        return [folder / name for _, name in sorted(entries, reverse=True)]

    def get_pack(self, key: str) -> "Pack | None":
        """The packed facts of tree `key` (None when missing or damaged)."""
        data = _read(self._pack_path(key))
        return Pack.decode(data) if data is not None else None

    def put_pack(self, key: str, pack: Mapping[str, tuple[str, bytes | memoryview]]) -> None:
        """Store {path: (sha256, pickled facts)} of one tree as a pack."""
        try:
            _write_atomic(self._pack_path(key), Pack.chunks(pack))
            self._prune_packs()
        except OSError:
            pass

    def get_value(self, name: str, *, keep: bool = False) -> Any | None:
        """A derived value (e.g. a tree's graph) stored under `name`; `keep`: found, it is marked as
        used now, so the pruning of the oldest values (by time written) passes over it."""
        where = self.folder / "values" / f"{name}.pkl"
        data = _read(where)
        value = decode(data) if data is not None else None
        if keep and value is not None:
            try:
                os.utime(where)
            except OSError:
                pass
        return value

    def put_value(self, name: str, value: Any) -> None:
        try:
            _write_atomic(self.folder / "values" / f"{name}.pkl", encode(value))
            self._prune(self.folder / "values", KEEP_VALUES)
        except OSError:
            pass

    def _prune_packs(self) -> None:
        self._prune(self.folder / "packs")

    @staticmethod
    def _prune(folder: Path, keep: int = KEEP_PACKS) -> None:
        def mtime(entry: Path) -> float:
            try:
                return entry.stat().st_mtime
            except OSError:
                return 0.0

        entries = sorted(folder.glob("*.pkl"), key=mtime, reverse=True)
        for old in entries[keep:]:
            try:
                old.unlink()
            except OSError:
                pass


class TreeValues:
    """Values derived from one tree's facts by later stages (the rules' findings), kept beside them.

    `kind` names the value and its format (`findings-1`); `stamp` is everything besides the facts it
    was computed from (the code, the snapshot id): a stored value whose stamp differs reads as
    missing and is replaced. Bound to the exact facts and inventory an analysis holds (`serves`),
    so a copy of the analysis with other facts never reads them.
    """

    def __init__(self, cache: FactsCache, key: str, files: Any, inventory: Any) -> None:
        self.cache, self.key, self._files, self._inventory = cache, key, files, inventory

    def serves(self, files: Any, inventory: Any) -> bool:
        return files is self._files and inventory is self._inventory

    def get(self, kind: str, stamp: str) -> Any | None:
        stored = self.cache.get_value(f"{kind}-{self.key}")
        if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == stamp:
            return stored[1]
        return None

    def put(self, kind: str, stamp: str, value: Any) -> None:
        self.cache.put_value(f"{kind}-{self.key}", (stamp, value))


class Pack:
    """The facts of one tree in one file: a small index, then every file's pickled facts back to back.

    `PACK_MAGIC + sha256(index) + sha256(blobs) + len(index) (8 bytes) + index + blobs`, the index a
    pickle of {path: (sha256, offset, length)}. Reading it costs one read and one digest; a file's
    facts are unpickled only when asked for (`blob`), and `mentioning` searches every file's pickled
    bytes at once.
    """

    def __init__(self, index: dict[str, tuple[str, int, int]], blobs: bytes | memoryview) -> None:
        self.index, self._blobs = index, blobs
        self._starts: list[tuple[int, str]] | None = None

    @classmethod
    def in_memory(cls, blobs: Mapping[str, bytes | memoryview]) -> "Pack":
        """A pack of `blobs` (path -> stored blob) held in memory, for `mentioning`: one search per
        needle over their bytes joined, not one per file (its index names no sha256)."""
        index, offset = {}, 0
        for path, blob in blobs.items():
            index[path] = ("", offset, len(blob))
            offset += len(blob)
        return cls(index, memoryview(b"".join(blobs.values())))

    @staticmethod
    def chunks(pack: Mapping[str, tuple[str, bytes | memoryview]]) -> list[bytes | memoryview]:
        """The pack file as a list of byte strings, written one after the other (the files' pickles
        are never copied into one buffer: a cold full scan's peak memory stays lower)."""
        index, parts, offset = {}, [], 0
        digest = hashlib.sha256()
        for path in sorted(pack):
            sha, blob = pack[path]
            index[path] = (sha, offset, len(blob))
            parts.append(blob)
            digest.update(blob)
            offset += len(blob)
        head = pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL)
        return [
            PACK_MAGIC + hashlib.sha256(head).digest() + digest.digest() + len(head).to_bytes(8, "little"),
            head,
            *parts,
        ]

    @classmethod
    def encode(cls, pack: Mapping[str, tuple[str, bytes]]) -> bytes:
        return b"".join(cls.chunks(pack))

    @classmethod
    def decode(cls, data: bytes) -> "Pack | None":
        size = cls._index_length(data)
        if size is None:
            return None
        view = memoryview(data)
        head, blobs = view[_PACK_PREFIX : _PACK_PREFIX + size], view[_PACK_PREFIX + size :]
        if len(head) != size or data[len(PACK_MAGIC) + _DIGEST : _PACK_PREFIX - 8] != hashlib.sha256(blobs).digest():
            return None
        index = cls._load_index(data, head)
        if index is None or any(o + n > len(blobs) for _, o, n in index.values()):
            return None
        return cls(index, blobs)

    @classmethod
    def read_index(cls, where: Path) -> dict[str, tuple[str, int, int]] | None:
        """The index of the pack file `where`, read without its blobs (None when unreadable or damaged)."""
        try:
            with open(where, "rb") as handle:
                prefix = handle.read(_PACK_PREFIX)
                size = cls._index_length(prefix)
                if size is None:
                    return None
                raw = handle.read(size)
        except OSError:
            return None
        return cls._load_index(prefix, raw) if len(raw) == size else None

    @staticmethod
    def _index_length(prefix: bytes) -> int | None:
        """The index's length, read from a pack's first `_PACK_PREFIX` bytes (None: not a pack)."""
        if len(prefix) < _PACK_PREFIX or not prefix.startswith(PACK_MAGIC):
            return None
        return int.from_bytes(prefix[_PACK_PREFIX - 8 : _PACK_PREFIX], "little")

    @staticmethod
    def _load_index(prefix: bytes, raw: bytes | memoryview) -> dict[str, tuple[str, int, int]] | None:
        """The index pickled in `raw`, if its sha256 is the one the pack's `prefix` records."""
        if hashlib.sha256(raw).digest() != prefix[len(PACK_MAGIC) : len(PACK_MAGIC) + _DIGEST]:
            return None
        try:
            index = pickle.loads(raw)
        except Exception:
            return None
        return index if isinstance(index, dict) else None

    def sha(self, path: str) -> str | None:
        entry = self.index.get(path)
        return entry[0] if entry is not None else None

    def blob(self, path: str) -> bytes | memoryview:
        _, offset, length = self.index[path]
        return self._blobs[offset : offset + length]

    def mentioning(self, needles: Sequence[bytes]) -> set[str]:
        """Paths whose pickled facts contain one of `needles` (one search over all files per needle)."""
        if self._starts is None:  # files with no bytes here (deferred facts) hold nothing to find
            self._starts = sorted((offset, path) for path, (_, offset, length) in self.index.items() if length)
        offsets = [offset for offset, _ in self._starts]
        data = cast(bytes, self._blobs.obj) if isinstance(self._blobs, memoryview) else self._blobs  # a view of a pack
        base = len(data) - len(self._blobs)  # where the blobs start in `data`
        found: set[str] = set()
        for needle in needles:
            at = data.find(needle, base)
            while at >= 0:
                i = bisect_right(offsets, at - base) - 1
                offset, path = self._starts[i]
                end = offset + self.index[path][2]
                if at - base + len(needle) <= end:
                    found.add(path)
                    at = data.find(needle, base + end)  # the rest of this file cannot add anything
                else:  # straddles two files' bytes: not in either
                    at = data.find(needle, at + 1)
        return found


_SIGNATURE_DIR = re.compile(r"^[0-9a-f]{16}$")
_TREE_VALUE = re.compile(r"^(?:analysis|graph|findings)-\d+-([0-9a-f]{64})\.pkl$")
_PACK = re.compile(r"^([0-9a-f]{64})\.pkl$")


def stale_entries(root: Path, current: str, live_trees: Iterable[str]) -> list[Path]:
    """The parts of the facts cache under `root` that no current scan can use.

    - every signature folder but `current` (facts of another analyzer build, Python or libcst);
    - in `current`'s folder, the packs and the derived values (`analysis-*`, `graph-*`, `findings-*`) of trees
      whose key (`tree_key`) is not in `live_trees` (the trees of the snapshots still stored).
    Everything this function does not recognise is kept.
    """
    root = Path(root)
    live = set(live_trees)
    out: list[Path] = []
    try:
        folders = sorted(root.iterdir())
    except OSError:
        return out
    for folder in folders:
        if not folder.is_dir() or folder.is_symlink() or not _SIGNATURE_DIR.match(folder.name):
            continue
        if folder.name != current:
            out.append(folder)
            continue
        for sub, pattern in (("packs", _PACK), ("values", _TREE_VALUE)):
            try:
                names = sorted((folder / sub).iterdir())
            except OSError:
                continue
            for entry in names:
                found = pattern.match(entry.name)
                if found and found.group(1) not in live and entry.is_file() and not entry.is_symlink():
                    out.append(entry)
    return out


def size_of(path: Path) -> int:
    """Bytes under `path` (a file or a folder; links not followed)."""
    if not path.is_dir() or path.is_symlink():
        try:
            return path.lstat().st_size
        except OSError:
            return 0
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total
