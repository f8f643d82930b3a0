"""`sgl-scan gen ddtree` wall time, validation included (the kernel tests are not part of the command)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from bench.analysis_bench import env_for
from bench.measure import Stats, repeat, run_checked


def gen_command(tree: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "sgl_scan", "gen", "ddtree", "--path", str(tree / "sglang"), "--out", str(out)]


def measure_gen(tree: Path, work: Path, runs: int) -> tuple[Stats, Stats]:
    """(warm, cold): warm reuses a `$SGLSCAN_HOME` that one untimed run filled; cold starts empty."""
    out = work / "ddtree_out"
    warm_home, cold_home = work / "home-gen-warm", work / "home-gen-cold"

    def clean(i: int, home: Path | None = None) -> None:
        shutil.rmtree(out, ignore_errors=True)
        if home is not None:
            shutil.rmtree(home, ignore_errors=True)

    def once(home: Path):
        return lambda i: run_checked(gen_command(tree, out), env=env_for(home))

    cold = repeat("sgl-scan gen ddtree, cold cache", runs, once(cold_home), before=lambda i: clean(i, cold_home))
    try:  # one untimed run fills the warm cache
        clean(0, warm_home)
        run_checked(gen_command(tree, out), env=env_for(warm_home))
    except Exception as exc:
        return Stats("sgl-scan gen ddtree, warm cache", reason=f"failed: {str(exc).splitlines()[0][:300]}"), cold
    warm = repeat("sgl-scan gen ddtree, warm cache", runs, once(warm_home), before=clean)
    return warm, cold
