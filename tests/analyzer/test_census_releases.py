"""The census invariant on every release 0.4.6-0.5.23: census ⊆ facts ∪ unread.

Every node that refers to the algorithm (or to d2t/t2d/hot_token_id), as the census finds it by its
own re-walk of the files (tests/analyzer/census_check.py), is covered by a fact the analyzer
produced or by an `unread` entry at its place, and the counts add up. The other way round, every
dispatch site lies in a census entry: the census sees at least what the extractors see. Default scope and
full scope (every *.py under srt/) on every release.
"""

from __future__ import annotations

import functools

import pytest

from sgl_scan.analyzer.pipeline import analyze_tree
from tests.analyzer.census_check import census_entries, sites_outside, uncovered
from tests.support.releases import analyse_release, cache_root, release_tree

pytestmark = pytest.mark.slow

RELEASES = ["0.4.6", "0.4.10", *(f"0.5.{n}" for n in range(1, 24))]
FULL = RELEASES  # about 90 s of CPU for all 25 full trees, their facts cached after the first run


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


def test_0_5_23_every_reference_is_read():
    """Unmodified 0.5.23 (default scope): every census reference produced a fact. A null check of an
    algorithm object (`algo is not None` after `algo = SA.from_string(...)`, speculative_hook.py:266;
    `forward_batch.spec_algorithm is not None`, ascend_backend.py:544) is no reference: the object is
    the member NONE when no algorithm is set, never None."""
    inventory = analyse_release("0.5.23").inventory
    assert [str(u.location) for u in inventory.unread_of("reference")] == []
    assert inventory.census.references == inventory.census.read > 400


def test_0_5_23_forms_once_missed_are_dispatch_sites():
    """References the census once listed as unread on 0.5.23, each now a dispatch site of the form it
    is: a predicate on `SA.from_string(x)` (validation_hook.py:232, kv_cache_hook.py:449), a named
    collection (metrics_reporter.py:424, lora_hook.py:253), `str(x).upper()` (disaggregation/utils.py:1897),
    `x is None` on the option string through a local (mem_cache/common.py:456) and in an assert
    (attention_hook.py:161), and a local `(x or "").upper()` (attention_hook.py:480)."""
    sites = {(s.location.path, s.location.line): s for s in analyse_release("0.5.23").inventory.dispatch_sites}
    srt = "sglang/srt/"
    got = {k: (sites[srt + k[0], k[1]].via, sites[srt + k[0], k[1]].detail, sites[srt + k[0], k[1]].negated)
           for k in [("arg_groups/validation_hook.py", 232), ("arg_groups/kv_cache_hook.py", 449),
                     ("managers/scheduler_components/metrics_reporter.py", 424), ("arg_groups/lora_hook.py", 253),
                     ("disaggregation/utils.py", 1897), ("mem_cache/common.py", 456), ("arg_groups/attention_hook.py", 161),
                     ("arg_groups/attention_hook.py", 480)] if (srt + k[0], k[1]) in sites}
    assert got == {
        ("arg_groups/validation_hook.py", 232): ("predicate", "supports_mixed_chunk", False),
        ("arg_groups/kv_cache_hook.py", 449): ("predicate", "is_speculative", False),
        ("managers/scheduler_components/metrics_reporter.py", 424): ("member", "EAGLE, EAGLE3, DFLASH, DSPARK", True),
        ("arg_groups/lora_hook.py", 253): ("string", "EAGLE, EAGLE3, DFLASH, DSPARK", True),
        ("disaggregation/utils.py", 1897): ("string", "DSPARK", True),
        ("mem_cache/common.py", 456): ("string", "None", False),
        ("arg_groups/attention_hook.py", 161): ("string", "None", False),
        ("arg_groups/attention_hook.py", 480): ("string", "DSPARK, DFLASH", True),
    }


def test_null_checks_of_an_algorithm_object_are_no_member_none():
    """`spec_algorithm is not None` on an algorithm object (0.5.23 model_runner.py:1561, eagle_utils.py:264)
    is a null check: never a site that sends the member NONE one way."""
    sites = analyse_release("0.5.23").inventory.dispatch_sites
    assert [(s.location.path, s.location.line) for s in sites if s.detail == "None" and (
        s.location.path, s.location.line) in {("sglang/srt/model_executor/model_runner.py", 1561),
                                               ("sglang/srt/speculative/eagle_utils.py", 264)}] == []
    assert [(s.location.line, s.detail) for s in sites if s.location.path == "sglang/srt/speculative/eagle_utils.py"
            and s.location.line == 264] == [(264, "is_eagle3")]


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
