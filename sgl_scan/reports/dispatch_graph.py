"""The dispatch picture: algorithms -> dispatch sites (by enclosing function) -> worker classes.

`dispatch_view` builds a three-layer networkx graph from the inventory; `layout` orders each layer
to reduce crossings (barycentre sweeps) and places each layer as a column of evenly spaced rows
(plain arithmetic: the default install has no numpy, which networkx's own layouts need);
`to_svg` draws it as inline SVG, through Graphviz `dot` when installed, else in pure Python.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

import networkx as nx

from sgl_scan.analyzer.model import SpecInventory
from sgl_scan.reports.common import function_label, loc_key, short_name

LAYERS = ("algorithm", "site", "worker")  # the middle layer holds "branch" and "site" nodes
# Functions that choose no worker are drawn only up to this many (busiest first), so the picture
# stays readable; the HTML tables list every site.
MAX_OTHER_FUNCTIONS = 10


@dataclass(frozen=True)
class GraphNote:
    functions_total: int
    functions_drawn: int


def _branch_label(function: str, via: str, detail: str) -> str:
    """`create_worker · is_eagle`: the function's own name and what the branch tests."""
    test = detail.rsplit(".", 1)[-1] if via == "member" else detail
    return f"{function.rsplit('.', 1)[-1]} · {test}"


def dispatch_view(inventory: SpecInventory, max_other: int = MAX_OTHER_FUNCTIONS) -> tuple[nx.DiGraph, GraphNote]:
    """The graph to draw and a note on how many dispatching functions it leaves out.

    Middle layer: first every branch that creates a worker (one node per function and test), then
    the busiest functions that dispatch without creating a worker. An edge is *strong* when it lies
    on the path from an algorithm to the worker the analyzer resolved for it.
    """
    g = nx.DiGraph()
    worker_of = {a.name: a.worker for a in inventory.algorithms}
    for a in inventory.algorithms:
        g.add_node(
            f"alg:{a.name}",
            layer=0,
            group=0,
            label=a.name,
            kind="algorithm",
            title=f"{a.name} ({a.kind}) at {a.location}",
        )

    ordered = sorted(inventory.dispatch_sites, key=lambda s: loc_key(s.location))
    per_function: dict[str, list] = {}
    branches: dict[tuple[str, str, str], list] = {}
    for site in ordered:
        per_function.setdefault(site.function, []).append(site)
        if site.worker:
            branches.setdefault((site.function, site.via, site.detail), []).append(site)

    for (fn, via, detail), sites in branches.items():
        node = f"br:{fn}:{via}:{detail}"
        lines = ", ".join(str(s.location.line) for s in sites)
        g.add_node(
            node,
            layer=1,
            group=0,
            label=_branch_label(fn, via, detail),
            kind="branch",
            title=f"{fn}: branch on {via} {detail} ({sites[0].location.path} line {lines})",
            anchor=str(sites[0].location),
        )
        branch_workers = {s.worker for s in sites}
        for site in sites:
            worker = f"wk:{site.worker}"
            g.add_node(worker, layer=2, group=0, label=short_name(site.worker), kind="worker", title=site.worker)
            _add_edge(g, node, worker, _creates_label(inventory, site), strong=True)
            for alg in site.algorithms:
                if alg in worker_of:
                    strong = worker_of[alg] is None or worker_of[alg] in branch_workers
                    _add_edge(g, f"alg:{alg}", node, detail, strong=strong)

    choosing = {fn for fn, _, _ in branches}
    others = sorted(
        (fn for fn in per_function if fn not in choosing),
        key=lambda fn: (-len(per_function[fn]), fn),
    )[:max_other]
    for fn in others:
        node = f"fn:{fn}"
        sites = per_function[fn]
        g.add_node(
            node,
            layer=1,
            group=1,
            label=function_label(fn),
            kind="site",
            title=f"{fn}: {len(sites)} dispatch site(s), first at {sites[0].location}",
            anchor=str(sites[0].location),
        )
        for site in sites:
            for alg in site.algorithms:
                if alg in worker_of:
                    _add_edge(g, f"alg:{alg}", node, site.detail, strong=False)

    # A worker (the default or one chosen by flags) no drawn branch leads to: draw the place that chooses it,
    # the edge labelled with the flags that pick it.
    for a in inventory.algorithms:
        choices = [(w.qualname, w.location, w.condition) for w in a.workers]
        if a.worker and a.worker not in {w.qualname for w in a.workers}:
            choices.append((a.worker, a.worker_location or a.location, None))
        for qualname, where, condition in choices:
            worker = f"wk:{qualname}"
            alg = f"alg:{a.name}"
            if g.has_node(worker) and any(g.has_edge(mid, worker) for mid in g.successors(alg)):
                continue
            g.add_node(worker, layer=2, group=0, label=short_name(qualname), kind="worker", title=qualname)
            mid = f"at:{where.path}:{where.line}"
            g.add_node(
                mid,
                layer=1,
                group=0,
                label=f"{where.path.rsplit('/', 1)[-1]}:{where.line}",
                kind="branch",
                title=f"{a.name}: worker chosen at {where}",
                anchor=str(where) if qualname == a.worker else None,
            )  # the default's place has a table row
            _add_edge(g, alg, mid, "worker", strong=qualname == a.worker)
            _add_edge(
                g, mid, worker, f"creates if {condition}" if condition else "creates", strong=qualname == a.worker
            )
    return g, GraphNote(functions_total=len(per_function), functions_drawn=len(choosing) + len(others))


def _creates_label(inventory: SpecInventory, site) -> str:
    """`creates` or `creates if <flags>` for a branch's worker, from the algorithms that reach it."""
    conditions = {
        w.condition
        for a in inventory.algorithms
        if a.name in site.algorithms
        for w in a.workers
        if w.qualname == site.worker and w.condition
    }
    return "creates if " + " / ".join(sorted(conditions)) if conditions else "creates"


def _add_edge(g: nx.DiGraph, u: str, v: str, label: str, *, strong: bool) -> None:
    if g.has_edge(u, v):
        data = g[u][v]
        data["count"] += 1
        data["strong"] = data["strong"] or strong
        if label not in data["labels"]:
            data["labels"].append(label)
    else:
        g.add_edge(u, v, count=1, labels=[label], strong=strong)


def order_layers(g: nx.DiGraph, sweeps: int = 4) -> list[list[str]]:
    """Node order per layer: layer 0 as inserted, the others by barycentre of their neighbours."""
    layers: list[list[str]] = [[n for n, d in g.nodes(data=True) if d["layer"] == i] for i in range(len(LAYERS))]
    for _ in range(sweeps):
        for i in range(1, len(layers)):  # down: by predecessors in the layer above
            pos = {n: k for k, n in enumerate(layers[i - 1])}
            layers[i] = _by_barycentre(g, layers[i], lambda n, pos=pos: [pos[p] for p in g.predecessors(n) if p in pos])
        for i in range(len(layers) - 2, 0, -1):  # up: middle layers by successors below
            pos = {n: k for k, n in enumerate(layers[i + 1])}
            layers[i] = _by_barycentre(g, layers[i], lambda n, pos=pos: [pos[s] for s in g.successors(n) if s in pos])
    return layers


def _by_barycentre(g: nx.DiGraph, nodes: list[str], neighbour_positions) -> list[str]:
    """Nodes sorted by group, then by the mean position of their neighbours (ties: current order)."""

    def key(item):
        index, node = item
        positions = neighbour_positions(node)
        return (g.nodes[node].get("group", 0), sum(positions) / len(positions) if positions else index, index)

    return [node for _, node in sorted(enumerate(nodes), key=key)]


@dataclass(frozen=True)
class PlacedNode:
    id: str
    label: str
    title: str
    kind: str
    x: float  # left edge
    y: float  # top edge
    width: float
    height: float
    anchor: str | None


@dataclass(frozen=True)
class PlacedEdge:
    path: str  # SVG path data
    title: str
    weight: int
    kind: str  # kind of the source node
    strong: bool  # on an algorithm's path to its own worker


@dataclass(frozen=True)
class Drawing:
    width: float
    height: float
    nodes: tuple[PlacedNode, ...]
    edges: tuple[PlacedEdge, ...]
    columns: tuple[tuple[str, float], ...]  # (layer title, x centre)


CHAR_W = 7.0  # px per character of the 12px monospace label font
NODE_H = 26.0
ROW_GAP = 12.0
PAD = 20.0
COL_GAP = 150.0
TITLE_H = 28.0


def layout(g: nx.DiGraph) -> Drawing:
    """Pixel positions: columns left to right, each as wide as its longest label."""
    layers = order_layers(g)
    if g.number_of_nodes() == 0:
        return Drawing(2 * PAD, 2 * PAD, (), (), ())

    widths = [max((len(g.nodes[n]["label"]) * CHAR_W + 20 for n in layer), default=80.0) for layer in layers]
    lefts, x = [], PAD
    for w in widths:
        lefts.append(x)
        x += w + COL_GAP
    total_w = x - COL_GAP + PAD
    rows = max(len(layer) for layer in layers)
    total_h = TITLE_H + PAD + rows * (NODE_H + ROW_GAP) - ROW_GAP + PAD

    placed: dict[str, PlacedNode] = {}
    for i, layer in enumerate(layers):
        if not layer:
            continue
        offset = TITLE_H + PAD  # every column starts at the top, next to its neighbours
        for row, n in enumerate(layer):
            # One row per node, in the layer's crossing-reduced order, top to bottom.
            y = offset + row * (NODE_H + ROW_GAP)
            d = g.nodes[n]
            placed[n] = PlacedNode(
                n, d["label"], d["title"], d["kind"], lefts[i], y, widths[i], NODE_H, d.get("anchor")
            )

    edges = []
    for u, v, d in g.edges(data=True):
        a, b = placed[u], placed[v]
        x1, y1 = a.x + a.width, a.y + a.height / 2
        x2, y2 = b.x, b.y + b.height / 2
        bend = (x2 - x1) / 2
        path = f"M{x1:.1f},{y1:.1f} C{x1 + bend:.1f},{y1:.1f} {x2 - bend:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
        title = (
            f"{a.label} -> {b.label}: " + ", ".join(d["labels"]) + (f" ({d['count']} sites)" if d["count"] > 1 else "")
        )
        edges.append(PlacedEdge(path, title, d["count"], a.kind, d["strong"]))
    columns = tuple(
        (title, lefts[i] + widths[i] / 2)
        for i, title in enumerate(("Algorithms", "Dispatch branches and functions", "Worker classes"))
        if layers[i]
    )
    return Drawing(total_w, total_h, tuple(placed[n] for layer in layers for n in layer), tuple(edges), columns)


def algorithm_paths(g: nx.DiGraph) -> tuple[dict[str, frozenset[str]], dict[tuple[str, str], frozenset[str]]]:
    """Which algorithms each node and edge belongs to, so the picture can show one algorithm's paths.

    An algorithm owns its own box, its edges into the middle column and the boxes they reach; beyond
    a branch it owns the branch's edges to workers only when its edge into that branch is strong (the
    branch can create the worker the analyzer resolved for it), and the workers those edges reach.
    """
    nodes: dict[str, set[str]] = {n: set() for n in g.nodes}
    edges: dict[tuple[str, str], set[str]] = {(u, v): set() for u, v in g.edges}
    for a in (n for n, d in g.nodes(data=True) if d["kind"] == "algorithm"):
        name = a.split(":", 1)[1]
        nodes[a].add(name)
        for mid in g.successors(a):
            edges[(a, mid)].add(name)
            nodes[mid].add(name)
            if not g[a][mid]["strong"]:
                continue
            for worker in g.successors(mid):
                edges[(mid, worker)].add(name)
                nodes[worker].add(name)
    return ({n: frozenset(v) for n, v in nodes.items()}, {e: frozenset(v) for e, v in edges.items()})


def _classes(names, algorithm_class) -> str:
    return " ".join(sorted(algorithm_class[name] for name in names if name in algorithm_class))


def graphviz_available() -> bool:
    return shutil.which("dot") is not None


def to_svg(
    inventory: SpecInventory, *, use_graphviz: bool | None = None, algorithm_class: dict[str, str] | None = None
) -> tuple[str, GraphNote]:
    """Inline SVG markup of the dispatch graph (no XML prolog) and the note on what was left out.

    With `algorithm_class` (algorithm name -> CSS class), every node and edge carries the classes of
    the algorithms whose paths it lies on (`algorithm_paths`), for the page's CSS to pick one out.
    """
    from sgl_scan.reports.templating import html_env

    g, note = dispatch_view(inventory)
    node_algs, edge_algs = algorithm_paths(g)
    algorithm_class = algorithm_class or {}
    node_classes = {n: _classes(names, algorithm_class) for n, names in node_algs.items()}
    edge_classes = {e: _classes(names, algorithm_class) for e, names in edge_algs.items()}
    if use_graphviz is None:
        use_graphviz = graphviz_available()
    if use_graphviz and g.number_of_nodes():
        svg = _graphviz_svg(g, node_classes, edge_classes)
        if svg is not None:
            return svg, note
    drawing = layout(g)
    # `layout` places one edge per edge of `g`, in the graph's edge order.
    classes = [edge_classes[e] for e in g.edges]
    assert len(classes) == len(drawing.edges)
    return html_env().get_template("dispatch_graph.svg.j2").render(
        d=drawing, node_classes=node_classes, edge_classes=classes
    ), note


def _graphviz_svg(g: nx.DiGraph, node_classes: dict[str, str], edge_classes: dict[tuple[str, str], str]) -> str | None:
    """Lay out and draw with `dot`; None if it fails (the caller falls back to the Python drawing)."""
    from sgl_scan.reports.templating import anchor

    lines = [
        "digraph dispatch {",
        "rankdir=LR; nodesep=0.15; ranksep=1.2;",
        'node [shape=box, style="rounded,filled", fontname="monospace", fontsize=10, height=0.3];',
    ]
    fills = {"algorithm": "#dbeafe", "branch": "#fde68a", "site": "#fef9e7", "worker": "#dcfce7"}
    ids = {n: f"n{i}" for i, n in enumerate(g.nodes)}
    for layer in order_layers(g):
        lines.append("{ rank=same; " + " ".join(ids[n] for n in layer) + " }" if layer else "")
        for n in layer:
            d = g.nodes[n]
            link = f", URL={_dot_quote('#' + anchor('site-' + d['anchor']))}" if d.get("anchor") else ""
            style = '"rounded,filled,dashed"' if d["kind"] == "site" else '"rounded,filled"'
            css = f"node-{d['kind']} {node_classes[n]}".strip()
            lines.append(
                f"{ids[n]} [label={_dot_quote(d['label'])}, tooltip={_dot_quote(d['title'])}, "
                f'fillcolor="{fills[d["kind"]]}", style={style}{link}, class={_dot_quote(css)}];'
            )
    for u, v, d in g.edges(data=True):
        style = "solid" if d["strong"] else "dashed"
        lines.append(
            f"{ids[u]} -> {ids[v]} [penwidth={min(1 + d['count'] * 0.5, 4):.1f}, style={style}, "
            f"tooltip={_dot_quote(', '.join(d['labels']))}, class={_dot_quote(edge_classes[(u, v)])}];"
        )
    lines.append("}")
    try:
        result = subprocess.run(["dot", "-Tsvg"], input="\n".join(lines), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0 or "<svg" not in result.stdout:
        return None
    svg = result.stdout[result.stdout.index("<svg") :]
    return svg


def _dot_quote(text: str) -> str:
    """A dot string: tree text with its controls made visible (as in every report), then quoted."""
    from sgl_scan.reports.visible import visible

    return '"' + visible(text).replace("\\", "\\\\").replace('"', '\\"') + '"'
