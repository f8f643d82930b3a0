"""The generated package's own tests pass on CPU: reference, lossless round, kernels (interpreter + sm_90)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from sgl_scan.codegen.ddtree.generate import generate_ddtree
from sgl_scan.codegen.ddtree.plan import plan_ddtree
from sgl_scan.codegen.ddtree.render import render_ddtree
from sgl_scan.codegen.ddtree.validate import validate_output
from sgl_scan.codegen.write import write_tree

pytestmark = [pytest.mark.slow, pytest.mark.kernels]


def test_generated_tests_pass(release_0_5_11, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    tree, analysis = release_0_5_11
    gen = generate_ddtree(analysis, tree, package="ddtree_gen", budget=40, topk=5)
    out = write_tree(gen.files, tmp_path / "ddtree_gen", force=False, protected=tree)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=out, capture_output=True, text=True, env=env, timeout=1200,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "51 passed, 1 skipped" in result.stdout  # skipped: 0.5.11 has no per-model override provider of the 0.5.20+ form


def test_generated_worker_tests_pass_for_the_v2_worker(release_0_5_23, tmp_path):
    """0.5.23's worker (spec v2): decode, commit, the routes to the release's step and the refusals."""
    pytest.importorskip("torch")
    tree, analysis = release_0_5_23
    gen = generate_ddtree(analysis, tree, package="ddtree_gen", budget=40, topk=5)
    out = write_tree(gen.files, tmp_path / "ddtree_gen", force=False, protected=tree)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_worker.py"],
        cwd=out, capture_output=True, text=True, env=env, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "47 passed" in result.stdout


def test_a_release_without_the_verify_glue_gets_a_worker_that_refuses_to_construct(release_0_5_23, tmp_path):
    pytest.importorskip("torch")
    tree, analysis = release_0_5_23
    plan = plan_ddtree(analysis, budget=16, topk=4)
    lacking = "sglang.srt.speculative.dflash_info.DFlashVerifyInput (x.py:1) has no field(s) custom_mask"
    plan = dataclasses.replace(plan, verify=dataclasses.replace(plan.verify, missing=(lacking,)))
    files = render_ddtree(plan, "ddtree_gen", None, "sgl-scan gen ddtree")
    validate_output(files, plan, analysis, tree, None)
    worker = files["worker.py"]
    assert repr(lacking) in worker and "import DFlashVerifyInput" not in worker
    out = write_tree(files, tmp_path / "ddtree_gen", force=False, protected=tree)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_worker.py"],
        cwd=out, capture_output=True, text=True, env=env, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout  # test_constructor_refuses_naming_what_is_missing
