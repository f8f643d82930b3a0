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
tree files are hard links into a content-addressed blob store (`.blobs/ab/<sha256>`), read-only.
Every file's sha256 is in the manifest and checked by `open`; `manifest.sha256` guards the manifest.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, Iterator, Mapping

from sgl_scan.errors import SnapshotError
from sgl_scan.paths import snapshots_dir
from sgl_scan.snapshots.manifest import FileEntry, GitState, Manifest, Snapshot, SkippedFile

log = logging.getLogger(__name__)

PATCH_FILE = "git.patch"
MANIFEST_FILE = "manifest.json"
MANIFEST_HASH_FILE = "manifest.sha256"
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


def _hash_file(path: str | Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


class Store:
    """Stored snapshots under one root folder (default `$SGLSCAN_HOME/snapshots`)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else snapshots_dir()

    # -- reading ---------------------------------------------------------------------------------

    def ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if not p.name.startswith(".") and p.is_dir())

    def list(self) -> list[Manifest]:
        """Manifests of every stored snapshot, oldest first (unreadable ones are skipped with a log line)."""
        manifests = []
        for snap_id in self.ids():
            try:
                manifests.append(self._read_manifest(self.root / snap_id))
            except SnapshotError as exc:
                log.warning("%s", exc)
        return sorted(manifests, key=lambda m: (m.created, m.id))

    def latest(self, verify: bool = True) -> Snapshot:
        """The most recently created snapshot; SnapshotError when the store is empty."""
        manifests = self.list()
        if not manifests:
            raise SnapshotError(f"no snapshots in {self.root}; pull one first (e.g. sgl-scan snapshot pull --pip sglang==0.5.23)")
        return self.open(manifests[-1].id, verify=verify)

    def resolve(self, ref: str) -> str:
        """The id that `ref` names: an exact id, a unique prefix, or 'latest'."""
        if ref == "latest":
            manifests = self.list()
            if not manifests:
                raise SnapshotError(f"no snapshots in {self.root}")
            return manifests[-1].id
        ids = self.ids()
        if ref in ids:
            return ref
        found = [i for i in ids if i.startswith(ref)] if ref else []
        if len(found) == 1:
            return found[0]
        if not found:
            raise SnapshotError(f"no snapshot {ref!r} in {self.root} (see: sgl-scan snapshot list)")
        raise SnapshotError(f"snapshot {ref!r} is ambiguous: {', '.join(found[:5])}")

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
        """Raise SnapshotError when a file is missing, resized or (with `hashes`) altered."""
        tree = str(snapshot.tree)
        for entry in snapshot.manifest.files:
            path = os.path.join(tree, entry.path)
            try:
                if hashes:
                    size, digest = _hash_file(path)
                else:
                    size, digest = os.stat(path).st_size, entry.sha256
            except OSError as exc:
                raise self._corrupt(snapshot.id, f"{entry.path}: {exc.strerror or exc}") from exc
            if size != entry.size or digest != entry.sha256:
                raise self._corrupt(snapshot.id, f"{entry.path} does not match its sha256")

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
                name = secrets.token_hex(8)
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
                raise SnapshotError(f"disk full while writing the snapshot under {self.root}; nothing was stored") from exc
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
            folder = self.root / snap_id
            if not folder.is_dir():
                raise SnapshotError(f"no snapshot {snap_id!r}")
            trash = self.root / ".staging" / f"rm-{snap_id}-{secrets.token_hex(3)}"
            trash.parent.mkdir(parents=True, exist_ok=True)
            os.rename(folder, trash)  # atomic: the id disappears at once
            _rmtree(trash)
            self._collect_blobs()
        return snap_id

    def _collect_blobs(self) -> int:
        """Delete blobs that no snapshot links to any more (link count 1); caller holds the lock."""
        removed = 0
        blobs = self.root / ".blobs"
        if not blobs.is_dir():
            return 0
        for blob in blobs.iterdir():
            try:
                if blob.stat().st_nlink <= 1:
                    blob.unlink()
                    removed += 1
            except OSError:
                pass
        return removed

    def new_id(self, source_kind: str, version: str | None, now: datetime) -> str:
        clean = re.sub(r"[^A-Za-z0-9._+]", "_", version or "unknown")[:40] or "unknown"
        while True:
            snap_id = f"{now:%Y%m%dT%H%M%S}-{source_kind}-{clean}-{secrets.token_hex(3)}"
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
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[tuple[Future, int]] = []
        self._pending_bytes = 0

    def _target(self, path: str) -> str:
        check_relpath(path)
        if path in self._claimed:
            raise SnapshotError(f"duplicate file in snapshot: {path}")
        self._claimed.add(path)
        target = os.path.join(self.tree_str, path)
        parent = os.path.dirname(target)
        if parent not in self._dirs:
            os.makedirs(parent, exist_ok=True)
            self._dirs.add(parent)
        return target

    def write(self, path: str, data: bytes | BinaryIO, *, mtime: float | None = None,
              max_size: int | None = None) -> FileEntry:
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
        target = self._target(entry.path)
        source = os.path.join(snapshot.folder, "tree", entry.path)
        try:
            os.link(source, target)
            self.reused.add(entry.path)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                raise SnapshotError(f"cannot reuse {entry.path} from snapshot {snapshot.id}: {exc.strerror}") from exc
            shutil.copyfile(source, target)
        new = FileEntry(path=entry.path, size=entry.size, sha256=entry.sha256,
                        mtime=entry.mtime if mtime is None else mtime)
        self.files[entry.path] = new
        return new

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

    def commit(self, *, source_kind: str, source: Mapping, root: str, scope: str,
               git: GitState | None = None, patch: str | None = None,
               skipped: tuple[SkippedFile, ...] = (), now: datetime | None = None) -> Snapshot:
        """Write the manifest, share blobs and rename into place under a fresh id."""
        self.flush()
        if not self.files:
            raise SnapshotError(f"no SGLang files found in {root} for scope {scope!r}")
        now = now or datetime.now(timezone.utc)
        if patch:
            (self.folder / PATCH_FILE).write_text(patch, encoding="utf-8", errors="surrogateescape")
            git = replace(git or GitState(commit="", dirty=True), patch=PATCH_FILE)
        version = self.version()
        with self.store.lock():
            snap_id = self.store.new_id(source_kind, version, now)
            manifest = Manifest(
                id=snap_id, source_kind=source_kind, source=dict(source), root=root, sglang_version=version,
                scope=scope, created=now.isoformat(timespec="microseconds"),
                files=tuple(sorted(self.files.values(), key=lambda e: e.path)), git=git, skipped=tuple(skipped),
            )
            raw = manifest.to_json().encode()
            (self.folder / MANIFEST_FILE).write_bytes(raw)
            (self.folder / MANIFEST_HASH_FILE).write_text(f"{hashlib.sha256(raw).hexdigest()}  {MANIFEST_FILE}\n")
            self._share_blobs()
            final = self.store.root / snap_id
            os.rename(self.folder, final)
            self.committed = True
        log.info("stored snapshot %s (%d files)", snap_id, len(manifest.files))
        return Snapshot(manifest=manifest, folder=final)

    def _share_blobs(self) -> None:
        """Hard-link each new tree file with its blob (creating the blob when new); read-only."""
        blobs = self.store.root / ".blobs"
        blobs.mkdir(exist_ok=True)
        blobs_str = str(blobs)
        for entry in self.files.values():
            if entry.path in self.reused:
                continue  # already a link to the earlier snapshot's blob
            path = os.path.join(self.tree_str, entry.path)
            blob = os.path.join(blobs_str, entry.sha256)
            try:
                try:
                    os.link(path, blob)
                except FileExistsError:
                    tmp = path + ".sgl-link"
                    if _sha256_of(blob) == entry.sha256:  # an identical file is stored already: share it
                        os.link(blob, tmp)
                        os.replace(tmp, path)
                    else:  # a damaged blob must not spread: the fresh file becomes the blob
                        log.warning("blob %s is damaged; replacing it with the fresh copy of %s", entry.sha256, entry.path)
                        os.link(path, tmp)
                        os.replace(tmp, blob)
            except OSError as exc:
                if exc.errno in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                    log.debug("no blob sharing for %s: %s", entry.path, exc.strerror)
                    continue
                raise


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


def _rmtree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
