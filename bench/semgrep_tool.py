"""Semgrep as the benchmark runs it: in its own venv (`bench/.venv-semgrep/`), offline, all cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
RULES = BENCH_DIR / "semgrep-rules.yaml"
DEFAULT_VENV = BENCH_DIR / ".venv-semgrep"


def semgrep_binary(venv: Path = DEFAULT_VENV, *, install: bool = True) -> tuple[Path | None, str | None]:
    """The semgrep executable, installing it into `venv` with pip if asked; else (None, reason)."""
    binary = venv / "bin" / "semgrep"
    if binary.exists():
        return binary, None
    if not install:
        return None, f"not installed in {venv} (run without --no-install)"
    try:
        if not (venv / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "semgrep"]
        result = subprocess.run(pip, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        return None, f"could not create {venv}: {exc}"
    if result.returncode != 0 or not binary.exists():
        lines = result.stderr.strip().splitlines()
        return None, f"pip install semgrep failed: {lines[-1] if lines else result.returncode}"
    return binary, None


def semgrep_version(binary: Path) -> str:
    result = subprocess.run([str(binary), "--version", "--disable-version-check"], capture_output=True, text=True)
    return result.stdout.strip() or "unknown"


def semgrep_command(binary: Path, subdir: str, *, jobs: int | None = None) -> list[str]:
    """`semgrep scan` of `subdir` (relative to the tree root, the working directory) with RULES, JSON out.

    Semgrep's default job count is 0.85 × cores, which is one job on two cores; the benchmark gives
    it every core, as sgl-scan gets.
    """
    return [
        str(binary), "scan", "--metrics=off", "--disable-version-check", "--quiet", "--json",
        "--jobs", str(jobs or os.cpu_count() or 1), "--config", str(RULES), subdir,
    ]


def semgrep_env() -> dict[str, str]:
    """Environment for semgrep: no telemetry, no settings file from the user's home."""
    env = dict(os.environ)
    env["SEMGREP_SEND_METRICS"] = "off"
    env["SEMGREP_ENABLE_VERSION_CHECK"] = "0"
    return env


def parse_hits(json_path: Path) -> dict[str, set[tuple[str, int]]]:
    """Per rule id (the last dotted part of semgrep's check_id), the (path, start line) of each result."""
    data = json.loads(json_path.read_text())
    hits: dict[str, set[tuple[str, int]]] = {}
    for result in data.get("results", ()):
        rule = result["check_id"].rsplit(".", 1)[-1]
        hits.setdefault(rule, set()).add((result["path"].removeprefix("./"), int(result["start"]["line"])))
    return hits
