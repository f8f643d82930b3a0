"""The generated package's own tests pass on CPU: reference, lossless round, kernels (interpreter + sm_90)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sgl_scan.codegen.ddtree.generate import generate_ddtree
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
    assert "12 passed" in result.stdout
