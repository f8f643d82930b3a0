"""The condition algebra of the flow layer: what must hold for a statement to run.

A condition is one of six frozen values, built per file (`flow.FunctionFlow`) and stored in the
facts cache with the records that carry them:

* `Term(line, column)`: a dispatch term of the same file (its `DispatchTerm` position), whose
  truth for an algorithm is known once the inventory knows the predicates;
* `Flag(text)`: any other test, by its normalised source text (`enable_overlap`);
* `Const(value)`, `Not(operand)`, `And(parts)`, `Or(parts)`.

`negate`, `conjoin` and `disjoin` keep them simplified (no constant inside `And`/`Or`, no
double `not`, no repeated part); `evaluate` replaces the terms by their value for one algorithm.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Union


class _Condition:
    """Immutable, compared and hashed by kind and fields, pickled compactly (the facts cache holds
    many). Written out rather than made with `dataclass`: a scan imports this module even when warm,
    and six dataclasses cost milliseconds to create. A cold scan compares conditions hundreds of
    thousands of times, so each kind's fields are read by one C call (`_values`, an `attrgetter`)."""

    __slots__: tuple[str, ...] = ()
    _values: Callable[["_Condition"], Any]  # the fields (one field: its value), set per kind below

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is type(self) and self._values(self) == self._values(other))

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._values(self)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(getattr(self, name)) for name in self.__slots__)})"

    def __reduce__(self):
        return (type(self), tuple(getattr(self, name) for name in self.__slots__))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")


class Const(_Condition):
    """A test whose value is known: `True`, `False`, or a condition that simplified to one."""

    __slots__ = ("value",)
    value: bool

    def __init__(self, value: bool) -> None:
        object.__setattr__(self, "value", value)


class Term(_Condition):
    """A dispatch term of the same file, by its position (1-based line and column)."""

    __slots__ = ("line", "column")
    line: int
    column: int

    def __init__(self, line: int, column: int) -> None:
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "column", column)


class Flag(_Condition):
    """A test that is no dispatch term, by its normalised source text."""

    __slots__ = ("text",)
    text: str

    def __init__(self, text: str) -> None:
        object.__setattr__(self, "text", text)


class Not(_Condition):
    __slots__ = ("operand",)
    operand: "Cond"

    def __init__(self, operand: "Cond") -> None:
        object.__setattr__(self, "operand", operand)


class And(_Condition):
    __slots__ = ("parts",)
    parts: "tuple[Cond, ...]"  # two or more, none a constant or an `And`

    def __init__(self, parts: "tuple[Cond, ...]") -> None:
        object.__setattr__(self, "parts", parts)


class Or(_Condition):
    __slots__ = ("parts",)
    parts: "tuple[Cond, ...]"  # two or more, none a constant or an `Or`

    def __init__(self, parts: "tuple[Cond, ...]") -> None:
        object.__setattr__(self, "parts", parts)


for _kind in (Const, Term, Flag, Not, And, Or):
    _kind._values = staticmethod(attrgetter(*_kind.__slots__))

Cond = Union[Const, Term, Flag, Not, And, Or]
TRUE: Cond = Const(True)
FALSE: Cond = Const(False)


# -- building --------------------------------------------------------------------------------------
def negate(cond: Cond) -> Cond:
    if isinstance(cond, Const):
        return Const(not cond.value)
    if isinstance(cond, Not):
        return cond.operand
    return Not(cond)


def conjoin(parts: Iterable[Cond]) -> Cond:
    return _joined(parts, And, absorbing=FALSE, neutral=TRUE)


def disjoin(parts: Iterable[Cond]) -> Cond:
    return _joined(parts, Or, absorbing=TRUE, neutral=FALSE)


def _joined(parts: Iterable[Cond], kind: type[And] | type[Or], *, absorbing: Cond, neutral: Cond) -> Cond:
    """`parts` joined by `kind`, flattened (an inner `kind` gives its parts), each part once; the
    absorbing constant wins, the neutral one is dropped, one part is itself, none is `neutral`."""
    out: list[Cond] = []
    for part in parts:
        if type(part) is Const:
            if part.value == absorbing.value:  # type: ignore[union-attr]
                return absorbing
            continue
        for piece in part.parts if type(part) is kind else (part,):
            if piece not in out:
                out.append(piece)
    if not out:
        return neutral
    return out[0] if len(out) == 1 else kind(tuple(out))


# -- reading -----------------------------------------------------------------------------------------
def terms_in(cond: Cond) -> Iterator[tuple[int, int]]:
    """(line, column) of every dispatch term a condition reads."""
    if isinstance(cond, Term):
        yield (cond.line, cond.column)
    elif isinstance(cond, Not):
        yield from terms_in(cond.operand)
    elif isinstance(cond, (And, Or)):
        for part in cond.parts:
            yield from terms_in(part)


def conjuncts(cond: Cond) -> tuple[Cond, ...]:
    """The parts of an `And`, or the condition itself."""
    return cond.parts if isinstance(cond, And) else (cond,)


def occurs(cond: Cond, key: Cond) -> bool:
    """Whether `key` is `cond` or a part of it (through `not`, `and`, `or`)."""
    if cond == key:
        return True
    if isinstance(cond, Not):
        return occurs(cond.operand, key)
    if isinstance(cond, (And, Or)):
        return any(occurs(part, key) for part in cond.parts)
    return False


def under_not(cond: Cond, key: Cond) -> bool:
    """Whether `key` occurs in `cond` under an odd number of `not`s (False when absent)."""
    if cond == key:
        return False
    if isinstance(cond, Not):
        return not under_not(cond.operand, key) if occurs(cond.operand, key) else False
    if isinstance(cond, (And, Or)):
        for part in cond.parts:
            if occurs(part, key):
                return under_not(part, key)
    return False


# -- across files: evaluating conditions for one algorithm --------------------------------------------
Truth = Mapping[tuple[int, int], Optional[bool]]  # term position -> its value for the algorithm (None: unknown)


def evaluate(cond: Cond, truth: Truth) -> Cond:
    """`cond` with every term replaced by its value for one algorithm and simplified.

    The result is TRUE, FALSE, or what is left: a condition on flags (and on unknown terms)."""
    if isinstance(cond, Term):
        value = truth.get((cond.line, cond.column))
        return cond if value is None else Const(value)
    if isinstance(cond, (Flag, Const)):
        return cond
    if isinstance(cond, Not):
        return negate(evaluate(cond.operand, truth))
    parts = [evaluate(part, truth) for part in cond.parts]
    return conjoin(parts) if isinstance(cond, And) else disjoin(parts)


def side(test: Cond, context: Cond, truth: Truth) -> tuple[bool, bool]:
    """(may the algorithm reach the test's true side, may it reach its false side)."""
    reach = evaluate(context, truth)
    if reach == FALSE:
        return False, False
    value = evaluate(test, truth)
    return value != FALSE, value != TRUE


_FLIPS = ((" is not ", " is "), (" is ", " is not "), (" != ", " == "), (" == ", " != "), (" not in ", " in "))


def flags_text(cond: Cond, term_text: Callable[[Term], str] | None = None) -> str | None:
    """Source-like text of a residual condition (None when it is TRUE: unconditional)."""
    if cond == TRUE:
        return None

    def render(c: Cond, outer: str) -> str:
        if isinstance(c, Flag):
            return c.text
        if isinstance(c, Term):
            return term_text(c) if term_text else f"<test at {c.line}:{c.column}>"
        if isinstance(c, Const):
            return str(c.value)
        if isinstance(c, Not):
            if isinstance(c.operand, Flag):
                for positive, negative in _FLIPS:
                    head, found, tail = c.operand.text.rpartition(positive)
                    if found and head and not any(p in head for p, _ in _FLIPS):
                        return f"{head}{negative}{tail}"
            inner = render(c.operand, "not")
            return f"not {inner}"
        op = "and" if isinstance(c, And) else "or"
        joined = f" {op} ".join(render(part, op) for part in c.parts)
        return f"({joined})" if outer in ("and", "not") and op == "or" or outer == "not" else joined

    return render(cond, "")


__all__ = [
    "And",
    "Cond",
    "Const",
    "FALSE",
    "Flag",
    "Not",
    "Or",
    "TRUE",
    "Term",
    "Truth",
    "conjoin",
    "conjuncts",
    "disjoin",
    "evaluate",
    "flags_text",
    "negate",
    "occurs",
    "side",
    "terms_in",
    "under_not",
]
