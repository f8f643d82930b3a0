"""Analyses of real SGLang releases for the codegen tests.

Facts depend only on file contents and the analyzer's signature, so they are cached beside the
release trees (`$SGLSCAN_TEST_CACHE/facts`) and survive between runs like the wheels do.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sgl_scan.analyzer.pipeline import analyze_tree
from sgl_scan.snapshots.scope import select_local
from tests.support.releases import cache_root, release_tree


def release_analysis(version: str, cache_dir: Path):
    """(tree, Analysis) of `sglang==version` over the speculative scope, with a stable snapshot id."""
    tree = release_tree(version)
    package = tree / "sglang"
    relative = [str(p.relative_to(package)) for p in package.rglob("*.py")]
    paths = ["sglang/" + p for p in select_local(relative, "speculative", lambda p: (package / p).read_bytes())]
    analysis = analyze_tree(tree, paths, snapshot_id=f"release-{version}", sglang_version=version, cache_dir=cache_dir)
    return tree, analysis


@pytest.fixture(scope="session")
def facts_cache():
    path = cache_root() / "facts"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def release_0_5_23(facts_cache):
    return release_analysis("0.5.23", facts_cache)


@pytest.fixture(scope="session")
def release_0_5_11(facts_cache):
    return release_analysis("0.5.11", facts_cache)


@pytest.fixture(scope="session")
def release_0_5_10(facts_cache):
    return release_analysis("0.5.10", facts_cache)


# Golden copies of generated code are data, not tests of this suite.
collect_ignore_glob = ["golden/*"]
