"""Snapshot an SGLang release from the package index (`--pip sglang==0.5.23`).

`pip download --no-deps --only-binary=:all:` fetches the wheel into the download cache,
`$SGLSCAN_DOWNLOADS` if set, else `$SGLSCAN_HOME/downloads`. Only wheels: downloading an sdist
makes pip prepare its metadata, which runs the sdist's build backend (code from the index); an
sdist is read only when given as a file path, as an archive, never built. The spec must be
`sglang` with version clauses only (no URL, marker or extra that pip would act on). An exact pin
(`sglang==X`) that is already there is used without asking the index; a cached archive that no
longer opens is deleted and downloaded again. `--pip` also accepts the path of a wheel or sdist file. Only the files the scope
needs are unpacked, straight from the archive into the snapshot: sizes are the archive's declared
ones, checked against `--max-file-size`, `--max-files` and `--max-bytes` before any byte is read,
and the scope's byte searches stream at most `--max-file-size` bytes of a member.
The same spec and archive pulled again gives back the stored snapshot (the store's content
check), not a copy.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import re
import subprocess
import sys
import tarfile
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Callable, Iterator, Mapping

from sgl_scan.errors import ConfigError, SnapshotError
from sgl_scan.paths import downloads_dir, env
from sgl_scan.snapshots import scope as scopes
from sgl_scan.snapshots.manifest import Snapshot, SkippedFile
from sgl_scan.snapshots.progress import Progress
from sgl_scan.snapshots.store import Store
from sgl_scan.snapshots.tarstream import Limits, human

log = logging.getLogger(__name__)

_SPEC = re.compile(r"^\s*sglang\s*(?:(?:===|==|!=|~=|<=|>=|<|>)\s*[A-Za-z0-9._+!*-]+\s*,?\s*)*$", re.IGNORECASE)
_PIN = re.compile(r"^\s*sglang\s*===?\s*([A-Za-z0-9._+!-]+)\s*$", re.IGNORECASE)
ARCHIVE_SUFFIXES = (".whl", ".tar.gz", ".zip")


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
    try:
        if path.name.endswith((".whl", ".zip")):
            with zipfile.ZipFile(path) as archive:
                archive.namelist()
        else:
            with tarfile.open(path) as archive:
                archive.getmembers()
        return True
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError):
        return False


def run_with_ticker(cmd: list[str], what: str, progress: Progress | None, interval: float = 0.5) -> subprocess.CompletedProcess:
    """Run `cmd` (output captured); meanwhile `progress` says `what` and the seconds elapsed, so a
    download that gives no output of its own does not look stuck on a terminal."""
    start = time.monotonic()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        while True:
            try:
                out, err = proc.communicate(timeout=interval)
                break
            except subprocess.TimeoutExpired:
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


def fetch_archive(spec: str, progress: Progress | None = None) -> Path:
    """The wheel or sdist for `spec`: a local file, a cached exact pin, or `pip download --no-deps`."""
    as_path = Path(spec).expanduser()
    if spec.endswith(ARCHIVE_SUFFIXES) and as_path.is_file():
        return as_path
    if not spec.strip().lower().startswith("sglang"):
        raise ConfigError(f"--pip expects an sglang requirement such as sglang==0.5.23, not {spec!r}")
    if not _SPEC.match(spec):
        raise ConfigError(f"--pip takes sglang with version clauses only (sglang==0.5.23, sglang>=0.5,<0.6), not {spec!r}")
    folder = downloads_folder()
    pin = _PIN.match(spec)
    with _locked(folder / ".download.lock"):
        if pin:
            for cached in _archives(folder, pin.group(1)):
                if _readable(cached):
                    log.info("using cached %s", cached.name)
                    return cached
                log.warning("cached %s is damaged; downloading it again", cached.name)
                cached.unlink()
        before = {p: p.stat().st_mtime_ns for p in _archives(folder)}
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
               "--disable-pip-version-check", "-d", str(folder), spec]
        log.info("running %s", " ".join(cmd))
        result = run_with_ticker(cmd, f"downloading {spec} from the package index", progress)
        if result.returncode != 0:
            lines = [l for l in result.stderr.strip().splitlines() if l.strip()]
            hint = ""
            if any("No matching distribution" in l for l in lines):
                hint = _no_match_hint(spec, result.stderr)
            raise SnapshotError(f"pip download {spec} failed: {lines[-1] if lines else 'exit ' + str(result.returncode)}{hint}")
        after = _archives(folder, pin.group(1) if pin else None)
        fresh = [p for p in after if before.get(p) != p.stat().st_mtime_ns] or after
        if not fresh:
            raise SnapshotError(f"pip download {spec} produced no sglang archive in {folder}")
        return max(fresh, key=lambda p: p.stat().st_mtime_ns)


class Archive:
    """Read-only view of the sglang package inside a wheel or sdist: package-relative path -> bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.members: dict[str, Callable[[], IO[bytes]]] = {}
        self.sizes: dict[str, int] = {}  # declared sizes: zipfile and tarfile never return more
        try:
            if path.name.endswith((".whl", ".zip")):
                self._zip = zipfile.ZipFile(path)
                names = [(i.filename, i.file_size, i) for i in self._zip.infolist() if not i.is_dir()]
                opener = lambda info: (lambda: self._zip.open(info))  # noqa: E731
            else:
                self._tar = tarfile.open(path)
                names = [(m.name, m.size, m) for m in self._tar.getmembers() if m.isreg()]
                opener = lambda member: (lambda: self._tar.extractfile(member))  # noqa: E731
        except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError) as exc:
            raise SnapshotError(f"cannot read {path.name}: {exc}") from exc
        prefix = self._package_prefix([n for n, _, _ in names])
        for name, size, ref in names:
            if name.startswith(prefix):
                rel = name[len(prefix):]
                self.members[rel] = opener(ref)
                self.sizes[rel] = size

    @staticmethod
    def _package_prefix(names: list[str]) -> str:
        found = sorted({n[: n.index("sglang/srt/") + len("sglang/")] for n in names if "sglang/srt/" in n}, key=len)
        if not found:
            raise SnapshotError("the archive holds no sglang/srt/ package")
        return found[0]

    def open(self, rel: str) -> IO[bytes]:
        return self.members[rel]()

    def read(self, rel: str) -> bytes:
        """The member's bytes; callers check `sizes[rel]` against their limit first."""
        with self.open(rel) as stream:
            return stream.read()


def pull_pip(params: Mapping, *, store: Store | None = None, progress: Progress | None = None) -> Snapshot:
    store = store or Store()
    scope = scopes.check_scope(params.get("scope"))
    limits = Limits.from_params(params)
    progress = progress or Progress("pip")
    spec = params["pip_spec"]
    progress.update(f"fetching {spec}", force=True)
    try:
        path = fetch_archive(spec, progress)
    except BaseException:
        progress.done()  # the error line starts on a clean line
        raise
    archive = Archive(path)
    chosen, oversized = scopes.select_streamed(
        archive.members, scope, archive.sizes.__getitem__, archive.open, limits.max_file_size
    )
    skipped = [SkippedFile(rel, f"larger than --max-file-size ({human(size)}); not searched") for rel, size in oversized]
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
            stage.write("sglang/" + rel, archive.read(rel))
            progress.update(f"{number}/{len(chosen)} files")
        progress.done()
        source = {"spec": spec, "archive": path.name, "archive_sha256": digest.hexdigest()}
        return stage.commit(source_kind="pip", source=source, root=path.name, scope=scope, skipped=tuple(skipped))
