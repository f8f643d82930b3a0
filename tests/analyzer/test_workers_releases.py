"""Workers with the flags that pick them on real releases, against `tests/data/workers-expected.json`.

The expectations were written by reading each release's worker choice (one to three releases of
every form: the scheduler's if/elif chain (0.4.6, 0.5.3), its `WorkerClass = EAGLEWorkerV2 if
self.enable_overlap else EAGLEWorker` (0.5.4), the registration helpers (0.5.5, 0.5.6), the
0.5.7 scheduler's flag-only `MultiLayerEagleWorker(V2)` around `spec_algorithm.create_draft_worker(...)`
(managers/scheduler.py:506-538: any algorithm gets them with `--enable-multi-layer-eagle`; nothing in
0.5.7's server_args refuses the flag for other algorithms), the V2 classes inside `if enable_overlap:`
(0.5.8, 0.5.10, 0.5.12), the early returns before the `is_eagle()` branches (0.5.12+), the
out-of-tree platform worker (0.5.23)).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from sgl_scan.analyzer.pipeline import analyze_tree
from sgl_scan.snapshots.scope import select_local
from tests.support.releases import cache_root, release_tree

EXPECTED = json.loads((Path(__file__).resolve().parents[1] / "data" / "workers-expected.json").read_text())
VERSIONS = [v for v in EXPECTED if not v.startswith("_")]

pytestmark = pytest.mark.slow


@lru_cache(maxsize=None)
def _inventory(version: str):
    tree = release_tree(version)
    package = tree / "sglang"
    relative = [p.relative_to(package).as_posix() for p in package.rglob("*.py")]
    paths = ["sglang/" + p for p in select_local(relative, "speculative", lambda p: (package / p).read_bytes())]
    return analyze_tree(tree, paths, snapshot_id=f"pypi-{version}", sglang_version=version,
                        cache_dir=cache_root() / "facts-cache", jobs=1, progress=None).inventory


@pytest.mark.parametrize("version", VERSIONS)
def test_workers_and_their_conditions_match_the_reading(version):
    got = {a.name: {"worker": a.worker,
                    "workers": [[w.qualname, w.condition, f"{w.location.path}:{w.location.line}"] for w in a.workers]}
           for a in _inventory(version).algorithms if a.name != "NONE"}
    assert got == EXPECTED[version]


def test_expectations_cover_every_form():
    assert {"0.5.4", "0.5.6", "0.5.7", "0.5.8", "0.5.12", "0.5.23"} <= set(VERSIONS)
    assert [w[0].rpartition(".")[2] for w in EXPECTED["0.5.7"]["NGRAM"]["workers"]] == [
        "MultiLayerEagleWorkerV2", "MultiLayerEagleWorker", "NGRAMWorker"]
    eagle_054 = EXPECTED["0.5.4"]["EAGLE"]
    assert [w[1] for w in eagle_054["workers"]] == ["self.enable_overlap", "not self.enable_overlap"]
    assert all("EAGLEWorker" not in w[0] for w in EXPECTED["0.5.12"]["FROZEN_KV_MTP"]["workers"])
