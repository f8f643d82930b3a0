"""Safe extraction of an untrusted tar stream into a staging snapshot, while it is read.

Every member must be a regular file that was asked for, with a relative path free of `..`, within
the size limits; anything else (absolute paths, `..`, symlinks, hard links, devices, FIFOs,
directories, unrequested or repeated names, over-limit sizes, a cut stream) stops the pull with a
`RemoteError` before anything is published. Python's `tarfile.data_filter` runs on each member on
top of these checks, and files are written with `O_EXCL|O_NOFOLLOW` inside the staging folder only.
"""

from __future__ import annotations

from typing import Callable, IO, Mapping, NamedTuple, TYPE_CHECKING, cast

if TYPE_CHECKING:
    import tarfile

    from sgl_scan.snapshots.scope import Readable

from sgl_scan.errors import RemoteError, SnapshotError

# `tarfile.data_filter` resolves the destination with realpath (two lstat chains per member).
# The staging tree holds no links by construction (O_NOFOLLOW files, fresh folders), so running the
# filter against a root that does not exist gives the same verdict as a purely lexical check, fast.
LEXICAL_ROOT = "/nonexistent-sgl-scan-root"
TAR_BUFSIZE = 64 * 1024
MAX_PATH_PARTS = 32
MAX_PATH_CHARS = 1024


class Limits(NamedTuple):
    """Caps on what one pull may bring in (flags --max-bytes, --max-files, --max-file-size)."""

    max_bytes: int = 2 * 1024**3
    max_files: int = 100_000
    # Every file a pull takes is Python source (or a version file), and parsing costs about 80 times
    # a file's size in memory (a 50 MB file: ~4 GB). The largest SGLang file of any release is under
    # 400 KB (server_args.py), so 4 MiB leaves ten times that and bounds a parse to ~350 MB.
    max_file_size: int = 4 * 1024**2

    @classmethod
    def from_params(cls, params: Mapping) -> "Limits":
        base = cls()
        return cls(
            max_bytes=params.get("max_bytes") or base.max_bytes,
            max_files=params.get("max_files") or base.max_files,
            max_file_size=params.get("max_file_size") or base.max_file_size,
        )

    def check_totals(self, files: int, size: int) -> None:
        """Refuse a selection of `files` files holding `size` bytes (declared sizes, before any read)."""
        if files > self.max_files:
            raise SnapshotError(f"the selected files number {files}, more than --max-files {self.max_files}")
        if size > self.max_bytes:
            raise SnapshotError(f"the selected files hold {human(size)}, more than --max-bytes {human(self.max_bytes)}")


def human(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def check_member_name(name: str) -> str:
    """The member's path if it is a plain relative path; else RemoteError."""
    if not name or name.startswith("/"):
        raise RemoteError(f"refusing tar member with an absolute path: {name!r}")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise RemoteError(f"refusing tar member that climbs out with '..': {name!r}")
    if "\\" in name or "\x00" in name or len(name) > MAX_PATH_CHARS or len(parts) > MAX_PATH_PARTS:
        raise RemoteError(f"refusing tar member with a suspicious path: {name[:80]!r}")
    if not parts:
        raise RemoteError(f"refusing tar member with an empty path: {name!r}")
    return "/".join(parts)


def _check_type(member: tarfile.TarInfo) -> None:
    if member.isreg():
        return
    if member.issym() or member.islnk():
        raise RemoteError(f"refusing link in tar stream: {member.name!r} -> {member.linkname!r}")
    if member.isdev():
        raise RemoteError(f"refusing device or FIFO in tar stream: {member.name!r}")
    raise RemoteError(f"refusing non-file tar member: {member.name!r}")


def extract_stream(
    stream: Readable,
    write: Callable[..., None],
    *,
    prefix: str,
    expected: Mapping[str, float | None],
    limits: Limits,
) -> list[str]:
    """Read a tar stream, handing each requested member to `write(prefix + name, data, mtime=…)`.

    `expected` maps each requested member name to its listed mtime; every one must arrive exactly
    once. Returns the member names in stream order.
    """
    import tarfile  # here: a re-pull with nothing to fetch never reads a tar stream

    data_filter = getattr(tarfile, "data_filter", None)

    received: list[str] = []
    seen: set[str] = set()
    total = 0
    try:
        # the stream mode ("r|") only reads: any Readable will do
        archive = tarfile.open(fileobj=cast(IO[bytes], stream), mode="r|", errorlevel=2, bufsize=TAR_BUFSIZE)
    except (tarfile.TarError, EOFError) as exc:
        raise RemoteError(f"the transfer did not start with a tar stream ({exc})") from exc
    try:
        for member in archive:
            name = check_member_name(member.name)
            _check_type(member)
            if name not in expected:
                raise RemoteError(f"refusing tar member that was not requested: {name!r}")
            if name in seen:
                raise RemoteError(f"refusing repeated tar member: {name!r}")
            if member.size > limits.max_file_size:
                raise RemoteError(
                    f"tar member {name!r} claims {human(member.size)}, over --max-file-size "
                    f"{human(limits.max_file_size)}"
                )
            total += member.size
            if total > limits.max_bytes:
                raise RemoteError(f"transfer exceeds --max-bytes {human(limits.max_bytes)}")
            if len(received) + 1 > limits.max_files:
                raise RemoteError(f"transfer exceeds --max-files {limits.max_files}")
            if data_filter is not None:  # Python 3.10.12+ / 3.11.4+; the lexical checks above stand alone without it
                try:
                    data_filter(member, LEXICAL_ROOT)
                except tarfile.FilterError as exc:
                    raise RemoteError(f"refusing tar member {name!r}: {exc}") from exc
            source = archive.extractfile(member)
            if source is None:  # pragma: no cover - regular files always have data
                raise RemoteError(f"tar member {name!r} has no data")
            data = source.read()
            if len(data) != member.size:
                raise RemoteError(f"the transfer was cut short inside {name!r}")
            try:
                write(prefix + name, data, mtime=expected[name])
            except SnapshotError as exc:
                raise RemoteError(f"refusing tar member {name!r}: {exc}") from exc
            seen.add(name)
            received.append(name)
    except (tarfile.TarError, EOFError) as exc:
        raise RemoteError(f"the transfer was cut short or is not a valid tar stream ({exc})") from exc
    missing = sorted(set(expected) - seen)
    if missing:
        raise RemoteError(f"the transfer ended before {len(missing)} requested file(s) arrived (first: {missing[0]})")
    return received
