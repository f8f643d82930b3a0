"""Snapshot a local folder: an SGLang checkout, an installed package, or a snapshot copied by hand.

Every selected file is hashed, and a folder whose files, git state and patch are those of a stored
snapshot of the same folder and scope is not stored again: that snapshot is returned, so a repeated
scan copies nothing. A file is read only when its stamp (`stamps.py`: size, mtime_ns, ctime_ns,
inode, device) is not the settled one recorded when it was last hashed (and its scope match found),
so content decides, not mtimes: a same-size edit whose mtime was restored (`cp -p`, `rsync -t`,
`tar x`) moves the ctime and is a new snapshot.

The package folder (the one holding `srt/`) is found at the folder itself, or under `sglang/`,
`python/sglang/` or `tree/sglang/`. Only regular files are read (`safeio`: opened without following
links or blocking, type checked on the descriptor, lying in the folders listed, read to the cap); a
symlinked scope root (`srt/`, `srt/speculative/`, ...) is followed unless it loops or leads outside
the folder named by --path (unless --follow-outside-links); other symlinks and unreadable or
over-limit files are recorded as skipped. When the folder is inside a git work tree, its commit,
branch, dirty state and `git diff HEAD` are recorded (gitpython).
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Callable, Mapping

from sgl_scan.errors import ConfigError, SnapshotError
from sgl_scan.snapshots import scope as scopes
from sgl_scan.snapshots.manifest import FileEntry, GitState, PullInfo, Snapshot, SkippedFile
from sgl_scan.snapshots.progress import Progress
from sgl_scan.snapshots.safeio import NotRegular, read_regular
from sgl_scan.snapshots.stamps import source_stamps
from sgl_scan.snapshots.store import Store, content_key, recorded_git
from sgl_scan.snapshots.tarstream import Limits, human

log = logging.getLogger(__name__)

LAYOUTS = ("", "sglang", "python/sglang", "tree/sglang")


def find_package(folder: Path) -> Path:
    """The sglang package folder (with `srt/`) inside `folder`."""
    if not folder.is_dir():
        raise ConfigError(f"no such folder: {folder}")  # a usage error (exit 2), as --path to a file is
    for layout in LAYOUTS:
        candidate = folder / layout if layout else folder
        if (candidate / "srt").is_dir():
            return candidate
    raise SnapshotError(
        f"no SGLang package in {folder} (looked for srt/ in {', '.join(layout or '.' for layout in LAYOUTS)})"
    )


def _loops(link: Path, package: Path) -> bool:
    """Whether following `link` would lead back to (or above) the package: a loop."""
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return True
    home = package.resolve()
    return target == home or target in home.parents


def list_files(
    package: Path, *, boundary: Path | None = None, follow_outside: bool = False, roots: list[str] | None = None
) -> tuple[dict[str, str], list[SkippedFile]]:
    """Regular `*.py` files under `srt/` plus the version files: package-relative path -> full path.

    A scope root (`srt/`, or a folder a scope names, `scopes.SCOPE_ROOTS`) that is a symlink to a
    folder is followed, unless it leads back into the package (a loop); every other symlink is
    recorded as skipped, never silently dropped. A scope root linking outside `boundary` (the folder
    the user named) is followed only with `follow_outside` (`--follow-outside-links`): a hostile tree
    must not bring the user's own files into a snapshot. `roots` (when given) gets the real paths of
    the folders read, so a read can check where the file it opened lies."""
    roots = [] if roots is None else roots
    roots.append(os.path.realpath(package))
    fence = os.path.realpath(boundary if boundary is not None else package)
    files: dict[str, str] = {}
    skipped: list[SkippedFile] = []
    for name in scopes.VERSION_FILES:
        path = package / name
        if path.is_file() and not path.is_symlink():
            files[name] = str(path)

    def unreadable(exc: OSError) -> None:
        skipped.append(
            SkippedFile(
                os.path.relpath(exc.filename, package).replace(os.sep, "/"), f"unreadable folder: {exc.strerror}"
            )
        )

    def listed(folder: str, prefix: str) -> list[tuple[str, str]]:
        """One folder, as `os.walk` reads it: its files in listing order, then its subfolders (returned,
        sorted, to be walked in turn). The entries' types come from the listing (d_type), so a regular
        file costs no system call."""
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as exc:
            unreadable(exc)
            return []
        subfolders = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                subfolders.append(entry)
                continue
            name = entry.name
            rel = prefix + name
            if not name.endswith(".py"):
                if entry.is_symlink() and not os.path.exists(entry.path):
                    skipped.append(SkippedFile(scopes.utf8_name(rel) or rel, "symlink, not followed"))
                continue
            shown = scopes.utf8_name(rel)
            if shown is not None:
                skipped.append(SkippedFile(shown, scopes.NOT_UTF8))
                continue
            if entry.is_symlink() or not entry.is_file():
                skipped.append(SkippedFile(rel, "not a regular file"))
                continue
            files[rel] = entry.path
        below = []
        for entry in sorted(subfolders, key=lambda e: e.name):
            if entry.name == "__pycache__":
                continue
            rel = prefix + entry.name
            if entry.is_symlink():
                rel = scopes.utf8_name(rel) or rel
                if rel in scopes.SCOPE_ROOTS:
                    tops.append(rel)  # walked on its own, as a scope root
                else:
                    skipped.append(SkippedFile(rel, "symlink, not followed"))
                continue
            below.append((entry.path, rel + "/"))
        return below

    tops = ["srt"]
    while tops:
        top = tops.pop(0)
        if os.path.islink(package / top) and _loops(package / top, package):
            skipped.append(SkippedFile(top, "symlink to a folder holding the package (a loop), not followed"))
            continue
        if os.path.islink(package / top):
            target = os.path.realpath(package / top)
            if not (target + "/").startswith(fence.rstrip("/") + "/") and not follow_outside:
                skipped.append(
                    SkippedFile(
                        top,
                        "symlink to a folder outside the scanned folder, not followed "
                        "(--follow-outside-links follows it)",
                    )
                )
                continue
            roots.append(target)
        stack = [(str(package / top), f"{top}/")]
        while stack:  # depth first, subfolders in name order: os.walk's order, without its recursion
            stack.extend(reversed(listed(*stack.pop())))
    return files, sorted(skipped, key=lambda s: s.path)


GIT_STATE_TIMEOUT = 120.0  # seconds for each git command of the git state (a checkout's diff takes seconds)


def _base_snapshot(store: Store, source: Mapping, root: str) -> Callable[[FileEntry], Snapshot | None] | None:
    """For an entry known by its stamp (unread), the newest stored snapshot of this very folder
    (source and package root) holding a copy of the same bytes that is known good: the stored file's
    own stamp is the one recorded when it last matched its sha256 (`Store.verify`), so a stored copy
    altered since, whatever its size, is never linked. Such a file is linked from there instead of
    read and written again; any other is taken from the blob store when its blob hashes right
    (`Stage.reuse_blob`), else read from the folder. None when no snapshot of it is stored."""
    wanted = dict(source)
    manifest = store.newest(lambda h: h.source_kind == "local" and h.source == wanted and h.root == root)
    if manifest is None:
        return None
    snapshot = Snapshot(manifest=manifest, folder=store.root / manifest.id)
    held = {entry.path: entry for entry in manifest.files}
    seen = store.verified_stamps(manifest.id)

    def holding(entry: FileEntry) -> Snapshot | None:
        stored = held.get(entry.path)
        if stored is None or (stored.sha256, stored.size) != (entry.sha256, entry.size):
            return None
        try:
            st = os.stat(os.path.join(snapshot.tree, entry.path))
        except OSError:
            return None
        return snapshot if seen.get(entry.path, st) == entry.sha256 else None

    return holding


def git_state(folder: Path) -> tuple[GitState | None, str | None]:
    """Commit, branch, dirty flag and `git diff HEAD` of the work tree holding `folder`, if any.

    Read through a private git folder (`safegit`): nothing the scanned repository's config names
    (fsmonitor, textconv, filters, hooks, pager, ...) can run."""
    from sgl_scan.snapshots import safegit

    located = safegit.locate(folder.resolve())
    if located is None or located.work_tree is None:
        return None, None
    try:
        with safegit.quarantined(located, timeout=GIT_STATE_TIMEOUT) as repo:
            commit = repo.commit_of("HEAD")
            if commit is None:  # no commits yet
                return None, None
            branch = repo.text("symbolic-ref", "--quiet", "--short", "HEAD", ok=(0, 1)).strip() or None
            staged = repo.run("diff", "--cached", "--quiet", *safegit.DIFF_SAFETY, ok=(0, 1)).returncode == 1
            dirty = staged or repo.run("diff", "--quiet", *safegit.DIFF_SAFETY, ok=(0, 1)).returncode == 1
            patch = repo.text("diff", *safegit.DIFF_SAFETY, commit).removesuffix("\n") if dirty else ""
    except (SnapshotError, OSError) as exc:  # an unreadable repository, git missing
        log.info("no git state for %s: %s", folder, exc)
        return None, None
    return GitState(commit=commit, branch=branch, dirty=dirty), (patch + "\n" if patch else None)


def pull_local(params: Mapping, *, store: Store | None = None, progress: Progress | None = None) -> Snapshot:
    store = store or Store()
    scope = scopes.check_scope(params.get("scope"))
    limits = Limits.from_params(params)
    progress = progress or Progress("read")
    folder = Path(params["local_path"]).expanduser().absolute()
    package = find_package(folder)
    roots: list[str] = []
    boundary = Path(params.get("link_boundary") or folder)  # `check`: the checkout's root
    files, skipped = list_files(
        package, boundary=boundary, follow_outside=bool(params.get("follow_outside_links")), roots=roots
    )
    inside = tuple(roots)
    stamps = source_stamps(store.root, package)
    stats: dict[str, os.stat_result | OSError] = {}
    learned: dict[
        str, dict
    ] = {}  # rel -> {"sha256", "match": (pattern, found)}: from the stamps, or from the bytes read now
    contents: dict[str, tuple[bytes, float] | OSError] = {}

    def stat(rel: str) -> os.stat_result | OSError:
        if rel not in stats:
            try:
                stats[rel] = os.lstat(files[rel])  # a link put in its place is refused when read
            except OSError as exc:
                stats[rel] = exc
        return stats[rel]

    def known(rel: str) -> dict:
        """What is known of the file's bytes without reading them (its stamp settled and unchanged)."""
        if rel not in learned:
            st = stat(rel)
            value = stamps.get(rel, st) if not isinstance(st, OSError) else None
            learned[rel] = dict(value) if isinstance(value, dict) else {}
        return learned[rel]

    refused: dict[str, str] = {}

    def load(rel: str) -> tuple[bytes, float] | OSError:
        """The bytes and mtime of one file, read once (the scope's byte search and the copy share them).

        Opened without following a link or blocking, checked to be the regular file listed (fstat on
        the descriptor, inode), read to at most --max-file-size + 1 bytes (`safeio`): a file swapped
        for a FIFO, a device or a link after the listing is refused, never waited on or followed."""
        if rel not in contents:
            try:
                body, st = read_regular(files[rel], limits.max_file_size, inside=inside)
                contents[rel] = (body, st.st_mtime)
                stats[rel] = st
                learned[rel] = {}
            except NotRegular as exc:
                contents[rel] = exc
                refused[rel] = f"{exc.strerror}; not read"
            except OSError as exc:
                contents[rel] = exc
        return contents[rel]

    def remember(rel: str, **facts) -> None:
        learned[rel].update(facts)
        st = stats.get(rel)
        if not isinstance(st, OSError) and st is not None:
            stamps.put(rel, st, dict(learned[rel]))

    oversized: list[tuple[str, int]] = []

    def mentions(rel: str, pattern: str) -> bool:
        """The scope's byte search: a file over --max-file-size (by stat) is never read."""
        st = stat(rel)
        if isinstance(st, OSError):
            return False
        if st.st_size > limits.max_file_size:
            oversized.append((rel, st.st_size))
            return False
        cached = known(rel).get("match") if pattern == scopes.SCOPE_PATTERN else None
        if isinstance(cached, tuple) and cached[0] == pattern:  # learned under this very pattern
            return cached[1]
        got = load(rel)
        if isinstance(got, OSError):
            return False
        found = scopes.matches(pattern, got[0])
        if pattern == scopes.SCOPE_PATTERN:
            remember(rel, match=(pattern, found))
        return found

    chosen = scopes.select(files, scope, mentions)
    skipped += [
        SkippedFile(rel, f"larger than --max-file-size ({human(n)}); not searched") for rel, n in sorted(oversized)
    ]
    limits.check_totals(len(chosen), 0)  # --max-bytes is counted below, from what is read
    entries, total = [], 0
    for number, rel in enumerate(chosen, 1):
        st = stat(rel)
        if isinstance(st, OSError):
            raise SnapshotError(f"cannot read {files[rel]}: {st.strerror or st}") from st
        if st.st_size > limits.max_file_size:
            skipped.append(SkippedFile(rel, f"larger than --max-file-size ({human(st.st_size)})"))
            continue
        sha = known(rel).get("sha256") if rel not in contents else None
        if sha is not None:  # unchanged since it was hashed: not read again
            size, mtime = st.st_size, st.st_mtime
        else:
            got = load(rel)
            if isinstance(got, PermissionError):
                skipped.append(SkippedFile(rel, f"unreadable: {got.strerror}"))
                continue
            if isinstance(got, NotRegular):
                continue  # recorded below
            if isinstance(got, OSError):
                raise SnapshotError(f"cannot read {files[rel]}: {got.strerror or got}") from got
            body, mtime = got
            if len(body) > limits.max_file_size:  # grew since it was listed
                skipped.append(SkippedFile(rel, f"larger than --max-file-size ({human(len(body))})"))
                continue
            size, sha = len(body), hashlib.sha256(body).hexdigest()
            if len(body) == st.st_size:  # st is stats[rel]
                remember(rel, sha256=sha)
        total += size
        if total > limits.max_bytes:
            raise SnapshotError(f"the selected files hold more than --max-bytes {human(limits.max_bytes)}")
        entries.append(FileEntry(path="sglang/" + rel, size=size, sha256=sha, mtime=mtime))
        progress.update(f"{number}/{len(chosen)} files")
    skipped += [SkippedFile(rel, reason) for rel, reason in sorted(refused.items())]
    stamps.keep_only(set(files))
    stamps.save()
    git, patch = git_state(package)
    source = {"path": str(folder)}
    key = content_key(
        source_kind="local",
        source=source,
        root=str(package),
        scope=scope,
        git=recorded_git(git, patch),
        patch=patch,
        skipped=tuple(skipped),
        files=entries,
    )
    same = store.find_same(key)
    if same is not None:  # every file hashed: the same bytes are stored already (whatever the mtimes say)
        log.info("%s holds what snapshot %s holds; using it", folder, same.id)
        progress.done()
        return replace(same, pulled=PullInfo(reused=True, unchanged=len(same.manifest.files)))
    base = _base_snapshot(store, source, str(package)) if len(contents) < len(entries) else None
    with store.stage() as stage:
        for entry in entries:
            rel = entry.path[len("sglang/") :]
            unread = rel not in contents  # known by its stamp: read only now, so check it is what was hashed
            holder = base(entry) if unread and base is not None else None
            if holder is not None:
                stage.reuse(holder, entry, mtime=entry.mtime)  # a hard link: neither read nor written
                continue
            if unread and stage.reuse_blob(entry, mtime=entry.mtime):  # the stored bytes, hashed now
                continue
            got = load(rel)
            if isinstance(got, OSError):
                raise SnapshotError(f"cannot read {files[rel]}: {got.strerror or got}") from got
            if unread and hashlib.sha256(got[0]).hexdigest() != entry.sha256:
                raise SnapshotError(f"{files[rel]} changed while it was being read; run again")
            stage.write_later(entry.path, got[0], mtime=got[1])
        progress.done()
        return stage.commit(
            source_kind="local",
            source=source,
            root=str(package),
            scope=scope,
            git=git,
            patch=patch,
            skipped=tuple(skipped),
        )
