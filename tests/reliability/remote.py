"""Helpers for hostile-remote tests: stand-in commands on the remote PATH, the CLI as a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping

REAL_TOOLS = ("sh", "find", "tar", "grep", "head", "git", "python3", "cat", "sleep", "tail", "kill", "printf", "date")


def entry_point() -> list[str]:
    """The installed `sgl-scan` script (else `python -m sgl_scan`)."""
    found = shutil.which("sgl-scan")
    return [found] if found else [sys.executable, "-m", "sgl_scan"]


def run_cli(args: list[str], home: Path, *, timeout: float = 180, env: Mapping[str, str] | None = None,
            prefix: list[str] = (), **kw) -> subprocess.CompletedProcess:
    """Run the real entry point with `$SGLSCAN_HOME=home` (after `prefix`, a wrapper command)."""
    full_env = {**os.environ, "SGLSCAN_HOME": str(home), **(env or {})}
    return subprocess.run(list(prefix) + entry_point() + list(args), capture_output=True, text=True, env=full_env,
                          timeout=timeout, **kw)


def tool_dir(folder: Path, stand_ins: Mapping[str, str], *, drop: tuple[str, ...] = ()) -> Path:
    """A folder with the real tools linked in, `stand_ins` (name -> shell script body) replacing some,
    and the names in `drop` missing: put it alone on the remote PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in REAL_TOOLS:
        if name in stand_ins or name in drop:
            continue
        found = shutil.which(name, path="/usr/local/bin:/usr/bin:/bin")
        if found:
            (folder / name).symlink_to(found)
    for name, body in stand_ins.items():
        script = folder / name
        script.write_text("#!/bin/sh\n" + body)
        script.chmod(0o755)
    return folder


def home_with_path(home: Path, path_dirs: list[Path]) -> Path:
    """A private remote HOME whose .bashrc (sourced by bash under sshd) sets PATH."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".bashrc").write_text(f"PATH={':'.join(map(str, path_dirs))}\nexport PATH\n")
    return home


def ssh_cli_args(server, remote_root, *extra: str, known_hosts: Path | None = None) -> list[str]:
    """`--host ... --remote-root ...` for `server`."""
    args = server.cli_args(known_hosts=known_hosts)
    if remote_root is not None:
        args += ["--remote-root", str(remote_root)]
    return args + list(extra)


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The single stderr line of a failed run (asserts there is exactly one and no traceback)."""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("sgl-scan: error: "), lines[0]
    return lines[0]
