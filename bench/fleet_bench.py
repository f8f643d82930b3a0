"""`sgl-scan fleet` over private loopback sshd servers: many hosts against one, cold and re-pulled.

Eight sshd servers on 127.0.0.1 each serve their own hard-linked copy of the release tree (the
same content, as a fleet running one build). Measured, each a whole `sgl-scan fleet` command:
one host cold (empty store), eight hosts cold, one host and eight hosts re-pulled with nothing
changed, and 64 host entries (aliases spread over the eight daemons, each with its own copy)
re-pulled and compared, with the command's peak RSS. Nothing but loopback is ever contacted.
"""

from __future__ import annotations

import os
import shutil
import sys
from contextlib import ExitStack
from pathlib import Path

from bench.measure import Stats, peak_rss_mib, repeat, run_checked, unavailable

DAEMONS = 8
MANY = 64
NAMES = {
    "fleet_1_cold": "fleet, 1 host, cold",
    "fleet_8_cold": "fleet, 8 hosts, cold",
    "fleet_1_nochange": "fleet, 1 host, no-change re-pull",
    "fleet_8_nochange": "fleet, 8 hosts, no-change re-pull",
    "fleet_64_nochange": "fleet, 64 hosts (8 daemons), no-change re-pull + compare",
}


def _linked_copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, copy_function=os.link)
    return target


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def measure_fleet(tree: Path, work: Path, runs: int) -> tuple[dict[str, Stats], float | None]:
    """Every fleet measurement (keys of NAMES) and the 64-host re-pull's peak RSS in MiB."""
    from bench.analysis_bench import env_for

    try:
        from tests.support.sshd import start_sshd
    except ImportError as exc:
        return {key: unavailable(name, f"no loopback sshd helper: {exc}") for key, name in NAMES.items()}, None
    results: dict[str, Stats] = {}
    rss = None
    with ExitStack() as stack:
        try:
            servers = [stack.enter_context(start_sshd(work / "sshd" / f"d{i}", home=work / "remote-home" / f"d{i}"))
                       for i in range(DAEMONS)]
        except BaseException as exc:  # pytest.skip is a BaseException when sshd is missing
            if isinstance(exc, KeyboardInterrupt):
                raise
            reason = f"loopback sshd unavailable: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            return {key: unavailable(name, reason) for key, name in NAMES.items()}, None
        config, known, lines = [], [], []
        for i in range(MANY):
            server = servers[i % DAEMONS]
            alias = f"gpu-{i:02d}"
            config.append(f"Host {alias}\n  HostName {server.host}\n  Port {server.port}\n  User {server.user}\n"
                          f"  IdentityFile {server.client_key}\n")
            root = _linked_copy(tree / "sglang", work / "trees" / alias / "sglang")
            lines.append(f"{alias} {root}\n")
        for server in servers:
            known.append(server.known_hosts.read_text())
        (work / "ssh_config").write_text("".join(config))
        (work / "known_hosts").write_text("".join(known))
        files = {}
        for count in (1, DAEMONS, MANY):
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
        home = _fresh(work / f"home-{MANY}")
        env = env_for(home)
        run_checked(command(MANY), env=env)  # the cold pull, untimed
        results[f"fleet_{MANY}_nochange"] = repeat(
            NAMES[f"fleet_{MANY}_nochange"], runs, lambda i: run_checked(command(MANY), env=env))
        try:
            rss = peak_rss_mib(command(MANY), env=env)
        except Exception as exc:  # a benchmark reports, it does not crash
            print(f"[bench] fleet RSS not measured: {exc}", file=sys.stderr)
    return results, rss
