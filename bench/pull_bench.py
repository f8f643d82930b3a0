"""Pulling a tree over SSH from a private loopback sshd: sgl-scan against `rsync -a` and `scp -r`.

The "remote" is a copy of the release tree served by `tests.support.sshd` on 127.0.0.1; nothing
else is ever contacted. Every measurement starts from a known state: a cold pull gets an empty
`$SGLSCAN_HOME` (or an empty rsync/scp destination), a re-pull starts from a completed pull, and a
change set is applied before the timed re-pull and undone (with an untimed re-sync) after it.

The cold pulls run round by round too (rsync, scp, sgl-scan's default scope, sgl-scan's full scope,
then again): the disk's write-back after each round's copies drifts as much as the load does.
The no-change re-pulls of both tools run round by round (rsync, sgl-scan, then again), beside two
floors measured in the same rounds: `ssh HOST true` (what any tool that runs a remote command pays:
the OpenSSH handshake and the remote login shell's start-up) and `bench/paramiko_floor.py` (the
same with Python and paramiko: start-up, import, handshake, `true`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bench.measure import Stats, Step, interleave, repeat, run_checked, unavailable

FLOOR_SCRIPT = Path(__file__).with_name("paramiko_floor.py")

# Files the change set touches, relative to the package folder; all inside both scopes.
MODIFY = ("srt/speculative/spec_info.py", "srt/speculative/spec_utils.py", "srt/server_args.py")
DELETE = "srt/speculative/ngram_worker.py"
ADD = "srt/speculative/bench_added_module.py"


@dataclass(frozen=True)
class Remote:
    """A running loopback sshd (a `tests.support.sshd.SshServer`) and the package folder it serves."""

    server: object
    package: Path  # <remote>/sglang

    def ssh_e(self) -> str:
        s = self.server
        return (
            f"ssh -F /dev/null -p {s.port} -i {s.client_key} -o BatchMode=yes -o IdentitiesOnly=yes "
            f"-o UserKnownHostsFile={s.known_hosts} -o StrictHostKeyChecking=yes"
        )

    def target(self, path: str) -> str:
        return f"{self.server.user}@{self.server.host}:{path}"

    def ssh_true(self) -> list[str]:
        """`ssh HOST true` with the options rsync's `-e` gets."""
        return [*self.ssh_e().split(), f"{self.server.user}@{self.server.host}", "true"]

    def paramiko_true(self) -> list[str]:
        """`bench/paramiko_floor.py`: Python + paramiko connecting, checking the host key, running `true`."""
        s = self.server
        return [sys.executable, str(FLOOR_SCRIPT), s.host, str(s.port), s.user, str(s.client_key), str(s.known_hosts)]


class ChangeSet:
    """3 modified, 1 added, 1 deleted file in the remote package; `apply()` then `undo()` restores bytes and mtimes."""

    def __init__(self, package: Path):
        self.package = package
        self._saved: dict[str, tuple[bytes, int, int]] = {}

    def apply(self, tag: int) -> None:
        for rel in (*MODIFY, DELETE):
            path = self.package / rel
            stat = path.stat()
            self._saved[rel] = (path.read_bytes(), stat.st_atime_ns, stat.st_mtime_ns)
        for rel in MODIFY:
            with open(self.package / rel, "ab") as handle:
                handle.write(f"\n# benchmark edit {tag}\n".encode())
        (self.package / DELETE).unlink()
        (self.package / ADD).write_text(f'"""Added by the benchmark ({tag})."""\n\nVALUE = {tag}\n')

    def undo(self) -> None:
        for rel, (data, atime, mtime) in self._saved.items():
            path = self.package / rel
            path.write_bytes(data)
            os.utime(path, ns=(atime, mtime))
        (self.package / ADD).unlink(missing_ok=True)
        self._saved.clear()


def sgl_scan_pull(remote: Remote, scope: str) -> list[str]:
    server = remote.server
    return [
        sys.executable, "-m", "sgl_scan", "snapshot", "pull", *server.cli_args(),
        "--ssh-config", "/dev/null", "--remote-root", str(remote.package), "--scope", scope,
    ]


def _env(home: Path) -> dict[str, str]:
    from bench.analysis_bench import env_for

    return env_for(home)


def rsync_command(remote: Remote, dest: Path, files_from: Path | None = None) -> list[str]:
    """`rsync -a --delete` of `srt/**/*.py` and `version.py` (or exactly the files in `files_from`)."""
    command = ["rsync", "-a", "--delete", "-e", remote.ssh_e()]
    if files_from is not None:
        command += [f"--files-from={files_from}"]
    else:
        command += [
            "--prune-empty-dirs", "--include=/version.py", "--include=/srt/", "--include=/srt/**/",
            "--include=/srt/**.py", "--exclude=*",
        ]
    return command + [remote.target(f"{remote.package}/"), f"{dest}/"]


def scp_command(remote: Remote, dest: Path) -> list[str]:
    s = remote.server
    return [
        "scp", "-q", "-r", "-F", "/dev/null", "-P", str(s.port), "-i", str(s.client_key), "-o", "BatchMode=yes",
        "-o", "IdentitiesOnly=yes", "-o", f"UserKnownHostsFile={s.known_hosts}", "-o", "StrictHostKeyChecking=yes",
        remote.target(f"{remote.package}/srt"), str(dest),
    ]


def latest_manifest_files(home: Path) -> list[str]:
    """Paths (relative to the package folder) in the newest manifest under `home`'s snapshot store."""
    manifests = sorted((home / "snapshots").glob("*/manifest.json"), key=lambda p: p.stat().st_mtime)
    if not manifests:
        raise FileNotFoundError(f"no manifest under {home / 'snapshots'}")
    files = json.loads(manifests[-1].read_text())["files"]
    return [f["path"].removeprefix("sglang/") for f in files]


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def measure_pull(remote: Remote, work: Path, runs: int, have_sgl_scan_pull: bool) -> dict[str, Stats]:
    """Every pull measurement; the keys are the result names used in the report."""
    results: dict[str, Stats] = {}
    changes = ChangeSet(remote.package)
    dest = work / "dest"

    def timed(command_for: Callable[[int], list[str]], env=None) -> Callable[[int], float]:
        return lambda i: run_checked(command_for(i), env=env)

    # --- cold pulls, round by round (rsync, scp, sgl-scan's two scopes), so a load spike or the disk's
    # write-back of an earlier round hits all alike ---
    def fresh_dest() -> None:
        _fresh(dest)

    cold = [
        Step("rsync_full_cold", "rsync -a, full, cold", lambda: run_checked(rsync_command(remote, dest)),
             before=fresh_dest),
        Step("scp_full_cold", "scp -r, full, cold", lambda: run_checked(scp_command(remote, dest)), before=fresh_dest),
    ]
    if have_sgl_scan_pull:
        for scope in ("speculative", "full"):
            home = work / f"home-cold-{scope}"
            cold.append(Step(
                f"pull_sgl_{scope}_cold", _SGL_PULL_NAMES[f"pull_sgl_{scope}_cold"],
                lambda scope=scope, home=home: run_checked(sgl_scan_pull(remote, scope), env=_env(home)),
                before=lambda home=home: _fresh(home),
            ))
    results.update(interleave(cold, runs))
    _fresh(dest)
    run_checked(rsync_command(remote, dest))

    def rsync_changed_after(i: int) -> None:
        changes.undo()
        run_checked(rsync_command(remote, dest))

    results["rsync_full_changed"] = repeat(
        "rsync -a, full, 3 mod + 1 add + 1 del", runs, timed(lambda i: rsync_command(remote, dest)),
        before=changes.apply, after=rsync_changed_after,
    )
    changes.undo()

    if not have_sgl_scan_pull:
        reason = "sgl-scan snapshot pull is not available yet"
        for key, name in _SGL_PULL_NAMES.items():
            results[key] = unavailable(name, reason)
        results.update(_no_change_rounds(remote, work, runs, None))
        return results

    # rsync of exactly the files the default scope took (an include list is the best rsync can do).
    try:
        listing = work / "speculative-files.txt"
        listing.write_text("\n".join(latest_manifest_files(work / "home-cold-speculative")) + "\n")
        results["rsync_speculative_cold"] = repeat(
            "rsync -a --files-from, default scope, cold", runs,
            timed(lambda i: rsync_command(remote, dest, listing)), before=lambda i: _fresh(dest),
        )
    except (OSError, KeyError, ValueError) as exc:
        results["rsync_speculative_cold"] = unavailable("rsync -a --files-from, default scope, cold", f"no file list: {exc}")

    home = work / "home-warm-full"
    env = _env(home)
    _fresh(home)
    try:
        run_checked(sgl_scan_pull(remote, "full"), env=env)
    except Exception as exc:
        for key in ("pull_sgl_full_nochange", "pull_sgl_full_changed"):
            results[key] = unavailable(_SGL_PULL_NAMES[key], f"initial pull failed: {exc}")
        results.update(_no_change_rounds(remote, work, runs, None))
        return results
    results.update(_no_change_rounds(remote, work, runs, env))

    def sgl_changed_after(i: int) -> None:
        changes.undo()
        run_checked(sgl_scan_pull(remote, "full"), env=env)

    results["pull_sgl_full_changed"] = repeat(
        _SGL_PULL_NAMES["pull_sgl_full_changed"], runs, timed(lambda i: sgl_scan_pull(remote, "full"), env=env),
        before=changes.apply, after=sgl_changed_after,
    )
    changes.undo()
    return results


def _no_change_rounds(remote: Remote, work: Path, runs: int, sgl_env: dict[str, str] | None) -> dict[str, Stats]:
    """rsync's and sgl-scan's no-change re-pulls (sgl-scan's store in `sgl_env` holds a full pull;
    None: not measured) and the two floors, round by round, so a load spike hits all alike."""
    dest = work / "dest-nochange"
    _fresh(dest)
    run_checked(rsync_command(remote, dest))
    steps = [
        Step("rsync_full_nochange", "rsync -a, full, no change", lambda: run_checked(rsync_command(remote, dest))),
        Step("ssh_true", "floor: ssh HOST true (OpenSSH handshake + remote shell)",
             lambda: run_checked(remote.ssh_true())),
        Step("paramiko_true", "floor: Python + paramiko connect, exec true (bench/paramiko_floor.py)",
             lambda: run_checked(remote.paramiko_true(), env=_env(work / "home-floor"))),
    ]
    if sgl_env is not None:
        steps.insert(1, Step("pull_sgl_full_nochange", _SGL_PULL_NAMES["pull_sgl_full_nochange"],
                             lambda: run_checked(sgl_scan_pull(remote, "full"), env=sgl_env)))
    return interleave(steps, runs)


_SGL_PULL_NAMES = {
    "pull_sgl_speculative_cold": "sgl-scan pull, default scope, cold",
    "pull_sgl_full_cold": "sgl-scan pull, full, cold",
    "pull_sgl_full_nochange": "sgl-scan re-pull, full, no change",
    "pull_sgl_full_changed": "sgl-scan re-pull, full, 3 mod + 1 add + 1 del",
}
