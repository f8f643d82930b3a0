"""Write generated files into an output folder atomically (temp folder + rename)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, Mapping, Union

from sgl_scan.errors import CodegenError, OutputFolderError


Protected = Union[Path, Iterable[Path]]


def check_destination(out: Path, *, force: bool, protected: Protected) -> None:
    """Refuse a folder inside (or containing) a protected one (the snapshot, the store), and an
    existing non-empty folder without force."""
    target = out.expanduser().resolve()
    for folder in [protected] if isinstance(protected, Path) else protected:
        guard = folder.expanduser().resolve()
        if target == guard or guard in target.parents or target in guard.parents:
            raise OutputFolderError(f"refusing to write into {out}: it overlaps the snapshot at {folder}")
    if target.exists() and not target.is_dir():
        raise OutputFolderError(f"{out} exists and is not a folder")
    if target.exists() and any(target.iterdir()) and not force:
        raise OutputFolderError(f"{out} exists and is not empty; pass --force to replace it")


def write_tree(files: Mapping[str, str], out: Path, *, force: bool, protected: Protected) -> Path:
    """Write `files` (relative path -> text) as the new content of `out`; nothing changes on failure."""
    check_destination(out, force=force, protected=protected)
    target = out.expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for rel, text in sorted(files.items()):
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
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
