"""A small tmpfs for full-disk tests (needs root and mount rights; the test is skipped otherwise)."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest


@contextmanager
def small_tmpfs(parent: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of `size` (e.g. "400k", "1m") under `parent`; unmount it afterwards."""
    mount = parent / "small-disk"
    mount.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {result.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)
