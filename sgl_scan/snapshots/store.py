"""The snapshot store: `$SGLSCAN_HOME/snapshots/<id>/` with `manifest.json`, `tree/` and `git.patch`.

    store = Store()                      # or Store(Path(...)) for another root
    snap = store.open("latest")          # an id, a unique id prefix, or "latest"; hashes verified
    with store.stage() as stage:         # a pull writes into a private staging folder ...
        stage.write("sglang/srt/x.py", data)
        snap = stage.commit(source_kind="local", source={...}, root="...", scope="speculative")
                                         # ... and one rename makes it visible

Writes are atomic: nothing appears under its id until `commit` renames the finished staging folder
into place, and a failed or interrupted pull leaves no snapshot (stale staging folders from killed
processes are swept on the next pull). A file lock (`.lock`) serialises commits, removals and blob
collection, so several processes can pull into one store at once. Identical files share storage:
tree files are hard links into a content-addressed blob store (`.blobs/<sha256>`), read-only.
Every file's sha256 is in the manifest and checked by `open`; `manifest.sha256` guards the manifest.

Content reuse: each snapshot folder holds `content.key`, the digest of what it is (source identity,
root, scope, git state and patch, skipped files, every file's path, size and sha256; for SSH also the
remote mtimes, ctimes and inodes its incremental re-pulls compare). `commit` gives back the stored
snapshot with the same key (its files re-verified) instead of storing a copy, and so does `find_same`
for callers that can compute the key before copying anything.

Finding a source's newest snapshot (`newest`, the base of an incremental pull) reads each folder's
`source.json` (id, created, source kind, source, root and scope; a few hundred bytes), not every
manifest: the match is a hint confirmed from the hash-guarded manifest of the one snapshot chosen.
A Store object reads each hint once while its stats stay the same (a fleet's pulls share one).

`latest` is what `.latest` names: the snapshot most recently pulled, reused or scanned (callers record
it with `mark_latest`, written atomically under the lock); with no such pointer, or when it names a
removed snapshot, the most recently created one.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import threading
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator, Mapping, NamedTuple, Sequence, TYPE_CHECKING

from sgl_scan.errors import SnapshotError
from sgl_scan.paths import snapshots_dir
from sgl_scan.snapshots.manifest import FileEntry, GitState, Manifest, PullInfo, Snapshot, SkippedFile

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from sgl_scan.snapshots.scope import Readable
    from sgl_scan.snapshots.stamps import StampFile

log = logging.getLogger(__name__)

PATCH_FILE = "git.patch"
MANIFEST_FILE = "manifest.json"
MANIFEST_HASH_FILE = "manifest.sha256"
KEY_FILE = "content.key"
SOURCE_FILE = "source.json"  # a hint: the manifest's id, created, source kind, source, root and scope
LATEST_FILE = ".latest"
# how an SSH pull went (its base, what crossed the wire), not what it read: not part of a source's identity
VOLATILE_SOURCE_KEYS = frozenset({"base", "fetched", "reused", "found_by"})
MTIME_KINDS = frozenset({"ssh"})  # sources whose re-pulls compare stored stamps: the stamps are part of the content
CHUNK = 1 << 20
WRITERS = 4  # file creation is mostly waiting on the filesystem; threads overlap it
MAX_PENDING_FILES = 256
MAX_PENDING_BYTES = 64 << 20
_ID_RE = re.compile(r"^\d{8}T\d{6}-[a-z]+-[A-Za-z0-9._+]+-[0-9a-f]{6}$")
_VERSION_RE = re.compile(rb"""^__version__\s*=\s*(?:[A-Za-z_]\w*\s*=\s*)*["']([^"'\n]+)["']""", re.MULTILINE)


def read_version(data: bytes) -> str | None:
    """`__version__` from the bytes of `sglang/version.py` (read, never executed)."""
    match = _VERSION_RE.search(data)
    return match.group(1).decode("utf-8", "replace").strip() if match else None


def check_relpath(path: str) -> str:
    """A safe tree path: relative, POSIX, no `..`, no empty or dot parts."""
    if not path or path.startswith("/") or "\0" in path or "\\" in path:
        raise SnapshotError(f"unsafe path in snapshot: {path!r}")
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise SnapshotError(f"unsafe path in snapshot: {path!r}")
    return path


def source_identity(source: Mapping) -> dict:
    """The part of a manifest's `source` that says where the files came from."""
    return {key: value for key, value in source.items() if key not in VOLATILE_SOURCE_KEYS}


def content_key(
    *,
    source_kind: str,
    source: Mapping,
    root: str,
    scope: str,
    git: GitState | None,
    patch: str | None,
    skipped: tuple[SkippedFile, ...],
    files: tuple[FileEntry, ...] | list[FileEntry],
) -> str:
    """The digest of what a snapshot is: two snapshots with one key hold the same thing from the same place.

    `git` is as the manifest records it (a patch without a repository is `GitState(commit="", dirty=True)`),
    `patch` the text of `git.patch`.
    """
    with_mtime = source_kind in MTIME_KINDS
    data = {
        "kind": source_kind,
        "source": source_identity(source),
        "root": root,
        "scope": scope,
        "git": [git.commit, git.branch, git.dirty] if git else None,
        "patch": hashlib.sha256(patch.encode("utf-8", "surrogateescape")).hexdigest() if patch else None,
        "skipped": [[s.path, s.reason] for s in skipped],
        "files": sorted([f.path, f.size, f.sha256] + (_stamps(f) if with_mtime else []) for f in files),
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def _stamps(f: FileEntry) -> list:
    """A file's remote stamps as its content key counts them (ctime and inode only where recorded,
    so the keys of snapshots stored before they were are unchanged)."""
    if f.ctime is None and f.inode is None:
        return [f.mtime]
    return [f.mtime, f.ctime, f.inode]


def recorded_git(git: GitState | None, patch: str | None) -> GitState | None:
    """The git state a manifest records for `git` and a local `patch` (`commit` writes it this way)."""
    if patch:
        return replace(git or GitState(commit="", dirty=True), patch=PATCH_FILE)
    return git


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise


def _hash_file(path: str | Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def source_group(manifest: Manifest) -> str:
    """What `gc --keep N` counts snapshots per: source kind, identity, root and scope."""
    return json.dumps(
        [manifest.source_kind, source_identity(manifest.source), manifest.root, manifest.scope],
        sort_keys=True,
        default=str,
    )


class SourceHint(NamedTuple):
    """Where a stored snapshot came from, as its `source.json` (or, stored before those were kept,
    its manifest) says: enough to pick a source's newest snapshot without reading every manifest."""

    id: str
    created: str
    source_kind: str
    source: Mapping
    root: str
    scope: str

    @classmethod
    def of(cls, manifest: Manifest) -> "SourceHint":
        return cls(
            manifest.id, manifest.created, manifest.source_kind, dict(manifest.source), manifest.root, manifest.scope
        )


def _source_hint(raw: bytes, snap_id: str) -> SourceHint | None:
    """The hint a `source.json` holds, or None when it is not one (for this id)."""
    try:
        data = json.loads(raw)
        hint = SourceHint(*(data[name] for name in SourceHint._fields))
    except (ValueError, KeyError, TypeError):
        return None
    strings = (hint.id, hint.created, hint.source_kind, hint.root, hint.scope)
    if hint.id != snap_id or not all(isinstance(v, str) for v in strings) or not isinstance(hint.source, dict):
        return None
    return hint


class Collected(NamedTuple):
    """What `Store.gc` removed (or would remove)."""

    removed: tuple[Manifest, ...]
    kept: tuple[Manifest, ...]
    blobs: int
    blob_bytes: int


class Store:
    """Stored snapshots under one root folder (default `$SGLSCAN_HOME/snapshots`)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else snapshots_dir()
        self._hints: dict[str, tuple[tuple, SourceHint]] = {}  # by id: (the file's stats when read, its hint)
        self._hints_lock = threading.Lock()

    # -- reading ---------------------------------------------------------------------------------

    def ids(self) -> list[str]:
        try:
            with os.scandir(self.root) as entries:  # the folder's own types: no stat per snapshot
                return sorted(e.name for e in entries if not e.name.startswith(".") and e.is_dir())
        except (FileNotFoundError, NotADirectoryError):
            return []

    def list(self) -> list[Manifest]:
        """Manifests of every stored snapshot, oldest first (unreadable ones are skipped with a log line)."""
        manifests = []
        for snap_id in self.ids():
            try:
                manifests.append(self._read_manifest(self.root / snap_id))
            except SnapshotError as exc:
                log.warning("%s", exc)
        return sorted(manifests, key=lambda m: (m.created, m.id))

    def hints(self) -> Sequence[SourceHint]:
        """Where every stored snapshot came from, oldest first (`source.json`, else the manifest).

        Each hint is read once per Store while the file it came from keeps the stats (inode, size,
        mtime, ctime in ns) it had then: a rewrite moves the ctime, which no writer sets back. One
        lock: a fleet's pulls asking at once read each file once between them."""
        hints = []
        with self._hints_lock:
            for snap_id in self.ids():
                hint = self._hint(self.root / snap_id)
                if hint is not None:
                    hints.append(hint)
        return sorted(hints, key=lambda h: (h.created, h.id))

    def _hint(self, folder: Path) -> SourceHint | None:
        for name in (SOURCE_FILE, MANIFEST_FILE):  # a snapshot stored before hints were kept has none
            try:
                st = os.stat(folder / name)
            except OSError:
                continue
            stats = (name, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            known = self._hints.get(folder.name)
            if known is not None and known[0] == stats:
                return known[1]
            hint = None
            if name == SOURCE_FILE:
                try:
                    hint = _source_hint((folder / SOURCE_FILE).read_bytes(), folder.name)
                except OSError:
                    pass
                if hint is None:
                    continue  # not a hint: the manifest says
            else:
                try:
                    hint = SourceHint.of(self._read_manifest(folder))
                except SnapshotError as exc:
                    log.warning("%s", exc)
                    return None
            self._hints[folder.name] = (stats, hint)
            return hint
        return None

    def newest(self, matches: Callable[[SourceHint], bool]) -> Manifest | None:
        """The manifest of the newest snapshot whose source `matches` and whose manifest confirms
        its hint (one that does not is passed over), or None."""
        for hint in reversed(self.hints()):
            if matches(hint):
                manifest = self.confirmed(hint)
                if manifest is not None:
                    return manifest
        return None

    def confirmed(self, hint: SourceHint) -> Manifest | None:
        """The (hash-guarded) manifest of `hint`'s snapshot when it says what the hint says, else None."""
        try:
            manifest = self._read_manifest(self.root / hint.id)
        except SnapshotError as exc:
            log.warning("%s", exc)
            return None
        if SourceHint.of(manifest) == hint:
            return manifest
        log.warning("snapshot %s: its %s does not match its manifest; not used", hint.id, SOURCE_FILE)
        return None

    def latest_id(self) -> str | None:
        """The id `latest` names (the `.latest` pointer, else the newest created); None for an empty store."""
        try:
            pointed = (self.root / LATEST_FILE).read_text().strip()
        except (OSError, UnicodeDecodeError):
            pointed = ""
        if _ID_RE.match(pointed) and (self.root / pointed).is_dir():
            return pointed
        manifests = self.list()
        return manifests[-1].id if manifests else None

    def latest_since(self, snap_id: str) -> float | None:
        """When `snap_id` became `latest` (the pointer's mtime), or None when no pointer names it."""
        try:
            if (self.root / LATEST_FILE).read_text().strip() == snap_id:
                return (self.root / LATEST_FILE).stat().st_mtime
        except (OSError, UnicodeDecodeError):
            pass
        return None

    def latest(self, verify: bool = True) -> Snapshot:
        """The snapshot most recently pulled, reused or scanned; SnapshotError when the store is empty."""
        return self.open("latest", verify=verify)

    def mark_latest(self, snap_id: str) -> None:
        """Make `snap_id` what `latest` names (atomically, under the lock)."""
        try:
            if (self.root / LATEST_FILE).read_text().strip() == snap_id:
                return  # already so: a scan of `latest` writes nothing
        except (OSError, UnicodeDecodeError):
            pass
        try:
            with self.lock():
                if not (self.root / snap_id).is_dir():
                    raise SnapshotError(f"no snapshot {snap_id!r} in {self.root}")
                _write_atomic(self.root / LATEST_FILE, snap_id + "\n")
        except OSError as exc:  # a read-only store still answers; only the pointer stays behind
            log.warning("cannot record %s as the latest snapshot in %s: %s", snap_id, self.root, exc.strerror or exc)

    def resolve(self, ref: str) -> str:
        """The id that `ref` names: an exact id, a unique prefix, or 'latest'."""
        if ref == "latest":
            found = self.latest_id()
            if found is None:
                raise SnapshotError(
                    f"no snapshots in {self.root}; pull one first (e.g. sgl-scan snapshot pull --pip sglang==0.5.23)"
                )
            return found
        ids = self.ids()
        if ref in ids:
            return ref
        matches = [i for i in ids if i.startswith(ref)] if ref else []
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise SnapshotError(f"no snapshot {ref!r} in {self.root} (see: sgl-scan snapshot list)")
        raise SnapshotError(f"snapshot {ref!r} is ambiguous: {', '.join(matches[:5])}")

    def open(self, ref: str, verify: bool = True) -> Snapshot:
        """The snapshot `ref` names; with `verify` every file's size and sha256 is checked."""
        snap_id = self.resolve(ref)
        folder = self.root / snap_id
        manifest = self._read_manifest(folder)
        snapshot = Snapshot(manifest=manifest, folder=folder)
        if verify:
            self.verify(snapshot)
        return snapshot

    def verify(self, snapshot: Snapshot, *, hashes: bool = True) -> None:
        """Raise SnapshotError when a file is missing, resized or (with `hashes`) altered.

        A file whose stamp (`stamps.py`) is the one recorded when it last matched its sha256, and had
        settled then, is not read again.
        """
        tree = str(snapshot.tree)
        seen = self.verified_stamps(snapshot.id) if hashes else None
        for entry in snapshot.manifest.files:
            path = os.path.join(tree, entry.path)
            try:
                if hashes:
                    assert seen is not None  # read when hashes
                    st = os.stat(path)
                    if seen.get(entry.path, st) == entry.sha256:
                        continue
                    size, digest = _hash_file(path)
                    if size == entry.size and digest == entry.sha256:
                        seen.put(entry.path, st, digest)
                else:
                    size, digest = os.stat(path).st_size, entry.sha256
            except OSError as exc:
                raise self._corrupt(snapshot.id, f"{entry.path}: {exc.strerror or exc}") from exc
            if size != entry.size or digest != entry.sha256:
                raise self._corrupt(snapshot.id, f"{entry.path} does not match its sha256")
        if seen is not None:
            seen.save()

    def verified_stamps(self, snap_id: str) -> "StampFile":
        """The stamps of a stored snapshot's files when they last matched their sha256."""
        from sgl_scan.snapshots.stamps import StampFile

        return StampFile(self._verified_stamps_path(snap_id))

    def _verified_stamps_path(self, snap_id: str) -> Path:
        return self.root / ".stamps" / f"verified-{snap_id}.pkl"

    def key_of(self, snapshot: Snapshot) -> str | None:
        """The content key of a stored snapshot, derived from its manifest (None when its patch is unreadable)."""
        m = snapshot.manifest
        patch = None
        if m.git is not None and m.git.patch:
            try:
                patch = (snapshot.folder / PATCH_FILE).read_text(encoding="utf-8", errors="surrogateescape")
            except OSError:
                return None
        return content_key(
            source_kind=m.source_kind,
            source=m.source,
            root=m.root,
            scope=m.scope,
            git=m.git,
            patch=patch,
            skipped=m.skipped,
            files=m.files,
        )

    def find_same(self, key: str) -> Snapshot | None:
        """The stored snapshot whose content key is `key` and whose files still match their sha256, or None.

        Each folder's `content.key` is a hint; a match is confirmed from the (hash-guarded) manifest
        and every stored file is verified, so a damaged snapshot is never given back.
        """
        candidates = []
        for snap_id in self.ids():
            folder = self.root / snap_id
            try:
                hint = (folder / KEY_FILE).read_text().strip()
            except (OSError, UnicodeDecodeError):
                hint = None  # stored before keys were kept: derive it
            if hint is not None and hint != key:
                continue
            try:
                snapshot = Snapshot(manifest=self._read_manifest(folder), folder=folder)
            except SnapshotError:
                continue
            derived = self.key_of(snapshot)
            if hint is None and derived is not None:
                try:  # a snapshot from before keys were kept: record its key once (by path: a removed id stays gone)
                    _write_atomic(folder / KEY_FILE, derived + "\n")
                except OSError:
                    pass
            if derived == key:
                candidates.append(snapshot)
        for snapshot in sorted(candidates, key=lambda snap: (snap.manifest.created, snap.id), reverse=True):
            try:
                self.verify(snapshot)
            except SnapshotError as exc:
                log.info("not reusing %s: %s", snapshot.id, exc)
                continue
            return snapshot
        return None

    def _corrupt(self, snap_id: str, what: str) -> SnapshotError:
        return SnapshotError(
            f"snapshot {snap_id} is corrupted ({what}); remove it with 'sgl-scan snapshot rm {snap_id}' and pull again"
        )

    def _read_manifest(self, folder: Path) -> Manifest:
        try:
            raw = (folder / MANIFEST_FILE).read_bytes()
            expected = (folder / MANIFEST_HASH_FILE).read_text().split()[0]
        except (OSError, IndexError) as exc:
            raise self._corrupt(folder.name, f"manifest unreadable: {getattr(exc, 'strerror', None) or exc}") from exc
        if hashlib.sha256(raw).hexdigest() != expected:
            raise self._corrupt(folder.name, "manifest.json does not match manifest.sha256")
        try:
            manifest = Manifest.from_dict(json.loads(raw))
        except (ValueError, KeyError, TypeError) as exc:
            raise self._corrupt(folder.name, f"manifest invalid: {exc}") from exc
        if manifest.id != folder.name:
            raise self._corrupt(folder.name, f"manifest names another snapshot ({manifest.id})")
        return manifest

    # -- writing ---------------------------------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[None]:
        """The store-wide lock (commits, removals, blob collection)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextmanager
    def stage(self) -> Iterator["Stage"]:
        """A private staging folder; removed on exit unless committed."""
        staging_root = self.root / ".staging"
        try:
            with self.lock():  # creation and sweeping never interleave
                staging_root.mkdir(parents=True, exist_ok=True)
                self._sweep_stale(staging_root)
                name = os.urandom(8).hex()
                lock_handle = open(staging_root / f"{name}.lock", "a")
                fcntl.flock(lock_handle, fcntl.LOCK_EX)
                folder = staging_root / name
                folder.mkdir()
        except OSError as exc:
            raise SnapshotError(f"cannot write to the snapshot store {self.root}: {exc.strerror or exc}") from exc
        stage = Stage(self, folder)
        try:
            yield stage
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise SnapshotError(
                    f"disk full while writing the snapshot under {self.root}; nothing was stored"
                ) from exc
            raise
        finally:
            stage.close()
            if not stage.committed:
                _rmtree(folder)
            lock_handle.close()
            try:
                os.unlink(staging_root / f"{name}.lock")
            except OSError:
                pass

    def _sweep_stale(self, staging_root: Path) -> None:
        """Remove staging folders left by killed processes (their lock is free)."""
        for lock_path in staging_root.glob("*.lock"):
            with open(lock_path, "a") as handle:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue
                _rmtree(staging_root / lock_path.stem)
                try:
                    lock_path.unlink()
                except OSError:
                    pass

    def blob_path(self, sha256: str) -> Path:
        return self.root / ".blobs" / sha256

    def remove(self, ref: str) -> str:
        """Delete a snapshot (and blobs nothing else uses); returns its id."""
        snap_id = self.resolve(ref)
        with self.lock():
            self._remove_locked(snap_id)
            self._collect_blobs()
        return snap_id

    def _remove_locked(self, snap_id: str) -> None:
        folder = self.root / snap_id
        if not folder.is_dir():
            raise SnapshotError(f"no snapshot {snap_id!r}")
        try:
            os.unlink(self._verified_stamps_path(snap_id))
        except OSError:
            pass
        trash = self.root / ".staging" / f"rm-{snap_id}-{os.urandom(3).hex()}"
        trash.parent.mkdir(parents=True, exist_ok=True)
        os.rename(folder, trash)  # atomic: the id disappears at once
        _rmtree(trash)

    def gc(self, keep: int, *, dry_run: bool = False) -> "Collected":
        """Remove all but the `keep` newest snapshots of each source (never `latest`), then every blob
        no snapshot uses and staging left by killed pulls. With `dry_run` only says what would go.

        A source is the source kind, where the files came from (`source_identity`), the root and
        the scope: `pip sglang==0.5.20` and `pip sglang==0.5.23` are two sources, and so are
        the speculative and full snapshots of one folder.
        """
        if not self.root.is_dir():
            return Collected((), (), 0, 0)
        with self.lock():
            latest = self.latest_id()
            groups: dict[str, list[Manifest]] = {}
            for manifest in self.list():
                groups.setdefault(source_group(manifest), []).append(manifest)
            doomed: list[Manifest] = []
            kept: list[Manifest] = []
            for members in groups.values():
                members.sort(key=lambda m: (m.created, m.id), reverse=True)
                for rank, manifest in enumerate(members):
                    (kept if rank < keep or manifest.id == latest else doomed).append(manifest)
            if dry_run:
                blobs, size = self._unused_blobs(doomed)
            else:
                staging = self.root / ".staging"
                if staging.is_dir():
                    self._sweep_stale(staging)
                for manifest in doomed:
                    self._remove_locked(manifest.id)
                blobs, size = self._collect_blobs()
        order = lambda m: (m.created, m.id)  # noqa: E731
        return Collected(tuple(sorted(doomed, key=order)), tuple(sorted(kept, key=order)), blobs, size)

    def _unused_blobs(self, doomed: Sequence[Manifest]) -> tuple[int, int]:
        """How many blobs (and bytes) nothing would use once `doomed` is removed."""
        links: dict[str, int] = {}
        for manifest in doomed:
            for entry in manifest.files:
                links[entry.sha256] = links.get(entry.sha256, 0) + 1
        count = size = 0
        blobs = self.root / ".blobs"
        for blob in blobs.iterdir() if blobs.is_dir() else ():
            try:
                st = blob.stat()
            except OSError:
                continue
            if st.st_nlink - 1 <= links.get(blob.name, 0):
                count += 1
                size += st.st_size
        return count, size

    def _collect_blobs(self) -> tuple[int, int]:
        """Delete blobs that no snapshot links to any more (link count 1); caller holds the lock.
        Returns how many blobs and bytes were freed."""
        removed = size = 0
        blobs = self.root / ".blobs"
        if not blobs.is_dir():
            return 0, 0
        for blob in blobs.iterdir():
            try:
                st = blob.stat()
                if st.st_nlink <= 1:
                    blob.unlink()
                    removed += 1
                    size += st.st_size
            except OSError:
                pass
        return removed, size

    def new_id(self, source_kind: str, version: str | None, now: datetime) -> str:
        clean = re.sub(r"[^A-Za-z0-9._+]", "_", version or "unknown")[:40] or "unknown"
        while True:
            snap_id = f"{now:%Y%m%dT%H%M%S}-{source_kind}-{clean}-{os.urandom(3).hex()}"
            if not (self.root / snap_id).exists():
                return snap_id


class Stage:
    """A snapshot being written: files go into `tree/`, `commit` publishes it."""

    def __init__(self, store: Store, folder: Path) -> None:
        self.store = store
        self.folder = folder
        self.tree = folder / "tree"
        self.tree.mkdir()
        self.files: dict[str, FileEntry] = {}
        self.reused: set[str] = set()
        self.committed = False
        self.tree_str = str(self.tree)
        self._dirs: set[str] = {self.tree_str}
        self._claimed: set[str] = set()
        self._folders: set[str] = set()  # every folder a claimed path lies in
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[tuple[Future, int]] = []
        self._pending_bytes = 0

    def _target(self, path: str) -> str:
        check_relpath(path)
        if path in self._claimed:
            raise SnapshotError(f"duplicate file in snapshot: {path}")
        # a source may name `x.py` and `x.py/y.py` (an archive, a tar stream, a git tree): one line,
        # never the FileExistsError / NotADirectoryError of writing both
        parts = path.split("/")
        folders = ["/".join(parts[:i]) for i in range(1, len(parts))]
        clash = path if path in self._folders else next((f for f in folders if f in self._claimed), None)
        if clash is not None:
            raise SnapshotError(f"the source names {clash!r} both as a file and as a folder; refusing it")
        self._claimed.add(path)
        self._folders.update(folders)
        target = os.path.join(self.tree_str, path)
        parent = os.path.dirname(target)
        if parent not in self._dirs:
            os.makedirs(parent, exist_ok=True)
            self._dirs.add(parent)
        return target

    def write(
        self, path: str, data: bytes | Readable, *, mtime: float | None = None, max_size: int | None = None
    ) -> FileEntry:
        """Store one file (bytes or a readable stream), hashing as it goes."""
        target = self._target(path)
        digest = hashlib.sha256()
        size = 0
        # read-only from birth: tree files are (or become) shared blobs
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
        with os.fdopen(fd, "wb") as out:
            if isinstance(data, (bytes, bytearray, memoryview)):
                out.write(data)
                digest.update(data)
                size = len(data)
            else:
                while chunk := data.read(CHUNK):
                    size += len(chunk)
                    if max_size is not None and size > max_size:
                        raise SnapshotError(f"{path} is larger than announced ({size} > {max_size} bytes)")
                    digest.update(chunk)
                    out.write(chunk)
        entry = FileEntry(path=path, size=size, sha256=digest.hexdigest(), mtime=mtime)
        self.files[path] = entry
        return entry

    def write_later(self, path: str, data: bytes, *, mtime: float | None = None) -> None:
        """Queue one file for a writer thread, so creating files overlaps with reading the next;
        `flush` (and `commit`) wait for them and raise the first failure."""
        target = self._target(path)
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor  # a pull that stores nothing never needs it

            self._pool = ThreadPoolExecutor(WRITERS, thread_name_prefix="sgl-scan-write")
        self._pending.append((self._pool.submit(_write_new, path, target, data, mtime), len(data)))
        self._pending_bytes += len(data)
        if len(self._pending) > MAX_PENDING_FILES or self._pending_bytes > MAX_PENDING_BYTES:
            self._drain(len(self._pending) // 2)

    def _drain(self, keep: int = 0) -> None:
        while len(self._pending) > keep:
            future, size = self._pending.pop(0)
            self._pending_bytes -= size
            entry = future.result()
            self.files[entry.path] = entry

    def flush(self) -> None:
        """Wait for every queued write; raise the first failure."""
        try:
            self._drain()
        finally:
            if not self._pending and self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None

    def close(self) -> None:
        """Stop the writer threads (pending writes are finished or cancelled)."""
        if self._pool is not None:
            for future, _ in self._pending:
                future.cancel()
            self._pool.shutdown(wait=True)
            self._pool = None
            self._pending.clear()
            self._pending_bytes = 0

    def reuse(self, snapshot: Snapshot, entry: FileEntry, *, mtime: float | None = None) -> FileEntry:
        """Take an unchanged file from an earlier snapshot (a hard link, or a copy)."""
        source = os.path.join(snapshot.folder, "tree", entry.path)
        return self._link(source, entry, entry.mtime if mtime is None else mtime, f"snapshot {snapshot.id}")

    def _link(self, source: str, entry: FileEntry, mtime: float | None, where: str) -> FileEntry:
        """Put `source` (a stored copy of `entry`'s bytes) at `entry`'s path: a hard link, or a copy
        where the filesystem refuses one."""
        target = self._target(entry.path)
        try:
            os.link(source, target)
            self.reused.add(entry.path)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                raise SnapshotError(f"cannot reuse {entry.path} from {where}: {exc.strerror}") from exc
            import shutil  # loaded only when a blob must be copied

            shutil.copyfile(source, target)
        new = FileEntry(path=entry.path, size=entry.size, sha256=entry.sha256, mtime=mtime)
        self.files[entry.path] = new
        return new

    def reuse_blob(self, entry: FileEntry, *, mtime: float | None = None) -> bool:
        """Take a file whose sha256 is known (its source's settled stamp says so) from the blob store
        when the blob holds exactly those bytes, hashed now: a hard link, neither the source read
        nor a copy written. False (nothing taken) when there is no such blob or it is damaged."""
        blob = str(self.store.blob_path(entry.sha256))
        try:
            if _sha256_of(blob) != entry.sha256:
                return False  # damaged: the caller reads the source, and the commit replaces the blob
        except OSError:
            return False
        self._link(blob, entry, mtime, "the blob store")
        return True

    def version(self) -> str | None:
        """`__version__` from `sglang/version.py`, or from `_version.py` when version.py imports it."""
        for name in ("version.py", "_version.py"):
            try:
                found = read_version((self.tree / "sglang" / name).read_bytes())
            except OSError:
                continue
            if found:
                return found
        return None

    def commit(
        self,
        *,
        source_kind: str,
        source: Mapping,
        root: str,
        scope: str,
        git: GitState | None = None,
        patch: str | None = None,
        skipped: tuple[SkippedFile, ...] = (),
        now: datetime | None = None,
    ) -> Snapshot:
        """Write the manifest, share blobs and rename into place under a fresh id."""
        self.flush()
        if not self.files:
            raise SnapshotError(f"no SGLang files found in {root} for scope {scope!r}")
        now = now or datetime.now(timezone.utc)
        if patch:
            (self.folder / PATCH_FILE).write_text(patch, encoding="utf-8", errors="surrogateescape")
        git = recorded_git(git, patch)
        files = tuple(sorted(self.files.values(), key=lambda e: e.path))
        key = content_key(
            source_kind=source_kind,
            source=source,
            root=root,
            scope=scope,
            git=git,
            patch=patch,
            skipped=tuple(skipped),
            files=files,
        )
        version = self.version()
        with self.store.lock():
            same = self.store.find_same(key)
            if same is not None:  # this very content from this very source is stored: give that back
                log.info("snapshot %s holds the same content; not storing a copy", same.id)
                return replace(same, pulled=PullInfo(reused=True, unchanged=len(same.manifest.files)))
            snap_id = self.store.new_id(source_kind, version, now)
            manifest = Manifest(
                id=snap_id,
                source_kind=source_kind,
                source=dict(source),
                root=root,
                sglang_version=version,
                scope=scope,
                created=now.isoformat(timespec="microseconds"),
                files=files,
                git=git,
                skipped=tuple(skipped),
            )
            raw = manifest.to_json().encode()
            (self.folder / MANIFEST_FILE).write_bytes(raw)
            (self.folder / MANIFEST_HASH_FILE).write_text(f"{hashlib.sha256(raw).hexdigest()}  {MANIFEST_FILE}\n")
            (self.folder / KEY_FILE).write_text(key + "\n")
            (self.folder / SOURCE_FILE).write_text(json.dumps(SourceHint.of(manifest)._asdict(), sort_keys=True) + "\n")
            shared = self._share_blobs()
            final = self.store.root / snap_id
            os.rename(self.folder, final)
            self.committed = True
        log.info("stored snapshot %s (%d files)", snap_id, len(manifest.files))
        unchanged = len(self.reused) + shared
        return Snapshot(
            manifest=manifest,
            folder=final,
            pulled=PullInfo(reused=False, pulled=len(files) - unchanged, unchanged=unchanged),
        )

    def _share_blobs(self) -> int:
        """Hard-link each new tree file with its blob (creating the blob when new); read-only.
        Returns how many files' content the store held already."""
        blobs = self.store.root / ".blobs"
        blobs.mkdir(exist_ok=True)
        blobs_str = str(blobs)
        shared = 0
        created: set[str] = set()  # blobs this commit made (a second file with that content is not "stored already")
        for entry in self.files.values():
            if entry.path in self.reused:
                continue  # already a link to the earlier snapshot's blob
            path = os.path.join(self.tree_str, entry.path)
            blob = os.path.join(blobs_str, entry.sha256)
            try:
                try:
                    os.link(path, blob)
                    created.add(entry.sha256)
                except FileExistsError:
                    tmp = path + ".sgl-link"
                    if _sha256_of(blob) == entry.sha256:  # an identical file is stored already: share it
                        os.link(blob, tmp)
                        os.replace(tmp, path)
                        shared += entry.sha256 not in created
                    else:  # a damaged blob must not spread: the fresh file becomes the blob
                        log.warning(
                            "blob %s is damaged; replacing it with the fresh copy of %s", entry.sha256, entry.path
                        )
                        os.link(path, tmp)
                        os.replace(tmp, blob)
            except OSError as exc:
                if exc.errno in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                    log.debug("no blob sharing for %s: %s", entry.path, exc.strerror)
                    continue
                raise
        return shared


def _sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _write_new(path: str, target: str, data: bytes, mtime: float | None) -> FileEntry:
    """Create `target` (never following or replacing anything), read-only, and hash `data`."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return FileEntry(path=path, size=len(data), sha256=hashlib.sha256(data).hexdigest(), mtime=mtime)


def stamp_pulled_files(snapshot: Snapshot) -> None:
    """After a pull that stored new files, and the analysis (seconds later, so they have settled):
    verify them once more and record their stamps, so the next scan trusts them without reading."""
    if snapshot.pulled is None or snapshot.pulled.reused:
        return
    try:
        Store(snapshot.folder.parent).verify(snapshot)
    except (SnapshotError, OSError) as exc:  # the next run that opens it says so
        log.debug("not stamping %s: %s", snapshot.id, exc)


def _rmtree(path: Path) -> None:
    import shutil  # loaded only to remove a tree

    shutil.rmtree(path, ignore_errors=True)
