"""Snapshot a local folder: an SGLang checkout, an installed package, or a snapshot copied by hand.

Every selected file is read and hashed on every pull, and a folder whose files, git state and
patch are those of a stored snapshot of the same folder and scope is not stored again: that
snapshot is returned, so a repeated scan copies nothing. Content decides, not mtimes: a same-size
edit whose mtime was restored (`cp -p`, `rsync -t`, `tar x`) is a new snapshot.

The package folder (the one holding `srt/`) is found at the folder itself, or under `sglang/`,
`python/sglang/` or `tree/sglang/`. Only regular files are read; a symlinked scope root (`srt/`,
`srt/speculative/`, ...) is followed unless it loops; other symlinks and unreadable or over-limit
files are recorded as skipped. When the folder is inside a git work tree, its commit,
branch, dirty state and `git diff HEAD` are recorded (gitpython).
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Mapping

from sgl_scan.errors import SnapshotError
from sgl_scan.snapshots import scope as scopes
from sgl_scan.snapshots.manifest import FileEntry, GitState, PullInfo, Snapshot, SkippedFile
from sgl_scan.snapshots.progress import Progress
from sgl_scan.snapshots.store import Store, content_key, recorded_git
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


def pull_local(params: Mapping, *, store: Store | None = None, progress: Progress | None = None) -> Snapshot:
    store = store or Store()
    scope = scopes.check_scope(params.get("scope"))
    limits = Limits.from_params(params)
    progress = progress or Progress("read")
    folder = Path(params["local_path"]).expanduser().absolute()
    package = find_package(folder)
    files, skipped = list_files(package)
    contents: dict[str, tuple[bytes, float] | OSError] = {}

    def load(rel: str) -> tuple[bytes, float] | OSError:
        """The bytes and mtime of one file, read once (the scope's byte search and the copy share them)."""
        if rel not in contents:
            try:
                with open(files[rel], "rb") as handle:
                    contents[rel] = (handle.read(), os.fstat(handle.fileno()).st_mtime)
            except OSError as exc:
                contents[rel] = exc
        return contents[rel]

    oversized: list[tuple[str, int]] = []

    def read(rel: str) -> bytes:
        """The bytes the scope's search reads: a file over --max-file-size (by stat) is never read."""
        try:
            size = files[rel].stat().st_size
        except OSError:
            return b""
        if size > limits.max_file_size:
            oversized.append((rel, size))
            return b""
        got = load(rel)
        return b"" if isinstance(got, OSError) else got[0]

    chosen = scopes.select_local(files, scope, read)
    skipped += [SkippedFile(rel, f"larger than --max-file-size ({human(n)}); not searched") for rel, n in sorted(oversized)]
    limits.check_totals(len(chosen), 0)  # --max-bytes is counted below, from what is read
    entries, data, total = [], {}, 0
    for number, rel in enumerate(chosen, 1):
        try:
            size = files[rel].stat().st_size
        except OSError as exc:
            raise SnapshotError(f"cannot read {files[rel]}: {exc.strerror or exc}") from exc
        if size > limits.max_file_size:
            skipped.append(SkippedFile(rel, f"larger than --max-file-size ({human(size)})"))
            continue
        got = load(rel)
        if isinstance(got, PermissionError):
            skipped.append(SkippedFile(rel, f"unreadable: {got.strerror}"))
            continue
        if isinstance(got, OSError):
            raise SnapshotError(f"cannot read {files[rel]}: {got.strerror or got}") from got
        body, mtime = got
        if len(body) > limits.max_file_size:  # grew since it was listed
            skipped.append(SkippedFile(rel, f"larger than --max-file-size ({human(len(body))})"))
            continue
        total += len(body)
        if total > limits.max_bytes:
            raise SnapshotError(f"the selected files hold more than --max-bytes {human(limits.max_bytes)}")
        path = "sglang/" + rel
        data[path] = (body, mtime)
        entries.append(FileEntry(path=path, size=len(body), sha256=hashlib.sha256(body).hexdigest(), mtime=mtime))
        progress.update(f"{number}/{len(chosen)} files")
    git, patch = git_state(package)
    source = {"path": str(folder)}
    key = content_key(source_kind="local", source=source, root=str(package), scope=scope,
                      git=recorded_git(git, patch), patch=patch, skipped=tuple(skipped), files=entries)
    same = store.find_same(key)
    if same is not None:  # every file hashed: the same bytes are stored already (whatever the mtimes say)
        log.info("%s holds what snapshot %s holds; using it", folder, same.id)
        progress.done()
        return replace(same, pulled=PullInfo(reused=True, unchanged=len(same.manifest.files)))
    with store.stage() as stage:
        for path, (body, mtime) in data.items():
            stage.write_later(path, body, mtime=mtime)
        progress.done()
        return stage.commit(source_kind="local", source=source, root=str(package), scope=scope,
                            git=git, patch=patch, skipped=tuple(skipped))
