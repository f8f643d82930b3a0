"""`sgl-scan fleet` over private loopback sshd servers: many hosts against one, cold and re-pulled.

Eight sshd servers on 127.0.0.1 each serve their own hard-linked copy of the release tree (the
same content, as a fleet running one build). Measured, each a whole `sgl-scan fleet` command:
one host cold (empty store), eight hosts cold, one host and eight hosts re-pulled with nothing
changed, and 64 and 256 host entries (aliases spread over the eight daemons, each with its own copy)
re-pulled and compared, each with the command's peak RSS. Nothing but loopback is ever contacted.
The sshd daemons and the remote shells run on this machine too: a loopback fleet pays the remote
side of every host (session start, the `find` walk, the byte search) on the same cores.
"""

from __future__ import annotations

import os
import shutil
import sys
from contextlib import ExitStack
from pathlib import Path

from bench.measure import Stats, peak_rss_mib, repeat, run_checked, unavailable

DAEMONS = 8
MANY = (64, 256)  # the host entries of the large re-pulls (issue 33 asks 256 in ≤ 30 s)
NAMES = {
    "fleet_1_cold": "fleet, 1 host, cold",
    "fleet_8_cold": "fleet, 8 hosts, cold",
    "fleet_1_nochange": "fleet, 1 host, no-change re-pull",
    "fleet_8_nochange": "fleet, 8 hosts, no-change re-pull",
    **{f"fleet_{n}_nochange": f"fleet, {n} hosts (8 daemons), no-change re-pull + compare" for n in MANY},
}


def _linked_copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, copy_function=os.link)
    return target


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def measure_fleet(tree: Path, work: Path, runs: int, many: tuple[int, ...] = MANY
                  ) -> tuple[dict[str, Stats], dict[int, float | None]]:
    """Every fleet measurement (keys of NAMES; the large re-pulls for the counts in `many`) and the
    peak RSS in MiB of each large re-pull."""
    from bench.analysis_bench import env_for

    try:
        from tests.support.sshd import start_sshd
    except ImportError as exc:
        return {key: unavailable(name, f"no loopback sshd helper: {exc}") for key, name in NAMES.items()}, {}
    results: dict[str, Stats] = {}
    rss: dict[int, float | None] = {}
    with ExitStack() as stack:
        try:
            servers = [stack.enter_context(start_sshd(work / "sshd" / f"d{i}", home=work / "remote-home" / f"d{i}"))
                       for i in range(DAEMONS)]
        except BaseException as exc:  # pytest.skip is a BaseException when sshd is missing
            if isinstance(exc, KeyboardInterrupt):
                raise
            reason = f"loopback sshd unavailable: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            return {key: unavailable(name, reason) for key, name in NAMES.items()}, {}
        config, known, lines = [], [], []
        for i in range(max(many)):
            server = servers[i % DAEMONS]
            alias = f"gpu-{i:03d}"
            config.append(f"Host {alias}\n  HostName {server.host}\n  Port {server.port}\n  User {server.user}\n"
                          f"  IdentityFile {server.client_key}\n")
            root = _linked_copy(tree / "sglang", work / "trees" / alias / "sglang")
            lines.append(f"{alias} {root}\n")
        for server in servers:
            known.append(server.known_hosts.read_text())
        (work / "ssh_config").write_text("".join(config))
        (work / "known_hosts").write_text("".join(known))
        files = {}
        for count in (1, DAEMONS, *many):
            files[count] = work / f"hosts-{count}.txt"
            files[count].write_text("".join(lines[:count]))

        def command(count: int) -> list[str]:
            return [sys.executable, "-m", "sgl_scan", "fleet", "--hosts-file", str(files[count]),
                    "--ssh-config", str(work / "ssh_config"), "--known-hosts", str(work / "known_hosts"),
                    "--select", "SGL1", "--format", "json", "--jobs", "16"]

        for count in (1, DAEMONS):
            home = work / f"home-{count}"
            env = env_for(home)
            results[f"fleet_{count}_cold"] = repeat(
                NAMES[f"fleet_{count}_cold"], runs, lambda i, c=count, e=env: run_checked(command(c), env=e),
                before=lambda i, h=home: _fresh(h))
            results[f"fleet_{count}_nochange"] = repeat(
                NAMES[f"fleet_{count}_nochange"], runs, lambda i, c=count, e=env: run_checked(command(c), env=e))
        for count in many:
            home = _fresh(work / f"home-{count}")
            env = env_for(home)
            run_checked(command(count), env=env)  # the cold pull, untimed
            results[f"fleet_{count}_nochange"] = repeat(
                NAMES[f"fleet_{count}_nochange"], runs, lambda i, c=count, e=env: run_checked(command(c), env=e))
            try:
                rss[count] = peak_rss_mib(command(count), env=env)
            except Exception as exc:  # a benchmark reports, it does not crash
                print(f"[bench] fleet RSS of {count} hosts not measured: {exc}", file=sys.stderr)
                rss[count] = None
    for key, name in NAMES.items():
        results.setdefault(key, unavailable(name, "not measured in this run (--quick measures 64 hosts)"))
    return results, rss
