"""Write generated files into an output folder atomically (temp folder + rename).

An existing `--out` is replaced only when sgl-scan wrote it: the folder carries a marker file
(`MARKER`) listing the files `gen` wrote, and holds nothing else (but Python's and pytest's caches,
which running the generated tests leaves behind). A folder that contains or sits inside the source
tree, the snapshot or the store, or that holds a git repository, is never written to.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, Mapping, Union

from sgl_scan.errors import CodegenError, OutputFolderError

MARKER = ".sgl-scan-generated"
MARKER_KIND = "sgl-scan gen"
# What running the generated package's tests leaves in its folder; replaced along with it.
_BYPRODUCT_DIRS = frozenset({"__pycache__", ".pytest_cache"})

Protected = Union[Path, Iterable[Path]]


def _as_list(protected: Protected) -> list[Path]:
    return [protected] if isinstance(protected, Path) else list(protected)


def _marker_files(target: Path) -> set[str] | None:
    """The relative paths the marker says gen wrote, or None when there is no valid marker."""
    try:
        data = json.loads((target / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("generator") != MARKER_KIND or not isinstance(data.get("files"), list):
        return None
    return {f for f in data["files"] if isinstance(f, str)}


def _foreign_entry(target: Path, written: set[str]) -> str | None:
    """The first entry under `target` that gen did not write (a relative path), or None."""
    for dirpath, dirnames, filenames in os.walk(target, followlinks=False):
        base = Path(dirpath)
        for name in sorted(dirnames):
            if (base / name).is_symlink():
                return (base / name).relative_to(target).as_posix()
        dirnames[:] = sorted(d for d in dirnames if d not in _BYPRODUCT_DIRS)
        for name in sorted(filenames):
            rel = (base / name).relative_to(target).as_posix()
            if rel != MARKER and rel not in written:
                return rel
    return None


def check_destination(out: Path, *, force: bool, protected: Protected) -> None:
    """Refuse, in one line, an `--out` that overlaps a protected folder (the source tree, the
    snapshot, the store), holds a git repository, or is not empty — unless `force` and the folder
    holds only what sgl-scan generated there before."""
    target = out.expanduser().resolve()
    for folder in _as_list(protected):
        guard = folder.expanduser().resolve()
        if target == guard or guard in target.parents:
            raise OutputFolderError(f"refusing --out {out}: it is inside {folder} (the source tree, snapshot or store)")
        if target in guard.parents:
            raise OutputFolderError(f"refusing --out {out}: it contains {folder} (the source tree, snapshot or store)")
    if target.exists() and not target.is_dir():
        raise OutputFolderError(f"refusing --out {out}: it exists and is not a folder")
    if not target.exists() or not any(target.iterdir()):
        return
    top = target / ".git"
    if top.exists() or top.is_symlink():
        raise OutputFolderError(f"refusing --out {out}: it holds a git repository ({top})")
    written = _marker_files(target)  # checked before any walk: a big folder of the user's is refused at once
    if written is None:
        raise OutputFolderError(
            f"refusing --out {out}: it is not empty and sgl-scan did not generate it (no {MARKER}); choose a new folder"
        )
    repo = next(target.rglob(".git"), None)
    if repo is not None:
        raise OutputFolderError(f"refusing --out {out}: it holds a git repository ({repo})")
    foreign = _foreign_entry(target, written)
    if foreign is not None:
        raise OutputFolderError(
            f"refusing --out {out}: it holds {foreign}, which sgl-scan did not write; move it away or choose "
            "a new folder"
        )
    if not force:
        raise OutputFolderError(f"{out} exists and is not empty; pass --force to replace it")


def write_tree(files: Mapping[str, str], out: Path, *, force: bool, protected: Protected) -> Path:
    """Write `files` (relative path -> text) and the marker as the new content of `out`; nothing
    changes on failure."""
    if MARKER in files:
        raise CodegenError(f"a generated file may not be named {MARKER}")
    check_destination(out, force=force, protected=protected)
    target = out.expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for rel, text in sorted(files.items()):
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        marker = {"generator": MARKER_KIND, "files": sorted(files)}
        (staging / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
        os.chmod(staging, 0o755)
        if target.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            os.rename(target, retired / target.name)
            os.rename(staging, target)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.rename(staging, target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise CodegenError(f"cannot write {out}: {exc}") from exc
    return target
