"""Registers DDTREE in every SGLang 0.5.23 process, through the release's own plugin entry point.

SGLang 0.5.23 loads every installed entry point of the group `sglang.srt.plugins`
(sglang/srt/plugins/__init__.py:29) with `load_plugins()`, which each process it starts calls before it
reads arguments or builds workers:
- sglang/srt/managers/scheduler.py:6323
- sglang/srt/managers/detokenizer_manager.py:552
- sglang/srt/managers/data_parallel_controller.py:960
- sglang/srt/entrypoints/engine.py:286
- sglang/srt/entrypoints/engine.py:1159

`python -m ddtree_sglang.hook install [SITE_DIR]` makes DDTREE such an entry point: it writes a
small distribution record (`ddtree_sglang_ddtree_plugin-0.dist-info` with `entry_points.txt`) and a
`ddtree_sglang_ddtree_plugin.pth` line naming this package's parent folder into SITE_DIR (default: this
interpreter's site-packages), so the launcher, the scheduler (one per TP rank), the detokenizer and
a DP controller, spawned or forked, all run `register()` with no sitecustomize.py and no hand work.
`python -m ddtree_sglang.hook uninstall [SITE_DIR]` removes both. Nothing else in SITE_DIR is touched.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

GROUP = 'sglang.srt.plugins'
ENTRY = "ddtree = ddtree_sglang.hook:plugin"
DIST = "ddtree_sglang_ddtree_plugin"
LOADERS = ('sglang/srt/managers/scheduler.py:6323', 'sglang/srt/managers/detokenizer_manager.py:552', 'sglang/srt/managers/data_parallel_controller.py:960', 'sglang/srt/entrypoints/engine.py:286', 'sglang/srt/entrypoints/engine.py:1159')  # where the release calls load_plugins()


def plugin() -> None:
    """The entry point SGLang's load_plugins() runs: register DDTREE (idempotent)."""
    from .register import register

    register()


def _site(site_dir: str | None) -> Path:
    return Path(site_dir) if site_dir else Path(sysconfig.get_paths()["purelib"])


def install(site_dir: str | None = None) -> list[Path]:
    """Write the entry point's distribution record and the path line into `site_dir`; returns what was written."""
    site = _site(site_dir)
    if not site.is_dir():
        raise SystemExit(f"{site} is not a folder")
    info = site / f"{DIST}-0.dist-info"
    info.mkdir(exist_ok=True)
    written = [info / "METADATA", info / "entry_points.txt", info / "top_level.txt"]
    written[0].write_text(f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 0\n", encoding="utf-8")
    written[1].write_text(f"[{GROUP}]\n{ENTRY}\n", encoding="utf-8")
    written[2].write_text("ddtree_sglang\n", encoding="utf-8")
    parent = Path(__file__).resolve().parent.parent
    if parent != site.resolve():
        line = site / f"{DIST}.pth"
        line.write_text(str(parent) + "\n", encoding="utf-8")  # a path line: imports nothing at start-up
        written.append(line)
    return written


def uninstall(site_dir: str | None = None) -> list[Path]:
    site = _site(site_dir)
    info = site / f"{DIST}-0.dist-info"
    removed = [p for p in (info / "METADATA", info / "entry_points.txt", info / "top_level.txt", site / f"{DIST}.pth") if p.exists()]
    for path in removed:
        path.unlink()
    if info.is_dir() and not any(info.iterdir()):
        info.rmdir()
    return removed


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("install", "uninstall") or len(argv) > 2:
        print("usage: python -m ddtree_sglang.hook install|uninstall [SITE_DIR]", file=sys.stderr)
        return 2
    done = (install if argv[0] == "install" else uninstall)(argv[1] if len(argv) > 1 else None)
    for path in done:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
