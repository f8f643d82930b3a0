"""The inventory is made of the files' extractor records only, so a tree whose records are all the
previous tree's (an edit outside the speculative code: a helper appended, a comment) takes the stored
inventory instead of building it again; any record that changed builds it again. Checked on the real
0.5.23 `speculative` folder, against an uncached analysis of each tree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sgl_scan.analyzer import pipeline
from sgl_scan.analyzer.cache import RECORDS_ONLY, WALKED, facts_of, records_bytes, records_of, walked_blob
from sgl_scan.analyzer.parse import parse_file
from sgl_scan.errors import AnalysisError
from tests.support.releases import release_tree

SPEC_INFO = "sglang/srt/speculative/spec_info.py"


@pytest.fixture
def speculative(tmp_path) -> Path:
    """The 0.5.23 speculative folder and server_args.py, copied (each test edits its copy)."""
    source = release_tree("0.5.23") / "sglang" / "srt"
    root = tmp_path / "tree"
    shutil.copytree(source / "speculative", root / "sglang" / "srt" / "speculative")
    shutil.copy(source / "server_args.py", root / "sglang" / "srt" / "server_args.py")
    (root / "sglang" / "srt" / "managers").mkdir()
    shutil.copy(source / "managers" / "scheduler.py", root / "sglang" / "srt" / "managers" / "scheduler.py")
    return root


@pytest.fixture
def builds(monkeypatch) -> list[int]:
    """Counts the inventories built (not taken from the cache)."""
    counted: list[int] = []
    real = pipeline.build_inventory

    def counting(files):
        counted.append(1)
        return real(files)

    monkeypatch.setattr(pipeline, "build_inventory", counting)
    return counted


def _analyse(tree: Path, cache: Path | None):
    return pipeline.analyze_tree(tree, snapshot_id="t", cache_dir=cache, use_cache=cache is not None, jobs=1)


def test_an_edit_that_keeps_every_record_takes_the_stored_inventory(speculative, tmp_path, builds):
    cache = tmp_path / "cache"
    first = _analyse(speculative, cache)
    assert len(builds) == 1 and first.inventory.dispatch_sites
    edited = speculative / SPEC_INFO
    edited.write_text(edited.read_text() + "\n\ndef _added_helper(value):\n    return value\n")
    second = _analyse(speculative, cache)
    assert len(builds) == 1  # the tree is new (its facts were parsed), its inventory is not
    assert second.inventory == first.inventory == _analyse(speculative, None).inventory


def test_an_edit_that_changes_a_record_builds_the_inventory_again(speculative, tmp_path, builds):
    cache = tmp_path / "cache"
    first = _analyse(speculative, cache)
    edited = speculative / SPEC_INFO
    text = edited.read_text()
    # a new string dispatch site: the dispatch extractor's records of this file change
    edited.write_text(text + "\n\ndef _added_check(server_args):\n    return server_args.speculative_algorithm == 'EAGLE'\n")
    second = _analyse(speculative, cache)
    assert len(builds) == 2
    fresh = _analyse(speculative, None).inventory
    assert second.inventory == fresh != first.inventory
    assert len(second.inventory.dispatch_sites) > len(first.inventory.dispatch_sites)
    edited.write_text(text)  # back to the first tree: its analysis is cached whole
    built = len(builds)
    assert _analyse(speculative, cache).inventory == first.inventory and len(builds) == built


def test_a_word_that_only_sets_off_a_trigger_keeps_every_record(speculative, tmp_path, builds):
    """An extractor that found nothing leaves no entry in the records (`builder.found_records`): a
    parameter named `spec_algorithm` sets off the alias resolver's trigger in eagle_utils.py, which
    finds nothing there, so the records key and the stored inventory stay."""
    cache = tmp_path / "cache"
    first = _analyse(speculative, cache)
    edited = speculative / "sglang" / "srt" / "speculative" / "eagle_utils.py"
    edited.write_text(edited.read_text() + "\n\ndef _added(spec_algorithm):\n    return spec_algorithm.create_future_map(None)\n")
    second = _analyse(speculative, cache)
    assert second.files.records_key() == first.files.records_key() and len(builds) == 1
    assert not any(records == () for records in second.files["sglang/srt/speculative/eagle_utils.py"].extras.values())


def test_walking_a_deferred_file_keeps_its_records_byte_for_byte(speculative, tmp_path, monkeypatch):
    """A pool stores a file's records alone (`RECORDS_ONLY`); walking it later stores its facts with
    those same bytes. Pickled again they can differ (scheduler.py's do: the memo's numbering), and the
    tree's records key with them: the stored inventory would never be found again."""
    monkeypatch.setattr(pipeline, "PARALLEL_MIN_FILES", 2)
    monkeypatch.setattr(pipeline, "POOL_MIN_BYTES", 0)
    run = pipeline.collect_facts(speculative, cache_dir=tmp_path / "cache", jobs=2)
    assert "sglang/srt/managers/scheduler.py" in run.files.deferred
    before = run.files.records_key()
    run.files.materialize()
    assert not run.files.deferred and run.files.records_key() == before
    again = pipeline.collect_facts(speculative, cache_dir=tmp_path / "cache", jobs=2)
    assert again.from_pack and not again.files.deferred and again.files.records_key() == before


def test_a_walked_blob_keeps_its_records_apart_and_byte_for_byte():
    source = b"def pick(server_args):\n    return server_args.speculative_algorithm == 'EAGLE'\n"
    from sgl_scan.analyzer.pipeline import load_extractors, matching_extractors

    facts = parse_file("sglang/srt/a.py", source, "0" * 64, matching_extractors(source, load_extractors()))
    assert any(facts.extras.values())
    blob = walked_blob(facts)
    assert blob[:1] == WALKED and facts_of(blob) == facts and records_of(blob) == facts.extras
    made = b"\x80\x05first made"  # the records' pickle as first made is kept as given, not made again
    assert records_bytes(walked_blob(facts, made)) == made
    assert records_bytes(RECORDS_ONLY + made) == made
    assert records_bytes(b"") is None and records_of(b"") == {}
    broken = parse_file("sglang/srt/b.py", b"def broken(:\n", "1" * 64, ())
    assert broken.parse_error is not None and facts_of(walked_blob(broken)) == broken  # a plain pickle


def test_stored_facts_of_another_file_are_refused(tmp_path):
    one = parse_file("sglang/srt/a.py", b"x = 1\n", "a" * 64, ())
    other = parse_file("sglang/srt/b.py", b"y = 2\n", "b" * 64, ())
    files = pipeline.LazyFiles({"sglang/srt/a.py": walked_blob(other)}, shas={"sglang/srt/a.py": "a" * 64})
    with pytest.raises(AnalysisError, match="another file's"):
        files["sglang/srt/a.py"]
    files = pipeline.LazyFiles({"sglang/srt/a.py": walked_blob(one)}, shas={"sglang/srt/a.py": "a" * 64})
    assert files["sglang/srt/a.py"] == one
