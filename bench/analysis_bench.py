"""Analysis speed and accuracy: sgl-scan cold and warm against `grep -rn` and Semgrep, same tree, same run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench import accuracy, grep_patterns, semgrep_tool
from bench.measure import Stats, Step, peak_rss_mib, run_checked, unavailable

SCAN_OK = (0, 1)  # 1 = findings at or above --fail-on; still a complete scan


def sgl_scan_command(tree: Path, scope: str) -> list[str]:
    """The CLI a user runs: scan the package folder of `tree` and print JSON."""
    return [
        sys.executable, "-m", "sgl_scan", "scan", "--path", str(tree / "sglang"),
        "--scope", scope, "--format", "json",
    ]


_FROZEN: dict[str, Path] = {}  # label ("" for this checkout, else a git revision) -> the frozen copy of sgl_scan


def code_env(label: str = "") -> dict[str, str]:
    """The environment that runs a frozen copy of sgl_scan (this checkout's, or `label`'s) with bytecode on."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if label in _FROZEN:
        env["PYTHONPATH"] = os.pathsep.join([str(_FROZEN[label]), *filter(None, [env.get("PYTHONPATH")])])
    return env


def env_for(home: Path, label: str = "") -> dict[str, str]:
    """The environment of an sgl-scan run: its own `$SGLSCAN_HOME`, the frozen code, bytecode on.

    An installed package has its `.pyc` files; a checkout run with PYTHONDONTWRITEBYTECODE=1 would
    compile every module on every start, which no user pays.
    """
    env = code_env(label)
    env["SGLSCAN_HOME"] = str(home)
    return env


def freeze_code(work: Path, source: Path | None = None, label: str = "") -> Path:
    """Copy the checkout's sgl_scan package (or the one in `source`, a checkout of revision `label`)
    into `work` and compile it; every run of that code uses the copy.

    The checkout is edited while the bench runs (a shared working tree), and the facts cache is keyed
    by the analyzer's source: without a frozen copy an edit between a cold and a warm run turns the
    warm run into a cold one, and runs would measure different code.
    """
    if source is None:
        import sgl_scan

        package = Path(sgl_scan.__file__).parent
    else:
        package = source / "sgl_scan"
    target = work / (f"code-{label}" if label else "code")
    shutil.copytree(package, target / "sgl_scan", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _FROZEN[label] = target
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(target)], env=code_env(label), capture_output=True)
    return target


def _fresh(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)


# key -> rounds whose warm run found a second analyzer signature in its cache (code changed mid-run)
ANOMALIES: dict[str, int] = {}


def _watch_signatures(once, home: Path, key: str, anomalies: dict[str, int]):
    """Wrap a warm run: count the rounds in which the facts cache holds more than one analyzer
    signature, i.e. the analyzer's code changed between the cold and the warm run (a live checkout),
    so that "warm" run parsed everything again."""
    def wrapped() -> float:
        elapsed = once()
        facts = home / "facts"
        if facts.is_dir() and sum(1 for d in facts.iterdir() if d.is_dir()) > 1:
            anomalies[key] = anomalies.get(key, 0) + 1
        return elapsed
    return wrapped


def scope_listing(tree: Path, work: Path, scope: str) -> Path:
    """A file naming (one per line) every file sgl-scan takes in `scope`: read from the manifest of an
    untimed `snapshot pull --path` into a home of its own (what the parse floor reads)."""
    from bench.pull_bench import latest_manifest_files

    home = work / f"home-list-{scope}"
    _fresh(home)
    run_checked([sys.executable, "-m", "sgl_scan", "snapshot", "pull", "--path", str(tree / "sglang"), "--scope", scope],
                env=env_for(home))
    listing = work / f"scope-{scope}.txt"
    listing.write_text("".join(f"{tree / 'sglang' / rel}\n" for rel in latest_manifest_files(home)))
    return listing


def floor_command(listing: Path) -> list[str]:
    """`bench/parse_floor.py`: read and `ast.parse` every file of a scope, one process per core."""
    return [sys.executable, str(Path(__file__).with_name("parse_floor.py")), str(listing)]


def analysis_steps(tree: Path, work: Path, semgrep: Path | None, semgrep_why_not: str | None,
                   have_scan: bool, labels: tuple[str, ...] = ("",)) -> tuple[list[Step], dict[str, Stats], dict[str, Path]]:
    """The analysis measurements as interleaved steps, the ones that cannot run, and output files.

    Keys: grep_{full,speculative}, semgrep_{full,speculative}, sgl_{full,speculative}_{cold,warm},
    floor_{full,speculative} (`parse_floor.py` over the scope's files: the least a cold scan costs);
    for each other code label (a `--compare-rev` revision) `rev_` + the sgl-scan keys, measured in
    the same rounds. Each round's cold scan gets an empty `$SGLSCAN_HOME`; the warm scan right after
    it reuses it. Outputs: `sgl_{scope}` (the cold scan's JSON) and `sgl_{scope}_warm` (the warm one's).
    """
    subdirs = {"full": "sglang/srt", "speculative": "sglang/srt/speculative"}
    steps: list[Step] = []
    anomalies = ANOMALIES
    anomalies.clear()
    missing: dict[str, Stats] = {}
    outputs: dict[str, Path] = {}
    for part, subdir in subdirs.items():
        out = outputs[f"grep_{part}"] = work / f"grep-{part}.txt"
        steps.append(Step(f"grep_{part}", f"grep -rnE, {subdir}", lambda out=out, subdir=subdir: run_checked(
            grep_patterns.grep_command(tree, subdir), cwd=tree, ok_codes=(0, 1), stdout_path=out)))
    for part, subdir in subdirs.items():
        name = f"semgrep, {subdir}"
        if semgrep is None:
            missing[f"semgrep_{part}"] = unavailable(name, semgrep_why_not or "semgrep unavailable")
            continue
        out = outputs[f"semgrep_{part}"] = work / f"semgrep-{part}.json"
        command = semgrep_tool.semgrep_command(semgrep, subdir)
        steps.append(Step(f"semgrep_{part}", name, lambda out=out, command=command: run_checked(
            command, cwd=tree, env=semgrep_tool.semgrep_env(), ok_codes=(0, 1), stdout_path=out)))
    for scope in subdirs:
        name = f"floor: read + ast.parse of the {scope} scope's files, {os.cpu_count() or 1} processes"
        if not have_scan:
            missing[f"floor_{scope}"] = unavailable(name, "needs sgl-scan's scope (snapshot pull --path)")
            continue
        try:
            listing = scope_listing(tree, work, scope)
        except Exception as exc:  # a benchmark reports, it does not crash
            missing[f"floor_{scope}"] = unavailable(name, f"no file list: {str(exc).strip()[:200]}")
            continue
        steps.append(Step(f"floor_{scope}", name, lambda listing=listing: run_checked(floor_command(listing),
                                                                                    env=code_env())))
    for label in labels:
        prefix, suffix = ("rev_", f" [{label}]") if label else ("", "")
        for scope in subdirs:
            home = work / f"home-{prefix}{scope}"
            command = sgl_scan_command(tree, scope)
            for kind in ("cold", "warm"):
                key, name = f"{prefix}sgl_{scope}_{kind}", f"sgl-scan scan, {scope}, {kind}{suffix}"
                out = outputs[f"{prefix}sgl_{scope}" + ("_warm" if kind == "warm" else "")] = \
                    work / f"{prefix}sgl-scan-{scope}-{kind}.json"
                if not have_scan:
                    missing[key] = unavailable(name, "sgl-scan scan --format json is not available in this checkout yet")
                    continue
                once = (lambda command=command, home=home, out=out, label=label: run_checked(
                    command, env=env_for(home, label), ok_codes=SCAN_OK, stdout_path=out))
                if kind == "cold":
                    steps.append(Step(key, name, once, before=lambda home=home: _fresh(home)))
                else:
                    steps.append(Step(key, name, _watch_signatures(once, home, key, anomalies),
                                      requires=f"{prefix}sgl_{scope}_cold"))
    return steps, missing, outputs


def same_answer(a: Path, b: Path) -> bool | None:
    """Whether two scans' JSON reports say the same, apart from which snapshot (id, creation time)
    they were drawn from; None when either is missing."""
    try:
        first, second = json.loads(a.read_bytes()), json.loads(b.read_bytes())
    except (OSError, ValueError):
        return None
    return _anonymous(first) == _anonymous(second)


def _anonymous(document: dict) -> str:
    snapshot = document.get("snapshot") or {}
    text = json.dumps(document, sort_keys=True)
    for value in (snapshot.get("id"), snapshot.get("created")):
        if value:  # also inside sentences: the tree line names the snapshot ("SGLang 0.5.23, snapshot <id>, ...")
            text = text.replace(json.dumps(value)[1:-1], "*")
    return text


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


def measure_rss(tree: Path, work: Path, label: str = "") -> tuple[float | None, str | None]:
    """Peak RSS in MiB of one cold full-tree scan (see `peak_rss_mib`) by this checkout's code (or
    `label`'s), or (None, reason)."""
    home = work / (f"home-rss-{label}" if label else "home-rss")
    _fresh(home)
    try:
        return peak_rss_mib(sgl_scan_command(tree, "full"), env=env_for(home, label), ok_codes=SCAN_OK), None
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
