"""The census invariant on every release 0.4.6-0.5.23: census ⊆ facts ∪ unread.

Every node that refers to the algorithm (or to d2t/t2d/hot_token_id), as the census finds it by its
own re-walk of the files (tests/analyzer/census_check.py), is covered by a fact the analyzer
produced or by an `unread` entry at its place, and the counts add up. The other way round, every
dispatch site lies in a census entry: the census sees at least what the extractors see. Default scope on every
release; full scope (every *.py under srt/) on three.
"""

from __future__ import annotations

import functools

import pytest

from sgl_scan.analyzer.pipeline import analyze_tree
from tests.analyzer.census_check import census_entries, sites_outside, uncovered
from tests.support.releases import analyse_release, cache_root, release_tree

pytestmark = pytest.mark.slow

RELEASES = ["0.4.6", "0.4.10", *(f"0.5.{n}" for n in range(1, 24))]
FULL = ["0.4.6", "0.5.11", "0.5.23"]


def _check(tree, paths, inventory) -> None:
    entries = census_entries(tree, paths)
    assert uncovered(entries, inventory) == []
    assert sites_outside(entries, inventory) == []  # and the census counts every site the extractors found
    census = inventory.census
    assert census is not None
    assert (census.references, census.read + census.unread) == (len(entries), len(entries))
    assert sum(n for _form, n in census.forms) == census.references
    # every entry that produced no fact is one `reference` unread entry, and no more
    assert len(inventory.unread_of("reference")) <= census.unread


@pytest.mark.parametrize("version", RELEASES)
def test_census_is_covered_default_scope(version):
    analysis = analyse_release(version)
    _check(release_tree(version), list(analysis.files), analysis.inventory)
    assert analysis.inventory.census.read > 20  # the census sees the release's dispatch at all (43 references in 0.4.6)


@functools.lru_cache(maxsize=None)
def _full(version: str):
    tree = release_tree(version)
    paths = sorted(p.relative_to(tree).as_posix() for p in (tree / "sglang" / "srt").rglob("*.py"))
    return tree, paths, analyze_tree(tree, paths, cache_dir=cache_root() / "facts-cache", jobs=2).inventory


@pytest.mark.parametrize("version", FULL)
def test_census_is_covered_full_scope(version):
    tree, paths, inventory = _full(version)
    _check(tree, paths, inventory)
    assert inventory.census.references >= analyse_release(version).inventory.census.references


def test_0_5_23_known_misses_are_listed():
    """What the extractors do not read on unmodified 0.5.23 (issue 27) is in `unread`, with its form."""
    unread = {(u.location.path.rpartition("/")[2], u.location.line): u.reason
              for u in analyse_release("0.5.23").inventory.unread_of("reference")}
    assert unread[("kv_cache_hook.py", 449)].startswith("predicate call (call result)")
    assert unread[("deepseek_v4_memory_pool.py", 131)].startswith("predicate call (call result)")
    assert unread[("metrics_reporter.py", 424)].startswith("member test (named collection)")
    assert unread[("lora_hook.py", 253)].startswith("string test (named collection)")
    assert unread[("utils.py", 1897)].startswith("string test (literal)")  # str(get_spec().speculative_algorithm).upper()
    assert any(reason.startswith("string test (None)") for reason in unread.values())  # `x is not None`


def test_0_5_23_validation_hook_from_string_receiver_is_listed():
    """hunt4/real_from_string_receiver: `assert ... or SpeculativeAlgorithm.from_string(...).supports_mixed_chunk()`."""
    unread = analyse_release("0.5.23").inventory.unread_of("reference")
    assert [(u.location.line, u.reason.partition(":")[0]) for u in unread
            if u.location.path.endswith("arg_groups/validation_hook.py") and 228 <= u.location.line <= 235] == [
        (232, "predicate call (call result)")]


def test_0_5_23_walrus_comparison_is_read_or_listed(tmp_path):
    """hunt4/walrus_string_compare: `(algo := speculative_algorithm) == "NGRAM"` (kv_cache_hook.py:191) is a
    dispatch site or an unread entry, never silence."""
    import shutil

    source = release_tree("0.5.23")
    hook, spec = "sglang/srt/arg_groups/kv_cache_hook.py", "sglang/srt/speculative/spec_info.py"
    for rel in (hook, spec):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, tmp_path / rel)
    text = (tmp_path / hook).read_text()
    old = '            and speculative_algorithm == "NGRAM"\n            and cfg.speculative_ngram_max_bfs_breadth != 1'
    assert text.count(old) == 1
    (tmp_path / hook).write_text(text.replace(old, old.replace("speculative_algorithm ==", "(algo := speculative_algorithm) ==")))
    inventory = analyze_tree(tmp_path, [hook, spec], use_cache=False).inventory
    places = [(x.location.path, x.location.line) for x in (*inventory.dispatch_sites, *inventory.unread)]
    assert any(place in places for place in ((hook, 190), (hook, 191)))
    assert uncovered(census_entries(tmp_path, [hook, spec]), inventory) == []
