"""Pool workers leave the walk of a cleanly parsing file's general facts to the first read: a file no
extractor matches is stored `DEFERRED`, one with records as `RECORDS_ONLY` and its records. The facts
read later are the facts an eager walk gives, from the same bytes (records put back in their place),
and nothing that the whole-tree steps ask (records, parse errors, which files mention a word) needs
the walk."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgl_scan.analyzer import pipeline
from sgl_scan.analyzer.cache import FactsCache, Pack, facts_of, signature, unwalked
from sgl_scan.analyzer.pipeline import analyze_tree, collect_facts
from sgl_scan.errors import AnalysisError

PLAIN = "import os\n\n\ndef helper_{i}(x):\n    return os.path.join(x, '{i}')\n"
DISPATCH = "def pick_{i}(server_args):\n    return server_args.speculative_algorithm == 'E{i}'\n"


def _write(root: Path, rel: str, text: str) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


@pytest.fixture
def tree(tmp_path, monkeypatch):
    root = tmp_path / "tree"
    for i in range(30):
        _write(root, f"sglang/srt/plain/p{i}.py", PLAIN.format(i=i))
        _write(root, f"sglang/srt/spec/d{i}.py", DISPATCH.format(i=i))
    _write(root, "sglang/srt/plain/exports.py", "__all__ = ['exported' 'name']\n\ndef f():\n    pass\n")
    _write(root, "sglang/srt/plain/broken.py", "def broken(:\n")
    monkeypatch.setattr(pipeline, "PARALLEL_MIN_FILES", 8)
    monkeypatch.setattr(pipeline, "POOL_MIN_BYTES", 0)
    return root


def _plain(i: int) -> str:
    return f"sglang/srt/plain/p{i}.py"


def _spec(i: int) -> str:
    return f"sglang/srt/spec/d{i}.py"


PLAIN_FILES = frozenset(_plain(i) for i in range(30))  # no extractor matches them: DEFERRED
SPEC_FILES = frozenset(_spec(i) for i in range(30))  # the dispatch extractor's records: RECORDS_ONLY


def test_files_are_walked_when_read_and_equal_an_eager_walk(tree, tmp_path):
    pooled = collect_facts(tree, cache_dir=tmp_path / "cache", jobs=2)
    assert pooled.files.deferred == PLAIN_FILES | SPEC_FILES  # not `__all__` (exports.py), not broken.py
    assert len(pooled.parsed) == 62  # parsed (checked) in this run, walked or not
    serial = collect_facts(tree, use_cache=False, jobs=1)  # this process never defers
    assert serial.files.deferred == frozenset()
    one = pooled.files[_plain(3)]  # one read walks one file
    assert one == serial.files[_plain(3)] and pooled.files.deferred == PLAIN_FILES - {_plain(3)} | SPEC_FILES
    spec = pooled.files[_spec(3)]  # walked, and its records put back: the facts an eager parse gives
    assert spec == serial.files[_spec(3)] and spec.extras["spec_dispatch"] and spec.functions
    assert dict(pooled.files.items()) == dict(serial.files.items()) and pooled.files.deferred == frozenset()


def test_records_are_read_without_walking_the_general_facts(tree, tmp_path):
    pooled = collect_facts(tree, cache_dir=tmp_path / "cache", jobs=2)
    serial = collect_facts(tree, use_cache=False, jobs=1)
    for path in sorted(SPEC_FILES | PLAIN_FILES):
        assert pooled.files.records(path) == serial.files[path].extras, path
    assert pooled.files.deferred == PLAIN_FILES | SPEC_FILES  # none walked


def test_whole_tree_answers_do_not_walk_deferred_files(tree, tmp_path):
    """Records, parse errors: the deferred files parsed cleanly and no extractor matched them."""
    cache = tmp_path / "cache"
    cold = collect_facts(tree, cache_dir=cache, jobs=2)
    serial = collect_facts(tree, use_cache=False, jobs=1)
    assert [e.location.path for e in cold.errors()] == [e.location.path for e in serial.errors()] == [
        "sglang/srt/plain/broken.py"]
    records = {path: found.extras for path, found in serial.with_records().items()}
    assert {path: found.extras for path, found in cold.with_records().items()} == records
    assert "sglang/srt/plain/exports.py" not in cold.files.deferred  # its __all__ strings are evaluated
    from_pack = collect_facts(tree, cache_dir=cache, jobs=2)
    assert from_pack.from_pack and from_pack.files.deferred == cold.files.deferred
    assert from_pack.errors() == serial.errors()
    # from a pack, which files carry records is not known without unpickling: all but the DEFERRED ones
    assert set(records) <= set(from_pack.with_records()) == set(serial.files) - PLAIN_FILES
    assert {path: found.extras for path, found in from_pack.with_records().items() if path in records} == records
    assert from_pack.files.deferred == cold.files.deferred  # none of that walked a file


def test_a_deferred_file_changed_since_it_was_checked_is_refused(tree, tmp_path):
    run = collect_facts(tree, cache_dir=tmp_path / "cache", jobs=2)
    _write(tree, _plain(5), "def other():\n    pass\n")
    _write(tree, _spec(5), "def other():\n    pass\n")
    for changed in (_plain(5), _spec(5)):  # DEFERRED and RECORDS_ONLY alike
        with pytest.raises(AnalysisError, match="changed while they were analysed"):
            run.files[changed]
    assert run.files[_plain(6)].functions[0].name == "helper_6"
    assert run.files[_spec(6)].functions[0].name == "pick_6"


def test_the_pack_is_completed_once_every_deferred_file_is_walked(tree, tmp_path):
    cache_dir = tmp_path / "cache"
    collect_facts(tree, cache_dir=cache_dir, jobs=2)
    cache = FactsCache(cache_dir, signature(None, cache_dir))
    (pack_file,) = (cache.folder / "packs").iterdir()
    pack = Pack.decode(pack_file.read_bytes())
    assert sorted(path for path in pack.index if not pack.blob(path)) == sorted(PLAIN_FILES)
    assert sorted(path for path in pack.index if unwalked(pack.blob(path))) == sorted(PLAIN_FILES | SPEC_FILES)
    warm = collect_facts(tree, cache_dir=cache_dir, jobs=2)
    assert warm.from_pack and warm.files.deferred == PLAIN_FILES | SPEC_FILES
    records_key = warm.files.records_key()
    warm.files.materialize()
    pack = Pack.decode(pack_file.read_bytes())
    assert not any(unwalked(pack.blob(path)) for path in pack.index)
    again = collect_facts(tree, cache_dir=cache_dir, jobs=2)
    assert again.from_pack and again.files.deferred == frozenset()
    assert facts_of(again.files._pack.blob(_plain(1))) == warm.files[_plain(1)]
    assert facts_of(again.files._pack.blob(_spec(1))) == warm.files[_spec(1)] == eager(tree)[_spec(1)]
    # walking keeps each file's records byte for byte: the inventory found by records is found again
    assert again.files.records_key() == records_key


def test_files_walked_by_a_run_are_stored_for_the_next_one(tree, tmp_path):
    """`store_walked` (the scan asks it after the rules) keeps what one run walked: the next run of this
    tree, or of an edited one, reads those files walked; files nobody read stay deferred."""
    cache_dir = tmp_path / "cache"
    collect_facts(tree, cache_dir=cache_dir, jobs=2)
    warm = collect_facts(tree, cache_dir=cache_dir, jobs=2)
    assert warm.from_pack and warm.files.deferred == PLAIN_FILES | SPEC_FILES
    walked = warm.files[_spec(4)], warm.files[_plain(4)]
    again = collect_facts(tree, cache_dir=cache_dir, jobs=2)
    assert again.files.deferred == PLAIN_FILES | SPEC_FILES  # not stored unless asked
    warm.files.store_walked()
    _write(tree, _plain(7), PLAIN.format(i=77))  # an edit elsewhere: a new tree, the same pack for the rest
    edited = collect_facts(tree, cache_dir=cache_dir, jobs=2)
    assert edited.parsed == (_plain(7),)
    assert edited.files.deferred == (PLAIN_FILES | SPEC_FILES) - {_spec(4), _plain(4), _plain(7)}
    expected = eager(tree)
    assert (edited.files[_spec(4)], edited.files[_plain(4)]) == walked == (expected[_spec(4)], expected[_plain(4)])


def eager(tree: Path):
    return collect_facts(tree, use_cache=False, jobs=1).files


def test_another_tree_takes_deferred_files_from_a_pack_as_deferred(tree, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    collect_facts(tree, cache_dir=cache, jobs=2)
    _write(tree, "sglang/srt/spec/d0.py", DISPATCH.format(i=99))
    parsed = collect_facts(tree, cache_dir=cache, jobs=1)
    assert parsed.parsed == ("sglang/srt/spec/d0.py",)
    assert parsed.files.deferred == PLAIN_FILES | SPEC_FILES - {_spec(0)}  # d0 parsed here, in one process
    assert parsed.files[_plain(2)].functions[0].name == "helper_2"
    assert parsed.files[_spec(2)] == eager(tree)[_spec(2)]


def test_paths_mentioning_reads_the_source_of_deferred_files(tree, tmp_path):
    """A superset of the files whose facts hold a word: for deferred files, the word in their source,
    in their path, or in what the builder adds (builtins, <locals>); any other text: every file."""
    _write(tree, _plain(7), PLAIN.format(i=7) + "\n\ndef rare_method_name(self):\n    pass\n")
    run = collect_facts(tree, cache_dir=tmp_path / "cache", jobs=2)
    assert _plain(7) in run.files.deferred
    assert run.files.paths_mentioning(["rare_method_name"]) == [_plain(7)]
    assert run.files.paths_mentioning(["nowhere_at_all"]) == []
    assert run.files.paths_mentioning(["p9"]) == [_plain(9)]  # the module name comes from the path
    assert len(run.files.paths_mentioning(["builtins"])) >= 30
    assert len(run.files.paths_mentioning(["sglang.srt.plain"])) >= 30  # not an identifier: cannot tell
    assert run.files.deferred == PLAIN_FILES | SPEC_FILES  # decided without walking
    assert run.files.paths_mentioning(["pick_4"]) == [_spec(4)]  # in the source of a RECORDS_ONLY file
    eager = collect_facts(tree, use_cache=False, jobs=1)
    for word in ("rare_method_name", "helper_4", "join", "os"):
        assert set(eager.files.paths_mentioning([word])) <= set(run.files.paths_mentioning([word])), word


def test_a_scan_of_a_pooled_tree_reports_what_a_serial_one_does(tree, tmp_path):
    pooled = analyze_tree(tree, cache_dir=tmp_path / "c1", jobs=2)
    serial = analyze_tree(tree, use_cache=False, jobs=1)
    assert pooled.inventory == serial.inventory and pooled.parse_errors == serial.parse_errors
    assert sorted(pooled.graph.edges(data="kind")) == sorted(serial.graph.edges(data="kind"))


def test_a_prefetched_file_not_yet_read_is_still_found_by_what_it_mentions(tree, tmp_path):
    """A walked file keeps only its pickled facts until read; `paths_mentioning` searches those too."""
    files = collect_facts(tree, cache_dir=tmp_path / "cache", jobs=2).files
    files.prefetch([_plain(4)])
    assert _plain(4) not in files.deferred and _plain(4) not in files._ready
    assert files.paths_mentioning(["helper_4"]) == [_plain(4)]
    assert files.paths_with_records(["helper_4"]) == [_plain(4)]  # a superset, as paths_mentioning


def test_a_scan_stores_what_its_rules_walked(tree, monkeypatch, capsys):
    """The scan asks `store_walked` once its rules ran (the wiring of the test above into the CLI)."""
    from sgl_scan.cli import main

    asked: list[frozenset[str]] = []
    real = pipeline.LazyFiles.store_walked

    def spy(self):
        asked.append(self.deferred)
        real(self)

    monkeypatch.setattr(pipeline.LazyFiles, "store_walked", spy)
    algorithm = (
        "import enum\n\n\nclass SpeculativeAlgorithm(enum.IntEnum):\n    NONE = 0\n    EAGLE = 1\n\n"
        "    def is_eagle(self):\n        return self == SpeculativeAlgorithm.EAGLE\n"
    )
    _write(tree, "sglang/srt/speculative/spec_info.py", algorithm)
    with pytest.raises(SystemExit) as exc:
        main(["scan", "--path", str(tree / "sglang"), "--scope", "full", "--format", "json"])
    assert exc.value.code in (0, 1), capsys.readouterr().err
    assert asked, "the scan never stored what its rules walked"
    assert pipeline._KeptPool._current is None, "the scan kept its pool after the rules ran"


def test_later_walks_go_to_the_pool_kept_from_the_parse(tree, tmp_path, monkeypatch):
    """Files a rule reads after the parse are walked by the parse's processes, kept for it, two or more
    at a time; one file, or any read after `release_pool`, is walked here. The facts are the same."""
    sent: list[int] = []
    real = pipeline._KeptPool.walk  # (a classmethod, bound to the class)

    def spy(todo):
        sent.append(len(todo))
        return real(todo)

    monkeypatch.setattr(pipeline._KeptPool, "walk", spy)
    expected = eager(tree)
    pooled = collect_facts(tree, cache_dir=tmp_path / "cache", jobs=2)
    try:
        pooled.files.prefetch([_plain(i) for i in range(5)] + [_spec(1)])
        assert sent == [6]
        pooled.files[_plain(9)]  # one file: walked here
        assert sent == [6]
        assert all(pooled.files[p] == expected[p] for p in [*map(_plain, range(5)), _spec(1), _plain(9)])
    finally:
        pipeline.release_pool()
    assert pipeline._KeptPool._current is None
    pooled.files.prefetch([_plain(i) for i in range(10, 14)])  # no pool kept: in this process
    assert sent == [6] and all(pooled.files[_plain(i)] == expected[_plain(i)] for i in range(10, 14))


def test_a_kept_pool_that_broke_walks_the_rest_here(tree, tmp_path):
    """Workers killed after the parse (out of memory, a signal): the files read later are still
    walked, in this process, with the facts an eager walk gives; the broken pool is released."""
    expected = eager(tree)
    pooled = collect_facts(tree, cache_dir=tmp_path / "cache", jobs=2)
    kept = pipeline._KeptPool._current
    assert kept is not None
    for process in list(kept[1]._processes.values()):  # (the executor's own table of its workers)
        process.kill()
        process.join()
    wanted = [_plain(i) for i in range(6)]
    pooled.files.prefetch(wanted)
    assert pipeline._KeptPool._current is None
    assert all(pooled.files[p] == expected[p] for p in wanted)
