"""Golden files for reporter output: compare, or rewrite them when SGLSCAN_UPDATE_GOLDEN=1."""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

import pytest

from sgl_scan import __version__

GOLDEN_DIR = Path(__file__).parent / "golden"
REFRESH = "SGLSCAN_UPDATE_GOLDEN=1 python3 -m pytest tests/reports"


def redact(text: str, *, snapshot_ids: tuple[str, ...] = (), created: tuple[str, ...] = ()) -> str:
    """Replace the volatile fields (tool version, creation times, snapshot ids) with placeholders."""
    for sid in sorted(snapshot_ids, key=len, reverse=True):
        text = text.replace(sid, "<SNAPSHOT-ID>")
    for stamp in created:
        text = text.replace(stamp, "<CREATED>")
    text = re.sub(r'("version": |"semanticVersion": |sgl-scan |"sgl-scan )"?' + re.escape(__version__),
                  lambda m: m.group(0).replace(__version__, "<VERSION>"), text)
    return text


def check_golden(name: str, actual: str, golden_dir: Path = GOLDEN_DIR) -> None:
    path = golden_dir / name
    if "1" in (os.environ.get("SGLSCAN_UPDATE_GOLDEN"), os.environ.get("SGL_SCAN_UPDATE_GOLDEN")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"golden file {path} is missing; create it with:\n    {REFRESH}", pytrace=False)
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(True), actual.splitlines(True), f"golden/{name}", "actual", n=2))
        lines = diff.splitlines(True)
        shown = "".join(lines[:80]) + (f"... ({len(lines) - 80} more diff lines)\n" if len(lines) > 80 else "")
        pytest.fail(
            f"{name} differs from its golden file.\n{shown}\n"
            f"If the change is intended, refresh the golden files with:\n    {REFRESH}",
            pytrace=False,
        )
