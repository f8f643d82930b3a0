"""The generated README's "assumed" list: every line names the test that shows it, and that test exists.

Lines checked on CPU name a real-package test of this suite; the rest name a check in tests/gpu/. A line
naming no test, or a test that is not there, fails (issue 14: the list shrinks to what only a GPU shows).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from sgl_scan.codegen.ddtree import checks

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("golden")


def _tests_in(path: str) -> set[str]:
    module = ast.parse((REPO / path).read_text())
    return {f"{path}::{node.name}" for node in module.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


@pytest.mark.parametrize("version", ["0.5.23", "0.5.11"])
def test_every_assumed_line_names_a_test_that_exists_split_by_where_it_runs(version):
    readme = (GOLDEN / version / "README.md").read_text()
    section = readme.split("## Assumed, and the test that shows each", 1)[1].split("\nRegenerate:", 1)[0]
    cpu_part, gpu_part = section.split("Only a GPU shows these", 1)
    existing = _tests_in("tests/codegen/test_real_sglang.py") | _tests_in("tests/gpu/test_ddtree_e2e.py")
    cpu = re.findall(r"^- .*: `([^`]+)`$", cpu_part, re.M)
    gpu = re.findall(r"^- .*: `([^`]+)`$", gpu_part, re.M)
    bullets = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(bullets) == len(cpu) + len(gpu) and gpu, bullets  # every line names its test
    assert all(checks.on_cpu(c) for c in cpu) and not any(checks.on_cpu(g) for g in gpu)
    assert set(cpu) | set(gpu) <= existing, sorted(set(cpu) | set(gpu) - existing)
    assert checks.KV_POOL in gpu  # the KV pool's free size after a run is a GPU check
