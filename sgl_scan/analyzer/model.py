"""The analyzer's output contract: frozen values that rules, reports and codegen read.

Everything later stages need about a snapshot is here or in the graph; nobody reads files again.
Paths are relative to the snapshot tree (`sglang/srt/...`); lines and columns are 1-based.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from sgl_scan.analyzer.conditions import TRUE, Cond
from sgl_scan.analyzer.kinds import DecisionKind, NewAlgorithm, Refusal, Via

if TYPE_CHECKING:
    import networkx as nx

    from sgl_scan.analyzer.sources import SourceText


@dataclass(frozen=True, order=True)
class Location:
    path: str
    line: int
    column: int = 1
    end_line: int | None = None
    end_column: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def loc_key(loc) -> tuple:
    """A total order on locations (the dataclass order breaks on a None end position)."""
    return (loc.path, loc.line, loc.column)


@dataclass(frozen=True)
class ParseError:
    location: Location
    message: str


@dataclass(frozen=True)
class Predicate:
    """A boolean method on the algorithm class (`is_eagle`, `supports_spec_v2`, ...)."""

    name: str
    members: tuple[str, ...]  # algorithms it is true for, resolved recursively, in member order
    location: Location
    owner: str  # qualified name of the class that defines it


@dataclass(frozen=True)
class WorkerChoice:
    """A worker class an algorithm may get, and the flags that pick it."""

    qualname: str
    condition: str | None  # source text of the flag tests that choose it (None: unconditional)
    location: Location


def short_name(qualname: str | None) -> str:
    """The last component of a dotted name (`sglang.srt...EAGLEWorker` -> `EAGLEWorker`)."""
    if not qualname:
        return ""
    return qualname.rsplit(".", 1)[-1]


def worker_choice(choice: WorkerChoice) -> str:
    """`EAGLEWorkerV2 if enable_overlap` (or the bare class when no flag picks it)."""
    name = short_name(choice.qualname)
    return f"{name} if {choice.condition}" if choice.condition else name


@dataclass(frozen=True)
class Algorithm:
    """A speculative algorithm: an enum member or one registered at import time."""

    name: str
    kind: str  # "enum" | "registered"
    location: Location
    predicates: tuple[str, ...]  # predicates true for it
    worker: str | None  # the worker class it creates with every flag test false (the default), if any path does
    worker_location: Location | None = None  # where that worker is chosen (create_worker, factory, branch)
    workers: tuple[WorkerChoice, ...] = ()  # every worker it may get, with the flags that pick it, in source order


@dataclass(frozen=True)
class AlgorithmClass:
    qualname: str  # e.g. "sglang.srt.speculative.spec_info.SpeculativeAlgorithm"
    location: Location
    form: str  # "IntEnum" | "Enum" | "registry"


@dataclass(frozen=True)
class DispatchSite:
    """A place whose control flow depends on which algorithm is active."""

    function: str  # qualified name of the enclosing function ("<module>" for module level)
    location: Location
    via: Via
    detail: str  # predicate name, or the literal(s)/member compared against
    algorithms: tuple[str, ...]  # algorithms that reach the test's true side (the branch it controls runs)
    worker: str | None = None  # worker class the branch creates, if any
    literals: tuple[str, ...] = ()  # via "string": the literals exactly (detail joins them with ", ")
    # control flow (analyzer/flow.py)
    negative: tuple[str, ...] = ()  # algorithms that reach the test's false side (else / past the branch)
    negated: bool = False  # the term is a complement (`!=`, `not in`, under `not`): its set is "all but ..."
    decision: DecisionKind = DecisionKind.VALUE  # the test it sits in
    decision_location: Location | None = None  # that whole test (several terms may share it)
    refuses: Refusal | None = None  # one side of that test refuses loudly
    new_algorithm: NewAlgorithm = NewAlgorithm.EITHER  # where a new algorithm no literal names goes
    # the test and path condition themselves (analyzer/flow.py conditions), with what each of their
    # terms reads: (line, column, via, values, inverted); values are the members a string or member test
    # names (aliases resolved) or the predicate's name. `conditions.side` evaluates them for any algorithm.
    test: Cond | None = None
    context: Cond = TRUE
    atoms: tuple = ()
    resolves_alias: bool = False  # the test of an alias resolver: `if x == "NEXTN": x = "EAGLE"`
    guarded: bool = False  # an earlier guard (raise/assert/return/continue) keeps some algorithms from this test


@dataclass(frozen=True)
class ChoiceHook:
    """An extension point for CLI choices in server_args (or the algorithm option itself)."""

    name: str  # e.g. "add_load_format_choices", or "--speculative-algorithm"
    kind: str  # "function" | "alias" | "argument" | "config_field"
    choices: str | None  # the choices list it extends/uses, e.g. "LOAD_FORMAT_CHOICES"
    speculative: bool  # whether speculative algorithms can be added/selected there
    location: Location
    values: tuple[str, ...] = ()  # literal choices where known (argparse choices=[...])


@dataclass(frozen=True)
class D2tSite:
    """A place that handles the drafter vocabulary mapping (d2t/t2d/hot_token_id)."""

    kind: str  # see D2T_KINDS
    location: Location
    function: str
    detail: str  # the source text of the expression, normalised to one line
    # how the written or read value got there, outermost first, through the function's own assignments:
    # "+ arange", ".long()", "loaded_weight (line 352)", "d2t[...]"; for a d2t index read, how its result is used:
    # "returned", "assigned to x", "added to the index"
    chain: tuple[str, ...] = ()


D2T_KINDS = (
    "name_test_in",  # "d2t" in name
    "name_test_eq",  # name == "d2t"
    "name_test_endswith",  # name.endswith(".d2t")
    "offset_conversion",  # hot_token_id = d2t + torch.arange(...)
    "direct_map",  # hot_token_id (or another draft->target map) taken from d2t without arange
    "load_token_map",  # load_token_map(...) call
    "hot_token_use",  # hot_token_id[...], head.data[hot_token_id], .to(device), len(hot_token_id), .shape[0], is None
    "d2t_index",  # d2t[ids]: an entry of the offset table read (its `chain` says how the result is used)
)


UNREAD_KINDS = (
    "predicate",  # a predicate-named method whose body could not be read as a set of algorithms
    "dispatch",  # a dispatch site on such a predicate: which algorithms reach it is unknown
    "registration",  # a registration call whose algorithm name is not a literal
    "alias",  # an accepted spelling (reserved-alias table) whose target member was not found
    "worker",  # a worker that could not be read: a registration's worker or factory, a worker expression the
    # flow layer does not follow (a lookup, getattr, a call result), or a worker under a test it cannot evaluate
    "reference",  # a census entry (analyzer/census.py) no fact came from: `name` is its source, `reason` its form
)


@dataclass(frozen=True)
class Unread:
    """Something the analyzer saw but could not resolve: said out loud, never silently dropped."""

    what: str  # see UNREAD_KINDS
    name: str  # the predicate, the site's test, the call, the alias
    location: Location
    reason: str  # one line: what could not be read


@dataclass(frozen=True)
class Census:
    """How many references to the algorithm (and to d2t/t2d/hot_token_id) the census found, and how
    many of them produced a fact (`read`) or are in `unread` (`unread`): references == read + unread."""

    references: int
    read: int
    unread: int
    forms: tuple[tuple[str, int], ...] = ()  # (form, references of that form), see census.FORMS


@dataclass(frozen=True)
class SpecInventory:
    """What the snapshot says about speculative decoding."""

    algorithm_class: AlgorithmClass | None
    algorithms: tuple[Algorithm, ...]
    predicates: tuple[Predicate, ...]
    dispatch_sites: tuple[DispatchSite, ...]
    choice_hooks: tuple[ChoiceHook, ...]
    algorithm_option: ChoiceHook | None  # the --speculative-algorithm definition
    d2t_sites: tuple[D2tSite, ...]
    plugin_base: str | None = None  # e.g. qualified name of CustomSpecAlgo where it exists
    plugin_base_predicates: tuple[str, ...] = ()
    plugin_base_true: tuple[str, ...] = ()  # the plugin base's predicates that answer True (`return True`)
    aliases: Mapping[str, str] = field(default_factory=dict)  # accepted literal -> member ("NEXTN" -> "EAGLE")
    unread: tuple[Unread, ...] = ()  # what could not be read, in location order
    # each predicate's definition evaluated for a new member, equal to none of the existing ones
    new_member_true: tuple[str, ...] = ()  # true for it (`is_some`: `self != NONE`)
    new_member_unknown: tuple[str, ...] = ()  # could not be evaluated for it
    # the algorithm class's predicate definitions as bool expressions (extractors/records.BOOL_OPS), and those
    # predicate-named methods whose body could not be read: `--like` evaluates them for a new algorithm
    predicate_definitions: tuple[tuple[str, tuple], ...] = ()
    unread_definitions: tuple[str, ...] = ()
    census: Census | None = None  # the census's counts (None: the census did not run, e.g. a hand-built inventory)

    def unread_of(self, *kinds: str) -> tuple[Unread, ...]:
        """The unread items of these kinds (all when none are named)."""
        return tuple(u for u in self.unread if not kinds or u.what in kinds)


@dataclass(frozen=True)
class Analysis:
    """Everything the analyzer knows about one snapshot."""

    snapshot_id: str
    sglang_version: str | None
    files: Mapping[str, Any]  # path -> per-file facts (analyzer/facts.py)
    parse_errors: tuple[ParseError, ...]
    inventory: SpecInventory
    graph_or_builder: Any  # the networkx graph, or a callable that makes (or loads) it on first use
    # where later stages keep values computed from these facts (analyzer/cache.py `TreeValues`; None: not cached)
    derived: Any = field(default=None, compare=False, repr=False)
    # the files' text as analysed, for fingerprints, suppression comments and excerpts (analyzer/sources.py)
    sources: "SourceText | None" = field(default=None, compare=False, repr=False)

    @property
    def graph(self) -> "nx.MultiDiGraph":
        """The call/dispatch graph (`analyzer/graph.py`); built on first use, as most commands never read it."""
        value = self.graph_or_builder
        if callable(value):
            value = value()
            object.__setattr__(self, "graph_or_builder", value)
        return value
