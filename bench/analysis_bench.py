"""Analysis speed and accuracy: sgl-scan cold and warm against `grep -rn` and Semgrep, same tree, same run."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from bench import accuracy, grep_patterns, semgrep_tool
from bench.measure import Stats, peak_rss_mib, repeat, run_checked, unavailable

SCAN_OK = (0, 1)  # 1 = findings at or above --fail-on; still a complete scan


def sgl_scan_command(tree: Path, scope: str) -> list[str]:
    """The CLI a user runs: scan the package folder of `tree` and print JSON."""
    return [
        sys.executable, "-m", "sgl_scan", "scan", "--path", str(tree / "sglang"),
        "--scope", scope, "--format", "json",
    ]


def env_for(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["SGL_SCAN_HOME"] = str(home)
    return env


def _fresh(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)


def measure_sgl_scan(tree: Path, work: Path, scope: str, runs: int) -> tuple[Stats, Stats, Path | None]:
    """Cold runs (each with an empty `$SGL_SCAN_HOME`), then warm runs on a filled one.

    Returns (cold, warm, path of one run's JSON output for the accuracy scores).
    """
    home = work / f"home-{scope}"
    output = work / f"sgl-scan-{scope}.json"
    command = sgl_scan_command(tree, scope)
    cold = repeat(
        f"sgl-scan scan, {scope}, cold", runs,
        lambda i: run_checked(command, env=env_for(home), ok_codes=SCAN_OK, stdout_path=output),
        before=lambda i: _fresh(home),
    )
    if not cold.ok:
        return cold, unavailable(f"sgl-scan scan, {scope}, warm", "cold scan failed"), None
    warm = repeat(
        f"sgl-scan scan, {scope}, warm", runs,
        lambda i: run_checked(command, env=env_for(home), ok_codes=SCAN_OK, stdout_path=output),
    )
    return cold, warm, output


def measure_grep(tree: Path, subdir: str, runs: int, work: Path) -> tuple[Stats, Path]:
    output = work / f"grep-{subdir.replace('/', '_')}.txt"
    stats = repeat(
        f"grep -rnE, {subdir}", runs,
        lambda i: run_checked(grep_patterns.grep_command(tree, subdir), cwd=tree, ok_codes=(0, 1), stdout_path=output),
    )
    return stats, output


def measure_semgrep(binary: Path | None, why_not: str | None, tree: Path, subdir: str, runs: int, work: Path) -> tuple[Stats, Path | None]:
    name = f"semgrep, {subdir}"
    if binary is None:
        return unavailable(name, why_not or "semgrep unavailable"), None
    output = work / f"semgrep-{subdir.replace('/', '_')}.json"
    command = semgrep_tool.semgrep_command(binary, subdir)
    stats = repeat(
        name, runs,
        lambda i: run_checked(command, cwd=tree, env=semgrep_tool.semgrep_env(), ok_codes=(0, 1), stdout_path=output),
    )
    return stats, output if stats.ok else None


def scores(sgl_json: Path | None, grep_out: Path | None, semgrep_json: Path | None) -> dict[str, list[dict]]:
    """Precision/recall of grep and Semgrep against sgl-scan's SGL101–SGL103 findings."""
    if sgl_json is None or not sgl_json.exists():
        return {}
    reference = accuracy.findings_from_json(sgl_json)
    out: dict[str, list[dict]] = {"sgl-scan": [{"rule": r, "findings": len(reference[r])} for r in accuracy.RULE_IDS]}
    if grep_out is not None and grep_out.exists():
        grep_hits = grep_patterns.classify(grep_out.read_text(errors="replace"))
        out["grep"] = [s.to_json() for s in accuracy.score(reference, grep_hits)]
    if semgrep_json is not None and semgrep_json.exists():
        out["semgrep"] = [s.to_json() for s in accuracy.score(reference, semgrep_tool.parse_hits(semgrep_json))]
    return out


def measure_rss(tree: Path, work: Path) -> tuple[float | None, str | None]:
    """Peak RSS in MiB of one cold full-tree scan (see `peak_rss_mib`), or (None, reason)."""
    home = work / "home-rss"
    _fresh(home)
    try:
        return peak_rss_mib(sgl_scan_command(tree, "full"), env=env_for(home), ok_codes=SCAN_OK), None
    except Exception as exc:
        return None, f"failed: {str(exc).splitlines()[0][:300]}"


def tree_stats(tree: Path, files: list[str] | None = None, subdir: str = "sglang/srt") -> dict[str, int]:
    """Number of files, lines and bytes: of `files` (package-relative paths) or of `subdir`'s `*.py`."""
    if files is not None:
        paths = [tree / "sglang" / f for f in files]
    else:
        paths = sorted((tree / subdir).rglob("*.py"))
    lines = size = 0
    for path in paths:
        data = path.read_bytes()
        size += len(data)
        lines += data.count(b"\n")
    return {"files": len(paths), "lines": lines, "bytes": size}
