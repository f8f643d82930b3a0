"""Frozen records the speculative-decoding extractors put in `FileFacts.extras`.

Positions are 1-based (line, column, end_line). Qualified names are absolute dotted names
(`sglang.srt.speculative.eagle_worker.EAGLEWorker`) where the file's imports and definitions allow,
else the name as written. Boolean predicate bodies are kept as small nested tuples ("bool
expressions", see `BOOL_OPS`) so the inventory can evaluate them across files.
"""

from __future__ import annotations

from dataclasses import dataclass

from sgl_scan.analyzer.conditions import TRUE, Cond
from sgl_scan.analyzer.kinds import DecisionKind, Refusal, Via

# A bool expression is one of:
#   ("eq", MEMBER) ("ne", MEMBER) ("in", (MEMBER, ...)) ("notin", (MEMBER, ...))
#   ("call", PREDICATE) ("flag", FLAG) ("const", True|False)
#   ("not", EXPR) ("or", (EXPR, ...)) ("and", (EXPR, ...))
BOOL_OPS = ("eq", "ne", "in", "notin", "call", "flag", "const", "not", "or", "and")


@dataclass(frozen=True)
class At:
    line: int
    column: int
    end_line: int


@dataclass(frozen=True)
class WorkerRef:
    """A worker class returned or instantiated at `at`."""

    qualname: str
    at: At


@dataclass(frozen=True)
class PredicateBody(At):
    """A boolean method (`def is_x(self): return <expr>`) on an algorithm-like class."""

    name: str
    expr: tuple


@dataclass(frozen=True)
class AlgoClassRecord(At):
    """A class that looks like the algorithm class or its plugin base (name matches `spec…algo`)."""

    qualname: str
    name: str
    form: str  # "IntEnum" | "Enum" | "registry" | "plain"
    bases: tuple[str, ...]
    metaclass: str | None
    members: tuple[tuple[str, At], ...]  # enum members in order
    predicates: tuple[PredicateBody, ...]
    methods: tuple[str, ...]
    register_defaults: tuple[str, ...] = ()  # classes named as parameter defaults of `register`
    alias_returns: tuple[tuple[str, str], ...] = ()  # (container qualname, member): `if x in C: return cls.M`
    unread_predicates: tuple[tuple[str, At, str], ...] = ()  # (name, where, return text): a predicate-named
    # one-line method whose return expression could not be read as a bool expression
    member_aliases: tuple[tuple[str, str], ...] = ()  # (alias, member): `NEXTN = EAGLE` in the enum body


@dataclass(frozen=True)
class Registration(At):
    """`SpeculativeAlgorithm.register("NAME", ...)`, `register_speculative_algorithm("NAME", ...)`, or the
    decorator form `@SpeculativeAlgorithm.register("NAME")` on a worker factory."""

    name: str
    callee: str  # resolved callee
    receiver: str | None  # resolved receiver for `X.register(...)`
    worker: str | None  # resolved worker class or factory function (worker_cls=, factory, decorated fn)
    flags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    function: str = "<module>"
    spec_class: str | None = None  # resolved `spec_class=` class: its predicate overrides are the algorithm's


@dataclass(frozen=True)
class WorkerFactory(At):
    """A function that returns (or returns an instance of) a `…Worker` class."""

    qualname: str
    workers: tuple[WorkerRef, ...]  # every worker it may return, in order
    fallthrough: WorkerRef | None  # the one returned by its last top-level return


@dataclass(frozen=True)
class DispatchTerm(At):
    """One test on the active algorithm: a predicate call, a string or member comparison."""

    function: str  # qualified enclosing function ("<module>" at module level)
    via: Via
    detail: str  # predicate name | the literal(s) | the member(s), comma-separated
    values: tuple[str, ...]  # predicate name, literals, or member names
    negated: bool  # the test's truth is a complement: `!=`, `not in`, `not x.is_y()`, `not (x.is_y() or ...)`
    subject: str  # the receiver / compared expression as written
    owner_class: str | None = None  # qualified class when the test is `self.is_x()` inside an algo class
    # control flow (analyzer/flow.py); absent where the term is outside any function body read
    inverted: bool = False  # the comparison itself is negative (`!=`, `not in`, `is not`)
    decision: DecisionKind = DecisionKind.VALUE
    decision_at: tuple[int, int] | None = None  # (line, column) of the whole test the term sits in
    test: Cond | None = None  # that test as a flow condition
    context: Cond = TRUE  # path condition of the statement holding the test
    refuses: Refusal | None = None  # a side of that test refuses loudly


@dataclass(frozen=True)
class Branch(At):
    """An `if`/`elif` whose test holds dispatch terms and whose body creates or returns a worker."""

    function: str
    terms: tuple[DispatchTerm, ...]  # the tests in the condition, in order
    pure: bool  # the test is only (an `or` of) positive dispatch terms
    workers: tuple[WorkerRef, ...]  # every worker the branch body may create, in order
    fallthrough: WorkerRef | None  # the worker of its last top-level statement that creates one
    owner_class: str | None = None


@dataclass(frozen=True)
class WorkerSite(At):
    """A worker class a function creates or returns, with the path condition that gets there
    (analyzer/flow.py): dispatch terms of the same file and flags."""

    qualname: str
    function: str
    context: Cond
    owner_class: str | None = None


@dataclass(frozen=True)
class WorkerDelegate(At):
    """A call that asks the algorithm object for its worker (`self.spec_algorithm.create_worker(...)`,
    `create_draft_worker(...)`), with its path condition (analyzer/flow.py): whatever worker the
    algorithm's own choice gives is created here, under this condition."""

    function: str
    context: Cond
    method: str


@dataclass(frozen=True)
class AliasAssign(At):
    """`if x == "NEXTN": x = "EAGLE"` on a speculative-algorithm name: literal → target literal."""

    alias: str
    target: str


@dataclass(frozen=True)
class UnreadRecord(At):
    """Something an extractor recognised but could not read (see model.UNREAD_KINDS)."""

    what: str
    name: str
    reason: str
    receiver: str | None = None  # resolved receiver of a `X.register(...)` call


@dataclass(frozen=True)
class AliasResolver(At):
    """`if algo == "NEXTN" or algo == "EAGLE": return "EAGLE"` in a function that otherwise returns `algo`."""

    aliases: tuple[str, ...]  # the other literals compared, upper-cased
    target: str  # the literal returned, upper-cased
    function: str


@dataclass(frozen=True)
class ConstStrings(At):
    """A module-level constant holding string literals (`_RESERVED_ALIASES = frozenset({"NEXTN"})`)."""

    qualname: str
    values: tuple[str, ...]
    targets: tuple[str, ...] = ()  # for a mapping (`{"NEXTN": "EAGLE"}`): what each value maps to


@dataclass(frozen=True)
class OptionRecord(At):
    """`--speculative-algorithm`: argparse `add_argument` or an annotated config field."""

    name: str
    kind: str  # "argument" | "config_field"
    choices: str | None  # the choices variable, when `choices=NAME`
    values: tuple[str, ...]  # literal choices
    function: str = "<module>"


@dataclass(frozen=True)
class HookRecord(At):
    """`def add_x_choices(choices): X.extend(choices)` or `add_x_choices = X.extend`."""

    name: str
    kind: str  # "function" | "alias"
    choices: str | None  # the list it extends


@dataclass(frozen=True)
class D2tRecord(At):
    kind: str  # see model.D2T_KINDS
    function: str
    detail: str
    chain: tuple[str, ...] = ()  # see model.D2tSite.chain


@dataclass(frozen=True)
class BranchShape(At):
    """One `if` statement whose test mentions the algorithm (`line`..`end_line`: the statement)."""

    test_line: int
    test_column: int  # 1-based, in characters (as the dispatch sites' decision_location)
    body_exit: str | None  # "neutral" | "value" | "reject" | "raise" | None
    has_else: bool
    writes: tuple[str, ...] = ()  # the body only assigns these attributes (empty: it does more)
    read_outside: bool = True  # one of `writes` is mentioned in this file outside the statement
    passes_through: bool = False
    none_compared: bool = False
    upper_cased: bool = False  # every string comparison in the test is on an upper-cased value (`x.upper() == "EAGLE"`,
    # or a local assigned once from one: 0.5.23 nemotron_h.py:125)
