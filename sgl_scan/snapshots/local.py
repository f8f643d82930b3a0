"""Snapshot a local folder: an SGLang checkout, an installed package, or a snapshot copied by hand.

The package folder (the one holding `srt/`) is found at the folder itself, or under `sglang/`,
`python/sglang/` or `tree/sglang/`. Only regular files are read; symlinks and unreadable or
over-limit files are recorded as skipped. When the folder is inside a git work tree, its commit,
branch, dirty state and `git diff HEAD` are recorded (gitpython).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Mapping

from sgl_scan.errors import SnapshotError
from sgl_scan.snapshots import scope as scopes
from sgl_scan.snapshots.manifest import GitState, Snapshot, SkippedFile
from sgl_scan.snapshots.progress import Progress
from sgl_scan.snapshots.store import Store
from sgl_scan.snapshots.tarstream import Limits, human

log = logging.getLogger(__name__)

LAYOUTS = ("", "sglang", "python/sglang", "tree/sglang")


def find_package(folder: Path) -> Path:
    """The sglang package folder (with `srt/`) inside `folder`."""
    if not folder.is_dir():
        raise SnapshotError(f"no such folder: {folder}")
    for layout in LAYOUTS:
        candidate = folder / layout if layout else folder
        if (candidate / "srt").is_dir():
            return candidate
    raise SnapshotError(
        f"no SGLang package in {folder} (looked for srt/ in {', '.join(l or '.' for l in LAYOUTS)})"
    )


def list_files(package: Path) -> tuple[dict[str, Path], list[SkippedFile]]:
    """Regular `*.py` files under `srt/` plus the version files, by package-relative path."""
    files: dict[str, Path] = {}
    skipped: list[SkippedFile] = []
    for name in scopes.VERSION_FILES:
        path = package / name
        if path.is_file() and not path.is_symlink():
            files[name] = path
    for dirpath, dirnames, filenames in os.walk(package / "srt", onerror=lambda exc: skipped.append(
            SkippedFile(os.path.relpath(exc.filename, package), f"unreadable folder: {exc.strerror}"))):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for filename in filenames:
            if not filename.endswith(".py"):
                continue
            full = os.path.join(dirpath, filename)
            rel = os.path.relpath(full, package).replace(os.sep, "/")
            if os.path.islink(full) or not os.path.isfile(full):
                skipped.append(SkippedFile(rel, "not a regular file"))
                continue
            files[rel] = Path(full)
    return files, skipped


def git_state(folder: Path) -> tuple[GitState | None, str | None]:
    """Commit, branch, dirty flag and `git diff HEAD` of the work tree holding `folder`, if any."""
    probe = folder.resolve()
    if not any((p / ".git").exists() for p in (probe, *probe.parents)):
        return None, None
    try:
        import git  # gitpython; imported only when there is a repository to read

        repo = git.Repo(probe, search_parent_directories=True)
        commit = repo.head.commit.hexsha
        branch = None if repo.head.is_detached else repo.active_branch.name
        dirty = repo.is_dirty(untracked_files=False)
        patch = repo.git.diff("HEAD", "--no-color", "--no-ext-diff") if dirty else ""
    except Exception as exc:  # not a repository after all, no commits yet, git missing
        log.info("no git state for %s: %s", folder, type(exc).__name__)
        return None, None
    return GitState(commit=commit, branch=branch, dirty=dirty), (patch + "\n" if patch else None)


def pull_local(params: Mapping, *, store: Store | None = None, progress: Progress | None = None) -> Snapshot:
    store = store or Store()
    scope = scopes.check_scope(params.get("scope"))
    limits = Limits.from_params(params)
    progress = progress or Progress("read")
    folder = Path(params["local_path"]).expanduser().absolute()
    package = find_package(folder)
    files, skipped = list_files(package)

    def read(rel: str) -> bytes:
        try:
            return files[rel].read_bytes()
        except OSError:
            return b""

    chosen = scopes.select_local(files, scope, read)
    git, patch = git_state(package)
    total = 0
    with store.stage() as stage:
        for number, rel in enumerate(chosen, 1):
            path = files[rel]
            try:
                size = path.stat().st_size
                if size > limits.max_file_size:
                    skipped.append(SkippedFile(rel, f"larger than --max-file-size ({human(size)})"))
                    continue
                total += size
                if total > limits.max_bytes:
                    raise SnapshotError(f"the selected files hold more than --max-bytes {human(limits.max_bytes)}")
                with open(path, "rb") as handle:
                    stage.write("sglang/" + rel, handle, mtime=os.fstat(handle.fileno()).st_mtime)
            except PermissionError as exc:
                skipped.append(SkippedFile(rel, f"unreadable: {exc.strerror}"))
            progress.update(f"{number}/{len(chosen)} files")
        progress.done()
        return stage.commit(source_kind="local", source={"path": str(folder)}, root=str(package), scope=scope,
                            git=git, patch=patch, skipped=tuple(skipped))
