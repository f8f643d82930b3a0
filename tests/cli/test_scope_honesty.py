"""Default-scope answers say what they cover, and the default scope takes every file that registers
or dispatches on an algorithm (issue 18, case 7). Expectations read from sglang 0.5.23's source."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from sgl_scan.cli import cli
from tests.support.releases import cache_root

pytestmark = pytest.mark.slow

PARTIAL = "run with --scope full for all"
# Sites that branch on EAGLE outside srt/speculative/ and srt/managers/, which the default scope missed:
OUTSIDE = {
    "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py",  # self.model_runner.spec_algorithm.is_eagle()
    "sglang/srt/mem_cache/kv_cache_configurator.py",
    "sglang/srt/model_executor/pool_configurator.py",
    "sglang/srt/disaggregation/prefill.py",
    "sglang/srt/layers/layer_boundary/exit.py",  # :171 plan._speculative_algo.is_eagle()
}
PLUGIN = '''from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


@SpeculativeAlgorithm.register("DDTREE", supports_overlap=False)
def _ddtree_factory(server_args):
    from sglang.srt.speculative.ddtree_worker import DDTreeWorker

    return DDTreeWorker
'''


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "facts").symlink_to(cache_root() / "facts-cache")  # per-file facts shared with the real-release tests
    monkeypatch.setenv("SGLSCAN_HOME", str(home))
    return home


def _run(*args) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def test_graph_dispatch_in_the_default_scope_reads_every_dispatching_file_and_says_so(home, sglang_0_5_23):
    text = _run("graph", "--path", str(sglang_0_5_23 / "sglang"), "--dispatch", "EAGLE")
    lines = text.splitlines()
    [count] = [line for line in lines if "site(s) branch on EAGLE" in line]
    assert count.endswith(f"in the speculative scope; {PARTIAL}:")
    assert lines[-1].startswith("  (speculative scope (") and lines[-1].endswith(f"{PARTIAL})")
    listed = {line.split(":", 1)[0].strip() for line in lines if line.startswith("  sglang/")}
    assert OUTSIDE <= listed
    assert any(line.startswith("  sglang/srt/layers/layer_boundary/exit.py:171  sglang.srt.layers.layer_boundary.exit."
                               "_sum_deferral_allowed  [predicate: is_eagle]  side: ") for line in lines)
    doc = json.loads(_run("graph", "--path", str(sglang_0_5_23 / "sglang"), "--format", "json", "--focus", "EAGLE"))
    assert doc["scope"]["name"] == "speculative" and doc["scope"]["complete"] is False
    assert PARTIAL in doc["scope"]["note"]


def test_scan_and_diff_state_the_scope_in_text_and_json(home, sglang_0_5_23):
    tree = str(sglang_0_5_23 / "sglang")
    text = _run("scan", "--path", tree)
    assert text.rstrip().splitlines()[-1].endswith(PARTIAL)
    doc = json.loads(_run("scan", "--path", tree, "--format", "json"))
    assert doc["scope"] == {"name": "speculative", "complete": False, "files": doc["snapshot"]["file_count"],
                            "note": doc["scope"]["note"]}
    assert PARTIAL in doc["scope"]["note"]
    paths = {s["location"]["path"] for s in doc["inventory"]["dispatch_sites"]}
    assert OUTSIDE <= paths
    assert _run("diff", f"path:{tree}", f"path:{tree}").rstrip().splitlines()[-1].endswith(PARTIAL)
    diff = json.loads(_run("diff", f"path:{tree}", f"path:{tree}", "--format", "json"))
    assert diff["scope"]["complete"] is False and diff["b"]["scope"]["name"] == "speculative"


def test_a_registered_plugin_in_srt_plugins_is_taken_by_default(home, sglang_0_5_23, tmp_path):
    tree = tmp_path / "sglang"
    shutil.copytree(sglang_0_5_23 / "sglang", tree, copy_function=os.link)
    (tree / "srt/plugins/ddtree_plugin.py").write_text(PLUGIN, encoding="utf-8")
    doc = json.loads(_run("scan", "--path", str(tree), "--format", "json"))
    [ddtree] = [a for a in doc["inventory"]["algorithms"] if a["name"] == "DDTREE"]
    assert ddtree["location"]["path"] == "sglang/srt/plugins/ddtree_plugin.py"
    assert ddtree["location"]["line"] == 4


def test_help_does_not_promise_every_site():
    result = CliRunner().invoke(cli, ["graph", "--help"])
    assert result.exit_code == 0
    assert "every site" not in result.output and "scope" in result.output
