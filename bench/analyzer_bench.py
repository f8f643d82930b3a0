"""Analyzer speed on a real SGLang release: cold and warm `--scope full`, cold default scope.

Standalone: `python bench/analyzer_bench.py [--version 0.5.23] [--runs 3] [--jobs 2]`. Each
measurement runs `analyze_tree` in-process (rounds interleaved, each cold run with an empty cache),
and `grep -rn` of the d2t patterns over the same tree in the same rounds, so the printed ratios
survive a busy machine better than absolute seconds. Prints min/median/max wall seconds, CPU
seconds of this process and its workers, and the ratio of each median to grep's.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

GREP_PATTERN = r"d2t|t2d|hot_token_id|load_token_map"
TARGETS = {"full_cold": 10.0, "full_warm": 1.0, "default_cold": 2.0}  # issue 3, 2 cores


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), _cpu()
    fn()
    return time.perf_counter() - wall, _cpu() - cpu


def default_scope_paths(tree: Path) -> list[str]:
    from sgl_scan.analyzer.pipeline import discover
    from sgl_scan.snapshots.scope import select_local

    package = tree / "sglang"
    inside = [p[len("sglang/"):] for p in discover(tree) if p.startswith("sglang/")]
    return ["sglang/" + p for p in select_local(inside, "speculative", lambda p: (package / p).read_bytes())]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.5.23")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tree", type=Path, help="a folder holding sglang/srt (default: the cached release)")
    args = parser.parse_args(argv)

    from sgl_scan.analyzer.pipeline import analyze_tree

    if args.tree is None:
        from tests.support.releases import release_tree

        tree = release_tree(args.version)
    else:
        tree = args.tree
    spec_paths = default_scope_paths(tree)
    n_full = sum(1 for _ in (tree / "sglang" / "srt").rglob("*.py"))
    print(f"tree {tree}: {n_full} files under sglang/srt; default scope {len(spec_paths)} files; "
          f"{args.runs} runs, jobs={args.jobs}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")

    results: dict[str, list[tuple[float, float]]] = {k: [] for k in ("grep", "full_cold", "full_warm", "default_cold")}
    for _ in range(args.runs):
        grep = ["grep", "-rnE", GREP_PATTERN, str(tree / "sglang" / "srt")]
        results["grep"].append(_timed(lambda: subprocess.run(grep, stdout=subprocess.DEVNULL, check=False)))
        with tempfile.TemporaryDirectory(prefix="sgl-bench-") as tmp:
            cache = Path(tmp) / "facts"
            results["full_cold"].append(_timed(lambda: analyze_tree(tree, cache_dir=cache, jobs=args.jobs)))
            results["full_warm"].append(_timed(lambda: analyze_tree(tree, cache_dir=cache, jobs=args.jobs)))
            shutil.rmtree(cache)
            results["default_cold"].append(
                _timed(lambda: analyze_tree(tree, spec_paths, cache_dir=cache, jobs=args.jobs)))

    grep_median = statistics.median(w for w, _ in results["grep"])
    print(f"{'measurement':<14}{'min':>9}{'median':>9}{'max':>9}{'cpu med':>9}{'x grep':>9}{'target':>9}")
    for name, runs in results.items():
        walls = [w for w, _ in runs]
        median = statistics.median(walls)
        target = f"{TARGETS[name]:.1f}" if name in TARGETS else "-"
        print(f"{name:<14}{min(walls):>9.3f}{median:>9.3f}{max(walls):>9.3f}"
              f"{statistics.median(c for _, c in runs):>9.2f}{median / grep_median:>9.1f}{target:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
