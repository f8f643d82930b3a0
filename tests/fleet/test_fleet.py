"""`sgl-scan fleet` against nine private loopback sshd servers serving real SGLang releases.

Hosts (ssh-config aliases): gpu-1..3 serve copies of 0.5.23 (one group), gpu-4..5 copies of 0.5.20,
gpu-6 0.5.11, gpu-7 a git checkout of 0.5.23 with a local patch adding a `DDTREE` member, gpu-8 a
second 0.5.23 path whose files equal gpu-1's (so it joins their group), gpu-down a port nothing
listens on, gpu-unknown a server whose host key is in no known_hosts file.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.reports.browser import Elements, dump_dom, screenshot
from tests.support.gitrepo import commit_all, make_repo
from tests.support.releases import release_tree
from tests.support.sshd import start_sshd

pytestmark = pytest.mark.slow

TREES = {"gpu-1": "0.5.23", "gpu-2": "0.5.23", "gpu-3": "0.5.23", "gpu-4": "0.5.20", "gpu-5": "0.5.20",
         "gpu-6": "0.5.11", "gpu-7": "0.5.23", "gpu-8": "0.5.23"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _copy_tree(version: str, dest: Path) -> Path:
    shutil.copytree(release_tree(version) / "sglang", dest / "sglang")
    return dest / "sglang"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    base = tmp_path_factory.mktemp("fleet")
    roots = {}
    for alias, version in TREES.items():
        if alias == "gpu-7":
            repo = base / "trees" / alias
            root = _copy_tree(version, repo / "python")
            commit_all(make_repo(repo), "0.5.23")
            spec = root / "srt" / "speculative" / "spec_info.py"
            spec.write_text(spec.read_text().replace("    DFLASH = auto()\n", "    DFLASH = auto()\n    DDTREE = auto()\n", 1))
            roots[alias] = root
        else:
            roots[alias] = _copy_tree(version, base / "trees" / alias)
    config, known = [], []
    with ExitStack() as stack:
        for alias in [*TREES, "gpu-unknown"]:
            server = stack.enter_context(start_sshd(base / "sshd" / alias, home=base / "home" / alias))
            config.append(f"Host {alias}\n  HostName {server.host}\n  Port {server.port}\n  User {server.user}\n"
                          f"  IdentityFile {server.client_key}\n")
            if alias != "gpu-unknown":
                known.append(server.known_hosts.read_text())
        config.append(f"Host gpu-down\n  HostName 127.0.0.1\n  Port {_free_port()}\n")
        (base / "ssh_config").write_text("".join(config))
        (base / "known_hosts").write_text("".join(known))
        hosts_file = base / "hosts.txt"
        hosts_file.write_text("# the fleet\n" + "".join(f"{a} {roots[a]}\n" for a in TREES)
                              + f"gpu-down /nowhere  # switched off\ngpu-unknown {roots['gpu-1']}\n")
        home = base / "sgl-scan-home"

        def run(*args: str) -> subprocess.CompletedProcess:
            env = {**os.environ, "SGLSCAN_HOME": str(home), "HOME": str(base / "user-home")}
            return subprocess.run(
                [sys.executable, "-m", "sgl_scan", "fleet", "--hosts-file", str(hosts_file),
                 "--ssh-config", str(base / "ssh_config"), "--known-hosts", str(base / "known_hosts"),
                 "--connect-timeout", "20", *args],
                capture_output=True, text=True, env=env, timeout=600,
            )

        first = run("--format", "json", "--baseline-host", "gpu-1")
        yield {"run": run, "first": first, "base": base, "roots": roots}


def test_groups_identical_builds_and_reports_each_failed_host(fleet):
    result = fleet["first"]
    assert result.returncode == 1, result.stderr  # 0.5.11 and 0.5.20 carry error findings
    doc = json.loads(result.stdout)
    assert doc["kind"] == "sgl-scan/fleet" and doc["schema_version"] == 1
    hosts = {h["host"].split(" ")[0].split(":")[0]: h for h in doc["hosts"]}
    assert set(hosts) == {*TREES, "gpu-down", "gpu-unknown"}
    groups = {g["id"]: g for g in doc["groups"]}
    members = {frozenset(h.split(":")[0] for h in g["hosts"]) for g in groups.values()}
    assert members == {frozenset({"gpu-1", "gpu-2", "gpu-3", "gpu-8"}), frozenset({"gpu-4", "gpu-5"}),
                       frozenset({"gpu-6"}), frozenset({"gpu-7"})}
    assert doc["baseline_group"] == hosts["gpu-1"]["group"] == "G1"
    versions = {g["snapshot"]["sglang_version"] for g in groups.values()}
    assert versions == {"0.5.23", "0.5.20", "0.5.11"}
    assert hosts["gpu-down"]["status"] == "error" and hosts["gpu-down"]["group"] is None
    assert "refused" in hosts["gpu-down"]["error"], hosts["gpu-down"]["error"]
    assert hosts["gpu-unknown"]["status"] == "error"
    assert "is not known" in hosts["gpu-unknown"]["error"] and "\n" not in hosts["gpu-unknown"]["error"]


def test_patched_host_shows_its_patch_and_its_drift(fleet):
    doc = json.loads(fleet["first"].stdout)
    patched = next(g for g in doc["groups"] if any(h.startswith("gpu-7") for h in g["hosts"]))
    assert patched["patch_files"] == ["python/sglang/srt/speculative/spec_info.py"]
    assert patched["snapshot"]["git"]["dirty"] is True
    assert "DDTREE" in {a["name"] for a in patched["algorithms"]}
    drift = next(d for d in doc["diffs"] if d["group"] == patched["id"])
    assert drift["against"] == "G1"
    added = [(c["category"], c["key"]) for c in drift["diff"]["changes"] if c["status"] == "added"]
    assert ("algorithm", "DDTREE") in added
    baseline = next(g for g in doc["groups"] if g["id"] == "G1")
    assert baseline["patch_files"] == [] and "DDTREE" not in {a["name"] for a in baseline["algorithms"]}
    older = next(d for d in doc["diffs"] if d["group"] == doc["hosts"][5]["group"])  # gpu-6: 0.5.11
    assert older["diff"]["changes"], "0.5.11 differs from 0.5.23"


def test_rerun_reuses_snapshots_and_text_html_markdown_render(fleet):
    text = fleet["run"]("--format", "text")
    assert text.returncode == 1, text.stderr
    assert "10 hosts: 8 scanned, 2 failed; 4 distinct builds" in text.stdout
    assert text.stdout.count("unchanged") >= 8  # a no-change re-pull of every scanned host
    assert "Drift against G1" in text.stdout and "DDTREE" in text.stdout
    html_file = fleet["base"] / "fleet.html"
    html = fleet["run"]("-o", str(html_file))
    assert html.returncode == 1, html.stderr
    page = html_file.read_text()
    assert "Content-Security-Policy" in page and "<script" not in page
    assert page.count('<tr class="group-') == 8 and page.count('<tr class="failed">') == 2
    rendered = dump_dom(html_file, fleet["base"])
    assert rendered.console == ()  # nothing refused, nothing failed to load, no script ran
    assert Elements(rendered.dom).count("tr", "failed") == 2
    assert screenshot(html_file, fleet["base"], fleet["base"] / "fleet.png", width=1400, height=900) == (1400, 900)
    md = fleet["run"]("--format", "markdown", "--select", "SGL1")
    assert md.returncode == 0, md.stderr  # info findings only: nothing at --fail-on error
    assert "| `gpu-down" in md.stdout and "**Drift against G1**" in md.stdout


def test_fail_on_drift_and_no_host_scanned(fleet, tmp_path):
    drift = fleet["run"]("--format", "json", "--select", "SGL1", "--fail-on-drift")
    assert drift.returncode == 1
    same = fleet["run"]
    hosts = tmp_path / "two.txt"
    hosts.write_text(f"gpu-1 {fleet['roots']['gpu-1']}\ngpu-2 {fleet['roots']['gpu-2']}\n")
    env = {**os.environ, "SGLSCAN_HOME": str(fleet["base"] / "sgl-scan-home"), "HOME": str(tmp_path)}
    args = [sys.executable, "-m", "sgl_scan", "fleet", "--hosts-file", str(hosts), "--ssh-config",
            str(fleet["base"] / "ssh_config"), "--known-hosts", str(fleet["base"] / "known_hosts"),
            "--select", "SGL1", "--fail-on-drift"]
    clean = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert clean.returncode == 0, clean.stdout + clean.stderr  # identical hosts: one group, no drift
    down = tmp_path / "down.txt"
    down.write_text("gpu-down /nowhere\n")
    args[args.index(str(hosts))] = str(down)
    failed = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert failed.returncode == 3
    assert failed.stderr.strip().splitlines()[-1].startswith("sgl-scan: error: no host could be scanned")
    del same


def test_hosts_from_ssh_config_patterns(fleet, tmp_path):
    env = {**os.environ, "SGLSCAN_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "sgl_scan", "fleet", "--ssh-config-hosts", "gpu-[45]", "--ssh-config",
         str(fleet["base"] / "ssh_config"), "--known-hosts", str(fleet["base"] / "known_hosts"),
         "--remote-root", str(fleet["roots"]["gpu-4"]), "--format", "json", "--select", "SGL1"],
        capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [h["host"] for h in doc["hosts"]] == [f"gpu-4:{fleet['roots']['gpu-4']}", f"gpu-5:{fleet['roots']['gpu-4']}"]
    assert len(doc["groups"]) == 1
