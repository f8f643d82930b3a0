"""Where a rendered report goes: a file (`-o`), else stdout; colour only for text on a terminal."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from sgl_scan.errors import ConfigError


def wants_color(fmt: str, output: str | None) -> bool:
    return output is None and fmt == "text" and sys.stdout.isatty()


def emit(document: str, output: str | None) -> None:
    """Write `document` to `output` (a one-line ConfigError when it cannot be written) or stdout."""
    if output:
        try:
            Path(output).write_text(document, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot write {output}: {exc.strerror or exc}") from None
    else:
        click.echo(document, nl=not document.endswith("\n"))
