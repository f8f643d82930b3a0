"""The analyzer pipeline: files -> cached per-file facts (process pool) -> inventory -> graph.

`analyze_tree` reads a folder (paths relative to it, `sglang/srt/...`); `analyze` reads a stored
snapshot. Files whose facts are cached (same path, same content hash, same analyzer signature) are
not parsed again; the rest are parsed in a process pool when there are enough of them. There, only
the records of the extractors whose trigger matches are made for a file that parses cleanly: its
general facts (which no inventory record and most answers never read) are walked when first read
(`LazyFiles`), from the same bytes.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import os
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence, TYPE_CHECKING

from sgl_scan.analyzer.cache import (
    RECORDS_ONLY,
    FactsCache,
    Pack,
    TreeValues,
    dumps,
    facts_of,
    records_bytes,
    records_apart,
    records_of,
    signature,
    tree_key,
    unwalked,
    walked_blob,
)
from sgl_scan.analyzer.model import Analysis, ParseError, SpecInventory
from sgl_scan.analyzer.sources import SourceText
from sgl_scan.errors import AnalysisError

if TYPE_CHECKING:  # the fact classes load with the first facts unpickled (a warm scan may read none)
    from sgl_scan.analyzer.facts import FileFacts

Progress = Callable[[int, int], None]
PARALLEL_MIN_FILES = 48  # below this a pool costs more than it saves


def load_extractors() -> tuple[Any, ...]:
    """The built-in extractors (`sgl_scan.analyzer.extractors.EXTRACTORS`).

    Imported here, not at the top: they load libcst, which a warm scan never needs.
    """
    from sgl_scan.analyzer.extractors import EXTRACTORS

    return tuple(EXTRACTORS)


def build_inventory(files: Mapping[str, FileFacts | _RecordsOnly]) -> SpecInventory:
    """`sgl_scan.analyzer.inventory.build_inventory` (imported when first needed, like the extractors), with
    the census accounted (`sgl_scan.analyzer.census.account`: every reference read or listed as unread)."""
    from sgl_scan.analyzer.census import account
    from sgl_scan.analyzer.inventory import build_inventory as build

    return account(files, build(files))[0]


class _RecordsOnly:
    """A file's extractor records (`FileFacts.extras`) without the rest of its facts: all the
    inventory and the census read."""

    __slots__ = ("extras",)

    def __init__(self, extras: Mapping[str, tuple[Any, ...]]) -> None:
        self.extras = extras


def empty_inventory() -> SpecInventory:
    return SpecInventory(
        algorithm_class=None,
        algorithms=(),
        predicates=(),
        dispatch_sites=(),
        choice_hooks=(),
        algorithm_option=None,
        d2t_sites=(),
    )


# -- per-file work (runs in the pool's processes) ---------------------------------------------
_WORKER: dict[str, Any] = {}


DEFERRED = b""  # in place of a file's pickled facts: it parses cleanly, no extractor matched, not walked yet


def _init_worker(extractors: tuple[Any, ...], pause_gc: bool = False, defer_walk: bool = False) -> None:
    _WORKER["extractors"] = extractors
    _WORKER["defer_walk"] = defer_walk
    _WORKER["defer_cst"] = pause_gc  # a pool process leaves libcst files to the parent
    if pause_gc:  # a pool process: its garbage is freed by reference counting, and it exits at the end
        gc.freeze()
        gc.disable()


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a block that builds many acyclic objects.

    Parsing and unpickling facts allocate millions of small objects; every allocation burst
    triggers a collection that scans all live objects again (a third of a cold scan's time).
    Facts, ASTs and graphs hold no reference cycles, so nothing leaks while it is off.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def matching_extractors(data: bytes, extractors: Sequence[Any]) -> tuple[Any, ...]:
    """The pre-pass: extractors whose trigger matches the file's text."""
    if not extractors:
        return ()
    from sgl_scan.analyzer.extractors._text import Trigger  # (a warm scan matches nothing)

    text = data.decode("utf-8", "replace")
    found: dict[int, bool] = {}  # extractors may share a trigger (the branch shapes use the dispatch one)
    present: dict[str, bool] = {}  # and the literals their patterns need
    for ex in extractors:
        trigger = ex.trigger
        if id(trigger) not in found:
            hit = trigger.search(text, present=present) if isinstance(trigger, Trigger) else trigger.search(text)
            found[id(trigger)] = hit is not None
    return tuple(ex for ex in extractors if found[id(ex.trigger)])


def _needs_libcst(extractors: Sequence[Any]) -> bool:
    return any(getattr(ex, "parser", "cst") != "ast" for ex in extractors)


def _parse_one(
    job: "tuple[str, str] | tuple[str, str, bool]",
) -> tuple[str, str, bytes, "FileNote"] | tuple[None, str, str]:
    """Parse one file; returns (path, sha256, pickled facts, note) (the caller packs the facts).

    In a pool worker (`_WORKER["defer_cst"]`) a file that a libcst extractor needs is not parsed:
    (None, absolute, rel) sends it back to the parent, the one process that loads libcst. With
    `_WORKER["defer_walk"]`, a file that parses cleanly comes back without its general facts: as
    `DEFERRED` when no extractor matched, else as `RECORDS_ONLY` and the extractors' records. A job
    (absolute, rel, True) is a plain walk: the file's general facts, whatever the worker was set up for.
    """
    absolute, rel = job[0], job[1]
    plain = len(job) > 2  # a walk of a file read later (`LazyFiles`): its general facts, no extractor
    extractors = () if plain else _WORKER.get("extractors", ())
    try:
        data = Path(absolute).read_bytes()
    except OSError as exc:
        raise AnalysisError(f"cannot read {rel}: {exc.strerror or exc}") from exc
    matched = matching_extractors(data, extractors)
    if _WORKER.get("defer_cst") and _needs_libcst(matched):  # (a plain walk matches no extractor)
        return None, absolute, rel
    sha = hashlib.sha256(data).hexdigest()
    if not plain and _WORKER.get("defer_walk") and b"__all__" not in data:  # (`paths_mentioning`)
        from sgl_scan.analyzer.parse import parses_cleanly, records_only

        if not matched:
            if parses_cleanly(data):
                return rel, sha, DEFERRED, DEFERRED_NOTE
        else:
            records = records_only(rel, data, matched)
            if records is not None:
                return rel, sha, RECORDS_ONLY + dumps(records), FileNote(any(records.values()), None)
    from sgl_scan.analyzer.parse import parse_file  # stdlib ast; libcst only for files that need it

    facts = parse_file(rel, data, sha, matched)
    return rel, sha, walked_blob(facts), FileNote.of(facts)


# -- the pipeline ---------------------------------------------------------------------------------
class _KnownPaths(Mapping[str, "FileFacts"]):
    """A path -> FileFacts mapping whose paths (`_paths`) are known before any facts are read;
    pickled as a plain dict of its facts."""

    _paths: Mapping[str, object]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, path: object) -> bool:
        return path in self._paths

    def __reduce__(self) -> tuple:
        return (dict, (dict(self.items()),))


class LazyFiles(_KnownPaths):
    """path -> FileFacts, unpickled from the cache on first access (a warm scan reads few files).

    `blobs` is {path: pickled facts} or a `Pack` (whose files are all of this mapping). A file stored
    unwalked (`DEFERRED`, or `RECORDS_ONLY` and its records) is walked from `tree` when first read,
    every such file at once (a pool when they are many) when all values are asked for; `shas`
    (path -> sha256; a pack has its own) must still be the file's, else the read fails. `walked`
    receives {path: (sha256, pickled facts)} of the whole mapping (to store the pack again) once
    nothing is deferred, or when `store_walked` is asked after some files were walked."""

    def __init__(
        self,
        blobs: "Mapping[str, bytes] | Pack",
        ready: Mapping[str, FileFacts] | None = None,
        *,
        tree: Path | None = None,
        shas: Mapping[str, str] | None = None,
        jobs: int | None = None,
        walked: Callable[[dict[str, tuple[str, bytes | memoryview]]], None] | None = None,
    ) -> None:
        self._pack = blobs if isinstance(blobs, Pack) else None
        # (a pack holds its own; views of one joined buffer once searched: `_facts_mentioning`)
        self._blobs: dict[str, bytes | memoryview] = {} if isinstance(blobs, Pack) else dict(blobs)
        self._paths = self._pack.index if self._pack is not None else self._blobs
        self._ready: dict[str, FileFacts] = dict(ready or {})
        if self._pack is not None:
            pack = self._pack
            self._deferred = {path for path in pack.index if unwalked(pack.blob(path))}
        else:
            self._deferred = {path for path, blob in self._blobs.items() if unwalked(blob)}
        self._tree, self._shas, self._jobs, self._on_walked = tree, shas, jobs, walked
        self._walked: dict[str, bytes] = {}
        self._joined: Pack | None = None  # `_blobs` joined, for `_facts_mentioning` (made when first asked)
        self._unstored = False  # files were walked since the pack was stored

    @property
    def deferred(self) -> frozenset[str]:
        """Paths whose general facts are not walked yet (they parse cleanly; their extractor records,
        if any, are stored apart: `records`)."""
        return frozenset(self._deferred)

    def records(self, path: str) -> Mapping[str, tuple[Any, ...]]:
        """The file's extractor records (`FileFacts.extras`), read without walking its general facts."""
        facts = self._ready.get(path)
        if facts is not None:
            return facts.extras or {}
        return records_of(self._raw(path))

    def records_key(self) -> str:
        """A digest of every file's extractor records (its path and pickled records, as stored): all
        `build_inventory` reads, so facts with the same key have the same inventory. Nothing is
        unpickled but the facts of a file with a parse error (stored whole: `walked_blob`)."""
        digest = hashlib.sha256()
        for path in sorted(self._paths):
            raw = records_bytes(self._raw(path))
            if raw is not None:
                digest.update(path.encode("utf-8", "surrogateescape") + b"\0" + hashlib.sha256(raw).digest())
        return digest.hexdigest()

    def sha(self, path: str) -> str | None:
        """The sha256 of the content `path`'s facts were made from (None: not known here)."""
        return self._sha(path)

    def with_records(self) -> list[str]:
        """Paths that may hold extractor records: all but the files deferred without any."""
        return [path for path in self._paths if path not in self._deferred or self._raw(path)]

    def __getitem__(self, path: str) -> FileFacts:
        facts = self._ready.get(path)
        if facts is None:
            facts = self._ready[path] = self.peek(path)
        return facts

    def peek(self, path: str) -> FileFacts:
        """The facts of `path`, as `self[path]`, but not kept when they had to be unpickled (checked
        then: they must be the facts of this path and content)."""
        facts = self._ready.get(path)
        if facts is not None:
            return facts
        if path in self._deferred:
            self._walk([path])
        facts = facts_of(self._raw(path))
        sha = self._sha(path)
        if getattr(facts, "path", None) != path or (sha is not None and getattr(facts, "sha256", None) != sha):
            raise AnalysisError(f"the stored facts of {path} are another file's: remove the facts cache and run again")
        return facts

    def values(self) -> Any:
        self.materialize()
        return super().values()

    def items(self) -> Any:
        self.materialize()
        return super().items()

    def prefetch(self, paths: Iterable[str]) -> None:
        """Walk those of `paths` still deferred now, together (a pool when they are many), instead of
        one at a time as each is read."""
        todo = sorted(path for path in paths if path in self._deferred)
        if todo:
            self._walk(todo)

    def materialize(self) -> None:
        """Walk every deferred file now (one pool for all of them)."""
        if self._deferred:
            self._walk(sorted(self._deferred))

    def _sha(self, path: str) -> str | None:
        return self._pack.sha(path) if self._pack is not None else (self._shas or {}).get(path)

    def _walk(self, paths: Sequence[str]) -> None:
        if self._tree is None:
            raise AnalysisError(f"the facts of {paths[0]} were left to be read from the tree, which is not known here")
        with gc_paused():
            todo = [(str(self._tree / path), path) for path in paths]
            for rel, sha, blob, _note in _run_jobs(todo, (), self._jobs):
                if sha != self._sha(rel):  # not the bytes the rest of these facts were made from
                    raise AnalysisError(f"files under {self._tree} changed while they were analysed; run again")
                stored = self._raw(rel)
                if stored:  # the records made with the rest of the file's facts, put back in their place
                    blob = walked_blob(replace(facts_of(blob), extras=records_of(stored)), records_bytes(stored))
                self._walked[rel] = blob  # unpickled when read (a prefetched file may never be)
                self._deferred.discard(rel)
                self._unstored = True
        if not self._deferred:
            self.store_walked()
            self._on_walked = None

    def store_walked(self) -> None:
        """Store the facts walked since the pack was stored into it (`walked`), so the next analysis
        that takes these files from the pack (this tree again, an edited one, the next release) reads
        them walked instead of walking them again."""
        if self._unstored and self._on_walked is not None:
            self._unstored = False
            self._on_walked({path: (self._sha(path) or "", self._blob(path)) for path in self._paths})

    def _raw(self, path: str) -> "bytes | memoryview":
        """The stored blob of a file (not copied out of a pack): its pickled facts, or for a deferred
        file `DEFERRED` or its `RECORDS_ONLY` records."""
        walked = self._walked.get(path)
        if walked is not None:
            return walked
        return self._pack.blob(path) if self._pack is not None else self._blobs[path]

    def _blob(self, path: str) -> bytes | memoryview:
        walked = self._walked.get(path)
        if walked is not None:
            return walked
        return bytes(self._pack.blob(path)) if self._pack is not None else self._blobs[path]

    def paths_mentioning(self, words: Sequence[str]) -> list[str]:
        """Paths whose facts may contain one of `words` (identifiers), found in the pickled bytes
        without unpickling (a pickle holds every string's UTF-8 bytes); files already read are
        included as they are, and deferred files by their source (`_deferred_mentioning`)."""
        unwalked = self._deferred_mentioning(words)
        found = self._facts_mentioning(words)
        return [path for path in self._paths if path in found or path in unwalked]

    def paths_with_records(self, kinds: Sequence[str]) -> list[str]:
        """`paths_mentioning(kinds)` for extractor record class names: a deferred file carries no
        records, so its source is not read."""
        found = self._facts_mentioning(kinds)
        return [path for path in self._paths if path in found]

    def _facts_mentioning(self, words: Sequence[str]) -> set[str]:
        """The files walked already whose facts may hold one of `words`: those read, and those whose
        pickled facts (in the pack or blobs, or kept from a walk) hold the word's bytes."""
        needles = [word.encode("utf-8") for word in words]
        pack = self._pack or self._joined
        if pack is None:
            pack = self._joined = Pack.in_memory(self._blobs)
            for path in self._blobs:  # the bytes held once: each blob a view of the joined ones
                self._blobs[path] = pack.blob(path)
        found = set(pack.mentioning(needles))
        found.update(path for path, blob in self._walked.items() if any(needle in blob for needle in needles))
        found.update(self._ready)
        return found

    def mentions(self, path: str, words: Sequence[str]) -> bool:
        """Whether `path` is among `paths_mentioning(words)` (one file's check): read, a deferred file
        whose source may mention one, or a stored blob (records included) holding one's bytes."""
        if path in self._ready or (path in self._deferred and self._deferred_mentioning(words, [path])):
            return True
        blob = bytes(self._raw(path))
        return any(word.encode("utf-8") in blob for word in words)

    def source_mentioning(self, words: Sequence[str], paths: Iterable[str] | None = None) -> list[str] | None:
        """Paths (of `paths`, default all) whose source holds one of `words` (ASCII identifiers) anywhere,
        comments included: who may read a name (`analyzer/reach.py`). None when the tree is not known
        here or a word is not such."""
        if self._tree is None or not words or not all(word.isascii() and word.isidentifier() for word in words):
            return None
        needles = [word.encode("ascii") for word in words]
        found = []
        for path in self._paths if paths is None else paths:
            try:
                data = (self._tree / path).read_bytes()
            except OSError:
                return None
            if any(needle in data for needle in needles):
                found.append(path)
        return found

    def _deferred_mentioning(self, words: Sequence[str], paths: Iterable[str] | None = None) -> set[str]:
        """The deferred files whose facts may hold one of `words`. Every string in such facts is a
        slice of the source (names, expression texts), a name made from the path (module, package),
        "builtins." and ".<locals>." joining such names, or a kind the builder names (`_MADE_UP`): an
        identifier not in the source, the path or those is in none of them (`__all__`'s evaluated
        strings would be: such files are never deferred). Their records, if any, are searched apart."""
        if any(not word.isidentifier() or word in _MADE_UP for word in words):
            return set(self._deferred if paths is None else paths)
        # ASCII words: the same bytes in every encoding Python source may use
        needles = [word.encode("ascii") for word in words] if all(word.isascii() for word in words) else None
        found = set()
        for path in self._deferred if paths is None else paths:
            if any(word in path for word in words):
                found.add(path)
                continue
            try:
                data = (self._tree / path).read_bytes() if self._tree is not None else None
            except OSError:
                data = None
            if data is None or self._source_may_mention(data, words, needles):
                found.add(path)
        return found

    @staticmethod
    def _source_may_mention(data: bytes, words: Sequence[str], needles: list[bytes] | None) -> bool:
        if needles is not None:
            return any(needle in data for needle in needles)
        from sgl_scan.analyzer.parse import SourceError, decode_source

        try:
            text = decode_source(data)
        except SourceError:
            return True
        return any(word in text for word in words)


# the text the facts builder makes up: what it adds to names read from the source, and the kinds of
# parameters and assignments and the parser's name (`facts.Param.kind`, `AssignFact.kind`, `FileFacts.source`)
_MADE_UP = "builtins.<locals> posonly positional vararg kwonly varkw assign annassign augassign ast cst"


class FileNote(NamedTuple):
    """What the whole-tree steps need to know of a file without unpickling its facts."""

    has_records: bool  # an extractor found something (the inventory reads only these files)
    parse_error: ParseError | None

    @classmethod
    def of(cls, facts: FileFacts) -> "FileNote":
        return cls(any(facts.extras.values()) if facts.extras else False, facts.parse_error)

    @classmethod
    def of_stored(cls, blob: bytes) -> "FileNote":
        """The note of a file from its stored blob, unpickling nothing where its records are apart
        (`DEFERRED`, `RECORDS_ONLY` and `WALKED` blobs: such a file parsed cleanly). `has_records` is
        then true for any records stored, even lists left empty: the inventory reads them and finds
        nothing, as it would not have read them."""
        if records_apart(blob):
            return cls(records_bytes(blob) is not None, None)
        return cls.of(facts_of(blob))


DEFERRED_NOTE = FileNote(False, None)  # a `DEFERRED` file: no extractor matched, and it parses cleanly


class FactsRun(NamedTuple):
    """Facts for a set of files, and how they were obtained (for tests, benchmarks and -v)."""

    files: Mapping[str, FileFacts]
    parsed: tuple[str, ...]  # paths parsed in this run (cache misses)
    from_pack: bool  # the whole set came from one packed cache entry
    key: str  # digest of the (path, sha256) list: names this exact set of facts
    notes: Mapping[str, FileNote] | None = None  # per file, where known without unpickling (not from a pack)

    def errors(self) -> tuple[ParseError, ...]:
        """The files' parse errors, in path order (a deferred file parsed cleanly: it has none)."""
        if self.notes is not None:
            return tuple(n.parse_error for p, n in sorted(self.notes.items()) if n.parse_error is not None)
        deferred: frozenset[str] = getattr(self.files, "deferred", frozenset())
        found = (self.files[p].parse_error for p in self.files if p not in deferred)
        return tuple(error for error in found if error is not None)

    def with_records(self) -> Mapping[str, "FileFacts | _RecordsOnly"]:
        """The files an extractor found something in (all but the deferred ones when that is not known).
        From `LazyFiles`, only each file's records: its facts are unpickled once, in passing (the
        inventory and the census read nothing else, and holding every such file's facts at once would
        set the scan's peak memory)."""
        files = self.files
        if self.notes is None:
            if isinstance(files, LazyFiles):
                return {p: _RecordsOnly(files.records(p)) for p in files.with_records()}
            return files
        paths = [p for p in files if self.notes[p].has_records]
        if isinstance(files, LazyFiles):
            return {p: _RecordsOnly(files.records(p)) for p in paths}
        return {p: files[p] for p in paths}


def discover(tree: Path) -> list[str]:
    """Every `*.py` file under `tree`, as sorted POSIX paths relative to it (no `__pycache__`)."""
    out = []
    root = str(tree)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        for name in filenames:
            if name.endswith(".py"):
                out.append(name if rel_dir == "." else f"{rel_dir}/{name}")
    return sorted(out)


RACY_NS = 2_000_000_000  # files modified this close to when their hash was recorded are hashed again


def _hash_files(tree: Path, paths: Sequence[str], cache: FactsCache | None) -> dict[str, str]:
    """sha256 of each file; unchanged files (same size, mtime, inode as last time) are not re-read."""
    index_name = "stat-" + hashlib.sha256(str(tree.resolve()).encode()).hexdigest()[:24]
    index = (cache.get_value(index_name) if cache is not None else None) or {}
    out: dict[str, str] = {}
    fresh: dict[str, tuple] = {}
    now = time.time_ns()
    for rel in paths:
        absolute = tree / rel
        try:
            st = os.stat(absolute)
            stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
            known = index.get(rel)
            if known is not None and known[0] == stamp and known[2] - st.st_mtime_ns > RACY_NS:
                out[rel] = known[1]
                fresh[rel] = known
                continue
            with open(absolute, "rb") as handle:
                out[rel] = hashlib.sha256(handle.read()).hexdigest()
            fresh[rel] = (stamp, out[rel], now)
        except OSError as exc:
            raise AnalysisError(f"cannot read {rel}: {exc.strerror or exc}") from exc
    if cache is not None and fresh != {k: index.get(k) for k in fresh}:
        cache.put_value(index_name, fresh)
    return out


def tree_items(
    tree: Path, paths: Sequence[str] | None, hashes: Mapping[str, str] | None, cache: FactsCache | None
) -> list[tuple[str, str]]:
    """(path, sha256) of the `.py` files among `paths` (default: every one under `tree`), sorted:
    from `hashes` where given, else hashed (`_hash_files`)."""
    if not tree.is_dir():
        raise AnalysisError(f"not a folder: {tree}")
    rels = sorted({p for p in paths if p.endswith(".py")}) if paths is not None else discover(tree)
    known = {p: hashes[p] for p in rels if hashes and p in hashes}
    missing = [p for p in rels if p not in known]
    if missing:
        known.update(_hash_files(tree, missing, cache))
    return [(p, known[p]) for p in rels]


def collect_facts(
    tree: Path,
    paths: Sequence[str] | None = None,
    *,
    hashes: Mapping[str, str] | None = None,
    cache_dir: Path | None = None,
    use_cache: bool = True,
    jobs: int | None = None,
    progress: Progress | None = None,
    extractors: Sequence[Any] | None = None,
    walk_all: bool = False,
) -> FactsRun:
    """Facts for `paths` (default: every `.py` file) under `tree`, from the cache where possible.

    `hashes` (path -> sha256, e.g. from a snapshot manifest) saves hashing the files. `extractors`
    None means the built-in ones, imported only when a file has to be parsed. `walk_all`: the caller
    reads every file's facts (a graph, generated code), so no walk is deferred to a second parse.
    """
    from sgl_scan.paths import facts_cache_dir

    tree = Path(tree)
    extractors = None if extractors is None else tuple(extractors)
    root = Path(cache_dir or facts_cache_dir())
    cache = FactsCache(root, signature(extractors, root)) if use_cache else None
    items = tree_items(tree, paths, hashes, cache)
    rels = [p for p, _ in items]
    key = tree_key(items)

    if cache is not None:
        pack = cache.get_pack(key)
        if pack is not None and len(pack.index) == len(items) and all(pack.sha(p) == s for p, s in items):
            if progress:
                progress(len(items), len(items))
            files = LazyFiles(pack, tree=tree, jobs=jobs, walked=_repack(cache, key))
            if walk_all:
                files.materialize()
            return FactsRun(files, (), True, key)

    ready: dict[str, FileFacts] = {}
    notes: dict[str, FileNote] = {}
    blobs: dict[str, tuple[str, bytes]] = {}
    todo: list[tuple[str, str]] = []
    found = cache.get_files(dict(items)) if cache is not None else {}  # files other trees' packs hold
    for rel, sha in items:
        hit = found.get(rel)
        if hit is not None:
            if hit[0] is not None:
                ready[rel] = hit[0]
            notes[rel] = FileNote.of(hit[0]) if hit[0] is not None else FileNote.of_stored(hit[1])
            blobs[rel] = (sha, hit[1])
        else:
            todo.append((str(tree / rel), rel))
    done = len(ready)
    if progress:
        progress(done, len(items))
    parsed = []
    if todo and extractors is None:
        extractors = load_extractors()
    for rel, sha, blob, note in _run_jobs(todo, extractors or (), jobs, defer_walk=not walk_all):
        notes[rel] = note
        blobs[rel] = (sha, blob)
        parsed.append(rel)
        done += 1
        if progress:
            progress(done, len(items))
    actual = tree_key((p, blobs[p][0]) for p in rels)
    if cache is not None and (parsed or actual != key):
        cache.put_pack(actual, {p: blobs[p] for p in rels})
        if actual != key:  # a file changed between hashing and parsing: the next run hashes again
            key = actual
    files = LazyFiles(
        {p: blobs[p][1] for p in rels},
        ready,
        tree=tree,
        shas={p: blobs[p][0] for p in rels},
        jobs=jobs,
        walked=_repack(cache, key),
    )
    return FactsRun(files, tuple(sorted(parsed)), False, key, notes)


def _repack(cache: FactsCache | None, key: str) -> Callable[[dict[str, tuple[str, bytes | memoryview]]], None] | None:
    """Stores the complete facts of tree `key` once its deferred files are walked."""
    if cache is None:
        return None
    return functools.partial(cache.put_pack, key)


POOL_MIN_BYTES = 1 << 20  # below this much source (~0.2 s of parsing) one process beats starting a pool


def _run_jobs(todo: list, extractors: tuple, jobs: int | None, defer_walk: bool = False) -> Iterator[tuple]:
    """Parse `todo`: in this process when the work is small, else in a pool whose workers parse with
    stdlib `ast` and hand the few files a libcst extractor needs back to this process, so libcst is
    imported once, here, and only when needed. This process finds those files itself (the libcst
    extractors' triggers) and parses them while the workers go on, instead of when their turn comes
    (small files, last in the workers' order: the libcst import and parses would end the run). With
    `defer_walk`, the workers leave the facts of files no extractor matched to be walked when read
    (`DEFERRED`); this process never defers.

    The pool is kept (`_KeptPool`) once its work is done: the files a rule reads later (a plain walk,
    no `extractors`) are walked by it, two or more at a time, instead of one after another here."""
    if not todo:
        return
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    workers = max(1, min(workers, len(todo)))
    if not extractors and len(todo) > 1 and _KeptPool.holds(jobs):
        yield from _KeptPool.walk(todo)
        return
    sizes = {job[0]: _size(job[0]) for job in todo} if workers > 1 and len(todo) >= PARALLEL_MIN_FILES else {}
    if workers == 1 or len(todo) < PARALLEL_MIN_FILES or sum(sizes.values()) < POOL_MIN_BYTES:
        _init_worker(extractors)
        try:
            for job in todo:
                yield _parse_one(job)
        finally:
            _WORKER.clear()
        return
    # biggest files first so the last chunks are small and the workers finish together
    todo = sorted(todo, key=lambda job: -sizes[job[0]])
    pool = _KeptPool.start(jobs, workers, extractors, defer_walk)
    _init_worker(extractors)
    try:
        results = pool.map(_parse_one, todo, chunksize=max(1, min(8, len(todo) // (workers * 16))))
        early = _parse_libcst_files(todo, extractors)
        for result in results:
            if result[0] is not None:
                yield result
            else:  # parsed above, unless the file changed in between (then the worker's bytes decide)
                parsed = early.pop(result[1], None)  # (mypy infers the default badly inside `yield`)
                yield parsed or _parse_one((result[1], result[2]))
    except BaseException:
        _KeptPool.release()
        raise
    finally:
        _WORKER.clear()


class _KeptPool:
    """The process pool of the last analysis, kept after its parse: a rule that reads files whose
    general facts were deferred (`LazyFiles.prefetch`) has them walked by these processes, already
    started, instead of one file after another in this one. One pool at a time; `release` (at the
    end of a scan, or at exit) stops it."""

    _current: "tuple[int | None, Any] | None" = None  # (the `jobs` it was started for, the executor)

    @classmethod
    def start(cls, jobs: int | None, workers: int, extractors: tuple, defer_walk: bool) -> Any:
        import atexit
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        import sgl_scan.analyzer.parse  # noqa: F401  (the ast side, loaded once before the workers fork)

        cls.release()
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context(method),
            initializer=_init_worker,
            initargs=(extractors, True, defer_walk),
        )
        if cls._current is None:
            atexit.register(cls.release)
        cls._current = (jobs, pool)
        return pool

    @classmethod
    def holds(cls, jobs: int | None) -> bool:
        """Whether a pool is kept, started for the same `jobs`."""
        return cls._current is not None and cls._current[0] == jobs

    @classmethod
    def walk(cls, todo: list) -> Iterator[tuple]:
        """Plain walks of `todo` (`_parse_one` results), biggest file first. A pool broken meanwhile (a
        worker killed: out of memory, a signal) is released and the rest walked here, as they were
        before the pool was kept."""
        from concurrent.futures.process import BrokenProcessPool

        assert cls._current is not None
        pool = cls._current[1]
        jobs = [(absolute, rel, True) for absolute, rel in sorted(todo, key=lambda job: -_size(job[0]))]
        done = 0
        try:
            for result in pool.map(_parse_one, jobs):
                done += 1
                yield result
        except BrokenProcessPool:
            cls.release()
            for job in jobs[done:]:
                yield _parse_one(job)
        except BaseException:
            cls.release()
            raise

    @classmethod
    def release(cls) -> None:
        current, cls._current = cls._current, None
        if current is not None:
            current[1].shutdown(wait=True, cancel_futures=True)


def release_pool() -> None:
    """Stop the pool kept for later walks (`_KeptPool`): an analysis's files are all read."""
    _KeptPool.release()


def _parse_libcst_files(todo: Sequence[tuple[str, str]], extractors: tuple) -> dict[str, tuple]:
    """absolute path -> `_parse_one` result, for the files of `todo` that a libcst extractor needs
    (those a pool worker hands back); a file that cannot be read is left to the worker's answer."""
    from sgl_scan.analyzer.parse import uses_ast

    on_cst = tuple(ex for ex in extractors if not uses_ast(ex))
    out: dict[str, tuple] = {}
    if not on_cst:
        return out
    for job in todo:
        try:
            data = Path(job[0]).read_bytes()
        except OSError:
            continue
        if matching_extractors(data, on_cst):
            out[job[0]] = _parse_one(job)
    return out


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


GRAPH_FORMAT = 2  # 2: inventory and graph cached apart (the graph only when asked for)


def analyze_tree(
    tree: Path,
    paths: Sequence[str] | None = None,
    *,
    snapshot_id: str = "",
    sglang_version: str | None = None,
    cache_dir: Path | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
    hashes: Mapping[str, str] | None = None,
    use_cache: bool = True,
    walk_all: bool = False,
) -> Analysis:
    """Analyse the Python files under `tree` (or just `paths`, relative to it).

    The inventory and graph of a set of facts are cached with them: a warm re-scan reads the inventory
    from one entry, and the facts themselves (`DeferredFiles`) only when someone reads them.
    `walk_all` (`collect_facts`): for a caller that reads every file's facts.
    """
    with gc_paused():
        return _analyze_tree(
            tree,
            paths,
            snapshot_id=snapshot_id,
            sglang_version=sglang_version,
            cache_dir=cache_dir,
            jobs=jobs,
            progress=progress,
            hashes=hashes,
            use_cache=use_cache,
            walk_all=walk_all,
        )


def _analyze_tree(
    tree: Path,
    paths: Sequence[str] | None,
    *,
    snapshot_id: str,
    sglang_version: str | None,
    cache_dir: Path | None,
    jobs: int | None,
    progress: Progress | None,
    hashes: Mapping[str, str] | None,
    use_cache: bool,
    walk_all: bool,
) -> Analysis:
    from sgl_scan.paths import facts_cache_dir

    tree = Path(tree)
    root = Path(cache_dir or facts_cache_dir())
    cache = FactsCache(root, signature(None, root)) if use_cache else None
    derived, key = None, ""
    if cache is not None:  # the inventory of these exact files may be cached: then read facts only if asked
        items = tree_items(tree, paths, hashes, cache)
        hashes, key = dict(items), tree_key(items)
        derived = _derived(cache, key)
    if derived is not None:
        assert hashes is not None  # set with `derived`, from the cache
        files: Mapping[str, FileFacts] = DeferredFiles(
            list(hashes),
            functools.partial(_facts_of, tree, hashes, key, cache_dir=cache_dir, jobs=jobs, walk_all=walk_all),
        )
        if progress:
            progress(len(files), len(files))
    else:
        run = collect_facts(
            tree,
            paths,
            hashes=hashes,
            cache_dir=cache_dir,
            use_cache=use_cache,
            jobs=jobs,
            progress=progress,
            walk_all=walk_all,
        )
        files = run.files
        if run.key != key:  # not cached, or a file changed after it was hashed
            key, hashes = run.key, None  # the facts' own sha256 are the truth
            derived = _derived(cache, key) if cache is not None else None
    if derived is not None:
        inventory, errors = derived
    else:
        errors = run.errors()
        inventory = _inventory(run, cache)
        if cache is not None:
            cache.put_value(f"analysis-{GRAPH_FORMAT}-{key}", (inventory, errors))
    return Analysis(
        snapshot_id=snapshot_id,
        sglang_version=sglang_version,
        files=files,
        parse_errors=errors,
        inventory=inventory,
        graph_or_builder=_GraphBuilder(files, inventory, cache, f"graph-{GRAPH_FORMAT}-{key}"),
        derived=TreeValues(cache, key, files, inventory) if cache is not None else None,
        sources=SourceText(tree, _sha_lookup(hashes, files)),
    )


def _inventory(run: FactsRun, cache: FactsCache | None) -> SpecInventory:
    """The inventory of `run`'s facts: the one stored for the same extractor records, all it is made
    of (another tree whose changes left every record as it was: an edit outside the speculative code,
    a helper added), else built and stored for them."""
    files = run.files
    name = None
    if cache is not None and isinstance(files, LazyFiles):
        name = f"inventory-{GRAPH_FORMAT}-{files.records_key()}"
        found = cache.get_value(name, keep=True)
        if isinstance(found, SpecInventory):
            return found
    inventory = build_inventory(run.with_records())
    if cache is not None and name is not None:
        cache.put_value(name, inventory)
    return inventory


def _sha_lookup(hashes: Mapping[str, str] | None, files: Mapping[str, FileFacts]) -> Callable[[str], str | None]:
    """path -> the sha256 the facts of `files` were made from (None: not among them)."""
    if hashes is not None:
        return hashes.get

    def sha_of(path: str) -> str | None:
        if path not in files:
            return None
        return (files.peek(path) if isinstance(files, LazyFiles) else files[path]).sha256

    return sha_of


def _derived(cache: FactsCache, key: str) -> tuple[SpecInventory, tuple[ParseError, ...]] | None:
    """The cached (inventory, parse errors) of the facts of tree `key`."""
    value = cache.get_value(f"analysis-{GRAPH_FORMAT}-{key}")
    return value if isinstance(value, tuple) and len(value) == 2 else None


def _facts_of(tree: Path, hashes: Mapping[str, str], key: str, **kw: Any) -> Mapping[str, FileFacts]:
    """The facts of the files `hashes` names (path -> sha256; their tree key is `key`)."""
    with gc_paused():
        run = collect_facts(tree, list(hashes), hashes=hashes, **kw)
    if run.key != key:  # parsed from files that no longer match their hashes: not the facts asked for
        raise AnalysisError(f"files under {tree} changed while they were analysed; run again")
    return run.files


class DeferredFiles(_KnownPaths):
    """path -> FileFacts of a tree whose inventory came from the cache: the facts (a pack of tens of
    MB) are read on first access, which a warm scan whose findings are cached never makes."""

    def __init__(self, paths: Sequence[str], load: Callable[[], Mapping[str, FileFacts]]) -> None:
        self._paths = dict.fromkeys(paths)
        self._load: Callable[[], Mapping[str, FileFacts]] | None = load
        self._files: Mapping[str, FileFacts] | None = None

    @property
    def loaded(self) -> bool:
        return self._files is not None

    def _facts(self) -> Mapping[str, FileFacts]:
        if self._files is None:
            assert self._load is not None  # dropped only once `_files` is set
            self._files = self._load()
            self._load = None
        return self._files

    def __getitem__(self, path: str) -> FileFacts:
        if path not in self._paths:
            raise KeyError(path)
        return self._facts()[path]

    def values(self) -> Any:
        return self._facts().values()  # `LazyFiles` walks its deferred files in one go

    def items(self) -> Any:
        return self._facts().items()

    def source_mentioning(self, words: Sequence[str]) -> list[str] | None:
        """`LazyFiles.source_mentioning` of the facts (None where they are not such)."""
        narrow = getattr(self._facts(), "source_mentioning", None)
        return narrow(words) if narrow is not None else None

    def paths_mentioning(self, words: Sequence[str]) -> list[str]:
        """`LazyFiles.paths_mentioning` of the facts."""
        files = self._facts()
        narrow = getattr(files, "paths_mentioning", None)
        return list(narrow(words)) if narrow is not None else list(files)

    def peek(self, path: str) -> FileFacts:
        """`LazyFiles.peek` of the facts."""
        if path not in self._paths:
            raise KeyError(path)
        files = self._facts()
        peek = getattr(files, "peek", None)
        return peek(path) if peek is not None else files[path]

    def store_walked(self) -> None:
        """`LazyFiles.store_walked` of the facts, once they were read."""
        store = getattr(self._files, "store_walked", None)
        if store is not None:
            store()

    def records(self, path: str) -> Mapping[str, tuple[Any, ...]]:
        """`LazyFiles.records` of the facts."""
        if path not in self._paths:
            raise KeyError(path)
        files = self._facts()
        records = getattr(files, "records", None)
        return records(path) if records is not None else (files[path].extras or {})

    def paths_with_records(self, kinds: Sequence[str]) -> list[str]:
        """`LazyFiles.paths_with_records` of the facts."""
        files = self._facts()
        narrow = getattr(files, "paths_with_records", None) or getattr(files, "paths_mentioning", None)
        return list(narrow(kinds)) if narrow is not None else list(files)


class _GraphBuilder:
    """Makes the graph of one analysis when first asked: from the cache, else built (and cached)."""

    def __init__(
        self, files: Mapping[str, FileFacts], inventory: SpecInventory, cache: FactsCache | None, name: str
    ) -> None:
        self.files, self.inventory, self.cache, self.name = files, inventory, cache, name

    def __call__(self) -> Any:
        import networkx as nx

        from sgl_scan.analyzer.graph import build_graph

        with gc_paused():
            graph = self.cache.get_value(self.name) if self.cache is not None else None
            if not isinstance(graph, nx.MultiDiGraph):
                graph = build_graph(self.files, self.inventory)
                if self.cache is not None:
                    self.cache.put_value(self.name, graph)
        return graph


def analyze(snapshot: Any, **kw: Any) -> Analysis:
    """Analyse a stored snapshot (`sgl_scan.snapshots.manifest.Snapshot`): the files its manifest lists."""
    manifest = snapshot.manifest
    entries = [e for e in manifest.files if e.path.endswith(".py")]
    kw.setdefault("snapshot_id", manifest.id)
    kw.setdefault("sglang_version", manifest.sglang_version)
    kw.setdefault("hashes", {e.path: e.sha256 for e in entries if e.sha256})
    return analyze_tree(snapshot.tree, [e.path for e in entries], **kw)


__all__ = [
    "DeferredFiles",
    "FactsRun",
    "FileNote",
    "LazyFiles",
    "ParseError",
    "analyze",
    "analyze_tree",
    "build_inventory",
    "collect_facts",
    "discover",
    "empty_inventory",
    "load_extractors",
    "matching_extractors",
    "tree_items",
]
