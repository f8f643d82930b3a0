"""Reading one file of a tree sgl-scan does not control: never blocking, never following a link,
never reading more than a bound that does not come from the file.

A listing says what a path *was*; by the time it is opened it may be a FIFO, a device, a symlink to
`/dev/zero` or to a file outside the tree (a racing writer in a shared folder). So a file is opened
with `O_NOFOLLOW | O_NONBLOCK` (a FIFO opens at once, a link is refused), its type is checked with
`fstat` on the opened descriptor (regular files only), where the tree's folders are known the file
the kernel opened must lie in them (a folder on the way swapped for a link leads elsewhere), and the read
stops one byte past the cap, whatever the size said.
"""

from __future__ import annotations

import errno
import os
import stat

CHUNK = 1024 * 1024


class NotRegular(OSError):
    """The path is (now) a link, FIFO, device, folder or another file than the one listed."""


def where(fd: int) -> str | None:
    """The path the kernel has for an open descriptor (Linux), None where it cannot say."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def open_regular(
    path: str | os.PathLike, *, inside: tuple[str, ...] = (), follow: bool = False
) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file at `path` and its `fstat`; `NotRegular` for
    anything else (the descriptor is closed). With `inside` (real folder paths), the opened file
    must lie in one of them: a folder on the way swapped for a link leads elsewhere. `follow` lets a
    symlink lead to the file (a settings file the user linked), still a regular one."""
    flags = (
        os.O_RDONLY
        | (0 if follow else os.O_NOFOLLOW)
        | os.O_NONBLOCK
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_NOCTTY", 0)
    )
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the last part is a symlink
            raise NotRegular(errno.ELOOP, "a symlink", str(path)) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(errno.EINVAL, "not a regular file", str(path))
        if inside:
            real = where(fd)
            if real is not None and not any(real.startswith(root.rstrip("/") + "/") for root in inside):
                raise NotRegular(errno.EXDEV, "leads outside the tree (a link on the way)", str(path))
        os.set_blocking(fd, True)  # a regular file: plain reads from here on
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_fd(fd: int, cap: int) -> bytes:
    """At most `cap + 1` bytes from `fd` (one past the cap tells the caller the file is over it)."""
    parts, left = [], cap + 1
    while left > 0:
        chunk = os.read(fd, min(CHUNK, left))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def read_regular(
    path: str | os.PathLike, cap: int, *, inside: tuple[str, ...] = (), follow: bool = False
) -> tuple[bytes, os.stat_result]:
    """The bytes (at most `cap + 1`) and `fstat` of the regular file at `path` (see `open_regular`)."""
    fd, st = open_regular(path, inside=inside, follow=follow)
    try:
        return read_fd(fd, cap), st
    finally:
        os.close(fd)
