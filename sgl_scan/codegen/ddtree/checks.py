"""The test that shows each assumption the facts cannot prove: a CPU test against the real package, or a GPU check.

Every `unverified` entry of the plan is a pair (what is assumed, the test id that would fail if it were
wrong). The generated README lists them split by where that test runs.
"""

from __future__ import annotations

REAL = "tests/codegen/test_real_sglang.py::"
GPU = "tests/gpu/test_ddtree_e2e.py::"

# CPU, the real package imported (sgl-scan's own suite)
IMPORTS = REAL + "test_the_worker_subclasses_the_release_base_and_refuses_before_loading"  # worker.py's imports resolve
DRAFTER_BLOCK = (
    REAL + "test_the_base_is_built_on_the_drafters_trained_block"
)  # the drafter's config is read, the setting scoped
# GPU, a real server
LOSSLESS = GPU + "test_ddtree_greedy_equals_no_speculation_and_dflash"
KV_POOL = GPU + "test_the_kv_pool_is_back_to_its_start_after_the_run"
DRAFT_RUN = GPU + "test_the_drafter_runs_on_its_trained_block"


def on_cpu(check: str) -> bool:
    return check.startswith(REAL)
