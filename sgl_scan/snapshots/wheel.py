"""Snapshot an SGLang release from the package index (`--pip sglang==0.5.23`).

`pip download --no-deps --only-binary=:all:` fetches the wheel into the download cache,
`$SGLSCAN_DOWNLOADS` if set, else `$SGLSCAN_HOME/downloads`. Only wheels: downloading an sdist
makes pip prepare its metadata, which runs the sdist's build backend (code from the index); an
sdist is read only when given as a file path, as an archive, never built. The spec must be
`sglang` with version clauses only (no URL, marker or extra that pip would act on). An exact pin
(`sglang==X`) that is already there is used without asking the index; a cached archive that no
longer opens is deleted and downloaded again only when the ledger (`LEDGER`) proves sgl-scan
downloaded it (same name, size, mtime, inode), else it is left alone with one line. `pip download`
is killed at `--timeout`. `--pip` also accepts the path of a wheel or sdist file. Only the files the
scope needs are unpacked, straight from the archive into the snapshot: sizes are the archive's
declared ones, checked against `--max-file-size`, `--max-files` and `--max-bytes` before any byte is
read; the listing itself is counted against `--max-files` while it is read; members are read in
chunks (`MemberStream`), never past their declared size, so data that inflates beyond it is cut
there and refused; the scope's byte searches stream at most `--max-file-size` bytes of a member.
The same spec and archive pulled again gives back the stored snapshot (the store's content
check), not a copy.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import re
import struct
import subprocess
import sys
import tarfile
import time
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Mapping, cast

from sgl_scan.errors import ConfigError, SnapshotError
from sgl_scan.paths import downloads_dir, env
from sgl_scan.smallfiles import read_small
from sgl_scan.snapshots import scope as scopes
from sgl_scan.snapshots.manifest import Snapshot, SkippedFile
from sgl_scan.snapshots.progress import Progress
from sgl_scan.snapshots.store import Store
from sgl_scan.snapshots.tarstream import Limits, human

log = logging.getLogger(__name__)

_SPEC = re.compile(r"^\s*sglang\s*(?:(?:===|==|!=|~=|<=|>=|<|>)\s*[A-Za-z0-9._+!*-]+\s*,?\s*)*$", re.IGNORECASE)
_PIN = re.compile(r"^\s*sglang\s*===?\s*([A-Za-z0-9._+!-]+)\s*$", re.IGNORECASE)
ARCHIVE_SUFFIXES = (".whl", ".tar.gz", ".zip")
DOWNLOAD_TIMEOUT = 900.0  # s: `pip download` (--timeout), as an SSH pull
MEMBER_CHUNK = 1 << 20  # bytes: an archive member is read this much at a time
# what opening or reading one member of a damaged or hostile archive raises
DAMAGED_MEMBER = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    tarfile.TarError,
    OSError,
    NotImplementedError,
    RuntimeError,
)


def downloads_folder() -> Path:
    folder = env("DOWNLOADS")
    return Path(folder).expanduser() if folder else downloads_dir()


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _archives(folder: Path, version: str | None = None) -> list[Path]:
    """sglang wheels and sdists in `folder` (of exactly `version` when given)."""

    def wanted(name: str) -> bool:
        if not name.endswith(ARCHIVE_SUFFIXES):
            return False
        if version is None:
            return True
        stem = f"sglang-{version}"
        return name.startswith(stem + "-") or name in (stem + ".tar.gz", stem + ".zip")

    return sorted(p for p in folder.glob("sglang-*") if wanted(p.name))


def _readable(path: Path) -> bool:
    """Whether a cached archive opens and lists (counted against the default --max-files)."""
    try:
        Archive(path)
        return True
    except SnapshotError:
        return False


LEDGER = ".sgl-scan-downloads"  # what sgl-scan's own `pip download` wrote here: name size mtime_ns inode


def _stamp(path: Path) -> str:
    info = path.stat()
    return f"{path.name} {info.st_size} {info.st_mtime_ns} {info.st_ino}"


def _record_download(folder: Path, path: Path) -> None:
    """Note `path` as written by sgl-scan (its name, size, mtime and inode), under the download lock."""
    try:
        with open(folder / LEDGER, "a", encoding="utf-8") as handle:
            handle.write(_stamp(path) + "\n")
    except OSError as exc:
        log.info("cannot record %s in %s: %s", path.name, LEDGER, exc)


def _written_by_us(folder: Path, path: Path) -> bool:
    """Whether the ledger proves sgl-scan wrote `path` as it is now (same name, size, mtime, inode)."""
    try:
        lines = read_small(folder / LEDGER, 4 << 20, "download ledger", error=SnapshotError).decode("utf-8", "replace")
        return _stamp(path) in lines.splitlines()
    except (OSError, SnapshotError):
        return False


def run_with_ticker(
    cmd: list[str], what: str, progress: Progress | None, interval: float = 0.5, timeout: float | None = None
) -> subprocess.CompletedProcess:
    """Run `cmd` (output captured); meanwhile `progress` says `what` and the seconds elapsed, so a
    download that gives no output of its own does not look stuck on a terminal. Past `timeout`
    seconds the command is killed and SnapshotError says so (an index that never answers)."""
    start = time.monotonic()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        while True:
            try:
                out, err = proc.communicate(timeout=interval)
                break
            except subprocess.TimeoutExpired:
                if timeout is not None and time.monotonic() - start > timeout:
                    proc.kill()
                    proc.communicate()
                    raise SnapshotError(f"{what} did not finish within {timeout:g} s (--timeout); gave up") from None
                if progress is not None:
                    progress.update(f"{what} ({time.monotonic() - start:.0f} s)", force=True)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _no_match_hint(spec: str, stderr: str) -> str:
    """Why pip found nothing: a pinned version the index has no wheel of is named with the newest
    there is; the remark about sdists only where the index offered no wheel at all."""
    found = re.search(r"\(from versions: ([^)]*)\)", stderr)
    versions = [v.strip() for v in found.group(1).split(",") if v.strip() and v.strip() != "none"] if found else []
    pin = _PIN.match(spec)
    if versions:
        what = f"sglang {pin.group(1)}" if pin else spec
        return f" (the index has no wheel of {what}; newest: {versions[-1]})"
    return " (only wheels are downloaded: building an sdist would run its code; pass an sdist's file path to read it)"


def fetch_archive(spec: str, progress: Progress | None = None, timeout: float = DOWNLOAD_TIMEOUT) -> Path:
    """The wheel or sdist for `spec`: a local file, a cached exact pin, or `pip download --no-deps`."""
    as_path = Path(spec).expanduser()
    if spec.endswith(ARCHIVE_SUFFIXES) and as_path.is_file():
        return as_path
    if not spec.strip().lower().startswith("sglang"):
        raise ConfigError(f"--pip expects an sglang requirement such as sglang==0.5.23, not {spec!r}")
    if not _SPEC.match(spec):
        raise ConfigError(
            f"--pip takes sglang with version clauses only (sglang==0.5.23, sglang>=0.5,<0.6), not {spec!r}"
        )
    folder = downloads_folder()
    pin = _PIN.match(spec)
    with _locked(folder / ".download.lock"):
        if pin:
            for cached in _archives(folder, pin.group(1)):
                if _readable(cached):
                    log.info("using cached %s", cached.name)
                    return cached
                if not _written_by_us(folder, cached):  # nothing of the user's is ever deleted
                    raise SnapshotError(
                        f"{cached} does not open as an archive, and sgl-scan did not download it "
                        f"(or it changed since); it is left alone: remove or move it, or set "
                        f"SGLSCAN_DOWNLOADS to another folder"
                    )
                log.warning("cached %s is damaged; downloading it again", cached.name)
                cached.unlink()
        before = {p: p.stat().st_mtime_ns for p in _archives(folder)}
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--quiet",
            "--disable-pip-version-check",
            "-d",
            str(folder),
            spec,
        ]
        log.info("running %s", " ".join(cmd))
        result = run_with_ticker(cmd, f"downloading {spec} from the package index", progress, timeout=timeout)
        if result.returncode != 0:
            lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
            hint = ""
            if any("No matching distribution" in line for line in lines):
                hint = _no_match_hint(spec, result.stderr)
            raise SnapshotError(
                f"pip download {spec} failed: {lines[-1] if lines else 'exit ' + str(result.returncode)}{hint}"
            )
        after = _archives(folder, pin.group(1) if pin else None)
        fresh = [p for p in after if before.get(p) != p.stat().st_mtime_ns] or after
        if not fresh:
            raise SnapshotError(f"pip download {spec} produced no sglang archive in {folder}")
        newest = max(fresh, key=lambda p: p.stat().st_mtime_ns)
        if before.get(newest) != newest.stat().st_mtime_ns:
            _record_download(folder, newest)
        return newest


def _zip_entries_within(handle, limit: int) -> None:
    """Count the central directory's entries, reading one header at a time, before zipfile parses
    them all: an archive listing more than `limit` is refused without building its listing."""
    zf = cast(Any, zipfile)  # _EndRecData and the _ECD_ indexes are private: typeshed leaves them out
    endrec = zf._EndRecData(handle)  # the end record (zip64-aware), as ZipFile reads it
    if endrec is None:
        return  # not a zip: ZipFile says so
    size_cd, offset_end = endrec[zf._ECD_SIZE], endrec[zf._ECD_LOCATION]
    if endrec[zf._ECD_ENTRIES_TOTAL] > limit:
        raise SnapshotError(
            f"the archive lists {endrec[zf._ECD_ENTRIES_TOTAL]} entries, more than --max-files {limit}; refusing it"
        )
    position, end, count = offset_end - size_cd, offset_end, 0
    while position + 46 <= end:
        handle.seek(position)
        header = handle.read(46)
        if len(header) < 46 or header[:4] != b"PK\x01\x02":
            return  # malformed: ZipFile reports it
        count += 1
        if count > limit:
            raise SnapshotError(f"the archive lists more than --max-files {limit} entries; refusing it")
        name_len, extra_len, comment_len = struct.unpack("<HHH", header[28:34])
        position += 46 + name_len + extra_len + comment_len


class MemberStream:
    """An archive member read in chunks, never past `cap` bytes; a damaged member is one SnapshotError.

    zipfile stops at a member's declared size (then checks its CRC) and tarfile at its header's size,
    so a member that inflates far beyond what it declares is cut at the declared size, read `CHUNK`
    bytes at a time: memory is bounded by the chunk, not by what the data would inflate to."""

    def __init__(self, stream: IO[bytes], name: str, archive: str, cap: int) -> None:
        self.stream, self.name, self.archive, self.left = stream, name, archive, cap

    def read(self, size: int = -1) -> bytes:
        size = MEMBER_CHUNK if size is None or size < 0 else min(size, MEMBER_CHUNK)
        try:
            data = self.stream.read(min(size, self.left + 1))
        except DAMAGED_MEMBER as exc:
            raise SnapshotError(
                f"{self.archive}: member {self.name!r} is damaged or hostile ({exc}); refusing the archive"
            ) from exc
        self.left -= len(data)
        if self.left < 0:
            raise SnapshotError(
                f"{self.archive}: member {self.name!r} holds more than it declares; refusing the archive"
            )
        return data

    def close(self) -> None:
        self.stream.close()

    def __enter__(self) -> "MemberStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Archive:
    """Read-only view of the sglang package inside a wheel or sdist: package-relative path -> stream.

    The listing is counted against `max_files` while it is read; members are read through
    `MemberStream`, never past their declared size."""

    def __init__(self, path: Path, max_files: int = Limits().max_files) -> None:
        self.path = path
        self.members: dict[str, Callable[[], IO[bytes]]] = {}
        self.sizes: dict[str, int] = {}  # declared sizes: zipfile and tarfile never return more
        names: list[tuple[str, int, zipfile.ZipInfo | tarfile.TarInfo]]
        try:
            if path.name.endswith((".whl", ".zip")):
                with open(path, "rb") as handle:
                    _zip_entries_within(handle, max_files)
                self._zip = zipfile.ZipFile(path)
                names = [(i.filename, i.file_size, i) for i in self._zip.infolist() if not i.is_dir()]
                opener = lambda info: lambda: self._zip.open(info)  # noqa: E731
            else:
                self._tar = tarfile.open(path)
                names = []
                for count, member in enumerate(self._tar, 1):
                    if count > max_files:
                        raise SnapshotError(f"{path.name} lists more than --max-files {max_files} entries; refusing it")
                    if member.isreg():
                        names.append((member.name, member.size, member))
                # a regular member: extractfile never answers None
                opener = lambda member: lambda: cast(IO[bytes], self._tar.extractfile(member))  # noqa: E731
        except (
            OSError,
            zipfile.BadZipFile,
            tarfile.TarError,
            EOFError,
            zlib.error,
            struct.error,
            ValueError,
            NotImplementedError,
        ) as exc:
            raise SnapshotError(f"cannot read {path.name}: {exc}") from exc
        prefix = self._package_prefix([n for n, _, _ in names])
        for name, size, ref in names:
            if name.startswith(prefix):
                rel = name[len(prefix) :]
                self.members[rel] = opener(ref)
                self.sizes[rel] = size

    @staticmethod
    def _package_prefix(names: list[str]) -> str:
        found = sorted({n[: n.index("sglang/srt/") + len("sglang/")] for n in names if "sglang/srt/" in n}, key=len)
        if not found:
            raise SnapshotError("the archive holds no sglang/srt/ package")
        return found[0]

    def open(self, rel: str) -> MemberStream:
        """The member as a bounded stream (at most its declared size)."""
        try:
            stream = self.members[rel]()
        except DAMAGED_MEMBER as exc:
            raise SnapshotError(
                f"{self.path.name}: member {rel!r} cannot be opened ({exc}); refusing the archive"
            ) from exc
        return MemberStream(stream, rel, self.path.name, self.sizes[rel])

    def read(self, rel: str) -> bytes:
        """The member's bytes (small members only: callers check `sizes[rel]` against their limit)."""
        with self.open(rel) as stream:
            return b"".join(iter(lambda: stream.read(MEMBER_CHUNK), b""))


def pull_pip(params: Mapping, *, store: Store | None = None, progress: Progress | None = None) -> Snapshot:
    store = store or Store()
    scope = scopes.check_scope(params.get("scope"))
    limits = Limits.from_params(params)
    progress = progress or Progress("pip")
    spec = params["pip_spec"]
    progress.update(f"fetching {spec}", force=True)
    try:
        path = fetch_archive(spec, progress, float(params.get("timeout") or DOWNLOAD_TIMEOUT))
    except BaseException:
        progress.done()  # the error line starts on a clean line
        raise
    archive = Archive(path, limits.max_files)
    chosen, oversized = scopes.select_streamed(
        archive.members, scope, archive.sizes.__getitem__, archive.open, limits.max_file_size
    )
    skipped = [
        SkippedFile(rel, f"larger than --max-file-size ({human(size)}); not searched") for rel, size in oversized
    ]
    kept = [rel for rel in chosen if archive.sizes[rel] <= limits.max_file_size]
    limits.check_totals(len(kept), sum(archive.sizes[rel] for rel in kept))
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    with store.stage() as stage:
        for number, rel in enumerate(chosen, 1):
            if archive.sizes[rel] > limits.max_file_size:
                skipped.append(SkippedFile(rel, f"larger than --max-file-size ({human(archive.sizes[rel])})"))
                continue
            with archive.open(rel) as stream:
                stage.write("sglang/" + rel, stream, max_size=archive.sizes[rel])
            progress.update(f"{number}/{len(chosen)} files")
        progress.done()
        source = {"spec": spec, "archive": path.name, "archive_sha256": digest.hexdigest()}
        return stage.commit(source_kind="pip", source=source, root=path.name, scope=scope, skipped=tuple(skipped))
