"""The program graph: structure on a small synthetic tree, exports and focus, dispatch listing."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import networkx as nx
import pytest

from sgl_scan.analyzer.graph import build_graph
from sgl_scan.analyzer.graph_views import FocusError, dispatch_listing, focus, format_dispatch, render
from sgl_scan.analyzer.model import Algorithm, ChoiceHook, DispatchSite, Location, SpecInventory
from sgl_scan.analyzer.pipeline import collect_facts, empty_inventory

FILES = {
    "sglang/srt/spec/__init__.py": "from .impl import Worker as Worker\n",
    "sglang/srt/spec/impl.py": """\
        class Worker:
            def run(self):
                return self.step()

            def step(self):
                return helper()


        def helper():
            return 1
        """,
    "sglang/srt/user.py": """\
        import sglang.srt.spec.impl as impl
        from sglang.srt.spec import Worker
        from torch import nn


        class Sub(Worker, nn.Module):
            def go(self):
                def inner():
                    return impl.helper()
                return Worker().run(), inner()


        def make(algo):
            if algo.is_eagle():
                return Sub()
            return None
        """,
}


@pytest.fixture
def facts(tmp_path):
    root = tmp_path / "tree"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return collect_facts(root, use_cache=False, jobs=1).files


def _loc(path: str, line: int) -> Location:
    return Location(path, line)


@pytest.fixture
def inventory():
    algos = (
        Algorithm("NONE", "enum", _loc("sglang/srt/spec/impl.py", 1), (), None),
        Algorithm("EAGLE", "enum", _loc("sglang/srt/spec/impl.py", 1), ("is_eagle",), "sglang.srt.spec.Worker",
                  _loc("sglang/srt/user.py", 15)),
    )
    site = DispatchSite("sglang.srt.user.make", _loc("sglang/srt/user.py", 14), "predicate", "is_eagle", ("EAGLE",),
                        "sglang.srt.user.Sub")
    option = ChoiceHook("--speculative-algorithm", "argument", None, True, _loc("sglang/srt/user.py", 13),
                        ("EAGLE", "NEXTN"))
    return SpecInventory(algorithm_class=None, algorithms=algos, predicates=(), dispatch_sites=(site,),
                         choice_hooks=(option,), algorithm_option=option, d2t_sites=(), aliases={"NEXTN": "EAGLE"})


def _edges(g: nx.MultiDiGraph, kind: str) -> set[tuple[str, str]]:
    return {(u, v) for u, v, k in g.edges(data="kind") if k == kind}


def test_definitions_imports_inheritance_calls(facts):
    g = build_graph(facts, empty_inventory())
    assert g.nodes["sglang.srt.spec.impl.Worker"] == {"kind": "class", "path": "sglang/srt/spec/impl.py", "line": 1}
    assert g.nodes["sglang.srt.user.Sub.go.<locals>.inner"]["kind"] == "function"
    assert g.nodes["torch.nn.Module"]["kind"] == "external"
    assert _edges(g, "defines") >= {
        ("sglang.srt.spec.impl", "sglang.srt.spec.impl.Worker"),
        ("sglang.srt.spec.impl.Worker", "sglang.srt.spec.impl.Worker.run"),
        ("sglang.srt.user.Sub.go", "sglang.srt.user.Sub.go.<locals>.inner"),
    }
    # the re-export in spec/__init__.py is followed to the defining module
    assert _edges(g, "inherits") == {
        ("sglang.srt.user.Sub", "sglang.srt.spec.impl.Worker"), ("sglang.srt.user.Sub", "torch.nn.Module")}
    assert ("sglang.srt.user", "sglang.srt.spec.impl.Worker") in _edges(g, "imports")
    assert ("sglang.srt.user", "sglang.srt.spec.impl") in _edges(g, "imports")
    assert ("sglang.srt.user", "torch.nn") in _edges(g, "imports")
    assert _edges(g, "calls") == {
        ("sglang.srt.spec.impl.Worker.run", "sglang.srt.spec.impl.Worker.step"),
        ("sglang.srt.spec.impl.Worker.step", "sglang.srt.spec.impl.helper"),
        ("sglang.srt.user.Sub.go.<locals>.inner", "sglang.srt.spec.impl.helper"),
        ("sglang.srt.user.Sub.go", "sglang.srt.spec.impl.Worker"),
        ("sglang.srt.user.make", "sglang.srt.user.Sub"),
    }
    call = next(d for u, v, d in g.edges(data=True) if d["kind"] == "calls" and u.endswith("make"))
    assert (call["path"], call["line"]) == ("sglang/srt/user.py", 15)


def test_spec_layer(facts, inventory):
    g = build_graph(facts, inventory)
    assert g.nodes["algorithm:EAGLE"]["kind"] == "algorithm"
    assert _edges(g, "creates_worker") == {("algorithm:EAGLE", "sglang.srt.spec.impl.Worker")}
    assert _edges(g, "dispatches_on") == {("sglang.srt.user.make", "algorithm:EAGLE")}
    site = next(d for _, _, d in g.edges(data=True) if d["kind"] == "dispatches_on")
    assert (site["line"], site["via"], site["detail"], site["worker"]) == (14, "predicate", "is_eagle", "sglang.srt.user.Sub")
    # choices EAGLE and NEXTN (an alias of EAGLE): NONE is not selectable
    assert _edges(g, "configured_by") == {("algorithm:EAGLE", "option:--speculative-algorithm")}


def test_focus_keeps_the_neighbourhood(facts, inventory):
    g = build_graph(facts, inventory)
    one = focus(g, "eagle", depth=1)
    assert set(one) == {"algorithm:EAGLE", "sglang.srt.spec.impl.Worker", "sglang.srt.user.make",
                        "option:--speculative-algorithm"}
    two = focus(g, "EAGLE", depth=2)
    assert "sglang.srt.user.Sub" in two and "sglang.srt.spec.impl.Worker.run" in two
    by_suffix = focus(g, "Worker.step", depth=0)
    assert set(by_suffix) == {"sglang.srt.spec.impl.Worker.step"}
    with pytest.raises(FocusError):
        focus(g, "NoSuchThing")


def test_exports_parse_back(facts, inventory):
    g = focus(build_graph(facts, inventory), "EAGLE", depth=1)
    data = json.loads(render(g, "json"))
    assert {n["id"] for n in data["nodes"]} == set(g)
    assert {(e["source"], e["target"], e["kind"]) for e in data["edges"]} == {
        (u, v, k) for u, v, k in g.edges(data="kind")}
    back = nx.parse_graphml(render(g, "graphml"))
    assert set(back) == set(g) and back.number_of_edges() == g.number_of_edges()
    dot = render(g, "dot")
    assert dot.startswith("digraph") and '"algorithm:EAGLE" -> "sglang.srt.spec.impl.Worker" [label="creates_worker"];' in dot


def test_dispatch_listing(inventory):
    listing = dispatch_listing(inventory, "eagle")
    assert [s.location.line for s in listing.sites] == [14]
    lines = list(format_dispatch(listing))
    assert lines[0].startswith("EAGLE: defined at sglang/srt/spec/impl.py:1; creates sglang.srt.spec.Worker")
    assert lines[-1] == "  sglang/srt/user.py:14  sglang.srt.user.make  [predicate: is_eagle] -> creates sglang.srt.user.Sub"
    with pytest.raises(FocusError, match="NONE, EAGLE"):
        dispatch_listing(inventory, "DDTREE")


def test_unparsable_file_is_left_out_of_the_graph(tmp_path):
    root = tmp_path / "tree"
    (root / "sglang/srt").mkdir(parents=True)
    (root / "sglang/srt/ok.py").write_text("def f():\n    pass\n")
    (root / "sglang/srt/bad.py").write_bytes(b"def f(:\n")
    files = collect_facts(root, use_cache=False, jobs=1).files
    g = build_graph(files, empty_inventory())
    assert "sglang.srt.ok.f" in g and "sglang.srt.bad" not in g
