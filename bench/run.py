"""Benchmark sgl-scan against grep, Semgrep, rsync and scp on a real SGLang tree, in one run.

    python bench/run.py                      # everything, 3 runs each, on sglang==0.5.23 from PyPI
    python bench/run.py --only analysis,memory
    python bench/run.py --quick --tree DIR   # one run each, no Semgrep install: a smoke test

Writes `results.json` (every time, every ratio) and `results.md` (the table) into `--out`
(default: bench/), and prints the table. Targets are ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # `python bench/run.py` puts bench/ first, not the repository
    sys.path.insert(0, str(REPO))

from bench import analysis_bench, fleet_bench, gen_bench, pull_bench, semgrep_tool, upgrade_bench  # noqa: E402
from bench.measure import Stats, interleave, unavailable  # noqa: E402

SECTIONS = ("analysis", "pull", "memory", "gen", "fleet", "upgrade")
OPTIONAL_SECTIONS = ("analyzer",)  # in-process analyze_tree (bench/analyzer_bench.py); only with --only
RELEASE = "0.5.23"
PREVIOUS = "0.5.22"  # the release an upgrade starts from (`--only upgrade`)


@dataclass(frozen=True)
class Target:
    name: str
    limit: float
    value: float | None  # the measured ratio or quantity (medians)
    unit: str  # "x" for a ratio, "s", "MiB"
    basis: str  # how the value was computed, or why it is missing

    @property
    def verdict(self) -> str:
        if self.value is None:
            return "n/a"
        return "PASS" if self.value <= self.limit else "MISS"

    def to_json(self) -> dict:
        return {"name": self.name, "limit": self.limit, "value": _r(self.value), "unit": self.unit,
                "basis": self.basis, "verdict": self.verdict}


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def ratio(a: Stats | None, b: Stats | None) -> float | None:
    if a is None or b is None or not a.ok or not b.ok or not b.median:
        return None
    return a.median / b.median


def _ratio_target(name: str, limit: float, a: Stats | None, b: Stats | None) -> Target:
    value = ratio(a, b)
    if value is None:
        missing = [s for s in (a, b) if s is None or not s.ok]
        why = "; ".join(f"{s.name}: {s.reason}" for s in missing if s is not None) or "not measured"
        return Target(name, limit, None, "x", why)
    basis = f"wall {a.median:.3f} s / {b.median:.3f} s"
    if a.cpu_median is not None and b.cpu_median:
        basis += f"; CPU {a.cpu_median:.2f} s / {b.cpu_median:.2f} s = {a.cpu_median / b.cpu_median:.2f}×"
    return Target(name, limit, value, "x", basis)


def _abs_target(name: str, limit: float, stats: Stats | None, unit: str = "s") -> Target:
    if stats is None or not stats.ok:
        return Target(name, limit, None, unit, stats.reason if stats is not None else "not measured")
    cpu = f", CPU {stats.cpu_median:.2f} s" if stats.cpu_median is not None else ""
    return Target(name, limit, stats.median, unit, f"median of {len(stats.times)}{cpu}")


def targets(results: dict[str, Stats], rss: tuple[float | None, str | None] | None,
            rev: str | None = None, rev_rss: tuple[float | None, str | None] | None = None) -> list[Target]:
    g = results.get
    out = [
        _ratio_target("full-tree cold scan ≤ 0.5 × Semgrep", 0.5, g("sgl_full_cold"), g("semgrep_full")),
        _abs_target("warm full re-scan ≤ 1 s", 1.0, g("sgl_full_warm")),
        _ratio_target("warm full re-scan ≤ 15 × grep", 15.0, g("sgl_full_warm"), g("grep_full")),
        _ratio_target("default-scope cold scan ≤ 0.5 × Semgrep on srt/speculative", 0.5,
                      g("sgl_speculative_cold"), g("semgrep_speculative")),
        _ratio_target("cold full pull ≤ 1.0 × rsync", 1.0, g("pull_sgl_full_cold"), g("rsync_full_cold")),
        _ratio_target("no-change re-pull ≤ 0.8 × rsync", 0.8, g("pull_sgl_full_nochange"), g("rsync_full_nochange")),
    ]
    out += issue17_targets(g)
    out += floor_targets(g)
    out += issue33_targets(g)
    if rev is not None:
        out += [Target(f"{t.name} [{rev}]", t.limit, t.value, t.unit, t.basis)
                for t in issue17_targets(lambda key: g(f"rev_{key}") if key.startswith("sgl_") else g(key))]
    if rss is not None:
        mib, why = rss
        out.append(Target("peak RSS of a full-tree scan ≤ 1 GB", 1024.0, mib, "MiB",
                          "max single-process ru_maxrss" if mib is not None else (why or "not measured")))
        if rev is not None and rev_rss is not None:
            before, why_before = rev_rss
            value = mib / before if mib is not None and before else None
            basis = (f"median {mib:.1f} MiB / {rev}'s highest {before:.1f} MiB, of the same runs" if value is not None
                     else why or why_before or "not measured")
            out.append(Target(f"peak RSS of a full-tree scan ≤ 1 × {rev}'s", 1.0, value, "x", basis))
    out.append(_abs_target("gen ddtree (with validation) ≤ 5 s", 5.0, g("gen_warm")))
    out.append(_ratio_target("fleet: 8 hosts cold ≤ 2 × 1 host", 2.0, g("fleet_8_cold"), g("fleet_1_cold")))
    out.append(_ratio_target("fleet: 8 hosts no-change re-pull ≤ 2 × 1 host", 2.0, g("fleet_8_nochange"),
                             g("fleet_1_nochange")))
    # 64 hosts: issue 17's limits; 256 hosts: issue 33's
    for count, seconds, mib_limit, limit_text in ((64, 15.0, 1024.0, "1 GB"), (256, 30.0, 300.0, "300 MiB")):
        out.append(_abs_target(f"fleet: {count} hosts re-pulled and compared ≤ {seconds:g} s", seconds,
                               g(f"fleet_{count}_nochange")))
        fleet_rss = g(f"fleet_{count}_rss")
        if fleet_rss is not None:
            mib = fleet_rss.detail.get("mib")
            out.append(Target(f"fleet: peak RSS of the {count}-host run ≤ {limit_text}", mib_limit, mib, "MiB",
                              "max single-process ru_maxrss" if mib is not None else fleet_rss.reason or "not measured"))
    return out


def issue17_targets(g) -> list[Target]:
    """Issue 17's speed floor: warm re-scan ≤ 0.3 s and ≤ 1 × grep, default-scope cold ≤ 0.25 ×
    Semgrep on srt/speculative, full cold ≤ 0.15 × Semgrep (the re-pull's 0.8 × rsync is above)."""
    return [
        _abs_target("issue 17: warm full re-scan ≤ 0.3 s", 0.3, g("sgl_full_warm")),
        _ratio_target("issue 17: warm full re-scan ≤ 1 × grep over srt", 1.0, g("sgl_full_warm"), g("grep_full")),
        _ratio_target("issue 17: default-scope cold scan ≤ 0.25 × Semgrep on srt/speculative", 0.25,
                      g("sgl_speculative_cold"), g("semgrep_speculative")),
        _ratio_target("issue 17: full-tree cold scan ≤ 0.15 × Semgrep", 0.15, g("sgl_full_cold"), g("semgrep_full")),
    ]


def floor_targets(g) -> list[Target]:
    """The same cold limits applied to the parse floor (read + `ast.parse` alone, one process per core):
    a MISS here means the target lies below what parsing the scope's files costs."""
    return [
        _ratio_target("floor: default-scope read + ast.parse ≤ 0.25 × Semgrep on srt/speculative", 0.25,
                      g("floor_speculative"), g("semgrep_speculative")),
        _ratio_target("floor: full-tree read + ast.parse ≤ 0.15 × Semgrep", 0.15, g("floor_full"), g("semgrep_full")),
        _ratio_target("floor: OpenSSH `ssh HOST true` ≤ 0.8 × rsync's no-change re-pull", 0.8,
                      g("ssh_true"), g("rsync_full_nochange")),
        _ratio_target("floor: Python + paramiko connect, exec true ≤ 0.8 × rsync's no-change re-pull", 0.8,
                      g("paramiko_true"), g("rsync_full_nochange")),
    ]


def issue33_targets(g) -> list[Target]:
    """Issue 33: cold scans against their read + parse floor, upgrades against a cold and a warm scan
    of the same tree, the re-pull against the paramiko floor (the cold pull's 1.0 × rsync is above)."""
    return [
        _ratio_target("issue 33: default-scope cold scan ≤ 1.5 × its read + parse floor", 1.5,
                      g("sgl_speculative_cold"), g("floor_speculative")),
        _ratio_target("issue 33: full-tree cold scan ≤ 1.5 × its read + parse floor", 1.5,
                      g("sgl_full_cold"), g("floor_full")),
        _ratio_target(f"issue 33: {RELEASE} after {PREVIOUS} (store holding it) ≤ 0.35 × a cold {RELEASE} scan", 0.35,
                      g("upgrade_after_old"), g("upgrade_cold")),
        _ratio_target("issue 33: one-file change ≤ 2 × a warm scan", 2.0, g("upgrade_one_file"), g("upgrade_warm")),
        # bounds, not sgl-scan's work: an upgrade parses at least the files whose content changed
        _ratio_target(f"bound: read + parse of the files {RELEASE} changed ≤ 0.35 × a cold {RELEASE} scan", 0.35,
                      g("upgrade_floor_changed"), g("upgrade_cold")),
        _ratio_target("bound: read + parse of the files it changed ≤ 0.525 × read + parse of them all "
                      "(0.35 × 1.5: the upgrade and default-scope cold targets met together)", 0.525,
                      g("upgrade_floor_changed"), g("upgrade_floor_new")),
        _ratio_target("issue 33: no-change re-pull ≤ 1.1 × Python + paramiko connect, exec true", 1.1,
                      g("pull_sgl_full_nochange"), g("paramiko_true")),
    ]


# ---------------------------------------------------------------- what is available


def _cli_has(*args: str) -> bool:
    """Whether `sgl-scan ARGS --help` succeeds: the command exists in this checkout."""
    result = subprocess.run([sys.executable, "-m", "sgl_scan", *args, "--help"], capture_output=True, text=True,
                            cwd=REPO, env=analysis_bench.code_env())
    return result.returncode == 0


def _scan_has_json() -> bool:
    result = subprocess.run([sys.executable, "-m", "sgl_scan", "scan", "--help"], capture_output=True, text=True,
                            cwd=REPO, env=analysis_bench.code_env())
    return result.returncode == 0 and "--format" in result.stdout


def _version(command: list[str]) -> str:
    try:
        result = subprocess.run(command, capture_output=True, text=True)
    except OSError:
        return "missing"
    text = (result.stdout or result.stderr).strip().splitlines()
    return text[0] if text else "unknown"


def _git_commit() -> str:
    result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True, cwd=REPO).stdout.strip()
    return (result.stdout.strip() or "unknown") + ("+dirty" if dirty else "")


# ---------------------------------------------------------------- sections


def run_analysis(tree: Path, work: Path, runs: int, install: bool, venv: Path, results: dict, extra: dict,
                 rev: str | None = None) -> None:
    binary, why_not = semgrep_tool.semgrep_binary(venv, install=install)
    extra["semgrep_version"] = f"semgrep {semgrep_tool.semgrep_version(binary)}" if binary else f"semgrep n/a ({why_not})"
    labels = ("", rev) if rev else ("",)
    steps, missing, outputs = analysis_bench.analysis_steps(tree, work, binary, why_not, _scan_has_json(), labels)
    measured = interleave(steps, runs)
    sgl_keys = ("sgl_full_cold", "sgl_full_warm", "sgl_speculative_cold", "sgl_speculative_warm")
    for key in ("grep_full", "grep_speculative", "semgrep_full", "semgrep_speculative", "floor_full",
                "floor_speculative", *sgl_keys, *(f"rev_{k}" for k in sgl_keys if rev)):
        results[key] = measured.get(key) or missing[key]
    answers = extra.setdefault("answers", {})
    for scope in ("full", "speculative"):
        cold, warm = outputs.get(f"sgl_{scope}"), outputs.get(f"sgl_{scope}_warm")
        if cold is not None and warm is not None and cold.exists() and warm.exists():
            answers[f"{scope}: warm report = cold report, byte for byte"] = cold.read_bytes() == warm.read_bytes()
        if rev and cold is not None and outputs.get(f"rev_sgl_{scope}") is not None:
            answers[f"{scope}: same answer as {rev} (snapshot id and time aside)"] = \
                analysis_bench.same_answer(cold, outputs[f"rev_sgl_{scope}"])
    for key, rounds in analysis_bench.ANOMALIES.items():
        stats = results[key]
        results[key] = Stats(stats.name, stats.times, stats.reason or
                             f"{rounds} run(s) re-parsed: the analyzer's code changed after the cold run",
                             stats.cpu_times, stats.detail)

    sgl_ok = results["sgl_full_cold"].ok
    extra["accuracy"] = analysis_bench.scores(
        outputs["sgl_full"] if sgl_ok else None,
        outputs["grep_full"] if results["grep_full"].ok else None,
        outputs.get("semgrep_full") if results["semgrep_full"].ok else None,
    )
    try:
        files = pull_bench.latest_manifest_files(work / "home-speculative")
        extra["tree"]["default scope"] = analysis_bench.tree_stats(tree, files)
    except (OSError, KeyError, ValueError):
        pass


def run_pull(tree: Path, work: Path, runs: int, results: dict, extra: dict) -> None:
    import shutil

    try:
        from tests.support.sshd import start_sshd
    except ImportError as exc:
        for key in ("rsync_full_cold", "scp_full_cold", "rsync_full_nochange", "pull_sgl_full_nochange"):
            results[key] = unavailable(key, f"no loopback sshd helper: {exc}")
        return
    remote_root = work / "remote"
    shutil.copytree(tree / "sglang", remote_root / "sglang")
    have_pull = _cli_has("snapshot", "pull")
    try:
        with start_sshd(work / "sshd") as server:
            remote = pull_bench.Remote(server=server, package=remote_root / "sglang")
            results.update(pull_bench.measure_pull(remote, work / "pull", runs, have_pull))
    except BaseException as exc:  # pytest.skip raises a BaseException when sshd is missing
        if isinstance(exc, KeyboardInterrupt):
            raise
        reason = f"loopback sshd unavailable: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        for key in ("rsync_full_cold", "scp_full_cold", "rsync_full_nochange", "pull_sgl_full_nochange"):
            results.setdefault(key, unavailable(key, reason))


def run_upgrade(tree: Path, old: Path | None, old_label: str, work: Path, runs: int, results: dict) -> None:
    steps, missing = upgrade_bench.upgrade_steps(tree, old, work, old_label)
    results.update(missing)
    results.update(interleave(steps, runs))


def run_fleet(tree: Path, work: Path, runs: int, results: dict, quick: bool = False) -> None:
    many = fleet_bench.MANY[:1] if quick else fleet_bench.MANY
    measured, peaks = fleet_bench.measure_fleet(tree, work, runs, many)
    results.update(measured)
    for count in fleet_bench.MANY:
        rss = peaks.get(count)
        reason = (f"peak RSS {rss:.0f} MiB (a memory figure, see the targets)" if rss is not None
                  else "not measured" if count in many else "not measured in this run (--quick measures 64 hosts)")
        results[f"fleet_{count}_rss"] = Stats(f"fleet, {count} hosts, peak RSS", (), reason, detail={"mib": rss})


def run_analyzer(tree: Path, runs: int, extra: dict) -> None:
    """The core engineer's in-process analyzer bench (`bench/analyzer_bench.py`), its table kept verbatim."""
    command = [sys.executable, str(REPO / "bench" / "analyzer_bench.py"), "--tree", str(tree), "--runs", str(runs),
               "--jobs", str(os.cpu_count() or 1)]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env)
    extra["analyzer_bench"] = result.stdout.strip() if result.returncode == 0 else \
        f"n/a (analyzer_bench.py exited {result.returncode}: {result.stderr.strip()[-300:]})"


def run_memory(tree: Path, work: Path, runs: int, rev: str | None) -> tuple[tuple, tuple | None]:
    """Peak RSS (MiB) of `runs` cold full-tree scans, alternating this checkout's and REV's code:
    ((median, why), (highest, why) or None). Identical scans peak about 0.1 MiB apart, so this
    checkout is held to the most REV itself reached, not to one sample of it."""
    if not _scan_has_json():
        why = "sgl-scan scan --format json is not available in this checkout yet"
        return (None, why), ((None, why) if rev else None)
    mine: list[float] = []
    theirs: list[float] = []
    why = why_rev = None
    for _ in range(max(1, runs)):
        mib, why = analysis_bench.measure_rss(tree, work)
        if mib is not None:
            mine.append(mib)
        if rev:
            mib, why_rev = analysis_bench.measure_rss(tree, work, rev)
            if mib is not None:
                theirs.append(mib)
    own = (statistics.median(mine), None) if mine else (None, why)
    if not rev:
        return own, None
    return own, ((max(theirs), None) if theirs else (None, why_rev))


@contextmanager
def _checkout(rev: str, where: Path) -> Iterator[str]:
    """A detached git worktree of `rev` at `where` for the length of the run; yields its short name."""
    short = subprocess.run(["git", "rev-parse", "--short", rev], capture_output=True, text=True, cwd=REPO)
    if short.returncode != 0:
        raise SystemExit(f"--compare-rev: unknown revision {rev!r}: {short.stderr.strip()}")
    added = subprocess.run(["git", "worktree", "add", "--detach", str(where), rev], capture_output=True, text=True,
                           cwd=REPO)
    if added.returncode != 0:
        raise SystemExit(f"--compare-rev: git worktree add failed: {added.stderr.strip()}")
    try:
        yield short.stdout.strip()
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(where)], capture_output=True, cwd=REPO)


PROFILES = ("sgl_full_cold", "sgl_full_warm", "sgl_speculative_cold", "sgl_speculative_warm")


def profile(tree: Path, work: Path, measurement: str, top: int) -> str:
    """One sgl-scan measurement under cProfile (a warm one after an unprofiled cold run in the same
    home): the top `top` entries by cumulative time, as pstats prints them."""
    import io
    import pstats

    _, scope, kind = measurement.split("_")
    home = work / "home"
    home.mkdir()
    command = analysis_bench.sgl_scan_command(tree, scope)
    env = analysis_bench.env_for(home)
    if kind == "warm":
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = work / "profile.out"
    start = time.perf_counter()
    subprocess.run([command[0], "-m", "cProfile", "-o", str(out), *command[1:]], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if not out.exists():
        return f"{measurement}: the profiled run wrote no profile"
    text = io.StringIO()
    pstats.Stats(str(out), stream=text).sort_stats("cumulative").print_stats(top)
    return f"{measurement}: {elapsed:.3f} s wall under the profiler\n{text.getvalue()}"


def run_gen(tree: Path, work: Path, runs: int, results: dict) -> None:
    if not _cli_has("gen", "ddtree"):
        for key, name in (("gen_warm", "gen ddtree, warm"), ("gen_cold", "gen ddtree, cold")):
            results[key] = unavailable(name, "sgl-scan gen ddtree is not available in this checkout yet")
        return
    results["gen_warm"], results["gen_cold"] = gen_bench.measure_gen(tree, work, runs)


# ---------------------------------------------------------------- output


def _fmt(value: float | None, unit: str = "s") -> str:
    if value is None:
        return "n/a"
    if unit == "x":
        return f"{value:.2f}×"
    if unit == "MiB":
        return f"{value:.0f} MiB"
    return f"{value:.3f}"


def markdown(results: dict[str, Stats], goals: list[Target], extra: dict) -> str:
    lines = [
        f"# sgl-scan benchmark — sglang {extra.get('sglang_version', '?')}",
        "",
        f"Written by `python bench/run.py{extra.get('argv', '')}` on {extra['date']}: {extra['cpus']} CPUs, "
        f"Python {extra['python']}, sgl-scan at {extra['commit']}; {extra['runs']} run(s) per measurement.",
        f"Tools: {extra['grep_version']}; {extra['semgrep_version']}; {extra['rsync_version']}; {extra['ssh_version']}.",
        f"Load average (1, 5, 15 min) at start {extra['load_average_at_start']}, at end "
        f"{extra.get('load_average_at_end')}: the machine is shared, so compare ratios from the same run.",
        "",
        "## Targets (medians, same run)",
        "",
        "| target | value | verdict | basis |",
        "|---|---|---|---|",
    ]
    for goal in goals:
        lines.append(f"| {goal.name} | {_fmt(goal.value, goal.unit)} | **{goal.verdict}** | {goal.basis} |")
    lines += ["", "## Timings (wall seconds; CPU = user + system of the whole process tree)", "",
              "| measurement | runs | min | median | max | CPU median | note |", "|---|---|---|---|---|---|---|"]
    for stats in results.values():
        lines.append(f"| {stats.name} | {len(stats.times)} | {_fmt(stats.min)} | {_fmt(stats.median)} | "
                     f"{_fmt(stats.max)} | {_fmt(stats.cpu_median)} | {stats.reason or ''} |")
    answers = extra.get("answers") or {}
    if answers:
        lines += ["", "## Same answers", "", "| check | result |", "|---|---|"]
        for check, same in answers.items():
            lines.append(f"| {check} | {'yes' if same else 'n/a' if same is None else '**NO**'} |")
    tree = extra.get("tree", {})
    if tree:
        lines += ["", "## Tree", "", "| part | files | lines | bytes |", "|---|---|---|---|"]
        for part, st in tree.items():
            lines.append(f"| {part} | {st['files']} | {st['lines']} | {st['bytes']} |")
    acc = extra.get("accuracy") or {}
    if acc:
        lines += ["", "## Accuracy against sgl-scan's SGL101–SGL103 findings (full tree, by file:line)", "",
                  "| tool | rule | sgl-scan findings | tool hits | matched | precision | recall |",
                  "|---|---|---|---|---|---|---|"]
        for tool in ("grep", "semgrep"):
            for s in acc.get(tool, ()):
                lines.append(f"| {tool} | {s['rule']} | {s['reference']} | {s['reported']} | {s['matched']} | "
                             f"{_fmt(s['precision'], 'p')} | {_fmt(s['recall'], 'p')} |")
    if extra.get("analyzer_bench"):
        lines += ["", "## In-process analyzer (bench/analyzer_bench.py: analyze_tree, no CLI, no snapshot)", "",
                  "```", extra["analyzer_bench"], "```"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one run each and no Semgrep install (smoke test)")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated sections: {','.join(SECTIONS + OPTIONAL_SECTIONS)} (default: {','.join(SECTIONS)})")
    parser.add_argument("--runs", type=int, default=None, help="runs per measurement (default 3, --quick 1)")
    parser.add_argument("--tree", type=Path, help=f"folder holding sglang/srt (default: sglang=={RELEASE} from PyPI)")
    parser.add_argument("--old-tree", type=Path,
                        help=f"folder holding the sglang/srt an upgrade starts from (default: sglang=={PREVIOUS} "
                             "from PyPI, or none with --tree)")
    parser.add_argument("--out", type=Path, default=REPO / "bench", help="where results.json and results.md go")
    parser.add_argument("--no-install", action="store_true", help="do not pip-install Semgrep into bench/.venv-semgrep")
    parser.add_argument("--semgrep-venv", type=Path, default=semgrep_tool.DEFAULT_VENV, help="the venv holding Semgrep")
    parser.add_argument("--compare-rev", metavar="REV",
                        help="also measure sgl-scan at git revision REV (a worktree of it), round by round in this "
                             "same run: before/after ratios, peak RSS and answers side by side")
    parser.add_argument("--profile", metavar="MEASUREMENT", choices=PROFILES,
                        help=f"profile one sgl-scan measurement instead ({', '.join(PROFILES)}): python -m cProfile "
                             "around the CLI, the top cumulative entries printed (pool workers are not profiled)")
    parser.add_argument("--profile-top", type=int, default=40, help="how many entries --profile prints (default 40)")
    args = parser.parse_args(argv)
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(sections) - set(SECTIONS + OPTIONAL_SECTIONS))
    if unknown:
        parser.error(f"unknown section(s): {', '.join(unknown)} (choose from {', '.join(SECTIONS + OPTIONAL_SECTIONS)})")
    runs = args.runs or (1 if args.quick else 3)
    install = not (args.no_install or args.quick)
    if args.tree is None:
        from tests.support.releases import release_tree

        tree = release_tree(RELEASE)
    else:
        tree = args.tree.resolve()
    if not (tree / "sglang" / "srt").is_dir():
        parser.error(f"{tree} has no sglang/srt folder")

    args.out = args.out.resolve()
    if args.profile:
        here = os.getcwd()
        with tempfile.TemporaryDirectory(prefix="sgl-scan-profile-") as work:
            os.chdir(work)  # not the checkout: `-m sgl_scan` would import the live code first
            try:
                analysis_bench.freeze_code(Path(work))
                print(profile(tree, Path(work), args.profile, args.profile_top))
            finally:
                os.chdir(here)
        return 0

    marker = tree / ".complete"  # tests.support.releases writes the version there
    label = RELEASE if args.tree is None else marker.read_text().strip() if marker.exists() else f"tree {tree.name}"
    extra: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "argv": "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:])),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(), "python": platform.python_version(), "commit": _git_commit(), "runs": runs,
        "sglang_version": label,
        "grep_version": _version(["grep", "--version"]), "rsync_version": _version(["rsync", "--version"]),
        "ssh_version": _version(["ssh", "-V"]), "semgrep_version": "not run",
        "tree": {"srt": analysis_bench.tree_stats(tree), "srt/speculative": analysis_bench.tree_stats(tree, subdir="sglang/srt/speculative")},
    }
    results: dict[str, Stats] = {}
    rss = rev_rss = None
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sgl-scan-bench-")))
        # `python -m sgl_scan` puts the current folder first on sys.path: run from the checkout, every
        # command would import the live code instead of the frozen copy (or the --compare-rev one).
        stack.callback(os.chdir, os.getcwd())
        os.chdir(work)
        analysis_bench.freeze_code(work)
        rev = None
        if args.compare_rev:
            rev = stack.enter_context(_checkout(args.compare_rev, work / "rev-src"))
            analysis_bench.freeze_code(work, work / "rev-src", rev)
            extra["compare_rev"] = rev
        for section in SECTIONS + OPTIONAL_SECTIONS:
            if section not in sections:
                continue
            print(f"[bench] {section} ...", file=sys.stderr, flush=True)
            section_dir = work / section
            section_dir.mkdir()
            if section == "analysis":
                run_analysis(tree, section_dir, runs, install, args.semgrep_venv, results, extra, rev)
            elif section == "pull":
                run_pull(tree, section_dir, runs, results, extra)
            elif section == "memory":
                rss, rev_rss = run_memory(tree, section_dir, runs, rev)
            elif section == "gen":
                run_gen(tree, section_dir, runs, results)
            elif section == "fleet":
                run_fleet(tree, section_dir, runs, results, args.quick)
            elif section == "upgrade":
                old_tree, old_label = _old_tree(args.old_tree, args.tree is None)
                run_upgrade(tree, old_tree, old_label, section_dir, runs, results)
            elif section == "analyzer":
                run_analyzer(tree, runs, extra)
    extra["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    goals = [t for t in targets(results, rss, extra.get("compare_rev"), rev_rss)
             if t.value is not None or _section_of(t.name) in sections]
    document = {
        "environment": {k: v for k, v in extra.items() if k not in ("accuracy", "answers")},
        "results": {key: stats.to_json() for key, stats in results.items()},
        "peak_rss_mib": None if rss is None else _r(rss[0], 1),
        "compare_rev": extra.get("compare_rev"),
        "peak_rss_mib_rev": None if rev_rss is None else _r(rev_rss[0], 1),
        "answers": extra.get("answers") or {},
        "targets": [t.to_json() for t in goals],
        "accuracy": extra.get("accuracy") or {},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    table = markdown(results, goals, extra)
    (args.out / "results.md").write_text(table)
    print(table)
    return 0


def _old_tree(given: Path | None, from_pypi: bool) -> tuple[Path | None, str]:
    """The tree an upgrade starts from, and its name: `--old-tree`, else sglang==PREVIOUS when the new
    tree is the PyPI release too (None when it cannot be had)."""
    if given is not None:
        marker = given / ".complete"
        return given.resolve(), marker.read_text().strip() if marker.exists() else f"tree {given.name}"
    if not from_pypi:
        return None, "--old-tree"
    from tests.support.releases import release_tree

    try:
        return release_tree(PREVIOUS), PREVIOUS
    except Exception as exc:  # no package index: the section reports it
        print(f"[bench] upgrade: no sglang=={PREVIOUS}: {exc}", file=sys.stderr)
        return None, PREVIOUS


def _section_of(target_name: str) -> str:
    if target_name.startswith("fleet"):
        return "fleet"
    if "after" in target_name or "one-file" in target_name:
        return "upgrade"
    if "pull" in target_name:
        return "pull"
    if "RSS" in target_name:
        return "memory"
    if "gen" in target_name:
        return "gen"
    return "analysis"


if __name__ == "__main__":
    raise SystemExit(main())
