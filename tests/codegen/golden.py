"""Golden copies of generated files: compare, or rewrite them when SGLSCAN_UPDATE_GOLDEN=1."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Mapping

import pytest

GOLDEN_DIR = Path(__file__).parent / "golden"
REFRESH = "SGLSCAN_UPDATE_GOLDEN=1 python3 -m pytest tests/codegen/test_golden.py"


def check_tree(version: str, files: Mapping[str, str]) -> None:
    """Every generated file equals `golden/<version>/<path>`, and no golden file is left over."""
    root = GOLDEN_DIR / version
    if "1" in (os.environ.get("SGLSCAN_UPDATE_GOLDEN"), os.environ.get("SGL_SCAN_UPDATE_GOLDEN")):
        for old in sorted(root.rglob("*"), reverse=True) if root.exists() else ():
            old.unlink() if old.is_file() else old.rmdir()
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        return
    if not root.exists():
        pytest.fail(f"golden folder {root} is missing; create it with:\n    {REFRESH}", pytrace=False)
    expected_names = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    problems = []
    if expected_names != set(files):
        problems.append(f"files differ: missing {sorted(expected_names - set(files))}, new {sorted(set(files) - expected_names)}")
    for rel in sorted(set(files) & expected_names):
        expected = (root / rel).read_text(encoding="utf-8")
        if files[rel] != expected:
            diff = list(difflib.unified_diff(expected.splitlines(True), files[rel].splitlines(True), f"golden/{version}/{rel}", "generated", n=2))
            problems.append("".join(diff[:60]))
    if problems:
        pytest.fail("\n".join(problems) + f"\nIf the change is intended, refresh the golden files with:\n    {REFRESH}", pytrace=False)
