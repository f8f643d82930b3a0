"""Where a rendered report goes: a file (`-o`), else stdout; colour only for text on a terminal."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

import click

from sgl_scan.errors import ConfigError


def wants_color(fmt: str, output: str | None) -> bool:
    return output is None and fmt == "text" and sys.stdout.isatty()


def emit(document: str, output: str | None) -> None:
    """Write `document` to `output` (a one-line ConfigError when it cannot be written) or stdout."""
    if output:
        try:
            write_file(Path(output), document.encode("utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot write {output}: {exc.strerror or exc}") from None
    else:
        click.echo(document, nl=not document.endswith("\n"))


def write_file(path: Path, data: bytes) -> None:
    """Write `data` as the file `path`, atomically: a temporary file beside it is renamed over it, so
    a reader never sees half a report and a symlink planted at `path` is replaced, never followed
    (nothing is written where it points). A terminal, `/dev/null` or a FIFO the user named (not
    through a link) is written to directly."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        with open(path, "wb") as handle:
            handle.write(data)
        return
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "is a folder")
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
