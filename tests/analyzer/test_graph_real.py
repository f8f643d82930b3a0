"""The graph of the real sglang 0.5.23 tree; expectations written from reading its source."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sgl_scan.analyzer.pipeline import analyze_tree
from tests.support.releases import cache_root

pytestmark = pytest.mark.slow

SPEC_INFO = "sglang/srt/speculative/spec_info.py"
ALGO = "sglang.srt.speculative.spec_info.SpeculativeAlgorithm"
DFLASH_WORKER = "sglang.srt.speculative.dflash_worker_v2.DFlashWorkerV2"


@pytest.fixture(scope="module")
def analysis(sglang_0_5_23):
    # the same facts cache as the rules' real-release tests: whichever runs first pays for parsing
    return analyze_tree(sglang_0_5_23, snapshot_id="pypi-0.5.23", sglang_version="0.5.23",
                        cache_dir=cache_root() / "facts-cache", jobs=2)


def _edges(g, source, kind):
    return {(v, d.get("path"), d.get("line")) for _, v, d in g.out_edges(source, data=True) if d["kind"] == kind}


def test_no_parse_errors_and_every_file(analysis, sglang_0_5_23):
    assert analysis.parse_errors == ()
    assert len(analysis.files) == len(list(sglang_0_5_23.rglob("*.py")))  # sglang/srt plus version.py, __init__.py


def test_worker_class_definitions_and_inheritance(analysis):
    g = analysis.graph
    # class DFlashWorkerV2(BaseSpecWorker): at line 378; BaseSpecWorker(ABC) at line 152
    assert g.nodes[DFLASH_WORKER] == {"kind": "class", "path": "sglang/srt/speculative/dflash_worker_v2.py", "line": 378}
    assert _edges(g, DFLASH_WORKER, "inherits") == {
        ("sglang.srt.speculative.base_spec_worker.BaseSpecWorker", "sglang/srt/speculative/dflash_worker_v2.py", 378)}
    assert g.nodes["sglang.srt.speculative.base_spec_worker.BaseSpecWorker"]["line"] == 152
    assert ("sglang.srt.speculative.dflash_worker_v2", DFLASH_WORKER) in {
        (u, v) for u, v, k in g.in_edges(DFLASH_WORKER, data="kind") if k == "defines"}
    # line 58: from sglang.srt.speculative.base_spec_worker import BaseSpecWorker
    assert ("sglang.srt.speculative.base_spec_worker.BaseSpecWorker", "sglang/srt/speculative/dflash_worker_v2.py", 58) in \
        _edges(g, "sglang.srt.speculative.dflash_worker_v2", "imports")


def test_calls_inside_create_worker(analysis):
    # create_worker: `platform_worker_cls = self.get_platform_worker_cls()` on line 320
    calls = _edges(analysis.graph, f"{ALGO}.create_worker", "calls")
    assert (f"{ALGO}.get_platform_worker_cls", SPEC_INFO, 320) in calls


def test_spec_edges(analysis):
    g = analysis.graph
    # create_worker: `if self.is_dflash(): ... return DFlashWorkerV2` (lines 324-329)
    created = _edges(g, "algorithm:DFLASH", "creates_worker")
    assert {v for v, _, _ in created} == {DFLASH_WORKER}
    assert all(path == SPEC_INFO and 324 <= line <= 329 for _, path, line in created)
    # scheduler.py:1231 `is_dflash_family=self.spec_algorithm.is_dflash_family()` in Scheduler.init_model_worker;
    # is_dflash_family is true for DFLASH and DSPARK
    sched = "sglang.srt.managers.scheduler.Scheduler.init_model_worker"
    targets = {v for v, path, line in _edges(g, sched, "dispatches_on") if line == 1231}
    assert targets == {"algorithm:DFLASH", "algorithm:DSPARK"}
    # the option is the annotated config field `speculative_algorithm` (arg_groups/fields/spec.py:31)
    option = "option:--speculative-algorithm"
    assert (g.nodes[option]["path"], g.nodes[option]["line"]) == ("sglang/srt/arg_groups/fields/spec.py", 31)
    assert (option, "sglang/srt/arg_groups/fields/spec.py", 31) in _edges(g, "algorithm:EAGLE", "configured_by")


def test_graph_cli_dispatch_and_focus(analysis, sglang_0_5_23, tmp_path, monkeypatch, capsys):
    from sgl_scan.cli import cli, main

    home = tmp_path / "home"
    home.mkdir()
    (home / "facts").symlink_to(cache_root() / "facts-cache")  # reuse the facts parsed above
    monkeypatch.setenv("SGLSCAN_HOME", str(home))
    runner = CliRunner()
    result = runner.invoke(cli, ["graph", "--path", str(sglang_0_5_23 / "sglang"), "--scope", "full",
                                 "--dispatch", "dflash"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()  # stderr says what the pull did
    assert lines.pop(0).startswith("tree: SGLang 0.5.23, snapshot ")  # the tree it answered about
    assert lines[0].startswith(f"DFLASH: defined at {SPEC_INFO}:39; creates {DFLASH_WORKER}")
    assert any(line.startswith("  sglang/srt/managers/scheduler.py:1231  " + "sglang.srt.managers.scheduler.Scheduler"
                               ".init_model_worker  [predicate: is_dflash_family]") for line in lines)
    out = tmp_path / "g.dot"
    result = runner.invoke(cli, ["graph", "--path", str(sglang_0_5_23 / "sglang"), "--scope", "full",
                                 "--focus", "DFLASH", "--depth", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    dot = out.read_text()
    assert f'"algorithm:DFLASH" -> "{DFLASH_WORKER}" [label="creates_worker"];' in dot
    with pytest.raises(SystemExit) as exited:  # through main(): one line and exit status 2
        main(["graph", "--path", str(sglang_0_5_23 / "sglang"), "--scope", "full", "--dispatch", "DDTREE"])
    assert exited.value.code == 2
    assert "no speculative algorithm 'DDTREE'" in capsys.readouterr().err


def test_graph_cli_like_and_negated_sides(analysis, sglang_0_5_23, tmp_path, monkeypatch):
    """`graph --dispatch NEW --like BASE`: the tests where a new algorithm claiming DFLASH's family
    predicates goes another way than DFLASH (read from the 0.5.23 source); and `--dispatch` shows on
    which side an algorithm reaches a test (issue 18, case 2: overlap_utils.py:447 raises for DFLASH)."""
    from sgl_scan.cli import cli

    home = tmp_path / "home"
    home.mkdir()
    (home / "facts").symlink_to(cache_root() / "facts-cache")
    monkeypatch.setenv("SGLSCAN_HOME", str(home))
    runner = CliRunner()
    base = ["graph", "--path", str(sglang_0_5_23 / "sglang"), "--scope", "full"]
    result = runner.invoke(cli, [*base, "--dispatch", "DDTREE", "--like", "DFLASH",
                                 "--claims", "is_dflash,is_dflash_family,is_some,is_speculative"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()  # stderr holds the pull's own line
    assert lines.pop(0).startswith("tree: SGLang 0.5.23, snapshot ")  # the tree it answered about
    # claims add to what the definitions say of a new member (is_some, is_speculative, has_draft_kv: `!= NONE`,
    # `not is_ngram()`), and the predicates defined through a claimed one follow it
    assert lines[0] == ("DDTREE like DFLASH: predicates true for DDTREE: is_some (--claims), is_speculative (--claims), "
                        "is_dflash (--claims), is_dflash_family (--claims), supports_target_verify_for_draft (definition), "
                        "supports_prefill_shared_read_done (definition), supports_grammar_overlap (definition), "
                        "has_draft_kv (definition)")

    def line(at):
        return next(x for x in lines if x.startswith(f"  sglang/srt/{at}  "))

    # `in ("STANDALONE", "DFLASH", "DSPARK"): return False`: DFLASH returns, DDTREE goes on
    assert line("speculative/spec_utils.py:412").endswith("DFLASH: true side; DDTREE: false side")
    # `not in ("EAGLE", "EAGLE3", "DFLASH", "DSPARK"): raise`: the raise is for DDTREE only
    assert line("arg_groups/speculative_hook.py:176").endswith("DFLASH: false side; DDTREE: true side")
    # is_dflash() tests: DDTREE claims it, so they are no difference
    assert not any("[predicate: is_dflash]" in x for x in lines)
    assert "further test(s) DFLASH reaches are never reached by DDTREE" in result.output

    dflash = runner.invoke(cli, [*base, "--dispatch", "DFLASH"]).output
    eagle = runner.invoke(cli, [*base, "--dispatch", "EAGLE"]).output
    at_447 = "sglang/srt/managers/overlap_utils.py:447  "
    assert f"{at_447}sglang.srt.managers.overlap_utils.FutureMap.make_staged_spec_input  [predicate: is_eagle, negated" \
        in dflash and at_447 not in eagle
    # no claims: the definitions alone (a new member is none of the existing ones)
    plain = runner.invoke(cli, [*base, "--dispatch", "DDTREE", "--like", "DFLASH"])
    assert plain.exit_code == 0 and "is_some (definition), is_speculative (definition)" in plain.stdout
    assert runner.invoke(cli, [*base, "--dispatch", "DDTREE", "--like", "DFLASH", "--claims", "is_dflash=maybe"]).exit_code == 2
