"""The REAL sglang package, importable on CPU in a subprocess, for the codegen real-package tests.

`real_sglang_site("0.5.23")` builds (once, with `scripts/real_sglang_env.sh`) and returns a folder
holding the real `sglang==V` wheel installed with --no-deps plus the small packages importing its
server arguments and speculative workers needs. It is never put on this process's path (sglang
being importable changes other tests); `run_python` runs code in a subprocess with the suite's own
python (its CPU torch) and `PYTHONPATH=<extra>:<site>:<stand-ins>` (torchvision and sgl_kernel; see real_sglang/stand_ins/README.md).
When the folder cannot be built (no package index, no disk), the calling test is skipped with the
reason.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.releases import cache_root

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "real_sglang_env.sh"
STAND_IN = Path(__file__).with_name("real_sglang") / "stand_ins"
BUILD_TIMEOUT_S = 1800


def real_sglang_site(version: str) -> Path:
    """The site folder. The script runs every time: it returns at once when the site is complete and current."""
    dest = cache_root() / "real-sglang" / version
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = {**os.environ, "PYTHON": sys.executable, "SGLSCAN_TEST_CACHE": str(cache_root())}
        try:
            built = subprocess.run(["bash", str(SCRIPT), version], capture_output=True, text=True, env=env, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.skip(f"real sglang=={version} environment: {SCRIPT.name} ran past {BUILD_TIMEOUT_S} s")
        if built.returncode != 0:
            last = (built.stderr.strip().splitlines() or ["(no output)"])[-1]
            pytest.skip(f"real sglang=={version} environment could not be built by {SCRIPT.name}: {last}")
    return Path(built.stdout.strip().splitlines()[-1])


def run_python(site: Path, code: str, *, extra_path: tuple[Path, ...] = (), cwd: Path | None = None, timeout: int = 600,
               env_extra: dict[str, str] | None = None) -> dict:
    """Run `code` with the real sglang importable; it prints one JSON object last, which is returned.
    `env_extra` adds variables (TRITON_INTERPRET=1 for the real-kernel tests)."""
    path = os.pathsep.join(str(p) for p in (*extra_path, site, STAND_IN))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRITON_INTERPRET")}
    env.pop("SGLANG_DDTREE_BUDGET", None)
    env.update(PYTHONPATH=path, CUDA_VISIBLE_DEVICES="", **(env_extra or {}))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise AssertionError(f"real-sglang subprocess failed (rc {result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}")
    return json.loads(lines[-1])
