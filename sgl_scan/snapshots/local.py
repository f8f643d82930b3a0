"""Snapshot a local folder: an SGLang checkout, an installed package, or a snapshot copied by hand.

A folder that has not changed since its newest snapshot (same files, sizes, mtimes, git state)
is not stored again: that snapshot is returned, so a repeated scan costs no copying.

The package folder (the one holding `srt/`) is found at the folder itself, or under `sglang/`,
`python/sglang/` or `tree/sglang/`. Only regular files are read; a symlinked scope root (`srt/`,
`srt/speculative/`, ...) is followed unless it loops; other symlinks and unreadable or over-limit
files are recorded as skipped. When the folder is inside a git work tree, its commit,
branch, dirty state and `git diff HEAD` are recorded (gitpython).
"""

from __future__ import annotations

import logging
import os
from datetime import datetime
from pathlib import Path
from typing import Mapping

from sgl_scan.errors import SnapshotError
from sgl_scan.snapshots import scope as scopes
from sgl_scan.snapshots.manifest import GitState, Snapshot, SkippedFile
from sgl_scan.snapshots.progress import Progress
from sgl_scan.snapshots.store import PATCH_FILE, Store
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


def _loops(link: Path, package: Path) -> bool:
    """Whether following `link` would lead back to (or above) the package: a loop."""
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return True
    home = package.resolve()
    return target == home or target in home.parents


def list_files(package: Path) -> tuple[dict[str, Path], list[SkippedFile]]:
    """Regular `*.py` files under `srt/` plus the version files, by package-relative path.

    A scope root (`srt/`, or a folder a scope names, `scopes.SCOPE_ROOTS`) that is a symlink to a
    folder is followed, unless it leads back into the package (a loop); every other symlink is
    recorded as skipped, never silently dropped."""
    files: dict[str, Path] = {}
    skipped: list[SkippedFile] = []
    for name in scopes.VERSION_FILES:
        path = package / name
        if path.is_file() and not path.is_symlink():
            files[name] = path

    def unreadable(exc: OSError) -> None:
        skipped.append(SkippedFile(os.path.relpath(exc.filename, package).replace(os.sep, "/"), f"unreadable folder: {exc.strerror}"))

    tops = ["srt"]
    while tops:
        top = tops.pop(0)
        if os.path.islink(package / top) and _loops(package / top, package):
            skipped.append(SkippedFile(top, "symlink to a folder holding the package (a loop), not followed"))
            continue
        for dirpath, dirnames, filenames in os.walk(package / top, onerror=unreadable):
            kept = []
            for d in sorted(dirnames):
                if d == "__pycache__":
                    continue
                full = os.path.join(dirpath, d)
                if os.path.islink(full):
                    rel = os.path.relpath(full, package).replace(os.sep, "/")
                    rel = scopes.utf8_name(rel) or rel
                    if rel in scopes.SCOPE_ROOTS:
                        tops.append(rel)  # walked on its own, as a scope root
                    else:
                        skipped.append(SkippedFile(rel, "symlink, not followed"))
                    continue
                kept.append(d)
            dirnames[:] = kept
            for filename in filenames:
                full = os.path.join(dirpath, filename)
                rel = os.path.relpath(full, package).replace(os.sep, "/")
                if not filename.endswith(".py"):
                    if os.path.islink(full) and not os.path.exists(full):
                        skipped.append(SkippedFile(scopes.utf8_name(rel) or rel, "symlink, not followed"))
                    continue
                shown = scopes.utf8_name(rel)
                if shown is not None:
                    skipped.append(SkippedFile(shown, scopes.NOT_UTF8))
                    continue
                if os.path.islink(full) or not os.path.isfile(full):
                    skipped.append(SkippedFile(rel, "not a regular file"))
                    continue
                files[rel] = Path(full)
    return files, sorted(skipped, key=lambda s: s.path)


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


REUSE_LOOKBACK = 16  # newest local snapshots compared with the folder before storing a new one
RACY_SECONDS = 2.0  # a file modified this close to a snapshot's creation may have changed unseen


def unchanged_snapshot(store: Store, *, folder: Path, package: Path, scope: str, chosen: list[str],
                       files: Mapping[str, Path], git: GitState | None, patch: str | None,
                       skipped: list[SkippedFile], limits: Limits) -> Snapshot | None:
    """The newest stored snapshot of `folder` that still matches it file for file, or None.

    It matches when it was read from the same folder and package with the same scope, git
    commit/branch/dirty state and local patch, skipped the same files, and holds exactly `chosen`,
    each with the size and mtime the folder has now, and modified at least `RACY_SECONDS` before
    the snapshot was made (a same-second edit keeps its mtime), and its stored files still match
    their sha256. Then a re-scan stores nothing new.
    """
    stats = {}
    total = 0
    for rel in chosen:
        try:
            st = os.stat(files[rel])
        except OSError:
            return None
        total += st.st_size
        if st.st_size > limits.max_file_size or total > limits.max_bytes:
            return None  # the normal path reports it
        stats["sglang/" + rel] = (st.st_size, st.st_mtime)
    same_source = []
    for snap_id in reversed([i for i in store.ids() if "-local-" in i][-REUSE_LOOKBACK:]):
        if same_source and snap_id[:15] < same_source[0].id[:15]:
            break  # an older second than a match: not newer (ids start with the creation second)
        try:
            snapshot = store.open(snap_id, verify=False)
        except SnapshotError:
            continue
        m = snapshot.manifest
        if m.source_kind == "local" and m.source.get("path") == str(folder) and m.root == str(package) and m.scope == scope:
            same_source.append(snapshot)
    if not same_source:
        return None
    snapshot = max(same_source, key=lambda snap: (snap.manifest.created, snap.id))  # ids of one second sort at random
    m = snapshot.manifest
    if not _same_git(snapshot, git, patch) or tuple(skipped) != m.skipped or len(m.files) != len(stats):
        return None
    try:
        created = datetime.fromisoformat(m.created).timestamp()
    except ValueError:
        return None
    for entry in m.files:
        now = stats.get(entry.path)
        if now is None or now != (entry.size, entry.mtime) or entry.mtime is None or created - entry.mtime < RACY_SECONDS:
            return None
    try:
        store.verify(snapshot)  # every file against its sha256: a damaged snapshot is never reused
    except SnapshotError:
        return None
    return snapshot


def _same_git(snapshot: Snapshot, git: GitState | None, patch: str | None) -> bool:
    old = snapshot.manifest.git
    if (old is None) != (git is None):
        return False
    if old is not None and git is not None and (old.commit, old.branch, old.dirty) != (git.commit, git.branch, git.dirty):
        return False
    stored = None
    if old is not None and old.patch:
        try:
            stored = (snapshot.folder / PATCH_FILE).read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            return False
    return (stored or None) == (patch or None)


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
    unchanged = unchanged_snapshot(store, folder=folder, package=package, scope=scope, chosen=chosen, files=files,
                                   git=git, patch=patch, skipped=skipped, limits=limits)
    if unchanged is not None:
        log.info("%s is unchanged since snapshot %s; using it", folder, unchanged.id)
        progress.done()
        return unchanged
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
