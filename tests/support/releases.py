"""Real SGLang releases from the package index, downloaded once and cached between test runs.

`release_tree("0.5.23")` returns a folder holding `sglang/srt/...` exactly as the wheel ships it
(Python files only). The cache lives in `$SGLSCAN_TEST_CACHE` (default `~/.cache/sgl-scan-tests`)
and is safe to fill from several pytest-xdist workers at once.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import subprocess
import sys
import zipfile
from contextlib import contextmanager
from pathlib import Path



TREES_LAYOUT = "trees-v2"  # bump when the extracted file set changes (v2: `sglang/_version.py` too)


def cache_root() -> Path:
    root = Path(os.environ.get("SGLSCAN_TEST_CACHE") or os.environ.get("SGL_SCAN_TEST_CACHE") or Path.home() / ".cache" / "sgl-scan-tests")
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def _locked(path: Path):
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _fail(message: str) -> None:
    """A test failure under pytest; a plain error elsewhere (bench/run.py runs without pytest)."""
    try:
        import pytest
    except ImportError:
        raise RuntimeError(message) from None
    pytest.fail(message)


def release_wheel(version: str) -> Path:
    """The wheel file of `sglang==version`, downloaded with `pip download --no-deps` if missing."""
    wheels = cache_root() / "wheels"
    wheels.mkdir(exist_ok=True)
    with _locked(cache_root() / f".wheel-{version}.lock"):
        found = sorted(wheels.glob(f"sglang-{version}-*.whl"))
        for link in found:
            if not link.exists():  # a link whose target went away: download again
                link.unlink()
        found = [p for p in found if p.exists()]
        if found:
            return found[0]
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(wheels), f"sglang=={version}"]
        result = subprocess.run(cmd, capture_output=True, text=True)
        found = sorted(wheels.glob(f"sglang-{version}-*.whl"))
        if result.returncode != 0 or not found:
            _fail(f"could not download sglang=={version}: {result.stderr.strip()[-500:]}")
        return found[0]


def release_tree(version: str) -> Path:
    """A folder containing the `sglang/srt` Python files of release `version`."""
    target = cache_root() / TREES_LAYOUT / version
    with _locked(cache_root() / f".tree-{version}.lock"):
        if (target / ".complete").exists():
            return target
        wheel = release_wheel(version)
        staging = target.with_name(target.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if name.startswith("sglang/srt/") and name.endswith(".py"):
                    archive.extract(name, staging)
            for name in ("sglang/__init__.py", "sglang/version.py", "sglang/_version.py"):
                if name in archive.namelist():
                    archive.extract(name, staging)
        (staging / ".complete").write_text(version)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        return target


@functools.lru_cache(maxsize=None)
def analyse_release(version: str):
    """The `Analysis` of a release's default-scope files (as the snapshot layer selects them), once per
    session; facts come from the shared cache under `cache_root()`."""
    from sgl_scan.analyzer.pipeline import analyze_tree
    from sgl_scan.snapshots.scope import select_local

    tree = release_tree(version)
    package = tree / "sglang"
    relative = [p.relative_to(package).as_posix() for p in package.rglob("*.py")]
    paths = ["sglang/" + p for p in select_local(relative, "speculative", lambda p: (package / p).read_bytes())]
    return analyze_tree(tree, paths, snapshot_id=f"pypi-{version}", sglang_version=version,
                        cache_dir=cache_root() / "facts-cache", jobs=2, progress=None)


@functools.lru_cache(maxsize=None)
def analyse_release_full(version: str):
    """The `Analysis` of every Python file of a release's `sglang/srt` (`--scope full`), once per session."""
    from sgl_scan.analyzer.pipeline import analyze_tree

    tree = release_tree(version)
    package = tree / "sglang"
    paths = sorted("sglang/" + p.relative_to(package).as_posix() for p in package.rglob("*.py"))
    return analyze_tree(tree, paths, snapshot_id=f"pypi-{version}-full", sglang_version=version,
                        cache_dir=cache_root() / "facts-cache", jobs=2, progress=None)
