"""Views of the program graph: a focused neighbourhood, DOT/GraphML/JSON text, dispatch listings."""

from __future__ import annotations

import ast
import io
import json
from dataclasses import dataclass
from typing import Iterable, Mapping

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
    edges = [
        {"source": u, "target": v, **attrs}
        for u, v, attrs in sorted(g.edges(data=True), key=lambda e: (str(e[0]), str(e[1]), str(e[2].get("kind"))))
    ]
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
    sites = tuple(
        sorted(
            (s for s in inventory.dispatch_sites if algo.name in s.algorithms),
            key=lambda s: (s.location.path, s.location.line, s.location.column),
        )
    )
    return DispatchListing(algo, sites)


def format_dispatch(listing: DispatchListing, scope_note: str | None = None) -> Iterable[str]:
    """Text lines: a header with the algorithm's worker, then one line per site.

    `scope_note` says what the count covers ("in the speculative scope; run with --scope full for all").
    """
    algo = listing.algorithm
    workers = [f"{w.qualname} if {w.condition}" if w.condition else w.qualname for w in algo.workers] or (
        [algo.worker] if algo.worker else []
    )
    worker = "; ".join(workers) if workers else "no worker found"
    where = f" (chosen at {algo.worker_location})" if algo.worker_location else ""
    yield f"{algo.name}: defined at {algo.location}; creates {worker}{where}"
    predicates = ", ".join(algo.predicates) or "none"
    yield f"  predicates true for it: {predicates}"
    yield f"  {len(listing.sites)} site(s) branch on {algo.name}" + (f" {scope_note}" if scope_note else "") + ":"
    for site in listing.sites:
        creates = f" -> creates {site.worker}" if site.worker else ""
        side = ", negated: reaches it as one of all-but-these" if site.negated else ""
        yield (
            f"  {site.location.path}:{site.location.line}  {site.function}  [{site.via}: {site.detail}{side}]{creates}"
        )


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
    origins: tuple[tuple[str, str], ...] = ()  # (predicate, where its answer for NEW came from), true and false ones
    unknown_predicates: tuple[str, ...] = ()  # predicates whose answer for NEW is unknown (sites on them: either side)


def _side_name(true_side: bool, false_side: bool) -> str:
    return "either" if true_side and false_side else "true" if true_side else "false" if false_side else "unreachable"


def parse_claims(text: str) -> dict[str, bool]:
    """`is_x,is_y=false,!is_z` -> {is_x: True, is_y: False, is_z: False} (ValueError on a bad item)."""
    out: dict[str, bool] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        value = True
        if item.startswith("!"):
            item, value = item[1:].strip(), False
        elif "=" in item:
            item, _, word = item.partition("=")
            item, word = item.strip(), word.strip().lower()
            if word not in ("true", "false"):
                raise ValueError(f"{item}={word}: a claim's value is true or false")
            value = word == "true"
        if not item.isidentifier():
            raise ValueError(f"{item!r} is no predicate name")
        out[item] = value
    return out


@dataclass(frozen=True)
class Derived:
    """What the tree says of NEW's predicates: fixed answers (an algorithm of the tree), or
    definitions to evaluate for it (`bodies`, over `base_true` for what they do not define), so
    that a claim also changes the predicates defined through the claimed one."""

    origin: str  # "inventory" | "definition" | "spec_class X" | "plugin base"
    true: frozenset[str] = frozenset()  # fixed answers (origin "inventory")
    bodies: tuple[tuple[str, tuple], ...] | None = None  # definitions evaluated for NEW
    base_true: frozenset[str] = frozenset()
    unknown: frozenset[str] = frozenset()  # methods whose definitions could not be read
    overrides: frozenset[str] = frozenset()  # with a spec_class: its own predicates (the rest: "plugin base")
    flags: frozenset[str] = frozenset()  # a registration's flags= (registry form)

    def evaluate(self, claims: Mapping[str, bool]) -> tuple[dict[str, bool | None], dict[str, str]]:
        """Each predicate's value for NEW with `claims` taken as its answers, and where each came from."""
        from sgl_scan.analyzer.inventory import plugin_truth

        if self.bodies is None:
            values: dict[str, bool | None] = {p: True for p in self.true}
            values.update(claims)
            return values, {p: "--claims" if p in claims else self.origin for p in values}
        bodies = dict(self.bodies)
        bodies.update({name: ("const", value) for name, value in claims.items()})
        true, not_read = plugin_truth(self.base_true, bodies, self.flags, self.unknown)
        values = {p: (p in true) for p in [*dict(self.bodies), *sorted(self.base_true)]}
        values.update({p: None for p in [*not_read, *self.unknown] if p not in claims})
        values.update(claims)
        origins = {
            p: "--claims"
            if p in claims
            else self.origin
            if not self.overrides or p in self.overrides
            else "plugin base"
            for p in values
        }
        return values, origins


def derived_predicates(inventory: SpecInventory, name: str) -> Derived:
    """For an algorithm of the tree, the inventory's own answer; for a new one, the algorithm
    class's definitions evaluated for a member equal to none of the existing ones (`is_some`:
    `self != NONE` is true for it)."""
    algo = next((a for a in inventory.algorithms if a.name.upper() == name.upper()), None)
    if algo is not None:
        return Derived("inventory", true=frozenset(algo.predicates))
    return Derived(
        "definition", bodies=inventory.predicate_definitions, unknown=frozenset(inventory.unread_definitions)
    )


def like_listing(
    inventory: SpecInventory,
    name: str,
    base: str,
    claims: Iterable[str] | Mapping[str, bool] = (),
    *,
    strict: bool = True,
    derived: Derived | None = None,
) -> LikeListing:
    """Every dispatch site where algorithm `name` takes another side than algorithm `base`.

    NEW's predicates are `derived` (default: `derived_predicates`: the inventory's answer for an
    algorithm of the tree, else each definition evaluated for a new member); `claims` (names: true;
    a mapping: true or false) add to or override them. `strict`: refuse claims that name no
    predicate of the snapshot (else they are dropped)."""
    from sgl_scan.analyzer.conditions import side

    algo = next((a for a in inventory.algorithms if a.name.upper() == base.upper()), None)
    if algo is None:
        known = ", ".join(a.name for a in inventory.algorithms) or "none found"
        raise FocusError(f"no speculative algorithm {base!r} in this snapshot (algorithms: {known})")
    wanted = dict(claims) if isinstance(claims, Mapping) else {c: True for c in claims}
    table = {p.name: set(p.members) for p in inventory.predicates}
    unknown_claims = [c for c in wanted if c not in table and c not in inventory.plugin_base_predicates]
    if not strict:
        wanted = {c: v for c, v in wanted.items() if c not in unknown_claims}
    elif unknown_claims:
        raise FocusError(
            f"no predicate {', '.join(unknown_claims)} in this snapshot "
            f"(predicates: {', '.join(sorted(table)) or 'none found'})"
        )
    derived = derived or derived_predicates(inventory, name)
    truth, origins = derived.evaluate(wanted)
    for p in table:  # neither defined true nor unknown: false (a plugin base's default, an in-tree member's answer)
        truth.setdefault(p, False)
    for claim, value in wanted.items():
        origins[claim] = "--claims" if value else "--claims (false)"
    member = next((a for a in inventory.algorithms if a.name.upper() == name.upper()), None)
    own = {member.name} | {k for k, v in inventory.aliases.items() if v == member.name} if member else None
    out, unknown, behind = [], 0, 0
    for site in sorted(inventory.dispatch_sites, key=lambda s: (s.location.path, s.location.line, s.location.column)):
        if site.test is None:
            unknown += 1
            continue
        base_truth, new_truth = {}, {}
        for line, column, via, values, inverted in site.atoms:
            if via == "predicate":
                in_table = values[0] in table
                base_truth[(line, column)] = ((algo.name in table[values[0]]) != inverted) if in_table else None
                value = truth.get(values[0])
                new_truth[(line, column)] = None if value is None else value != inverted
            else:
                base_truth[(line, column)] = (algo.name in values) != inverted
                # an algorithm of the tree is named by its own literals; a new name equals no literal, no member
                new_truth[(line, column)] = (bool(own & set(values)) if own else False) != inverted
        base_side = _side_name(*side(site.test, site.context, base_truth))
        new_side = _side_name(*side(site.test, site.context, new_truth))
        if base_side != new_side and new_side == "unreachable":
            behind += 1
        elif base_side != new_side:
            out.append(LikeSite(site, base_side, new_side))
    claimed = tuple(p for p, v in truth.items() if v)
    shown = tuple((p, origins[p]) for p in claimed if p in origins) + tuple(
        (p, o) for p, o in origins.items() if o == "--claims (false)"
    )
    return LikeListing(
        name.upper(),
        algo,
        claimed,
        _one_per_test(out),
        unknown,
        behind,
        shown,
        tuple(sorted(p for p, v in truth.items() if v is None)),
    )


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
    origin = dict(listing.origins)
    claims = ", ".join(f"{p} ({origin[p]})" if p in origin else p for p in listing.claims) or "none"
    yield f"{listing.name} like {base}: predicates true for {listing.name}: {claims}"
    false = [p for p, o in listing.origins if p not in listing.claims]
    if false:
        yield f"  set false by --claims: {', '.join(false)}"
    if listing.unknown_predicates:
        yield (
            f"  not known for {listing.name} (their definitions could not be evaluated; tests on them are compared "
            f"as either side): {', '.join(listing.unknown_predicates)}"
        )
    yield f"  {len(listing.sites)} test(s) where {listing.name} takes another branch than {base}:"
    for like in listing.sites:
        site = like.site
        yield (
            f"  {site.location.path}:{site.location.line}  {site.function}  [{site.via}: {site.detail}]  "
            f"{base}: {like.base_side} side; {listing.name}: {like.new_side} side"
        )
    if listing.behind_guards:
        yield (
            f"  ({listing.behind_guards} further test(s) {base} reaches are never reached by {listing.name}: "
            "an earlier guard above refuses it)"
        )
    if listing.unknown:
        yield f"  ({listing.unknown} site(s) outside any function body read are not compared)"


class PluginFileError(ValueError):
    """The plugin file registers no algorithm of that name (message lists those it registers)."""


def plugin_file_predicates(source: str, name: str, inventory: SpecInventory, path: str = "plugin.py") -> Derived:
    """NEW's predicates from a plugin file: the class registered under `name` with `spec_class=`
    (its overrides, over the plugin base's answers), read by the same extractors and the same
    evaluation (`inventory.plugin_truth`) `scan` uses for a plugin inside the tree. Only that
    registration counts: other classes and registrations of the file are ignored."""
    from sgl_scan.analyzer.extractors.algorithm_class import AlgorithmClassExtractor
    from sgl_scan.analyzer.extractors.records import AlgoClassRecord, Registration

    @dataclass
    class _Context:
        path: str
        module: str
        text: str

    from sgl_scan.analyzer.extractors.registrations import RegistrationExtractor

    context = _Context(path, "plugin", source)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        raise PluginFileError(f"{path}: cannot be read: {exc}") from None
    records = [*AlgorithmClassExtractor().extract(tree, context), *RegistrationExtractor().extract(tree, context)]
    registrations = [r for r in records if isinstance(r, Registration)]
    reg = next((r for r in registrations if r.name.upper() == name.upper()), None)
    if reg is None:
        names = ", ".join(r.name for r in registrations) or "none"
        raise PluginFileError(f"{path} registers no algorithm {name.upper()} (it registers: {names})")
    if not reg.spec_class:
        return Derived(
            "plugin base", bodies=(), base_true=frozenset(inventory.plugin_base_true), flags=frozenset(reg.flags)
        )
    short = reg.spec_class.rpartition(".")[2]
    record = next((r for r in records if isinstance(r, AlgoClassRecord) and r.name == short), None)
    if record is None:
        raise PluginFileError(f"{path}: the spec_class {short} of {name.upper()} is not defined in this file")
    return Derived(
        f"spec_class {short}",
        bodies=tuple((p.name, p.expr) for p in record.predicates),
        base_true=frozenset(inventory.plugin_base_true),
        unknown=frozenset(n for n, _at, _text in record.unread_predicates),
        overrides=frozenset(p.name for p in record.predicates),
        flags=frozenset(reg.flags),
    )
