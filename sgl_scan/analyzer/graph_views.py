"""Views of the program graph: a focused neighbourhood, DOT/GraphML/JSON text, dispatch listings."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Iterable

import networkx as nx

from sgl_scan.analyzer.graph import ALGORITHM_PREFIX, algorithm_node
from sgl_scan.analyzer.model import Algorithm, DispatchSite, SpecInventory

FORMATS = ("dot", "graphml", "json")


class FocusError(LookupError):
    """The focus names nothing in the graph (message lists close matches)."""


def find_nodes(g: nx.MultiDiGraph, name: str) -> list[str]:
    """Nodes `name` denotes: an algorithm (any case), a node id, or a unique dotted suffix of one."""
    wanted = algorithm_node(name)
    for node in g:
        if isinstance(node, str) and node.startswith(ALGORITHM_PREFIX) and node.upper() == wanted.upper():
            return [node]
    if name in g:
        return [name]
    suffix = "." + name
    return sorted(n for n in g if isinstance(n, str) and n.endswith(suffix))


def focus(g: nx.MultiDiGraph, name: str, depth: int = 1) -> nx.MultiDiGraph:
    """The subgraph within `depth` edges (either direction) of the nodes `name` denotes."""
    roots = find_nodes(g, name)
    if not roots:
        raise FocusError(f"nothing in the graph is called {name!r}")
    keep: set = set(roots)
    frontier = set(roots)
    for _ in range(max(depth, 0)):
        step = set()
        for node in frontier:
            step.update(g.successors(node))
            step.update(g.predecessors(node))
        frontier = step - keep
        keep |= step
    return g.subgraph(keep).copy()


def _dot_id(value: object) -> str:
    return json.dumps(str(value))  # DOT quoted ids use the same escapes as JSON strings


def to_dot(g: nx.MultiDiGraph, scope: dict | None = None) -> str:
    """Graphviz DOT: nodes labelled with their name and kind, edges with their kind."""
    out = io.StringIO()
    if scope:
        out.write(f"// {scope['note']}\n")
    out.write("digraph sglang {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n")
    for node, attrs in sorted(g.nodes(data=True), key=lambda item: str(item[0])):
        extra = {"kind": attrs.get("kind", "")}
        if "path" in attrs:
            extra["path"] = f"{attrs['path']}:{attrs.get('line', 1)}"
        fields = ", ".join(f"{k}={_dot_id(v)}" for k, v in extra.items())
        out.write(f"  {_dot_id(node)} [{fields}];\n")
    for u, v, attrs in sorted(g.edges(data=True), key=lambda e: (str(e[0]), str(e[1]), str(e[2].get("kind")))):
        out.write(f"  {_dot_id(u)} -> {_dot_id(v)} [label={_dot_id(attrs.get('kind', ''))}];\n")
    out.write("}\n")
    return out.getvalue()


def to_json(g: nx.MultiDiGraph, scope: dict | None = None) -> str:
    nodes = [{"id": n, **attrs} for n, attrs in sorted(g.nodes(data=True), key=lambda item: str(item[0]))]
    edges = [{"source": u, "target": v, **attrs}
             for u, v, attrs in sorted(g.edges(data=True), key=lambda e: (str(e[0]), str(e[1]), str(e[2].get("kind"))))]
    doc = {"directed": True, "multigraph": True, "nodes": nodes, "edges": edges}
    if scope:
        doc["scope"] = scope
    return json.dumps(doc, indent=1) + "\n"


def to_graphml(g: nx.MultiDiGraph, scope: dict | None = None) -> str:
    clean = nx.MultiDiGraph()
    if scope:
        clean.graph["scope"] = scope["note"]
    for node, attrs in g.nodes(data=True):
        clean.add_node(node, **{k: v for k, v in attrs.items() if v is not None})
    for u, v, attrs in g.edges(data=True):
        clean.add_edge(u, v, **{k: v_ for k, v_ in attrs.items() if v_ is not None})
    return "\n".join(nx.generate_graphml(clean)) + "\n"


def render(g: nx.MultiDiGraph, fmt: str, scope: dict | None = None) -> str:
    """The graph as text; `scope` ({"name", "complete", "files", "note"}) says which files it covers."""
    if fmt == "dot":
        return to_dot(g, scope)
    if fmt == "json":
        return to_json(g, scope)
    if fmt == "graphml":
        return to_graphml(g, scope)
    raise ValueError(f"unknown graph format {fmt!r} (choose from {', '.join(FORMATS)})")


@dataclass(frozen=True)
class DispatchListing:
    algorithm: Algorithm
    sites: tuple[DispatchSite, ...]


def dispatch_listing(inventory: SpecInventory, name: str) -> DispatchListing:
    """Every dispatch site whose branch selects algorithm `name` (any case), in file order."""
    algo = next((a for a in inventory.algorithms if a.name.upper() == name.upper()), None)
    if algo is None:
        known = ", ".join(a.name for a in inventory.algorithms) or "none found"
        raise FocusError(f"no speculative algorithm {name!r} in this snapshot (algorithms: {known})")
    sites = tuple(sorted((s for s in inventory.dispatch_sites if algo.name in s.algorithms),
                         key=lambda s: (s.location.path, s.location.line, s.location.column)))
    return DispatchListing(algo, sites)


def format_dispatch(listing: DispatchListing, scope_note: str | None = None) -> Iterable[str]:
    """Text lines: a header with the algorithm's worker, then one line per site.

    `scope_note` says what the count covers ("in the speculative scope; run with --scope full for all").
    """
    algo = listing.algorithm
    workers = [f"{w.qualname} if {w.condition}" if w.condition else w.qualname for w in algo.workers] \
        or ([algo.worker] if algo.worker else [])
    worker = "; ".join(workers) if workers else "no worker found"
    where = f" (chosen at {algo.worker_location})" if algo.worker_location else ""
    yield f"{algo.name}: defined at {algo.location}; creates {worker}{where}"
    predicates = ", ".join(algo.predicates) or "none"
    yield f"  predicates true for it: {predicates}"
    yield f"  {len(listing.sites)} site(s) branch on {algo.name}" + (f" {scope_note}" if scope_note else "") + ":"
    for site in listing.sites:
        creates = f" -> creates {site.worker}" if site.worker else ""
        side = ", negated: reaches it as one of all-but-these" if site.negated else ""
        yield f"  {site.location.path}:{site.location.line}  {site.function}  [{site.via}: {site.detail}{side}]{creates}"


# -- a new algorithm like an existing one --------------------------------------------------------------
@dataclass(frozen=True)
class LikeSite:
    site: DispatchSite
    base_side: str  # "true" | "false" | "either" | "unreachable"
    new_side: str


@dataclass(frozen=True)
class LikeListing:
    name: str
    base: Algorithm
    claims: tuple[str, ...]  # predicates true for the new algorithm
    sites: tuple[LikeSite, ...]  # where it takes another side than the base algorithm
    unknown: int  # sites whose test the analyzer could not read for it
    behind_guards: int  # tests the base algorithm reaches but the new one never does (an earlier guard refused it)


def _side_name(true_side: bool, false_side: bool) -> str:
    return "either" if true_side and false_side else "true" if true_side else "false" if false_side else "unreachable"


def like_listing(inventory: SpecInventory, name: str, base: str, claims: Iterable[str], *,
                 strict: bool = True) -> LikeListing:
    """Every dispatch site where a new algorithm `name`, for which exactly the predicates `claims` are
    true and which no string or member test names, takes another side than algorithm `base`.
    `strict`: refuse claims that name no predicate of the snapshot (else they are dropped: a plugin
    file may define predicates this release does not have)."""
    from sgl_scan.analyzer.flow import side

    algo = next((a for a in inventory.algorithms if a.name.upper() == base.upper()), None)
    if algo is None:
        known = ", ".join(a.name for a in inventory.algorithms) or "none found"
        raise FocusError(f"no speculative algorithm {base!r} in this snapshot (algorithms: {known})")
    claimed = tuple(dict.fromkeys(claims))
    table = {p.name: set(p.members) for p in inventory.predicates}
    unknown_claims = [c for c in claimed if c not in table and c not in inventory.plugin_base_predicates]
    if not strict:
        claimed = tuple(c for c in claimed if c not in unknown_claims)
    elif unknown_claims:
        raise FocusError(f"no predicate {', '.join(unknown_claims)} in this snapshot "
                         f"(predicates: {', '.join(sorted(table)) or 'none found'})")
    out, unknown, behind = [], 0, 0
    for site in sorted(inventory.dispatch_sites, key=lambda s: (s.location.path, s.location.line, s.location.column)):
        if site.test is None:
            unknown += 1
            continue
        base_truth, new_truth = {}, {}
        for line, column, via, values, inverted in site.atoms:
            if via == "predicate":
                known = values[0] in table
                base_truth[(line, column)] = ((algo.name in table[values[0]]) != inverted) if known else None
                new_truth[(line, column)] = (values[0] in claimed) != inverted
            else:
                base_truth[(line, column)] = (algo.name in values) != inverted
                new_truth[(line, column)] = inverted  # a new name equals no literal and no member
        base_side = _side_name(*side(site.test, site.context, base_truth))
        new_side = _side_name(*side(site.test, site.context, new_truth))
        if base_side != new_side and new_side == "unreachable":
            behind += 1
        elif base_side != new_side:
            out.append(LikeSite(site, base_side, new_side))
    return LikeListing(name.upper(), algo, claimed, _one_per_test(out), unknown, behind)


def _one_per_test(sites: list[LikeSite]) -> tuple[LikeSite, ...]:
    seen, out = set(), []
    for like in sites:
        key = (like.site.location.path, like.site.decision_location or like.site.location)
        if key not in seen:
            seen.add(key)
            out.append(like)
    return tuple(out)


def format_like(listing: LikeListing) -> Iterable[str]:
    base = listing.base.name
    claims = ", ".join(listing.claims) or "none"
    yield f"{listing.name} like {base}: predicates true for {listing.name}: {claims}"
    yield f"  {len(listing.sites)} test(s) where {listing.name} takes another branch than {base}:"
    for like in listing.sites:
        site = like.site
        yield (f"  {site.location.path}:{site.location.line}  {site.function}  [{site.via}: {site.detail}]  "
               f"{base}: {like.base_side} side; {listing.name}: {like.new_side} side")
    if listing.behind_guards:
        yield (f"  ({listing.behind_guards} further test(s) {base} reaches are never reached by {listing.name}: "
               "an earlier guard above refuses it)")
    if listing.unknown:
        yield f"  ({listing.unknown} site(s) outside any function body read are not compared)"


def plugin_claims(source: str, inherited: Iterable[str] = ()) -> tuple[str, ...]:
    """Predicates a plugin algorithm class answers True: `def is_x(self): return True` (or returning
    another claimed predicate) on the classes of one plugin file, plus those it inherits as True from
    the plugin base (`inherited`) and does not override."""
    import ast

    from sgl_scan.analyzer.extractors.dispatch import PREDICATE_NAME

    tree = ast.parse(source)
    bodies = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and PREDICATE_NAME.match(item.name):
                    returns = [s for s in item.body if isinstance(s, ast.Return)]
                    if len(returns) == 1 and returns[0].value is not None:
                        bodies[item.name] = returns[0].value
    claimed: dict[str, None] = {name: None for name in inherited if name not in bodies}
    for _ in range(len(bodies) + 1):
        for name, value in bodies.items():
            if isinstance(value, ast.Constant) and value.value is True:
                claimed.setdefault(name, None)
            elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in claimed:
                claimed.setdefault(name, None)
    return tuple(claimed)
