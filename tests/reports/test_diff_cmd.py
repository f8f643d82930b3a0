"""`sgl-scan diff A B`: reference syntax, wiring, formats, exit codes; a real-release comparison."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from sgl_scan.cli import cli
from sgl_scan.cli.diff_cmd import parse_ref

BEFORE = """\
from enum import IntEnum, auto


class SpeculativeAlgorithm(IntEnum):
    NONE = auto()
    EAGLE = auto()

    def is_none(self):
        return self == SpeculativeAlgorithm.NONE

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE
"""

AFTER = """\
from enum import IntEnum, auto


class SpeculativeAlgorithm(IntEnum):
    NONE = auto()
    EAGLE = auto()
    DDTREE = auto()

    def is_none(self):
        return self == SpeculativeAlgorithm.NONE

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE or self == SpeculativeAlgorithm.DDTREE

    def is_ddtree(self):
        return self == SpeculativeAlgorithm.DDTREE
"""



def _given(params: dict) -> dict:
    return {k: v for k, v in params.items() if v is not None}


@pytest.mark.parametrize(
    "ref, expected",
    [
        ("pip:sglang==0.5.20", {"pip_spec": "sglang==0.5.20"}),
        ("pip:0.5.20", {"pip_spec": "sglang==0.5.20"}),
        ("pip:sglang>=0.5", {"pip_spec": "sglang>=0.5"}),
        ("snapshot:latest", {"snapshot_ref": "latest"}),
        ("path:/srv/sglang/python", {"local_path": "/srv/sglang/python"}),
        ("git:https://github.com/sgl-project/sglang.git@v0.5.23",
         {"git_repo": "https://github.com/sgl-project/sglang.git", "rev": "v0.5.23"}),
        ("git:git@github.com:sgl-project/sglang.git", {"git_repo": "git@github.com:sgl-project/sglang.git"}),
        ("git:git@github.com:org/sglang.git@main", {"git_repo": "git@github.com:org/sglang.git", "rev": "main"}),
        ("git:/repos/sglang", {"git_repo": "/repos/sglang"}),
        ("ssh:gpu-box", {"host": "gpu-box"}),
        ("ssh:root@gpu-box:/root/sglang/python/sglang",
         {"host": "gpu-box", "user": "root", "remote_root": "/root/sglang/python/sglang"}),
        ("ssh:root@127.0.0.1:2222:/opt/sglang", {"host": "127.0.0.1", "user": "root", "port": 2222, "remote_root": "/opt/sglang"}),
        ("20261129T120000Z-ssh-3f2a", {"snapshot_ref": "20261129T120000Z-ssh-3f2a"}),
    ],
)
def test_parse_ref(ref, expected):
    assert _given(parse_ref(ref)) == expected


def test_a_bare_existing_folder_is_a_path(tmp_path):
    assert _given(parse_ref(str(tmp_path))) == {"local_path": str(tmp_path)}


@pytest.mark.parametrize("ref", ["pip:", "ssh:root@:/x", "ssh:gpu-box:22x:/root"])
def test_bad_references_are_usage_errors(ref):
    with pytest.raises(click.BadParameter):
        parse_ref(ref)


@pytest.fixture()
def trees(tmp_path):
    out = []
    for name, text in (("a", BEFORE), ("b", AFTER)):
        spec = tmp_path / name / "sglang" / "srt" / "speculative"
        spec.mkdir(parents=True)
        (spec / "spec_info.py").write_text(text)
        out.append(f"path:{tmp_path / name}")
    return out


def test_diff_json_reports_the_added_algorithm(trees):
    result = CliRunner().invoke(cli, ["diff", *trees, "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    changes = {(c["category"], c["status"], c["key"]) for c in doc["changes"]}
    assert ("algorithm", "added", "DDTREE") in changes
    assert ("predicate", "added", "is_ddtree") in changes
    eagle = next(c for c in doc["changes"] if c["key"] == "is_eagle")
    assert eagle["status"] == "changed" and eagle["details"] == ["members +DDTREE"]
    assert doc["a"]["label"] == trees[0] and doc["b"]["label"] == trees[1]


def test_same_tree_twice_is_empty_and_exit_0(trees):
    result = CliRunner().invoke(cli, ["diff", trees[0], trees[0], "--fail-on", "info"])
    assert result.exit_code == 0, result.output
    assert "No differences in the inventory or the findings." in result.stdout


def test_fail_on_new_findings_and_format_from_output_name(trees, tmp_path):
    out = tmp_path / "diff.md"
    result = CliRunner().invoke(cli, ["diff", *trees, "--fail-on", "info", "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert out.read_text().startswith(f"### sgl-scan diff: {trees[0]} → {trees[1]}")


def test_installed_entry_point_prints_only_the_report(trees):
    exe = shutil.which("sgl-scan") or pytest.skip("sgl-scan entry point not installed")
    env = dict(os.environ)
    result = subprocess.run([exe, "diff", *trees, "--format", "sarif"], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    # not a TTY: no progress; only what each side's pull did
    assert [line.split(": ", 2)[:2] for line in result.stderr.splitlines()] == [["sgl-scan", "A"], ["sgl-scan", "B"]]
    assert "\r" not in result.stderr and " pulled " in result.stderr
    doc = json.loads(result.stdout)
    assert doc["version"] == "2.1.0"
    states = {r["baselineState"] for r in doc["runs"][0]["results"]}
    assert states == {"new"}  # the new algorithm's findings


def test_usage_error_exits_2_without_traceback():
    result = subprocess.run([sys.executable, "-m", "sgl_scan", "diff", "pip:", "snapshot:latest"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "nothing after pip:" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_real_releases_0_4_6_to_0_5_23(sglang_0_4_6, sglang_0_5_23, real_report_0_5_23, reports_home, monkeypatch):
    """Expectations read from the two releases' sources (spec_info.py, server_args.py, llama_eagle3.py)."""
    monkeypatch.setenv("SGLSCAN_HOME", str(reports_home))  # 0.5.23's facts are already cached there
    result = CliRunner().invoke(cli, ["diff", f"path:{sglang_0_4_6}", f"path:{sglang_0_5_23}", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    by = {}
    for c in doc["changes"]:
        by.setdefault((c["category"], c["status"]), set()).add(c["key"])
    # 0.4.6: NONE, EAGLE, EAGLE3 in an IntEnum; 0.5.23: nine members of an Enum
    assert by[("algorithm", "added")] == {"DFLASH", "UNO", "DSPARK", "FROZEN_KV_MTP", "STANDALONE", "NGRAM"}
    assert ("algorithm", "removed") not in by
    [cls] = [c for c in doc["changes"] if c["category"] == "algorithm_class"]
    assert cls["status"] == "changed" and "form IntEnum -> Enum" in cls["details"]
    [is_eagle] = [c for c in doc["changes"] if c["category"] == "predicate" and c["key"] == "is_eagle"]
    assert is_eagle["details"] == ["members +FROZEN_KV_MTP"]
    # --speculative-algorithm: an argparse argument with choices in 0.4.6, a config field in 0.5.23
    [option] = [c for c in doc["changes"] if c["category"] == "algorithm_option"]
    assert option["before"]["path"] == "sglang/srt/server_args.py"
    assert option["after"]["path"] == "sglang/srt/arg_groups/fields/spec.py"
    # the offset conversion in LlamaForCausalLMEagle3.load_weights moved from line 184 to 352: matched, not re-added
    assert not any(c["category"] == "d2t_site" and "LlamaForCausalLMEagle3.load_weights" in c["key"]
                   and "offset_conversion" in c["key"] for c in doc["changes"])
    assert any(c["category"] == "d2t_site" and c["status"] == "added" and "kimi_k25_eagle3" in c["key"]
               for c in doc["changes"])
    assert doc["summary"]["shifted"] > 0


def test_progress_goes_to_a_terminal_on_stderr_only(trees):
    """With stderr on a pseudo-terminal the progress line shows there; stdout still holds only the report."""
    import pty

    exe = shutil.which("sgl-scan") or pytest.skip("sgl-scan entry point not installed")
    master, slave = pty.openpty()
    try:
        result = subprocess.run([exe, "diff", *trees, "--format", "json"], stdout=subprocess.PIPE, stderr=slave,
                                timeout=300)
        os.close(slave)
        seen = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
    assert result.returncode == 0
    assert b"sgl-scan diff: A: obtaining path:" in seen and b"sgl-scan diff: B:" in seen
    assert json.loads(result.stdout)["kind"] == "sgl-scan/diff"


@pytest.mark.slow
def test_patched_remote_build_against_upstream(trees, sshd_server, tmp_path):
    """The typical use: a patched tree on a host reached over SSH (a private loopback sshd here)
    against the upstream tree it came from."""
    remote_root = trees[1].removeprefix("path:") + "/sglang"
    ref = f"ssh:{sshd_server.user}@{sshd_server.host}:{sshd_server.port}:{remote_root}"
    result = CliRunner().invoke(cli, [
        "diff", trees[0], ref, "--format", "json",
        "--identity", str(sshd_server.client_key), "--known-hosts", str(sshd_server.known_hosts),
    ])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["b"]["label"] == ref
    assert ("algorithm", "added", "DDTREE") in {(c["category"], c["status"], c["key"]) for c in doc["changes"]}
