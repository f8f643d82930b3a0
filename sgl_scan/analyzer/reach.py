"""Does an algorithm reach the code a dispatch test selects? One question, asked by the rules.

`reach(site, algorithm)` answers from the flow facts already on the site (its test, path condition
and the terms they read: `DispatchSite.atoms`, analyzer/flow.py) and from what the arms of its `if`
do (`extractors/branches.py`):

* the *selected code* is the side the test's literals or members pick out: the body of an `if`,
  except where the body only leaves with nothing (`if not (... algo == "EAGLE" ...): return {}`,
  `if algo != "DSPARK": return`), where it is the rest of the function: entering such an `if` is
  the skip;
* ENTERS: the algorithm may run the selected code; SKIPS: it silently takes the other side;
  REFUSED: the side it takes refuses loudly (raises, asserts, returns a failure); UNREACHABLE: an
  earlier guard keeps it from the test.

`NEW` stands for an algorithm no literal or member test names (its predicates are unknown).
"""

from __future__ import annotations

import enum
import re
from typing import Any, Mapping, Sequence

from sgl_scan.analyzer.extractors.records import BranchShape
from sgl_scan.analyzer.conditions import FALSE, TRUE, evaluate
from sgl_scan.analyzer.inventory import NEW
from sgl_scan.analyzer.model import Analysis, DispatchSite
from sgl_scan.analyzer.query import records_in_passing
from sgl_scan.analyzer.kinds import DecisionKind

SHAPES = "spec_branch_shapes"  # the extractor's name in FileFacts.extras


class Reach(enum.Enum):
    ENTERS = "enters"
    SKIPS = "skips"
    REFUSED = "refused"
    UNREACHABLE = "unreachable"


NAMED = "\x00named"  # the name the site's own literal holds, whatever member it is (or none)


def truth(site: DispatchSite, algorithm: str, predicates: Mapping[str, frozenset[str]]) -> dict:
    """The value of each term the site's test and path condition read, for `algorithm`."""
    out: dict[tuple[int, int], bool | None] = {}
    own = (site.location.line, site.location.column)
    for line, column, via, values, inverted in site.atoms:
        if algorithm == NAMED:
            out[(line, column)] = None if via == "predicate" else ((line, column) == own) != inverted
        elif algorithm == NEW:
            out[(line, column)] = None if via == "predicate" else bool(inverted)
        elif via == "predicate":
            members = predicates.get(values[0]) if values else None
            out[(line, column)] = None if members is None else (algorithm in members) != inverted
        else:
            out[(line, column)] = (algorithm in values) != inverted
    return out


def shapes(analysis: Analysis, path: str) -> dict[tuple[int, int], BranchShape]:
    """The branch shapes of one file, by the position of their test."""
    try:
        records = records_in_passing(analysis, path).get(SHAPES, ())
    except KeyError:
        return {}
    return {(r.test_line, r.test_column): r for r in records if isinstance(r, BranchShape)}


def shape_of(analysis: Analysis, site: DispatchSite) -> BranchShape | None:
    where = site.decision_location
    if where is None or site.decision not in (DecisionKind.IF, DecisionKind.EXIT):
        return None
    return shapes(analysis, where.path).get((where.line, where.column))


def selects_rest(shape: BranchShape | None) -> bool:
    """Whether the code the test selects is the rest of the function (the body only leaves with nothing)."""
    return shape is not None and shape.body_exit == "neutral" and not shape.has_else


def sides(
    site: DispatchSite, algorithm: str, predicates: Mapping[str, frozenset[str]], shape: BranchShape | None = None
) -> tuple[bool, bool] | None:
    """(may `algorithm` run the selected code, may it take the other side); None: an earlier guard
    keeps it from the test."""
    if site.test is None:  # no control-flow facts (outside a function body read): the term alone
        return (site.negated, not site.negated) if algorithm == NEW else (True, True)
    values = truth(site, algorithm, predicates)
    if evaluate(site.context, values) == FALSE:
        return None
    value = evaluate(site.test, values)
    true_side, false_side = value != FALSE, value != TRUE
    return (false_side, true_side) if selects_rest(shape) else (true_side, false_side)


def reach(
    site: DispatchSite, algorithm: str, predicates: Mapping[str, frozenset[str]], shape: BranchShape | None = None
) -> Reach:
    """Whether `algorithm` runs the code `site`'s test selects (see the module docstring); SKIPS
    when it may take the other side."""
    found = sides(site, algorithm, predicates, shape)
    if found is None:
        return Reach.UNREACHABLE
    if site.refuses or site.decision == DecisionKind.ASSERT:
        return Reach.REFUSED
    on_selected, on_other = found
    if shape is not None and shape.body_exit in ("raise", "reject") and on_selected:
        return Reach.REFUSED
    if on_other:
        return Reach.SKIPS
    return Reach.ENTERS if on_selected else Reach.UNREACHABLE


def picks_out(
    site: DispatchSite,
    members: Sequence[str],
    predicates: Mapping[str, frozenset[str]],
    shape: BranchShape | None = None,
) -> bool:
    """Whether the members the test names may all run its selected code (it picks them out; `!= "NONE"`
    or `and algo != "EAGLE3"` exclude theirs instead). No members (a literal the tree does not
    define): the name the literal holds."""
    found = [sides(site, m, predicates, shape) for m in (members or [NAMED])]
    return bool(found) and all(f is not None and f[0] for f in found)


def read_elsewhere(analysis: Analysis, path: str, names: Sequence[str]) -> bool:
    """Whether any file of the tree but `path` mentions one of `names` (True when that cannot be told)."""
    files: Any = analysis.files
    mentioning = getattr(files, "source_mentioning", None)
    if mentioning is None:
        return True
    found = mentioning([n for n in names if re.fullmatch(r"\w+", n)])
    if found is None:
        return True
    return any(other != path for other in found)


def dead_branch(analysis: Analysis, site: DispatchSite, shape: BranchShape | None) -> tuple[str, ...]:
    """The attributes a branch writes when that is all it does and nothing else in the tree reads them."""
    if shape is None or not shape.writes or shape.read_outside or shape.has_else or selects_rest(shape):
        return ()
    if read_elsewhere(analysis, site.location.path, shape.writes):
        return ()
    return shape.writes


__all__ = [
    "NAMED",
    "NEW",
    "Reach",
    "dead_branch",
    "picks_out",
    "reach",
    "read_elsewhere",
    "selects_rest",
    "shape_of",
    "shapes",
    "sides",
    "truth",
]
