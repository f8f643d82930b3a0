"""Run the console entry point in-process: errors become one line and an exit code, as for a user."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    """`sgl-scan ARGS` through `sgl_scan.cli.main`; (exit code, stdout, stderr)."""
    from sgl_scan.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def run_main_in(capsys, cwd: Path, *args: str) -> tuple[int, str, str]:
    """`run_main` with `cwd` as the working directory (restored afterwards)."""
    before = os.getcwd()
    try:
        os.chdir(cwd)
        return run_main(capsys, *args)
    finally:
        os.chdir(before)
