"""Timing and memory primitives: repeated wall-clock runs summarised as min/median/max.

A measurement that cannot be taken (a tool missing, a feature not built yet) is a `Stats` with
`reason` set and no times; reports print it as "n/a (reason)" instead of failing the whole run.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence


@dataclass(frozen=True)
class Stats:
    """Wall-clock seconds of repeated runs of one measurement."""

    name: str
    times: tuple[float, ...] = ()
    reason: str | None = None  # why there are no times
    cpu_times: tuple[float, ...] = ()  # user + system seconds of the process tree, per run
    detail: Mapping[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.times)

    @property
    def min(self) -> float | None:
        return min(self.times) if self.times else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None

    @property
    def max(self) -> float | None:
        return max(self.times) if self.times else None

    @property
    def cpu_median(self) -> float | None:
        return statistics.median(self.cpu_times) if self.cpu_times else None

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "cpu_s": [round(t, 4) for t in self.cpu_times],
            "cpu_median_s": _round(self.cpu_median),
            "runs": len(self.times),
            "times_s": [round(t, 4) for t in self.times],
            "min_s": _round(self.min),
            "median_s": _round(self.median),
            "max_s": _round(self.max),
            "reason": self.reason,
            "detail": dict(self.detail),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def unavailable(name: str, reason: str) -> Stats:
    return Stats(name=name, reason=reason)


class Timing(float):
    """Wall seconds (the float value) that also carries the CPU seconds the command used."""

    cpu: float

    def __new__(cls, wall: float, cpu: float) -> "Timing":
        value = super().__new__(cls, wall)
        value.cpu = cpu
        return value


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class CommandFailed(RuntimeError):
    """A benchmarked command exited with an unexpected status."""


def run_checked(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    ok_codes: Sequence[int] = (0,),
    stdout_path: str | os.PathLike | None = None,
) -> float:
    """Run `command` once; return its wall time (a `Timing`, with the CPU time of its process tree).

    Its stdout goes to `stdout_path` or nowhere. CPU time is the growth of RUSAGE_CHILDREN, which
    counts every descendant the command waited for (pool workers included).
    """
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    try:
        cpu_before = _children_cpu()
        start = time.perf_counter()
        result = subprocess.run(list(command), env=env, cwd=cwd, stdout=out, stderr=subprocess.PIPE)
        elapsed = Timing(time.perf_counter() - start, _children_cpu() - cpu_before)
    finally:
        if stdout_path:
            out.close()
    if result.returncode not in ok_codes:
        tail = result.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise CommandFailed(f"{command[0]} exited {result.returncode}: {' | '.join(tail)[:400]}")
    return elapsed


def repeat(
    name: str,
    runs: int,
    once: Callable[[int], float],
    *,
    before: Callable[[int], None] | None = None,
    after: Callable[[int], None] | None = None,
    detail: Mapping[str, object] | None = None,
) -> Stats:
    """Call `before(i)`, time `once(i)` (it returns seconds), call `after(i)`; `runs` times.

    A failure turns into an unavailable `Stats` carrying the error's first line, so one broken
    measurement never hides the others.
    """
    times: list[float] = []
    try:
        for i in range(runs):
            if before:
                before(i)
            times.append(once(i))
            if after:
                after(i)
    except Exception as exc:  # a benchmark reports, it does not crash
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return _stats(name, times, f"failed: {message[:300]}", detail)
    return _stats(name, times, None, detail)


def _stats(name: str, times: Sequence[float], reason: str | None, detail: Mapping[str, object] | None = None) -> Stats:
    cpu = tuple(t.cpu for t in times if isinstance(t, Timing))
    return Stats(name=name, times=tuple(float(t) for t in times), reason=reason,
                 cpu_times=cpu if len(cpu) == len(times) else (), detail=dict(detail or {}))


_RSS_PROBE = """
import resource, subprocess, sys
result = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(result.returncode, peak_kib)
sys.stderr.write(result.stderr.decode(errors="replace")[-400:])
"""


def peak_rss_mib(command: Sequence[str], *, env: Mapping[str, str] | None = None, ok_codes: Sequence[int] = (0,)) -> float:
    """Peak resident set size (MiB) of the largest process in `command`'s tree.

    A fresh Python runs the command and reads `getrusage(RUSAGE_CHILDREN)`, so nothing this
    harness ran before is counted. `ru_maxrss` is the maximum of any single descendant (the
    scan's main process or one pool worker), not the sum of processes alive at once.
    """
    probe = subprocess.run(
        [sys.executable, "-c", _RSS_PROBE, *command], env=env, capture_output=True, text=True
    )
    fields = probe.stdout.split()
    if probe.returncode != 0 or len(fields) != 2:
        raise CommandFailed(f"RSS probe failed: {probe.stderr.strip()[-300:]}")
    returncode, peak_kib = int(fields[0]), int(fields[1])
    if returncode not in ok_codes:
        raise CommandFailed(f"{command[0]} exited {returncode}: {probe.stderr.strip()[-300:]}")
    return peak_kib / 1024.0


@dataclass(frozen=True)
class Step:
    """One measurement taken once per round by `interleave`."""

    key: str
    name: str
    once: Callable[[], float]  # returns seconds
    before: Callable[[], None] | None = None  # untimed set-up
    requires: str | None = None  # skip (with a reason) once this step has failed


def interleave(steps: Sequence[Step], runs: int) -> dict[str, Stats]:
    """Run every step once per round, `runs` rounds, so a load spike hits all tools alike.

    On a shared machine the load drifts over minutes; taking tool A three times and then tool B three
    times would put the drift into their ratio. A step that fails stops being run and reports why.
    """
    times: dict[str, list[float]] = {step.key: [] for step in steps}
    reasons: dict[str, str] = {}
    for _round in range(runs):
        for step in steps:
            if step.key in reasons:
                continue
            if step.requires and step.requires in reasons:
                reasons[step.key] = f"not run: {step.requires} failed"
                continue
            try:
                if step.before:
                    step.before()
                times[step.key].append(step.once())
            except Exception as exc:  # a benchmark reports, it does not crash
                text = str(exc).strip()
                reasons[step.key] = f"failed: {(text.splitlines()[0] if text else type(exc).__name__)[:300]}"
    return {step.key: _stats(step.name, times[step.key], reasons.get(step.key)) for step in steps}
