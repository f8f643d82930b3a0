"""The closed vocabularies of a dispatch term and site: how it tests the algorithm, the test it sits
in, how that test refuses, and what a new algorithm does there.

Each is a `Word`: an enum whose members are their text, so they compare equal to it, print as it
(text, Markdown, HTML, templates) and serialise to it (JSON), and a misspelt member is an
AttributeError instead of a comparison that is silently never true.
"""

from __future__ import annotations

import enum


class Word(str, enum.Enum):
    """An enum member that is its text everywhere text is asked for."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Via(Word):
    """How a term tests the active algorithm."""

    PREDICATE = "predicate"  # `algo.is_eagle()`
    STRING = "string"  # `server_args.speculative_algorithm == "EAGLE"`
    MEMBER = "member"  # `algo == SpeculativeAlgorithm.EAGLE`


class DecisionKind(Word):
    """The boolean test a term sits in."""

    IF = "if"
    EXIT = "exit"  # an `if` whose body only returns, continues or breaks
    WHILE = "while"
    ASSERT = "assert"
    IFEXP = "ifexp"  # `a if test else b`
    MESSAGE = "message"  # a conditional expression that only picks message text
    FILTER = "filter"  # a comprehension's `if`
    VALUE = "value"  # any other expression (a value computed, passed or returned)


class Refusal(Word):
    """How one side of a test refuses loudly."""

    RAISE = "raise"  # also a problem collected into a table or list that is raised below
    ASSERT = "assert"
    RETURN = "return"  # `return False, reason`


class NewAlgorithm(Word):
    """Where a new algorithm, which no literal of the test names, goes at a site."""

    ENTERS = "enters"
    SKIPS = "skips"
    EITHER = "either"
    UNREACHABLE = "unreachable"


__all__ = ["DecisionKind", "NewAlgorithm", "Refusal", "Via", "Word"]
