"""Where sgl-scan keeps its data: `$SGL_SCAN_HOME`, default `~/.cache/sgl-scan`."""

from __future__ import annotations

import os
from pathlib import Path


def sgl_scan_home() -> Path:
    """The root folder for snapshots, caches and downloads (not created here)."""
    env = os.environ.get("SGL_SCAN_HOME")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "sgl-scan"


def snapshots_dir() -> Path:
    return sgl_scan_home() / "snapshots"


def facts_cache_dir() -> Path:
    return sgl_scan_home() / "facts"


def downloads_dir() -> Path:
    return sgl_scan_home() / "downloads"
