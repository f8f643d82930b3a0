"""The program graph (networkx MultiDiGraph) built from per-file facts and the spec inventory.

Node ids are qualified names (`sglang.srt.speculative.spec_info.SpeculativeAlgorithm.is_eagle`);
algorithms are `algorithm:NAME`, CLI options `option:--speculative-algorithm`. Every node has `kind`
(module, class, function, algorithm, option, external); nodes in the tree also `path` and `line`.
Edges carry `kind`: defines, imports, inherits, calls, dispatches_on, creates_worker,
configured_by; and the `path`/`line` of the code that gives rise to them.
Calls and bases are linked when they resolve (through imports and re-exports) to a class or
function of the tree; imports and bases leading outside the tree end at `external` nodes.
"""

from __future__ import annotations

import sys
from typing import Iterable, Mapping

import networkx as nx

from sgl_scan.analyzer.facts import FileFacts
from sgl_scan.analyzer.model import SpecInventory

ALGORITHM_PREFIX = "algorithm:"
OPTION_PREFIX = "option:"
MAX_HOPS = 8


def algorithm_node(name: str) -> str:
    return f"{ALGORITHM_PREFIX}{name}"


def option_node(name: str) -> str:
    return f"{OPTION_PREFIX}{name}"


class SymbolTable:
    """Resolves qualified names to graph nodes, following imports and re-exports across modules."""

    def __init__(self, files: Mapping[str, FileFacts]) -> None:
        self.modules: dict[str, FileFacts] = {}
        self.defined: dict[str, str] = {}  # qualified name -> kind
        self.bindings: dict[str, dict[str, str]] = {}  # module -> module-level bound name -> target
        for facts in files.values():
            if facts.parse_error is not None:
                continue
            self.modules[facts.module] = facts
            self.defined[facts.module] = "module"
            for c in facts.classes:
                self.defined[f"{facts.module}.{c.qualname}"] = "class"
            for f in facts.functions:
                self.defined[f"{facts.module}.{f.qualname}"] = "function"
            self.bindings[facts.module] = {i.bound: i.target for i in facts.imports if not i.scope and i.bound != "*"}

    def resolve(self, name: str | None) -> str | None:
        """The node `name` denotes, or None when it leads outside the tree (or nowhere)."""
        seen = 0
        while name and seen < MAX_HOPS:
            seen += 1
            if name in self.defined:
                return name
            module, rest = self._split(name)
            if module is None:
                return None
            head, _, tail = rest.partition(".")
            target = self.bindings.get(module, {}).get(head)
            if target is None:
                return None
            name = f"{target}.{tail}" if tail else target
        return None

    def _split(self, name: str) -> tuple[str | None, str]:
        parts = name.split(".")
        for i in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:i])
            if module in self.modules:
                return module, ".".join(parts[i:])
        return None, name


def build_graph(files: Mapping[str, FileFacts], inventory: SpecInventory) -> nx.MultiDiGraph:
    """The graph of one snapshot: definitions, imports, inheritance, calls, and the spec layer."""
    g = nx.MultiDiGraph()
    symbols = SymbolTable(files)
    for facts in files.values():
        if facts.parse_error is None:
            _add_definitions(g, facts)
    for facts in files.values():
        if facts.parse_error is None:
            _add_links(g, facts, symbols)
    _add_spec_layer(g, inventory, symbols)
    return g


_intern = sys.intern  # one object per node id: the pickled graph (cached) stores each name once


def _edge(g: nx.MultiDiGraph, u: str, v: str, **attrs: object) -> None:
    g.add_edge(_intern(u), _intern(v), **attrs)


def _node(g: nx.MultiDiGraph, node: str, kind: str, path: str | None = None, line: int | None = None) -> None:
    node = _intern(node)
    attrs: dict[str, object] = {"kind": kind}
    if path is not None:
        attrs["path"] = path
    if line is not None:
        attrs["line"] = line
    g.add_node(node, **attrs)


def _external(g: nx.MultiDiGraph, node: str) -> str:
    node = _intern(node)
    if node not in g:
        g.add_node(node, kind="external")
    return node


def _add_definitions(g: nx.MultiDiGraph, facts: FileFacts) -> None:
    mod = facts.module
    _node(g, mod, "module", facts.path, 1)
    for c in facts.classes:
        _node(g, f"{mod}.{c.qualname}", "class", facts.path, c.line)
    for f in facts.functions:
        _node(g, f"{mod}.{f.qualname}", "function", facts.path, f.line)
    for c in facts.classes:
        _edge(g, _parent(mod, c.qualname), f"{mod}.{c.qualname}", kind="defines", path=facts.path, line=c.line)
    for f in facts.functions:
        _edge(g, _parent(mod, f.qualname), f"{mod}.{f.qualname}", kind="defines", path=facts.path, line=f.line)


def _parent(module: str, qualname: str) -> str:
    head = qualname.rpartition(".")[0]
    if head.endswith(".<locals>"):
        head = head[: -len(".<locals>")]
    return f"{module}.{head}" if head else module


def _add_links(g: nx.MultiDiGraph, facts: FileFacts, symbols: SymbolTable) -> None:
    mod, path = facts.module, facts.path
    for i in facts.imports:
        target = i.module if i.name in (None, "*") else i.target
        resolved = symbols.resolve(target) or (i.module if i.module in symbols.modules else None)
        node = resolved or _external(g, target.rstrip("."))
        _edge(g, mod, node, kind="imports", path=path, line=i.line)
    for c in facts.classes:
        node = f"{mod}.{c.qualname}"
        for base in c.bases:
            target = symbols.resolve(base) or _external(g, base)
            _edge(g, node, target, kind="inherits", path=path, line=c.line)
    for f in facts.functions:
        _add_calls(g, f"{mod}.{f.qualname}", f.calls, path, symbols)
    _add_calls(g, mod, facts.module_calls, path, symbols)


def _add_calls(g: nx.MultiDiGraph, caller: str, calls: Iterable, path: str, symbols: SymbolTable) -> None:
    for call in calls:
        if call.resolved is None or call.resolved.startswith("builtins."):
            continue
        target = symbols.resolve(call.resolved)
        if target is not None and target in g and g.nodes[target].get("kind") in ("function", "class"):
            _edge(g, caller, target, kind="calls", path=path, line=call.line)


def _add_spec_layer(g: nx.MultiDiGraph, inventory: SpecInventory, symbols: SymbolTable) -> None:
    for algo in inventory.algorithms:
        node = algorithm_node(algo.name)
        _node(g, node, "algorithm", algo.location.path, algo.location.line)
        g.nodes[node]["algorithm_kind"] = algo.kind
        g.nodes[node]["predicates"] = ",".join(algo.predicates)
        if algo.worker:
            worker = symbols.resolve(algo.worker) or _external(g, algo.worker)
            where = algo.worker_location or algo.location
            _edge(g, node, worker, kind="creates_worker", path=where.path, line=where.line)
    names = {a.name for a in inventory.algorithms}
    for site in inventory.dispatch_sites:
        function = _function_node(g, site.function, site.location.path, symbols)
        for name in site.algorithms:
            if name not in names:
                continue
            attrs = dict(
                kind="dispatches_on",
                path=site.location.path,
                line=site.location.line,
                via=str(site.via),
                detail=site.detail,
            )
            if site.worker:
                attrs["worker"] = site.worker
            _edge(g, function, algorithm_node(name), **attrs)
    option = inventory.algorithm_option
    if option is not None:
        node = option_node(option.name)
        _node(g, node, "option", option.location.path, option.location.line)
        selected = _selected(inventory, option.values)
        for name in selected:
            _edge(
                g,
                algorithm_node(name),
                node,
                kind="configured_by",
                path=option.location.path,
                line=option.location.line,
            )


def _selected(inventory: SpecInventory, values: tuple[str, ...]) -> list[str]:
    """Algorithms the option can select: its literal choices (through aliases), else every one."""
    names = [a.name for a in inventory.algorithms]
    if not values:
        return names
    chosen = set()
    for value in values:
        member = inventory.aliases.get(value, value)
        for name in names:
            if name.upper() == str(member).upper():
                chosen.add(name)
    return [n for n in names if n in chosen]


def _function_node(g: nx.MultiDiGraph, function: str, path: str, symbols: SymbolTable) -> str:
    """The node of a dispatch site's enclosing function (qualified, or qualname within `path`)."""
    if function in g:
        return function
    module = _module_of(path, g)
    if module is not None:
        candidate = module if function in ("", "<module>") else f"{module}.{function}"
        if candidate in g:
            return candidate
    return _external(g, function)


def _module_of(path: str, g: nx.MultiDiGraph) -> str | None:
    from sgl_scan.analyzer.builder import module_name

    name = module_name(path)
    return name if name in g else None
