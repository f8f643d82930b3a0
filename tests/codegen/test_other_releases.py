"""Releases the goldens do not cover still generate and validate: nothing about a release is hard-coded."""

from __future__ import annotations

import pytest

from sgl_scan.codegen.ddtree.generate import generate_ddtree
from tests.codegen.conftest import release_analysis

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("version", "worker_line", "option_skip", "prepare_line", "target_line"),
    [
        # 0.5.16: plugin API, --speculative-algorithm an annotated field in server_args.py (l.1715);
        # DFlashVerifyInput.prepare_for_verify(batch, target_worker) -> tuple[ForwardBatch, bool] (dflash_info.py:53)
        ("0.5.16", "sglang/srt/speculative/dflash_worker_v2.py:150", "sglang/srt/server_args.py:1715",
         "sglang/srt/speculative/dflash_info.py:53", "sglang/srt/managers/tp_worker.py:529"),
        # 0.5.20: the field moved to arg_groups/fields/spec.py (l.37)
        ("0.5.20", "sglang/srt/speculative/dflash_worker_v2.py:355", "sglang/srt/arg_groups/fields/spec.py:37",
         "sglang/srt/speculative/dflash_info.py:59", "sglang/srt/managers/tp_worker.py:593"),
    ],
)
def test_plugin_by_default_and_a_valid_patch_on_request(version, worker_line, option_skip, prepare_line, target_line, facts_cache):
    tree, analysis = release_analysis(version, facts_cache)
    plugin = generate_ddtree(analysis, tree, package="ddtree_sglang", budget=24, topk=4)
    assert plugin.plan.mode == "plugin" and "register.py" in plugin.files
    assert str(plugin.plan.base.location) == worker_line
    glue = plugin.plan.verify
    assert glue.missing == () and glue.returns_forward_batch
    assert (str(glue.prepare.location), str(glue.target_forward.location)) == (prepare_line, target_line)
    patch = generate_ddtree(analysis, tree, package="ddtree_sglang", budget=24, topk=4, mode="patch")
    assert "sglang/srt/speculative/spec_info.py" in patch.patch.files  # validated: applies and parses
    assert [str(e.location) for e in patch.patch.skipped] == [option_skip]  # no literal choices to extend
