"""The dispatch graph: algorithms -> dispatching functions -> workers, laid out without overlaps."""

from __future__ import annotations

import dataclasses
import itertools
import shutil
import sys
import xml.etree.ElementTree as ET

import pytest

from sgl_scan.analyzer.model import DispatchSite, Location
from sgl_scan.reports import render
from sgl_scan.reports.dispatch_graph import dispatch_view, layout, order_layers, to_svg
from tests.reports import fixtures as fx

CREATE = "sglang.srt.speculative.spec_info.SpeculativeAlgorithm.create_worker"


EAGLE_BRANCH = f"br:{CREATE}:predicate:is_eagle"
EAGLE_WORKER = "wk:sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2"


def test_view_has_three_layers_and_a_path_per_worker_branch():
    g, note = dispatch_view(fx.inventory())
    layers = {n: d["layer"] for n, d in g.nodes(data=True)}
    assert layers["alg:EAGLE"] == 0 and layers[EAGLE_BRANCH] == 1 and layers[EAGLE_WORKER] == 2
    assert g.nodes[EAGLE_BRANCH]["label"] == "create_worker · is_eagle"
    assert g.nodes[f"br:{CREATE}:member:SpeculativeAlgorithm.DFLASH"]["label"] == "create_worker · DFLASH"
    assert g.has_edge("alg:EAGLE3", EAGLE_BRANCH) and g.has_edge(EAGLE_BRANCH, EAGLE_WORKER)
    assert not g.has_edge("alg:NGRAM", EAGLE_BRANCH)
    assert g.nodes["fn:sglang.srt.managers.scheduler.Scheduler.__init__"]["kind"] == "site"
    assert list(g.successors("alg:NONE")) == []
    assert (note.functions_total, note.functions_drawn) == (4, 4)


def test_edges_to_a_branch_creating_another_worker_are_weak():
    inv = fx.inventory()
    algs = tuple(dataclasses.replace(a, worker="x.FrozenWorker") if a.name == "EAGLE3" else a for a in inv.algorithms)
    g, _ = dispatch_view(dataclasses.replace(inv, algorithms=algs))
    assert g["alg:EAGLE"][EAGLE_BRANCH]["strong"] is True
    assert g["alg:EAGLE3"][EAGLE_BRANCH]["strong"] is False
    # EAGLE3's own worker is reached through the place the analyzer says chooses it
    assert g.has_edge("alg:EAGLE3", "at:sglang/srt/speculative/spec_info.py:206")


def test_busy_functions_beyond_the_limit_are_left_out_but_counted():
    inv = fx.inventory()
    extra = tuple(
        DispatchSite(f"pkg.mod.f{i}", Location("sglang/srt/x.py", 10 * i), "predicate", "is_eagle", ("EAGLE",))
        for i in range(1, 31)
    )
    g, note = dispatch_view(dataclasses.replace(inv, dispatch_sites=inv.dispatch_sites + extra), max_other=5)
    assert (note.functions_total, note.functions_drawn) == (34, 6)
    assert EAGLE_BRANCH in g  # worker branches are always drawn
    assert sum(1 for _, d in g.nodes(data=True) if d["kind"] == "site") == 5


def test_an_algorithm_whose_worker_no_site_reaches_gets_its_choosing_place():
    inv = fx.inventory()
    sites = tuple(s for s in inv.dispatch_sites if s.detail != "is_ngram")
    g, _ = dispatch_view(dataclasses.replace(inv, dispatch_sites=sites))
    mid = "at:sglang/srt/speculative/spec_info.py:212"
    assert g.has_edge("alg:NGRAM", mid) and g.has_edge(mid, "wk:sglang.srt.speculative.ngram_worker.NGRAMWorker")


def _crossings(g, layers) -> int:
    pos = {n: i for layer in layers for i, n in enumerate(layer)}
    edges = list(g.edges())
    count = 0
    for (a, b), (c, d) in itertools.combinations(edges, 2):
        if g.nodes[a]["layer"] == g.nodes[c]["layer"]:
            if (pos[a] - pos[c]) * (pos[b] - pos[d]) < 0:
                count += 1
    return count


def test_ordering_reduces_crossings():
    g, _ = dispatch_view(fx.inventory())
    naive = [[n for n, d in g.nodes(data=True) if d["layer"] == i] for i in range(3)]
    assert _crossings(g, order_layers(g)) <= _crossings(g, naive)
    assert order_layers(g)[0] == naive[0]  # algorithms keep their source order


def test_layout_places_every_node_inside_the_canvas_without_overlaps():
    g, _ = dispatch_view(fx.inventory())
    drawing = layout(g)
    assert len(drawing.nodes) == g.number_of_nodes() and len(drawing.edges) == g.number_of_edges()
    for n in drawing.nodes:
        assert 0 <= n.x and n.x + n.width <= drawing.width and 0 <= n.y and n.y + n.height <= drawing.height
    for a, b in itertools.combinations(drawing.nodes, 2):
        overlap_x = a.x < b.x + b.width and b.x < a.x + a.width
        overlap_y = a.y < b.y + b.height and b.y < a.y + a.height
        assert not (overlap_x and overlap_y), (a.label, b.label)


def test_layout_and_html_report_need_no_numpy(monkeypatch):
    # The default install has no numpy (only the test/drafter/kernels extras bring it); networkx's
    # layouts import it lazily, so a layout that used them would fail here.
    monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` now raises ImportError
    g, _ = dispatch_view(fx.inventory())
    drawing = layout(g)
    by_id = {n.id: n for n in drawing.nodes}
    for layer in order_layers(g):  # one evenly spaced row per node, in crossing-reduced order
        ys = [by_id[n].y for n in layer]
        assert ys == sorted(ys) and len({round(b - a, 6) for a, b in zip(ys, ys[1:])}) <= 1
    svg, _ = to_svg(fx.inventory(), use_graphviz=False)
    assert ET.fromstring(svg) is not None
    assert "<svg" in render(fx.report(), "html")


def test_pure_python_svg_is_well_formed_and_escaped():
    inv = fx.inventory()
    odd = dataclasses.replace(inv.dispatch_sites[0], function="m.<Cls>.f&g")
    svg, _ = to_svg(dataclasses.replace(inv, dispatch_sites=(odd,) + inv.dispatch_sites[1:]), use_graphviz=False)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{ns}svg"
    labels = [t.text for t in root.iter(f"{ns}text")]
    titles = [t.text for t in root.iter(f"{ns}title")]
    assert "EAGLE3" in labels and "f&g · is_eagle" in labels
    assert any(t.startswith("m.<Cls>.f&g: branch on predicate is_eagle") for t in titles)


def test_empty_inventory_draws_an_empty_svg():
    inv = dataclasses.replace(fx.inventory(), algorithms=(), dispatch_sites=())
    svg, note = to_svg(inv, use_graphviz=False)
    assert ET.fromstring(svg) is not None and note.functions_total == 0


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot is not installed (the Python drawing is used)")
def test_graphviz_drawing_when_dot_is_installed():
    svg, _ = to_svg(fx.inventory(), use_graphviz=True)
    assert svg.startswith("<svg") and "EAGLEWorkerV2" in svg
    root = ET.fromstring(svg)
    links = {a.get("{http://www.w3.org/1999/xlink}href") or a.get("href") for a in root.iter("{http://www.w3.org/2000/svg}a")}
    assert "#site-sglang-srt-speculative-spec_info-py-200" in links


def test_each_algorithm_owns_its_paths():
    from sgl_scan.reports.dispatch_graph import algorithm_paths

    inv = fx.inventory()
    algs = tuple(dataclasses.replace(a, worker="x.FrozenWorker") if a.name == "STANDALONE" else a for a in inv.algorithms)
    g, _ = dispatch_view(dataclasses.replace(inv, algorithms=algs))
    nodes, edges = algorithm_paths(g)
    standalone_branch = f"br:{CREATE}:predicate:is_standalone"
    standalone_worker = "wk:sglang.srt.speculative.standalone_worker_v2.StandaloneWorkerV2"
    assert nodes["alg:EAGLE3"] == {"EAGLE3"}
    assert nodes[EAGLE_BRANCH] == nodes[EAGLE_WORKER] == {"EAGLE", "EAGLE3"}
    assert edges[("alg:EAGLE", EAGLE_BRANCH)] == {"EAGLE"} and edges[(EAGLE_BRANCH, EAGLE_WORKER)] == {"EAGLE", "EAGLE3"}
    assert nodes["fn:sglang.srt.managers.scheduler.Scheduler.__init__"] == {"DFLASH", "EAGLE", "EAGLE3", "STANDALONE", "NGRAM"}
    # STANDALONE's own worker is chosen elsewhere: its weak edge reaches the branch, not the branch's worker
    assert "STANDALONE" in nodes[standalone_branch] and edges[("alg:STANDALONE", standalone_branch)] == {"STANDALONE"}
    assert edges[(standalone_branch, standalone_worker)] == set() and nodes[standalone_worker] == set()
    assert nodes["alg:NONE"] == {"NONE"} and all("NONE" not in v for k, v in edges.items())


def test_svg_shapes_carry_the_classes_of_their_algorithms():
    inv = fx.inventory()
    classes = {a.name: f"a-{i}" for i, a in enumerate(inv.algorithms)}
    svg, _ = to_svg(inv, use_graphviz=False, algorithm_class=classes)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    by_title = {el.find(f"{ns}title").text: set(el.get("class").split())
                for el in root.iter() if el.get("class", "").split()[:1] in (["node"], ["edge"])}
    eagle3 = classes["EAGLE3"]
    assert eagle3 in by_title["EAGLE3 -> create_worker · is_eagle: is_eagle"]
    assert eagle3 in by_title["create_worker · is_eagle -> EAGLEWorkerV2: creates if not server_args.enable_multi_layer_eagle"]
    assert eagle3 not in by_title["EAGLE -> create_worker · is_eagle: is_eagle"]
    assert by_title["sglang.srt.speculative.ngram_worker.NGRAMWorker"] == {"node", "node-worker", classes["NGRAM"]}
    # every edge's classes match the algorithms of its own endpoints (the template pairs them by order)
    g, _ = dispatch_view(inv)
    from sgl_scan.reports.dispatch_graph import algorithm_paths

    _, edges = algorithm_paths(g)
    for (u, v), names in edges.items():
        title = next(t for t in by_title if t.startswith(f"{g.nodes[u]['label']} -> {g.nodes[v]['label']}:"))
        assert {c for c in by_title[title] if c.startswith("a-")} == {classes[n] for n in names}, title
    plain, _ = to_svg(inv, use_graphviz=False)
    assert " a-" not in plain  # without classes the drawing is as before
