"""The facts cache: unchanged files are not parsed again, changed ones are, corrupt entries are rebuilt."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sgl_scan.analyzer import pipeline
from sgl_scan.analyzer.cache import MAGIC, FactsCache, decode, encode
from sgl_scan.analyzer.pipeline import DeferredFiles, analyze_tree, collect_facts
from sgl_scan.errors import AnalysisError


def _write(root: Path, rel: str, text: str) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    _write(root, "sglang/srt/a.py", "def f():\n    return 1\n")
    _write(root, "sglang/srt/b.py", "from sglang.srt.a import f\n\ndef g():\n    return f()\n")
    _write(root, "sglang/srt/pkg/__init__.py", "")
    _write(root, "sglang/srt/pkg/c.py", "class C:\n    pass\n")
    return root


@pytest.fixture
def parse_counter(monkeypatch):
    """Counts real parses (calls of parse_file) in this process."""
    seen: list[str] = []
    from sgl_scan.analyzer import parse

    real = parse.parse_file

    def counting(path, *args, **kw):
        seen.append(path)
        return real(path, *args, **kw)

    monkeypatch.setattr(parse, "parse_file", counting)  # the pipeline imports it when it parses
    return seen


def test_unchanged_files_are_not_parsed_again(tree, tmp_path, parse_counter):
    cache = tmp_path / "cache"
    first = collect_facts(tree, cache_dir=cache, jobs=1)
    assert sorted(parse_counter) == sorted(first.files) == [
        "sglang/srt/a.py", "sglang/srt/b.py", "sglang/srt/pkg/__init__.py", "sglang/srt/pkg/c.py"]
    parse_counter.clear()
    second = collect_facts(tree, cache_dir=cache, jobs=1)
    assert parse_counter == [] and second.parsed == () and second.from_pack
    assert dict(second.files) == dict(first.files)


def test_changed_file_is_reparsed_alone(tree, tmp_path, parse_counter):
    cache = tmp_path / "cache"
    collect_facts(tree, cache_dir=cache, jobs=1)
    parse_counter.clear()
    _write(tree, "sglang/srt/a.py", "def f():\n    return 2\n\ndef h():\n    pass\n")
    run = collect_facts(tree, cache_dir=cache, jobs=1)
    assert parse_counter == ["sglang/srt/a.py"] and run.parsed == ("sglang/srt/a.py",)
    assert [f.qualname for f in run.files["sglang/srt/a.py"].functions] == ["f", "h"]
    # back to the first content: served by the per-file entry, no parse
    parse_counter.clear()
    _write(tree, "sglang/srt/a.py", "def f():\n    return 1\n")
    run = collect_facts(tree, cache_dir=cache, jobs=1)
    assert parse_counter == [] and [f.qualname for f in run.files["sglang/srt/a.py"].functions] == ["f"]


def test_racy_edit_with_same_stamp_is_noticed(tree, tmp_path, parse_counter):
    """A file whose mtime is too close to when its hash was recorded is hashed again next time,
    so an edit that keeps size, inode and mtime is still seen."""
    cache = tmp_path / "cache"
    target = tree / "sglang/srt/a.py"
    future = time.time_ns() + 60_000_000_000  # inside the racy window whenever the run happens
    os.utime(target, ns=(future, future))
    collect_facts(tree, cache_dir=cache, jobs=1)
    target.write_text("def z():\n    return 1\n")  # same length as before
    os.utime(target, ns=(future, future))
    parse_counter.clear()
    run = collect_facts(tree, cache_dir=cache, jobs=1)
    assert parse_counter == ["sglang/srt/a.py"]
    assert [f.qualname for f in run.files["sglang/srt/a.py"].functions] == ["z"]


def test_explicit_hashes_decide(tree, tmp_path, parse_counter):
    """Hashes given by the caller (a snapshot manifest) are used as they are, without reading files."""
    cache = tmp_path / "cache"
    first = collect_facts(tree, cache_dir=cache, jobs=1)
    hashes = {p: f.sha256 for p, f in first.files.items()}
    (tree / "sglang/srt/a.py").write_text("def other():\n    pass\n")
    parse_counter.clear()
    run = collect_facts(tree, cache_dir=cache, jobs=1, hashes=hashes)
    assert parse_counter == [] and run.from_pack


def _entries(cache: Path, kind: str) -> list[Path]:
    return sorted(p for p in cache.rglob("*.pkl") if p.parent.name == kind or p.parent.parent.name == kind)


def _damage(entry: Path, damage: str) -> None:
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        entry.write_bytes(b"not a cache entry at all")
    elif damage == "flip":
        entry.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    else:
        entry.write_bytes(b"")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip", "empty"])
def test_corrupt_pack_is_rebuilt(tree, tmp_path, parse_counter, damage):
    cache = tmp_path / "cache"
    first = collect_facts(tree, cache_dir=cache, jobs=1)
    packs = _entries(cache, "packs")
    assert len(packs) == 1
    _damage(packs[0], damage)
    parse_counter.clear()
    run = collect_facts(tree, cache_dir=cache, jobs=1)
    assert sorted(parse_counter) == sorted(first.files) and not run.from_pack
    assert dict(run.files) == dict(first.files)
    parse_counter.clear()
    again = collect_facts(tree, cache_dir=cache, jobs=1)  # the rebuilt pack serves the next run
    assert parse_counter == [] and again.from_pack


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip", "empty"])
def test_files_of_a_corrupt_pack_of_another_tree_are_parsed(tree, tmp_path, parse_counter, damage):
    """A changed tree takes its unchanged files from the pack of the tree before; when that pack is
    damaged (its index or its facts), they are parsed instead, never read from the damaged bytes."""
    cache = tmp_path / "cache"
    first = collect_facts(tree, cache_dir=cache, jobs=1)
    _damage(_entries(cache, "packs")[0], damage)
    _write(tree, "sglang/srt/a.py", "def f():\n    return 2\n")
    parse_counter.clear()
    run = collect_facts(tree, cache_dir=cache, jobs=1)
    assert sorted(parse_counter) == sorted(first.files)
    assert {p: f for p, f in run.files.items() if p != "sglang/srt/a.py"} == \
        {p: f for p, f in first.files.items() if p != "sglang/srt/a.py"}


def test_a_cold_run_writes_one_pack_not_a_file_per_source(tree, tmp_path):
    cache = tmp_path / "cache"
    collect_facts(tree, cache_dir=cache, jobs=1)
    written = sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file())
    folders = [name.split("/")[1] for name in written if not name.startswith("code-stamps-")]  # the analyzer's stamps
    assert folders == ["packs", "values"], written  # the facts of the tree, and the files' stat index


def test_entry_format_checks_digest():
    data = encode({"x": 1})
    assert data.startswith(MAGIC) and decode(data) == {"x": 1}
    assert decode(data[:-1]) is None
    assert decode(b"") is None


def test_cache_namespace_follows_extractors(tree, tmp_path, parse_counter):
    cache = tmp_path / "cache"
    collect_facts(tree, cache_dir=cache, jobs=1, extractors=())

    class Fake:
        name, version, metadata = "fake", 1, ()
        trigger = __import__("re").compile("nothing-matches-this")

        def extract(self, wrapper, context):
            return ()

    parse_counter.clear()
    collect_facts(tree, cache_dir=cache, jobs=1, extractors=(Fake(),))
    assert len(parse_counter) == 4  # another signature: nothing reused


def test_pool_and_serial_give_the_same_facts(tree, tmp_path, monkeypatch):
    for i in range(60):  # enough files for the pool
        _write(tree, f"sglang/srt/many/m{i}.py", f"import os\n\ndef f{i}(x):\n    return os.path.join(x, '{i}')\n")
    monkeypatch.setattr(pipeline, "PARALLEL_MIN_FILES", 8)
    monkeypatch.setattr(pipeline, "POOL_MIN_BYTES", 0)
    pooled = collect_facts(tree, cache_dir=tmp_path / "c1", jobs=2)
    serial = collect_facts(tree, use_cache=False, jobs=1)
    assert len(pooled.parsed) == 64
    assert dict(pooled.files) == dict(serial.files)


def test_warm_analysis_reads_lazily(tree, tmp_path, parse_counter):
    cache = tmp_path / "cache"
    cold = analyze_tree(tree, cache_dir=cache, jobs=1)
    parse_counter.clear()
    warm = analyze_tree(tree, cache_dir=cache, jobs=1)
    assert isinstance(warm.files, DeferredFiles)  # the inventory came from the cache: no facts read yet
    assert list(warm.files) == list(cold.files) and "sglang/srt/a.py" in warm.files and not warm.files.loaded
    assert warm.inventory == cold.inventory and not warm.files.loaded
    assert sorted(warm.graph.edges(data="kind")) == sorted(cold.graph.edges(data="kind"))
    assert dict(warm.files) == dict(cold.files) and warm.files.loaded
    assert parse_counter == []  # from the pack


@pytest.mark.parametrize("damage", ["missing", "garbage"])
def test_deferred_facts_survive_a_lost_pack(tree, tmp_path, parse_counter, damage):
    """The inventory is cached but the facts pack is gone or damaged: the facts are rebuilt when read."""
    cache = tmp_path / "cache"
    cold = analyze_tree(tree, cache_dir=cache, jobs=1)
    for entry in _entries(cache, "packs") + _entries(cache, "files"):
        entry.unlink() if damage == "missing" else entry.write_bytes(b"garbage")
    parse_counter.clear()
    warm = analyze_tree(tree, cache_dir=cache, jobs=1)
    assert parse_counter == [] and not warm.files.loaded
    assert dict(warm.files) == dict(cold.files)
    assert sorted(parse_counter) == sorted(cold.files)


def test_deferred_facts_of_files_edited_since_refuse(tree, tmp_path):
    """Facts read after the cached inventory, from files edited in between, would not be that
    inventory's facts: reading them fails instead of mixing two versions of the tree."""
    cache = tmp_path / "cache"
    analyze_tree(tree, cache_dir=cache, jobs=1)
    for entry in _entries(cache, "packs") + _entries(cache, "files"):
        entry.unlink()
    warm = analyze_tree(tree, cache_dir=cache, jobs=1)
    (tree / "sglang/srt/a.py").write_text("def f():\n    return 2\n")
    with pytest.raises(AnalysisError, match="changed while they were analysed"):
        warm.files["sglang/srt/a.py"]


def test_graph_is_built_on_first_use_then_read_from_the_cache(tree, tmp_path, monkeypatch):
    from sgl_scan.analyzer import graph as graph_module

    built = []
    real = graph_module.build_graph
    monkeypatch.setattr(graph_module, "build_graph", lambda *a: built.append(1) or real(*a))
    cache = tmp_path / "cache"
    cold = analyze_tree(tree, cache_dir=cache, jobs=1)
    assert built == [] and callable(cold.graph_or_builder)  # scan-like use never pays for the graph
    assert ("sglang.srt.b.g", "sglang.srt.a.f") in cold.graph.edges()
    assert built == [1] and cold.graph is cold.graph  # made once
    warm = analyze_tree(tree, cache_dir=cache, jobs=1)
    assert sorted(warm.graph.edges(data="kind")) == sorted(cold.graph.edges(data="kind"))
    assert built == [1]  # the second analysis read it from the cache


def test_cold_analysis_unpickles_only_files_with_records(tree, tmp_path, monkeypatch):
    _write(tree, "sglang/srt/speculative/spec_info.py", (
        "from enum import IntEnum, auto\n\n"
        "class SpeculativeAlgorithm(IntEnum):\n    NONE = auto()\n    EAGLE = auto()\n\n"
        "    def is_eagle(self):\n        return self == SpeculativeAlgorithm.EAGLE\n\n"
        "def f(a):\n    if a.spec_algorithm.is_eagle():\n        return 1\n"))
    for i in range(50):
        _write(tree, f"sglang/srt/many/m{i}.py", f"X = {i}\n")
    monkeypatch.setattr(pipeline, "PARALLEL_MIN_FILES", 8)
    monkeypatch.setattr(pipeline, "POOL_MIN_BYTES", 0)
    read: list[str] = []
    peek, get, records = pipeline.LazyFiles.peek, pipeline.LazyFiles.__getitem__, pipeline.LazyFiles.records
    monkeypatch.setattr(pipeline.LazyFiles, "peek", lambda self, path: read.append(path) or peek(self, path))
    monkeypatch.setattr(pipeline.LazyFiles, "__getitem__", lambda self, path: read.append(path) or get(self, path))
    monkeypatch.setattr(pipeline.LazyFiles, "records", lambda self, path: read.append(path) or records(self, path))
    analysis = analyze_tree(tree, cache_dir=tmp_path / "cache", jobs=2)
    assert set(read) == {"sglang/srt/speculative/spec_info.py"}
    assert "sglang/srt/speculative/spec_info.py" in analysis.files.deferred  # its records only: nothing walked
    assert analysis.files._ready == {}  # read in passing: the inventory keeps no file's facts in memory
    assert [s.function for s in analysis.inventory.dispatch_sites] == ["sglang.srt.speculative.spec_info.f"]
    assert analysis.parse_errors == ()


def test_unreadable_cache_folder_degrades_to_no_cache(tree, tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    run = collect_facts(tree, cache_dir=blocker, jobs=1)
    assert len(run.parsed) == 4


K1, K2 = "1" * 64, "2" * 64  # tree keys


def test_facts_cache_get_files_checks_path_and_hash(tmp_path):
    from sgl_scan.analyzer.cache import dumps
    from sgl_scan.analyzer.parse import parse_file

    cache = FactsCache(tmp_path, "sig")
    facts = parse_file("a.py", b"x = 1\n", "s1")
    cache.put_pack(K1, {"a.py": ("s1", dumps(facts))})
    assert cache.get_files({"a.py": "s1"}) == {"a.py": (facts, dumps(facts))}
    assert cache.get_files({"a.py": "s2", "b.py": "s1"}) == {}
    # a pack whose index names the file but whose facts are another file's is not believed
    cache.put_pack(K2, {"b.py": ("s1", dumps(facts))})
    assert cache.get_files({"b.py": "s1"}) == {}


def test_get_files_takes_the_newest_pack_that_holds_a_file(tmp_path):
    from sgl_scan.analyzer.cache import dumps
    from sgl_scan.analyzer.parse import parse_file

    cache = FactsCache(tmp_path, "sig")
    old, new = parse_file("a.py", b"x = 1\n", "s1"), parse_file("a.py", b"x = 1\n", "s1")
    object.__setattr__(new, "module", "newer")
    cache.put_pack(K1, {"a.py": ("s1", dumps(old))})
    cache.put_pack(K2, {"a.py": ("s1", dumps(new)), "b.py": ("s9", dumps(parse_file("b.py", b"", "s9")))})
    os.utime(cache.folder / "packs" / f"{K1}.pkl", ns=(1, 1))
    assert cache.get_files({"a.py": "s1"})["a.py"][0].module == "newer"


def test_pool_workers_parse_every_file_and_nothing_loads_libcst(tree, tmp_path, monkeypatch):
    """Every extractor reads the stdlib ast: the workers parse every file (the parent none), the
    facts are those of a serial run, and a scan never imports libcst."""
    import subprocess
    import sys

    for i in range(20):
        _write(tree, f"sglang/srt/many/m{i}.py", f"def f{i}(server_args):\n    return server_args.speculative_algorithm == 'E{i}'\n")
    _write(tree, "sglang/srt/speculative/spec_info.py",
           "from enum import IntEnum\n\nclass SpeculativeAlgorithm(IntEnum):\n    EAGLE = 1\n\n    def is_eagle(self):\n"
           "        return self == SpeculativeAlgorithm.EAGLE\n\n\nSpeculativeAlgorithm.register(\"NGRAM\")\n")
    _write(tree, "sglang/srt/server_args.py",
           "def add_cli_args(parser):\n    parser.add_argument('--speculative-algorithm', choices=['EAGLE'])\n")
    monkeypatch.setattr(pipeline, "PARALLEL_MIN_FILES", 8)
    monkeypatch.setattr(pipeline, "POOL_MIN_BYTES", 0)
    from sgl_scan.analyzer import parse

    log = tmp_path / "parsed-by"
    def logged(real):
        def parse(path, *args, **kw):  # the workers fork with it too: each process appends its pid
            with open(log, "a") as handle:
                handle.write(f"{os.getpid()} {path}\n")
            return real(path, *args, **kw)

        return parse

    monkeypatch.setattr(parse, "parse_file", logged(parse.parse_file))
    monkeypatch.setattr(parse, "records_only", logged(parse.records_only))  # the extractors, not the general facts
    pooled = collect_facts(tree, cache_dir=tmp_path / "c1", jobs=2)
    by_pid = [line.split() for line in log.read_text().splitlines()]
    assert [path for pid, path in by_pid if pid == str(os.getpid())] == []
    plain = ["sglang/srt/a.py", "sglang/srt/b.py", "sglang/srt/pkg/__init__.py", "sglang/srt/pkg/c.py"]
    assert sorted(pooled.files.deferred) == sorted(pooled.files)  # all parse cleanly
    assert sorted(path for path in pooled.files if not pooled.files.records(path)) == plain
    assert len(by_pid) == len(pooled.files) - 4 == 22
    serial = collect_facts(tree, use_cache=False, jobs=1)
    assert dict(pooled.files) == dict(serial.files)
    assert pooled.files["sglang/srt/speculative/spec_info.py"].extras["spec_algo_class"]
    assert pooled.files["sglang/srt/speculative/spec_info.py"].extras["spec_registrations"]
    assert pooled.files["sglang/srt/server_args.py"].extras["spec_options"]
    code = ("import sys; from sgl_scan.analyzer.pipeline import analyze_tree; "
            f"analyze_tree({str(tree)!r}, use_cache=False, jobs=1); print('libcst' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_pack_search_finds_what_a_search_per_file_finds():
    import pickle
    import random

    from sgl_scan.analyzer.cache import Pack

    rng = random.Random(7)
    words = ["forward", "is_eagle", "d2t", "fo", "rward"]
    files = {f"f{i}.py": ("0" * 64, pickle.dumps([rng.choice(words) + rng.choice(words) for _ in range(rng.randint(0, 4))]))
             for i in range(200)}
    files.update({f"f{i}.py": ("0" * 64, b"") for i in range(0, 200, 3)})  # deferred: no bytes, share an offset
    pack = Pack.decode(Pack.encode(files))
    held = Pack.in_memory({p: blob for p, (_, blob) in files.items()})  # a tree's blobs joined in memory
    for needles in (["forward"], ["is_eagle", "d2t"], ["wardfo"], ["nothing"], ["rwardforward"]):
        wanted = {p for p, (_, blob) in files.items() if any(n.encode() in blob for n in needles)}
        assert pack.mentioning([n.encode() for n in needles]) == wanted
        assert held.mentioning([n.encode() for n in needles]) == wanted
    assert all(bytes(pack.blob(p)) == blob == bytes(held.blob(p)) for p, (_, blob) in files.items())
    assert Pack.decode(Pack.encode(files)[:-1]) is None


@pytest.fixture
def sources(tmp_path, monkeypatch):
    """A small package, and the sources `cache.source_shas` opens (by relative path)."""
    from sgl_scan.analyzer import cache as cache_module

    package = tmp_path / "pkg"
    _write(package, "a.py", "A = 1\n")
    _write(package, "sub/b.py", "B = 2\n")
    _write(package, "sub/__pycache__/c.py", "C = 3\n")
    _write(package, "notes.txt", "not a source\n")
    opened: list[str] = []

    def counting(path, *args, **kw):
        opened.append(os.path.relpath(path, package))
        return open(path, *args, **kw)

    monkeypatch.setattr(cache_module, "open", counting, raising=False)
    return package, opened


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def test_source_digest_reads_only_sources_whose_stamp_moved(sources, tmp_path, monkeypatch):
    from sgl_scan.analyzer import cache as cache_module

    package, opened = sources
    stamps = tmp_path / "stamps.pkl"
    monkeypatch.setattr(cache_module, "RACY_NS", 0)  # these files were written just now: trust them at once
    first = cache_module.source_shas(package, stamps)
    assert first == (("a.py", _sha("A = 1\n")), ("sub/b.py", _sha("B = 2\n"))) and sorted(opened) == ["a.py", "sub/b.py"]
    opened.clear()
    assert cache_module.source_shas(package, stamps) == first and opened == []
    before = os.stat(package / "a.py")
    (package / "a.py").write_text("A = 7\n")  # same size, and the mtime put back: only the ctime tells
    os.utime(package / "a.py", ns=(before.st_atime_ns, before.st_mtime_ns))
    assert cache_module.source_shas(package, stamps) == (("a.py", _sha("A = 7\n")), ("sub/b.py", _sha("B = 2\n")))
    assert opened == ["a.py"]


def test_source_digest_rereads_unsettled_sources_and_survives_a_damaged_stamp_file(sources, tmp_path):
    from sgl_scan.analyzer import cache as cache_module

    package, opened = sources
    stamps = tmp_path / "stamps.pkl"
    first = cache_module.source_shas(package, stamps)
    opened.clear()
    assert cache_module.source_shas(package, stamps) == first
    assert sorted(opened) == ["a.py", "sub/b.py"]  # changed within RACY_NS of being hashed: read again
    stamps.write_bytes(b"garbage")
    assert cache_module.source_shas(package, stamps) == first == cache_module.source_shas(package)


@pytest.mark.parametrize("change", ["edited", "added", "removed", "bytecode written"])
def test_sources_settled_sees_a_source_edited_added_or_removed_after_loading(sources, change):
    """A source changed after the given time, or a module added or removed since the listing taken at
    load: not settled. A `__pycache__` written on first import (which moves its folder's times, as in a
    fresh checkout) changes no source: still settled. Times are moved forward with utime (a test
    cannot wait for the clock)."""
    from sgl_scan import python_sources
    from sgl_scan.analyzer.cache import sources_settled

    package, _ = sources
    loaded = time.time_ns() + 10_000_000_000  # every file and folder is older than this, by far
    listing = frozenset(rel for rel, _ in python_sources(str(package)))
    assert listing == {"a.py", "sub/b.py"} and sources_settled(loaded, listing, package)
    old = loaded - 20_000_000_000
    later = loaded + 10_000_000_000
    if change == "edited":
        os.utime(package / "sub/b.py", ns=(later, later))
    elif change == "added":
        _write(package, "sub/c.py", "C = 3\n")
        os.utime(package / "sub/c.py", ns=(old, old))  # an old file copied in: its listing tells
    elif change == "removed":
        (package / "sub/b.py").unlink()
    else:
        _write(package, "__pycache__/a.cpython-311.pyc", "")
        os.utime(package, ns=(later, later))
        assert sources_settled(loaded, listing, package)
        return
    assert not sources_settled(loaded, listing, package)


def test_get_files_skips_a_pack_that_holds_too_little_of_what_is_wanted(tmp_path, monkeypatch):
    """Reading a whole pack for one file of it costs more than parsing that file."""
    from sgl_scan.analyzer import cache as cache_module
    from sgl_scan.analyzer.cache import dumps
    from sgl_scan.analyzer.parse import parse_file

    cache = FactsCache(tmp_path, "sig")
    small = parse_file("a.py", b"x = 1\n", "s1")
    others = {f"m{i}.py": (f"t{i}", dumps(parse_file(f"m{i}.py", b"y = 2\n", f"t{i}"))) for i in range(64)}
    cache.put_pack(K1, {"a.py": ("s1", dumps(small)), **others})
    assert cache.get_files({"a.py": "s1"}) == {}
    assert len(cache.get_files({"a.py": "s1", "m0.py": "t0"})) == 2  # 2 of 65 files: worth the read
    monkeypatch.setattr(cache_module, "PACK_READ_SHARE", 65)
    assert cache.get_files({"a.py": "s1"}) == {"a.py": (small, dumps(small))}
