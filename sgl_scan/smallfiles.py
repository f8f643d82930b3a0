"""Read a small file (settings, baseline, ssh config, known_hosts, checkpoint JSON) within a bound
that sgl-scan chose, never one the file chose.

The file is opened without blocking (a FIFO named like a config never stalls the run), its type and
size are checked with `fstat` on the opened descriptor, and at most `limit + 1` bytes are read, so a
file that grows between the check and the read is still refused. `/dev/null` reads as empty where
a caller allows it (OpenSSH users write `UserKnownHostsFile /dev/null`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sgl_scan.errors import ConfigError, SglScanError

CONFIG_LIMIT = 1 << 20  # .sgl-scan.toml, pyproject.toml, ssh config files, hosts files
BASELINE_LIMIT = 64 << 20  # a baseline lists one short object per finding


def human_limit(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB"


def read_small(
    path: str | Path, limit: int, what: str, *, error: type[SglScanError] = ConfigError, devnull_ok: bool = False
) -> bytes:
    """The bytes of `path`, or `error` with one line: missing (FileNotFoundError is re-raised for
    callers that treat it specially), not a regular file, or larger than `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if devnull_ok and stat.S_ISCHR(info.st_mode) and os.path.realpath(path) == "/dev/null":
            return b""
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{what} {path} is not a regular file; refusing to read it")
        if info.st_size > limit:
            raise error(f"{what} {path} is larger than {human_limit(limit)}; refusing to read it")
        os.set_blocking(handle.fileno(), True)
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise error(f"{what} {path} is larger than {human_limit(limit)}; refusing to read it")
    return data
