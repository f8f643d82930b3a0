"""The floor of any analysis that reads a scope's files with Python's `ast`: start Python, read every
file, `ast.parse` it, one process per core (fork, biggest files first). Nothing else: no snapshot, no
facts, no extractors, no cache, no report.

    python bench/parse_floor.py LIST     # LIST: a file naming one source file per line

`bench/analysis_bench.py` times it beside the cold scans, round by round: a cold scan that parses
every file of its scope costs at least this, so a target below this floor cannot be met by making
sgl-scan's own work cheaper, only by parsing fewer files (or fewer bytes of them).
"""

from __future__ import annotations

import ast
import gc
import os
import sys


def _parse(path: str) -> int:
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        ast.parse(data)
    except (SyntaxError, ValueError):
        pass
    return len(data)


def main(listing: str) -> int:
    with open(listing, encoding="utf-8") as handle:
        paths = [line.rstrip("\n") for line in handle if line.strip()]
    paths.sort(key=lambda p: -os.path.getsize(p))
    gc.disable()  # sgl-scan parses with the collector paused too
    workers = min(os.cpu_count() or 1, len(paths)) or 1
    if workers == 1:
        total = sum(map(_parse, paths))
    else:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(workers) as pool:
            total = sum(pool.imap_unordered(_parse, paths, chunksize=max(1, min(8, len(paths) // (workers * 16)))))
    return 0 if total >= 0 else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
