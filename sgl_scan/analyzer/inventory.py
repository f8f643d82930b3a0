"""`build_inventory`: what a snapshot says about speculative decoding, from the extractors' records.

Pure and cross-file: it reads `FileFacts.extras` (see `analyzer/extractors/`) and never the files.
It picks the algorithm class and its plugin base, lists the algorithms (enum members, then those
registered at import time), evaluates every predicate body to the set of algorithms it is true for
(recursively, including registry flags), finds the worker each algorithm creates (the algorithm
class's own `create_worker`-style branches first, then registration factories, then `if/elif`
branches elsewhere that import and create a worker), and resolves dispatch sites, aliases, choice
hooks, the `--speculative-algorithm` definition and d2t sites.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, cast

from sgl_scan.analyzer.extractors.dispatch import PREDICATE_NAME
from sgl_scan.analyzer.kinds import DecisionKind, NewAlgorithm, Via
from sgl_scan.analyzer.extractors.records import (
    AlgoClassRecord,
    AliasAssign,
    AliasResolver,
    At,
    Branch,
    ConstStrings,
    D2tRecord,
    DispatchTerm,
    HookRecord,
    OptionRecord,
    PredicateBody,
    Registration,
    UnreadRecord,
    WorkerDelegate,
    WorkerFactory,
    WorkerRef,
    WorkerSite,
)
from sgl_scan.analyzer.conditions import (
    FALSE,
    TRUE,
    And,
    Cond,
    Const,
    Not,
    Or,
    conjoin,
    conjuncts,
    evaluate,
    flags_text,
    negate,
    side,
    terms_in,
)
from sgl_scan.analyzer.model import (
    Algorithm,
    AlgorithmClass,
    ChoiceHook,
    D2tSite,
    DispatchSite,
    Location,
    Predicate,
    SpecInventory,
    Unread,
    WorkerChoice,
)

NEW = "\x00new"  # a new algorithm no literal and no member test names (its predicates are unknown)

ALGORITHM_CLASS = "SpeculativeAlgorithm"


def _loc(path: str, at: At) -> Location:
    return Location(path, at.line, at.column, at.end_line)


def _records(files: Mapping[str, Any]) -> dict[type, list[tuple[str, Any]]]:
    """(path, record) pairs by record type, in path then source order."""
    out: dict[type, list[tuple[str, Any]]] = defaultdict(list)
    for path in sorted(files):
        extras = getattr(files[path], "extras", None) or {}
        for name in sorted(extras):
            if not name.startswith("spec_"):
                continue
            for record in extras[name]:
                out[type(record)].append((path, record))
    for pairs in out.values():
        pairs.sort(key=lambda pair: (pair[0], getattr(pair[1], "line", 0), getattr(pair[1], "column", 0)))
    return out


def _pick_class(classes: list[tuple[str, AlgoClassRecord]]) -> tuple[str, AlgoClassRecord] | None:
    def score(pair: tuple[str, AlgoClassRecord]) -> tuple:
        path, record = pair
        return (
            record.name != ALGORITHM_CLASS,
            not (record.members or record.form == "registry"),
            "speculative" not in path,
            -len(record.predicates),
            path,
        )

    candidates = [pair for pair in classes if pair[1].predicates or pair[1].members or pair[1].form == "registry"]
    return min(candidates, key=score) if candidates else None


def _pick_plugin_base(classes, algo: AlgoClassRecord | None) -> tuple[str, AlgoClassRecord] | None:
    if algo is None:
        return None
    others = [pair for pair in classes if pair[1].qualname != algo.qualname and pair[1].predicates]
    for pair in others:
        if pair[1].qualname in algo.register_defaults:
            return pair
    names = {p.name for p in algo.predicates}
    if "register" not in algo.methods:
        return None
    shared = [pair for pair in others if pair[1].form == "plain" and names & {p.name for p in pair[1].predicates}]
    return shared[0] if shared else None


class _Evaluator:
    """Evaluates predicate bodies to member sets over a universe of algorithm names."""

    def __init__(self, universe: list[str], bodies: dict[str, PredicateBody], flags: dict[str, set[str]]) -> None:
        self.universe, self.bodies, self.flags = universe, bodies, flags
        self._memo: dict[str, frozenset[str] | None] = {}

    def predicate(self, name: str, stack: tuple[str, ...] = ()) -> frozenset[str] | None:
        if name in self._memo:
            return self._memo[name]
        if name not in self.bodies or name in stack:
            return None
        result = self.expr(self.bodies[name].expr, stack + (name,))
        self._memo[name] = result
        return result

    def expr(self, expr: tuple, stack: tuple[str, ...]) -> frozenset[str] | None:
        op, arg = expr
        every = frozenset(self.universe)
        if op == "eq":
            return frozenset({arg}) & every
        if op == "ne":
            return every - {arg}
        if op == "in":
            return frozenset(arg) & every
        if op == "notin":
            return every - set(arg)
        if op == "const":
            return every if arg else frozenset()
        if op == "flag":
            return frozenset(self.flags.get(arg, ())) & every
        if op == "call":
            return self.predicate(arg, stack)
        if op == "not":
            inner = self.expr(arg, stack)
            return None if inner is None else every - inner
        parts = [self.expr(part, stack) for part in arg]
        if any(part is None for part in parts):
            return None
        if op == "or":
            return frozenset().union(*cast("list[frozenset[str]]", parts))
        if op == "and":
            result = every
            for part in cast("list[frozenset[str]]", parts):
                result &= part
            return result
        return None


def plugin_truth(
    base_true: Iterable[str], bodies: Mapping[str, tuple], flags: Iterable[str] = (), unknown: Iterable[str] = ()
) -> tuple[frozenset[str], tuple[str, ...]]:
    """The predicates true for a plugin algorithm object (a `CustomSpecAlgo`-like instance): those the
    plugin base answers True, overridden by the bodies of its registered `spec_class`. A body reads
    `self` as an object equal to no member (`self == SA.X` is False, `self != SA.X` True), its
    registration `flags`, and calls of other predicates (its own first, else the base's answer).
    Returns (true predicates, overrides that could not be evaluated). `scan` (build_inventory) and
    `graph --like --plugin` both ask this, so both give the same answer."""
    base, flags, unknown = set(base_true), set(flags), set(unknown)
    memo: dict[str, bool | None] = {}

    def predicate(name: str, stack: tuple[str, ...]) -> bool | None:
        if name not in bodies:
            return None if name in unknown else name in base
        if name in stack:
            return None
        if name not in memo:
            memo[name] = value(bodies[name], stack + (name,))
        return memo[name]

    def value(expr: tuple, stack: tuple[str, ...]) -> bool | None:
        op, arg = expr
        if op == "const":
            return bool(arg)
        if op in ("eq", "in"):
            return False
        if op in ("ne", "notin"):
            return True
        if op == "flag":
            return arg in flags
        if op == "call":
            return predicate(arg, stack)
        if op == "not":
            inner = value(arg, stack)
            return None if inner is None else not inner
        parts = [value(part, stack) for part in arg]
        if op == "and":
            return False if False in parts else None if None in parts else True
        if op == "or":
            return True if True in parts else None if None in parts else False
        return None

    true = {name for name in base if name not in bodies}
    unread = []
    for name in bodies:
        answer = predicate(name, ())
        if answer is None:
            unread.append(name)
        elif answer:
            true.add(name)
    return frozenset(true), tuple(unread)


def _ordered(names: Iterable[str], universe: list[str]) -> tuple[str, ...]:
    chosen = set(names)
    return tuple(name for name in universe if name in chosen)


@dataclass
class _Universe:
    """The algorithms of a snapshot: enum members first, then those registered at import time."""

    names: list[str] = field(default_factory=list)
    locations: dict[str, Location] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)  # "enum" | "registered"
    flags: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # registry flag -> algorithms
    registrations: dict[str, tuple[str, Registration]] = field(default_factory=dict)


@dataclass
class _Predicates:
    """Each predicate's algorithms (`table`), and what a plugin or a new member answers."""

    predicates: list[Predicate] = field(default_factory=list)
    table: dict[str, tuple[str, ...]] = field(default_factory=dict)
    plugin_names: tuple[str, ...] = ()  # the plugin base's predicate methods
    plugin_true: set[str] = field(default_factory=set)  # those it answers True
    new_true: list[str] = field(default_factory=list)  # predicates a new member is true for
    new_unknown: list[str] = field(default_factory=list)  # predicates whose answer for it is unknown


def build_inventory(files: Mapping[str, Any]) -> SpecInventory:
    """Combine the per-file speculative records of a snapshot into one `SpecInventory`, pass by pass:
    the algorithm class, the algorithms, the predicates, the aliases, the workers, the dispatch
    sites, and what could not be read."""
    recs = _records(files)
    spec_classes = {r.spec_class for _p, r in recs.get(Registration, []) if r.spec_class}
    # a plugin's `spec_class=` is neither the algorithm class nor its plugin base
    classes = [pair for pair in recs.get(AlgoClassRecord, []) if pair[1].qualname not in spec_classes]
    picked = _pick_class(classes)
    algo_path, algo = picked if picked else (None, None)
    plugin = _pick_plugin_base(classes, algo)
    unread: list[Unread] = []
    universe = _algorithms(recs, algo_path, algo)
    preds = _predicates(recs, algo_path, algo, plugin, universe, unread)
    aliases = _aliases(recs, universe.registrations, algo, set(universe.names))
    terms = _Terms(recs, universe.names, preds.table, aliases)
    worker_of = _algorithm_workers(recs, algo, universe, terms, unread)
    algorithms = _algorithm_entries(universe, preds.predicates, worker_of)
    dispatch = _dispatch_sites(recs, terms, unread)
    unread.extend(_unread_records(recs, algo, algo_path, set(universe.names), aliases))
    option, hooks = _options(recs)
    d2t = [D2tSite(r.kind, _loc(p, r), r.function, r.detail, r.chain) for p, r in recs.get(D2tRecord, [])]
    return SpecInventory(
        algorithm_class=AlgorithmClass(algo.qualname, _loc(cast(str, algo_path), algo), algo.form) if algo else None,
        algorithms=tuple(algorithms),
        predicates=tuple(preds.predicates),
        dispatch_sites=tuple(dispatch),
        choice_hooks=tuple(hooks),
        algorithm_option=option,
        d2t_sites=tuple(sorted(d2t, key=lambda s: s.location)),
        plugin_base=plugin[1].qualname if plugin else None,
        plugin_base_predicates=preds.plugin_names,
        plugin_base_true=tuple(sorted(preds.plugin_true)),
        aliases=aliases,
        unread=tuple(sorted(unread, key=lambda u: (u.location, u.what, u.name))),
        new_member_true=tuple(preds.new_true),
        new_member_unknown=tuple(preds.new_unknown),
        predicate_definitions=tuple((p.name, p.expr) for p in algo.predicates) if algo else (),
        unread_definitions=tuple(name for name, _at, _text in algo.unread_predicates) if algo else (),
    )


# -- pass: algorithms ----------------------------------------------------------------------------------
def _algorithms(recs, algo_path: str | None, algo: AlgoClassRecord | None) -> _Universe:
    """The enum members of the algorithm class, then the algorithms registered on it (or through a
    `register_…` call) under a name no member has."""
    out = _Universe()
    if algo is not None:
        assert algo_path is not None  # picked with `algo`
        for name, at in algo.members:
            if name not in out.kinds:
                out.names.append(name)
                out.locations[name], out.kinds[name] = _loc(algo_path, at), "enum"
    for path, reg in recs.get(Registration, []):
        if not _is_algorithm_registration(reg, algo) or reg.name in out.kinds:
            continue
        out.names.append(reg.name)
        out.locations[reg.name], out.kinds[reg.name] = _loc(path, reg), "registered"
        out.registrations[reg.name] = (path, reg)
        for flag in reg.flags:
            out.flags[flag].add(reg.name)
    return out


# -- pass: predicates ----------------------------------------------------------------------------------
def _predicates(recs, algo_path, algo, plugin, universe: _Universe, unread: list[Unread]) -> _Predicates:
    """Every predicate of the algorithm class evaluated to the algorithms it is true for (a plugin
    algorithm answering its base's or its `spec_class`'s overrides), and what a new member answers."""
    out = _Predicates()
    if plugin is not None:
        out.plugin_names = tuple(m for m in plugin[1].methods if PREDICATE_NAME.match(m))
        out.plugin_true = {p.name for p in plugin[1].predicates if p.expr == ("const", True)}
    # Algorithms the class's own predicates reason about: every algorithm in the registry form;
    # only the enum members when plugins are separate `CustomSpecAlgo` objects.
    plugin_algos = (
        [n for n in universe.names if universe.kinds[n] == "registered"]
        if algo is not None and algo.form != "registry"
        else []
    )
    truth_of = _plugin_truths(recs, plugin_algos, universe, out.plugin_true, unread)
    if algo is None:
        return out
    assert algo_path is not None  # picked with `algo`
    for name, at, text in algo.unread_predicates:
        unread.append(
            Unread("predicate", name, _loc(algo_path, at), f"`return {text}` is not read as a set of algorithms")
        )
    members_universe = [n for n in universe.names if n not in plugin_algos]
    bodies = {p.name: p for p in algo.predicates}
    evaluator = _Evaluator(members_universe, bodies, universe.flags)
    # the same definitions for a new member that equals none of the existing ones (`--like`)
    fresh = _Evaluator([*members_universe, NEW], bodies, universe.flags)
    for body in algo.predicates:
        result = fresh.predicate(body.name)
        if result is None:
            out.new_unknown.append(body.name)
        elif NEW in result:
            out.new_true.append(body.name)
    for body in algo.predicates:
        result = evaluator.predicate(body.name)
        if result is None:
            unread.append(
                Unread(
                    "predicate",
                    body.name,
                    _loc(algo_path, body),
                    "its body calls a predicate or method that could not be read",
                )
            )
            continue
        chosen = set(result) | {a for a in plugin_algos if body.name in truth_of.get(a, ())}
        out.table[body.name] = _ordered(chosen, universe.names)
        out.predicates.append(Predicate(body.name, out.table[body.name], _loc(algo_path, body), algo.qualname))
    return out


def _plugin_truths(
    recs, plugin_algos: list[str], universe: _Universe, plugin_true: set[str], unread: list[Unread]
) -> dict[str, frozenset[str]]:
    """Per plugin algorithm, the predicates its object answers True: its base's, or its
    `spec_class`'s overrides (`plugin_truth`)."""
    by_qualname = {r.qualname: (p, r) for p, r in recs.get(AlgoClassRecord, [])}
    truth_of: dict[str, frozenset[str]] = {}
    for name in plugin_algos:
        path, reg = universe.registrations[name]
        truth_of[name] = frozenset(plugin_true)
        if not reg.spec_class:
            continue
        found = by_qualname.get(reg.spec_class) or next(
            (pair for q, pair in by_qualname.items() if q.rpartition(".")[2] == reg.spec_class.rpartition(".")[2]), None
        )
        if found is None:
            unread.append(
                Unread(
                    "predicate",
                    name,
                    _loc(path, reg),
                    f"its spec_class {reg.spec_class.rpartition('.')[2]} could not be read: which predicates "
                    f"{name} answers True is unknown",
                )
            )
            continue
        cpath, record = found
        truth_of[name], not_read = plugin_truth(plugin_true, {p.name: p.expr for p in record.predicates}, reg.flags)
        for pname, at, text in record.unread_predicates:
            unread.append(
                Unread(
                    "predicate",
                    pname,
                    _loc(cpath, at),
                    f"{record.name} (spec_class of {name}): `return {text}` is not read",
                )
            )
        for pname in not_read:
            unread.append(
                Unread(
                    "predicate",
                    pname,
                    _loc(cpath, record),
                    f"{record.name} (spec_class of {name}): {pname}() could not be evaluated",
                )
            )
    return truth_of


# -- the dispatch terms, read against the algorithms ------------------------------------------------------
class _Terms:
    """The dispatch terms of every file, with what each names (`base`), selects, and is true for."""

    def __init__(self, recs, universe: list[str], table: Mapping[str, tuple[str, ...]], aliases: Mapping[str, str]):
        self.universe, self.table, self.aliases = universe, table, aliases
        self.all: list[tuple[str, DispatchTerm]] = recs.get(DispatchTerm, [])
        by_path: dict[str, list[DispatchTerm]] = defaultdict(list)
        for path, term in self.all:
            by_path[path].append(term)
        self.truths = {path: _truths(terms, self.base, universe) for path, terms in by_path.items()}
        self._at = {(path, t.line, t.column): t for path, terms in by_path.items() for t in terms}

    def base(self, term: DispatchTerm) -> set[str] | None:
        """The algorithms the term's comparison or predicate names (before `!=`/`not in`/`not`)."""
        if term.via == Via.PREDICATE:
            return set(self.table[term.values[0]]) if term.values[0] in self.table else None
        chosen = {self.aliases.get(v.upper(), v.upper()) if term.via == Via.STRING else v for v in term.values}
        return chosen & set(self.universe)

    def selected(self, term: DispatchTerm) -> tuple[str, ...] | None:
        """The algorithms that make the term true (None: unknown)."""
        chosen = self.base(term)
        if chosen is None:
            return None
        if term.negated:
            chosen = set(self.universe) - chosen
        return _ordered(chosen, self.universe)

    def atoms(self, path: str, term: DispatchTerm) -> tuple:
        """(line, column, via, values, inverted) of every term its test and path condition read."""
        keys = sorted({*terms_in(term.test), *terms_in(term.context)}) if term.test is not None else []
        out = []
        for line, column in keys:
            other = self._at.get((path, line, column))
            if other is None:
                continue
            values = other.values[:1] if other.via == Via.PREDICATE else tuple(sorted(self.base(other) or ()))
            out.append((line, column, other.via, values, other.inverted))
        return tuple(out)

    def text(self, path: str, at: tuple[int, int]) -> str:
        """The term at a position, in words."""
        term = self._at.get((path, *at))
        if term is None:
            return "?"
        return f"{term.subject}.{term.detail}()" if term.via == Via.PREDICATE else f"{term.subject} vs {term.detail}"


# -- pass: workers -----------------------------------------------------------------------------------
def _algorithm_workers(recs, algo, universe: _Universe, terms: _Terms, unread: list[Unread]) -> dict[str, tuple]:
    """Per algorithm, the workers it may create with their conditions (and its default, if known):
    the flow-read worker sites first, then its registration's worker or factory, then delegates."""
    worker_of = _workers(algo, recs.get(WorkerSite, []), terms.truths, universe.names, terms.text, unread)
    sites_of = defaultdict(list)
    for path, site in recs.get(WorkerSite, []):
        sites_of[site.function].append((path, site))
    factories = {f.qualname: (p, f) for p, f in recs.get(WorkerFactory, [])}
    for name, (path, reg) in universe.registrations.items():
        if name in worker_of or reg.worker is None:
            continue
        if reg.worker in factories:
            fpath, factory = factories[reg.worker]
            if factory.fallthrough is None:
                continue
            flowed = [(p, s) for p, s in sites_of.get(reg.worker, []) if p == fpath]
            if flowed:
                worker_of[name] = ([(s, evaluate(s.context, {}), p) for p, s in flowed], None)
            else:  # a factory the flow layer did not read: every worker it may return, its last one the default
                refs = [
                    (WorkerSite(**vars(r.at), qualname=r.qualname, function=reg.worker, context=TRUE), TRUE, fpath)
                    for r in factory.workers
                ]
                default = next(
                    c
                    for c in refs
                    if c[0].qualname == factory.fallthrough.qualname and c[0].line == factory.fallthrough.at.line
                )
                worker_of[name] = (refs, default)
        elif reg.worker.rpartition(".")[2].endswith("Worker"):
            site = WorkerSite(
                reg.line, reg.column, reg.end_line, qualname=reg.worker, function=reg.function, context=TRUE
            )
            worker_of[name] = ([(site, TRUE, path)], None)
        if name not in worker_of:
            unread.append(
                Unread(
                    "worker",
                    name,
                    _loc(path, reg),
                    f"the worker that {reg.worker.rpartition('.')[2]} gives could not be read",
                )
            )
    _delegated(worker_of, recs.get(WorkerDelegate, []), recs.get(WorkerSite, []), terms.truths, universe.names)
    return worker_of


def _algorithm_entries(universe: _Universe, predicates: list[Predicate], worker_of) -> list[Algorithm]:
    """One `Algorithm` per name: its predicates, its default worker and every worker choice."""
    algorithms = []
    for name in universe.names:
        preds = tuple(p.name for p in predicates if name in p.members)
        choices, default = worker_of.get(name, ([], None))
        default = default or _default(choices)
        workers = tuple(dict.fromkeys(WorkerChoice(s.qualname, flags_text(cond), _loc(p, s)) for s, cond, p in choices))
        kind, location = universe.kinds[name], universe.locations[name]
        if default:
            site, _cond, path = default
            algorithms.append(Algorithm(name, kind, location, preds, site.qualname, _loc(path, site), workers))
        else:
            algorithms.append(Algorithm(name, kind, location, preds, None, None, workers))
    return algorithms


# -- pass: dispatch sites ----------------------------------------------------------------------------
def _dispatch_sites(recs, terms: _Terms, unread: list[Unread]) -> list[DispatchSite]:
    """Every dispatch term as a site: the algorithms on each side, the worker its branch creates; a
    term whose predicate could not be read is unread instead."""
    unread_predicates = {u.name for u in unread if u.what == "predicate"}
    resolvers = {(path, record.line) for path, record in recs.get(AliasAssign, [])}
    branch_of_term = _branch_workers(recs.get(Branch, []))
    sites_in = defaultdict(list)
    for path, wsite in recs.get(WorkerSite, []):
        sites_in[(path, wsite.function)].append(wsite)
    dispatch = []
    for path, term in terms.all:
        algos = terms.selected(term)
        if algos is None:
            if term.via == Via.PREDICATE and term.values[0] in unread_predicates:
                unread.append(
                    Unread(
                        "dispatch",
                        f"{term.subject}.{term.detail}()" if term.subject else f"{term.detail}()",
                        _loc(path, term),
                        f"which algorithms reach it is unknown: {term.values[0]}() could not be read",
                    )
                )
            continue
        ref = branch_of_term.get((path, term))
        if ref is None and term.decision == DecisionKind.IF:  # `W = A if flag else B` then `W(...)` inside the branch
            inside = [w for w in sites_in.get((path, term.function), ()) if term.test in conjuncts(w.context)]
            ref = WorkerRef(inside[-1].qualname, inside[-1]) if inside else None
        site = _site(path, term, algos, ref, terms.truths.get(path, {}), terms.universe)
        if term.test is not None:
            site = replace(site, test=term.test, context=term.context, atoms=terms.atoms(path, term))
        if (path, term.line) in resolvers:
            site = replace(site, resolves_alias=True)
        dispatch.append(site)
    return dispatch


# -- pass: what could not be read ------------------------------------------------------------------------
def _unread_records(recs, algo, algo_path, known: set[str], aliases: Mapping[str, str]) -> list[Unread]:
    """The extractors' unread records (an unread registration only when it is on the algorithm
    class), alias spellings no resolver maps, and alias returns that could not be read."""
    out = [
        Unread(record.what, record.name, _loc(path, record), record.reason)
        for path, record in recs.get(UnreadRecord, [])
        if record.what != "registration" or _is_algorithm_call(record, algo)
    ]
    out.extend(_unread_aliases(recs, algo, known, aliases))
    out.extend(_unread_alias_returns(recs, algo, algo_path))
    return out


def _is_algorithm_registration(reg: Registration, algo: AlgoClassRecord | None) -> bool:
    if reg.callee.rpartition(".")[2] != "register":
        return True  # register_speculative_algorithm(...) and friends
    if algo is None:
        return False
    receiver = reg.receiver or ""
    return receiver == algo.qualname or receiver.rpartition(".")[2] == algo.name


def _is_algorithm_call(record: UnreadRecord, algo: AlgoClassRecord | None) -> bool:
    """An unread `X.register(...)` on the algorithm class, or a `register_…algo…(...)` call."""
    if record.receiver is None:
        return True
    return algo is not None and (record.receiver == algo.qualname or record.receiver.rpartition(".")[2] == algo.name)


def _unread_aliases(recs, algo, known: set[str], aliases: Mapping[str, str]) -> list[Unread]:
    """Spellings in a reserved-alias table of the algorithm class's package that no resolver maps."""
    if algo is None:
        return []
    package = algo.qualname.rsplit(".", 2)[0]
    out = []
    for path, const in recs.get(ConstStrings, []):
        if not const.qualname.startswith(package + "."):
            continue
        for value in const.values:
            name = value.upper()
            if name not in known and name not in aliases:
                out.append(
                    Unread(
                        "alias",
                        name,
                        _loc(path, const),
                        f"listed in {const.qualname.rpartition('.')[2]}, but no resolver maps it to an algorithm",
                    )
                )
    return out


def _unread_alias_returns(recs, algo, path) -> list[Unread]:
    """`if x in C: return <form>` in the algorithm class whose target could not be read: a return form
    other than `cls.M` / `cls[C[x]]` ("?"), or `cls[C[x]]` where C is no readable mapping."""
    if algo is None:
        return []
    consts = {c.qualname: c for _p, c in recs.get(ConstStrings, [])}
    by_short = {q.rpartition(".")[2]: c for q, c in consts.items()}
    out = []
    for container, member in algo.alias_returns:
        const = consts.get(container) or by_short.get(container.rpartition(".")[2])
        short = container.rpartition(".")[2]
        if member == "?":
            out.append(
                Unread(
                    "alias",
                    short,
                    _loc(path, algo),
                    f"`if x in {short}: return ...` returns a form the analyzer does not read: its "
                    "spellings' targets are unknown",
                )
            )
        elif member == "" and (const is None or not const.targets):
            out.append(
                Unread(
                    "alias",
                    short,
                    _loc(path, algo),
                    f"`return cls[{short}[x]]`, but {short} is no mapping of string literals the analyzer could read",
                )
            )
    return out


def _aliases(recs, reg_by_name, algo, known: set[str]) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for name, (_path, reg) in reg_by_name.items():
        for alias in reg.aliases:
            aliases.setdefault(alias, name)
    if algo is not None:
        consts = {c.qualname: c for _p, c in recs.get(ConstStrings, [])}
        by_short = {q.rpartition(".")[2]: c for q, c in consts.items()}
        for container, member in algo.alias_returns:
            const = consts.get(container) or by_short.get(container.rpartition(".")[2])
            if const is None:
                continue
            if member == "?":
                continue  # a return form not read (`_unread_alias_returns`)
            if not member:  # `return cls[C[x]]`: each spelling maps to its own target
                # a plain list of spellings has no targets: nothing is paired (`_unread_aliases` says so)
                for value, target in zip(const.values, const.targets, strict=False):
                    aliases.setdefault(value.upper(), target.upper())
                continue
            for value in const.values:
                aliases.setdefault(value.upper(), member)
        for alias, member in algo.member_aliases:  # `NEXTN = EAGLE` in the enum body
            aliases.setdefault(alias.upper(), member)
    for _path, record in recs.get(AliasAssign, []):
        aliases.setdefault(record.alias, record.target)
    for _path, record in recs.get(AliasResolver, []):
        for alias in record.aliases:
            aliases.setdefault(alias, record.target)
    resolved = {}
    for alias, target in aliases.items():
        seen = {alias}
        while target not in known and target in aliases and target not in seen:
            seen.add(target)
            target = aliases[target]
        if alias not in known and target in known:
            resolved[alias] = target
    return dict(sorted(resolved.items()))


def _truths(terms: list[DispatchTerm], base, universe: list[str]) -> dict[str, dict[tuple[int, int], bool | None]]:
    """Per algorithm (and NEW), the value of each term of one file: its comparison or predicate,
    with `!=`/`not in` applied (`not` around it is part of the flow condition)."""
    out: dict[str, dict[tuple[int, int], bool | None]] = {name: {} for name in [*universe, NEW]}
    for term in terms:
        chosen = base(term)
        for name in universe:
            out[name][(term.line, term.column)] = None if chosen is None else (name in chosen) != term.inverted
        out[NEW][(term.line, term.column)] = None if term.via == Via.PREDICATE else term.inverted
    return out


def _site(
    path: str, term: DispatchTerm, algos: tuple[str, ...], ref: WorkerRef | None, truth, universe
) -> DispatchSite:
    """A dispatch site with the algorithms that reach each side of its test (analyzer/flow.py)."""
    extra: dict[str, Any] = {}
    if term.test is not None:
        positive, negative, excluded = [], [], False
        for name in universe:
            true_side, false_side = side(term.test, term.context, truth[name])
            if true_side:
                positive.append(name)
            if false_side:
                negative.append(name)
            excluded = excluded or not (true_side or false_side)  # (neither side: its context is FALSE)
        new_true, new_false = side(term.test, term.context, truth[NEW])
        new = (
            NewAlgorithm.EITHER
            if new_true and new_false
            else NewAlgorithm.ENTERS
            if new_true
            else NewAlgorithm.SKIPS
            if new_false
            else NewAlgorithm.UNREACHABLE
        )
        line, column = term.decision_at or (term.line, term.column)
        algos = tuple(positive)
        extra = dict(
            negative=tuple(negative),
            decision=term.decision,
            decision_location=Location(path, line, column),
            refuses=term.refuses,
            new_algorithm=new,
            guarded=excluded or new is NewAlgorithm.UNREACHABLE,
        )
    return DispatchSite(
        term.function,
        _loc(path, term),
        term.via,
        term.detail,
        algos,
        ref.qualname if ref else None,
        tuple(term.values) if term.via == Via.STRING else (),
        negated=term.negated,
        **extra,
    )


def _branch_workers(branches) -> dict[tuple[str, DispatchTerm], WorkerRef]:
    """The worker the branch a term controls creates (its fall-through), for the dispatch sites."""
    out: dict[tuple[str, DispatchTerm], WorkerRef] = {}
    for path, branch in branches:
        ref = branch.fallthrough or branch.workers[0]
        for term in branch.terms:
            out[(path, term)] = ref
    return out


def _workers(algo, worker_sites, truths, universe, term_text, unread: list[Unread]):
    """Workers per algorithm from the worker sites of functions that test the algorithm.

    Functions are read in order (the algorithm class's own `create_worker` first, then by path); the
    first in which an algorithm reaches a worker gives all its workers there, each with what is left
    of its path condition once the algorithm's tests are decided (the flags that pick it). Sites
    whose path condition tests no algorithm (`if flag: W(...)`) are no dispatch here (see
    `_delegated`). A site whose condition still holds a test that could not be evaluated (a
    predicate that could not be read) is listed as unread, never guessed.
    Returns name -> (choices [(site, residual condition, path)], None).
    """
    by_function: dict[tuple[int, str, str], list[tuple[str, WorkerSite]]] = defaultdict(list)
    for path, site in worker_sites:
        if not any(True for _ in terms_in(site.context)):
            continue
        own = algo is not None and site.owner_class == algo.qualname
        by_function[(0 if own else 1, path, site.function)].append((path, site))
    worker_of: dict[str, tuple] = {}
    unknown: dict[tuple, set] = {}
    for key in sorted(by_function):
        sites = sorted(by_function[key], key=lambda pair: (pair[1].line, pair[1].column))
        for name in universe:
            truth = truths.get(key[1], {}).get(name, {})
            reached = [(site, evaluate(site.context, truth), path) for path, site in sites]
            for site, cond, path in reached:
                if cond != FALSE and any(True for _ in terms_in(cond)):
                    unknown.setdefault((path, site), set()).update(terms_in(cond))
            if name in worker_of:
                continue
            reached = [r for r in reached if r[1] != FALSE and not any(True for _ in terms_in(r[1]))]
            if reached:
                worker_of[name] = (reached, None)
    for (path, site), keys in sorted(unknown.items(), key=lambda item: (item[0][0], item[0][1].line)):
        tests = ", ".join(f"`{term_text(path, k)}`" for k in sorted(keys))
        unread.append(
            Unread(
                "worker",
                site.qualname.rpartition(".")[2],
                _loc(path, site),
                f"which algorithms create it is unknown: its path tests {tests}, which could not be evaluated",
            )
        )
    return worker_of


def _delegated(worker_of, delegates, worker_sites, truths, universe) -> None:
    """Workers chosen around the algorithm object's own choice (0.5.7 scheduler: `if
    server_args.enable_multi_layer_eagle: MultiLayerEagleWorker…(...) else:
    self.spec_algorithm.create_draft_worker(...)`).

    In a function that delegates to the algorithm, a worker site the delegate call excludes (their
    path conditions contradict: one holds a flag test, the other its negation) is an alternative: an
    algorithm that reaches it gets that worker under its flags, and its own choices under the
    delegate's distinguishing flags. Conditions both share (whether any worker is made) are left out.
    """
    sites_in = defaultdict(list)
    for path, site in worker_sites:
        sites_in[(path, site.function)].append(site)
    calls_in = defaultdict(list)
    for path, call in delegates:
        calls_in[(path, call.function)].append(call)
    for (path, function), calls in sorted(calls_in.items()):
        for name in universe:
            truth = truths.get(path, {}).get(name, {})
            reach = [(c, conjuncts(r)) for c in calls for r in [evaluate(c.context, truth)] if _decided(r)]
            alternatives = []
            for site in sites_in.get((path, function), ()):
                residual = evaluate(site.context, truth)
                if not _decided(residual):
                    continue
                own = conjuncts(residual)
                if any(negate(part) in other for _c, other in reach for part in own):
                    alternatives.append((site, own))
            if not reach or not alternatives:
                continue
            shared = set.intersection(*(set(other) for _c, other in reach))
            flags = {part for _site, own in alternatives for part in own}
            entries = [
                ((site.line, site.column), [(site, conjoin(p for p in own if p not in shared), path)])
                for site, own in alternatives
            ]
            base, _default_choice = worker_of.get(name, ([], None))
            for call, other in reach:
                picks = conjoin(p for p in other if negate(p) in flags)
                entries.append(((call.line, call.column), [(s, conjoin((picks, c)), p) for s, c, p in base]))
            worker_of[name] = ([choice for _at, group in sorted(entries, key=lambda e: e[0]) for choice in group], None)


def _decided(cond) -> bool:
    """Reached, and what is left tests only flags (every algorithm test decided)."""
    return cond != FALSE and not any(True for _ in terms_in(cond))


def _default(choices):
    """The choice made with every flag test false (None when no choice is made then)."""
    return next((c for c in choices if _flags_off(c[1])), None)


def _flags_off(cond: Cond) -> bool:
    """Whether a residual condition holds when every flag test is false."""
    if isinstance(cond, Const):
        return cond.value
    if isinstance(cond, Not):
        return not _flags_off(cond.operand)
    if isinstance(cond, (And, Or)):
        values = [_flags_off(part) for part in cond.parts]
        return all(values) if isinstance(cond, And) else any(values)
    return False  # a flag or a term


def _options(recs) -> tuple[ChoiceHook | None, list[ChoiceHook]]:
    options = recs.get(OptionRecord, [])
    option = None
    if options:
        path, record = options[0]
        option = ChoiceHook(record.name, record.kind, record.choices, True, _loc(path, record), record.values)
    hooks = []
    for path, hook in recs.get(HookRecord, []):
        speculative = bool(
            option
            and option.choices
            and hook.choices
            and hook.choices.rpartition(".")[2] == option.choices.rpartition(".")[2]
        )
        hooks.append(ChoiceHook(hook.name, hook.kind, hook.choices, speculative, _loc(path, hook)))
    if option is not None:
        hooks.append(option)
    hooks.sort(key=lambda hook: hook.location)
    return option, hooks
