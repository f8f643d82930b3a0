"""String dispatch sites where an unnamed spelling silently takes the default path (SGL202, SGL208).

One answer, two hazards: a test on `speculative_algorithm` against string literals whose selected
code (`analyzer/reach.py`) the literals' members run while a name no literal holds skips it, with
nothing refusing. In code that runs before the value is normalised (`analyzer/normalization.py`)
that name is also `NEXTN` or `eagle` (SGL208); elsewhere it is a new algorithm (SGL202).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from sgl_scan.analyzer.model import Analysis, DispatchSite
from sgl_scan.rules.common import literals_of, predicate_sets, quoted
from sgl_scan.analyzer.kinds import DecisionKind, Via

if TYPE_CHECKING:  # the records module is large; a warm scan never needs it
    from sgl_scan.analyzer.extractors.records import BranchShape


@dataclass(frozen=True)
class SilentSites:
    """One test expression (its sites share the decision) and what the rules say about it."""

    sites: tuple[DispatchSite, ...]
    shape: BranchShape | None
    literals: tuple[str, ...]  # those of the silent sites, in order
    members: tuple[str, ...]  # the members they name (aliases resolved), sorted
    early_exit: bool  # the selected code is the rest of the function (`if not (...): return {}`)
    with_none: bool  # the literal set also holds `None`
    raw: str | None  # why this runs before normalisation (None: not shown to)
    spellings: tuple[str, ...] = ()  # accepted spellings that skip it there (`NEXTN`, `eagle`)

    @property
    def site(self) -> DispatchSite:
        return self.sites[0]

    @property
    def shown(self) -> str:
        return ", ".join(quoted(s) for s in self.literals) or self.site.detail

    @property
    def symbol(self) -> str:
        return f"{self.site.function}:{'|'.join(s.detail for s in self.sites)}"

    def data(self) -> dict:
        return {
            "literals": list(self.literals),
            "function": self.site.function,
            "algorithms": list(self.site.algorithms),
            "members": list(self.members),
            "early_exit": self.early_exit,
            "with_none": self.with_none,
            "before_normalisation": self.raw is not None,
        }


_LAST: list = []  # [(analysis, its silent sites)]: SGL202 and SGL208 both ask, for the same analysis


def silent_string_sites(analysis: Analysis) -> Iterator[SilentSites]:
    """Every string test a name no literal holds silently skips (see the module docstring)."""
    if not (_LAST and _LAST[0][0] is analysis):
        _LAST[:] = [(analysis, tuple(_silent_string_sites(analysis)))]
    return iter(_LAST[0][1])


def _silent_string_sites(analysis: Analysis) -> Iterator[SilentSites]:
    from sgl_scan.analyzer.normalization import raw_before_normalisation
    from sgl_scan.analyzer.reach import NEW, Reach, dead_branch, picks_out, reach, selects_rest, shape_of

    inventory = analysis.inventory
    aliases = {k.upper(): v for k, v in inventory.aliases.items()}
    predicates = predicate_sets(inventory)
    known = {a.name for a in inventory.algorithms}
    groups: dict[tuple, list] = {}
    for site in inventory.dispatch_sites:
        if site.via == Via.STRING:
            groups.setdefault((site.location.path, site.decision_location or site.location), []).append(site)
    early = raw_before_normalisation(analysis) if groups else {}

    def members_of(site: DispatchSite) -> list[str]:
        return [
            m for m in dict.fromkeys(aliases.get(lit.upper(), lit.upper()) for lit in literals_of(site)) if m in known
        ]

    for sites in groups.values():
        site = sites[0]
        shape = shape_of(analysis, site)
        silent = []
        for s in sites:
            if s.refuses or s.decision in (DecisionKind.ASSERT, DecisionKind.MESSAGE) or s.resolves_alias:
                continue  # refuses loudly, message text, or the alias resolver
            if reach(s, NEW, predicates, shape) is not Reach.SKIPS:
                continue
            site_members = members_of(s)
            if not picks_out(s, site_members, predicates, shape):
                continue  # `!= "NONE"`, `and algo != "EAGLE3"`: the literals are the exception, not the branch
            silent.append(s)
        if not silent or not any(literals_of(s) for s in silent):
            continue  # `is None` / `== None` alone tests for "no speculative algorithm", which no new one is
        if shape is not None and shape.passes_through:
            continue  # returns a name it does not know unchanged: a new algorithm is the caller's business
        if dead_branch(analysis, site, shape):
            continue  # only writes attributes nothing in the tree reads: skipping it changes nothing
        literals = tuple(dict.fromkeys(lit for s in silent for lit in literals_of(s)))
        members = tuple(sorted({aliases.get(lit.upper(), lit.upper()) for lit in literals}))
        spellings: tuple[str, ...]
        raw, spellings = early.get(site.location), ()
        if raw is not None:
            spellings = _raw_spellings(literals, members, aliases, shape.upper_cased if shape is not None else None)
            raw = raw if spellings else None  # upper-cased and every alias listed: only a new algorithm skips it
        yield SilentSites(
            tuple(sites),
            shape,
            literals,
            members,
            selects_rest(shape),
            bool(shape is not None and shape.none_compared),
            raw,
            spellings,
        )


def _raw_spellings(literals, members, aliases, upper_cased: bool | None) -> tuple[str, ...]:
    """Spellings the CLI accepts for the literals' members that the raw comparison misses. The lower-case
    spelling only where the test is known not to upper-case (`upper_cased` None: no `if` shape to tell,
    e.g. `return str(x).upper() == SA.DFLASH.name`, 0.5.23 model_override_base.py:274)."""
    named = {lit.upper() for lit in literals}
    out = [
        f"`--speculative-algorithm {alias}`"
        for alias, member in sorted(aliases.items())
        if member in members and alias not in named
    ]
    if upper_cased is False and literals:
        out.append(f"`{literals[0].lower()}`")
    return tuple(out)


def predicate_hint(analysis: Analysis, found: SilentSites) -> str:
    """Use a predicate with exactly these members, keeping `None` where the literals held it."""
    inventory = analysis.inventory
    members = found.members
    exact = [p.name for p in inventory.predicates if set(p.members) == set(members)]
    if exact:
        text = (
            f"dispatch on SpeculativeAlgorithm.{exact[0]}() (true for exactly {', '.join(members)}) instead of strings"
        )
        if found.with_none:
            text += (
                "; keep `None` as it is (`speculative_algorithm is None or ...`): from_string(None) is not one of them"
            )
        return text
    text = (
        f"no predicate is true for exactly {', '.join(members)}: add one (e.g. `return self in (...)` over those "
        "members) and dispatch on it instead of strings"
    )
    if found.with_none:
        text += "; keep the `None` case as it is"
    return text
