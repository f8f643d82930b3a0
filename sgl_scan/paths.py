"""Where sgl-scan keeps its data: `$SGLSCAN_HOME`, default `~/.cache/sgl-scan`.

sgl-scan's environment variables start with `SGLSCAN_`. The earlier names (`SGL_SCAN_*`) lie in
SGLang's own namespace (SGLang 0.5.23 warns about every `SGL_*` variable it does not know, on every
start), so they are still read, with a one-line notice, when the new name is not set.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

PREFIX = "SGLSCAN_"
OLD_PREFIX = "SGL_SCAN_"

log = logging.getLogger(__name__)
_noticed: set[str] = set()


def env(name: str) -> str | None:
    """`$SGLSCAN_<name>`, else the old `$SGL_SCAN_<name>` (said once per process); None when unset or empty."""
    value = os.environ.get(PREFIX + name)
    if value:
        return value
    value = os.environ.get(OLD_PREFIX + name)
    if not value:
        return None
    if name not in _noticed:
        _noticed.add(name)
        log.warning(
            "%s%s is read for now; rename it to %s%s (SGLang claims SGL_* variables)", OLD_PREFIX, name, PREFIX, name
        )
    return value


def sgl_scan_home() -> Path:
    """The root folder for snapshots, caches and downloads (not created here)."""
    home = env("HOME")
    if home:
        return Path(home).expanduser()
    return Path.home() / ".cache" / "sgl-scan"


def snapshots_dir() -> Path:
    return sgl_scan_home() / "snapshots"


def facts_cache_dir() -> Path:
    return sgl_scan_home() / "facts"


def downloads_dir() -> Path:
    return sgl_scan_home() / "downloads"
