"""`graph --dispatch ALGO`: the sites that branch on one algorithm, as text or JSON, each with the
side ALGO takes there and the term of the test that decides it.

The side is read from the analyzer's flow facts (`DispatchSite.test`, `.context`, `.atoms`,
evaluated by `analyzer.conditions.side`), never re-derived: "true" (ALGO reaches only the branch the
test controls), "false" (only the other way), "either" (both: the test reads something that is not
the algorithm, or the analyzer could not read a term), "unreachable" (an earlier guard keeps it
out). The deciding term is the one whose value, flipped for ALGO, changes that side; none is
named when no single term does. The JSON document's schema is in docs/json-schema.md
(kind "sgl-scan/dispatch").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from sgl_scan.analyzer.model import DispatchSite, SpecInventory

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class SiteSide:
    site: DispatchSite
    side: str  # "true" | "false" | "either" | "unreachable" | "unknown" (no test was read)
    term: str | None  # the term that decides it (`is_eagle()`, `algo not in {EAGLE, EAGLE3}`), with its position
    term_at: str | None  # "line:column" of that term


def _side_name(true_side: bool, false_side: bool) -> str:
    return "either" if true_side and false_side else "true" if true_side else "false" if false_side else "unreachable"


def _term_text(via: str, values, inverted: bool) -> str:
    if via == "predicate":
        return f"{'not ' if inverted else ''}{values[0]}()"
    names = ", ".join(values)
    return f"algorithm {'not in' if inverted else 'in'} {{{names}}}"


def site_sides(inventory: SpecInventory, algorithm: str, sites: Iterable[DispatchSite]) -> tuple[SiteSide, ...]:
    """The side `algorithm` takes at each site, and the term that decides it."""
    from sgl_scan.analyzer.conditions import side

    members = {p.name: set(p.members) for p in inventory.predicates}
    out = []
    for site in sites:
        if site.test is None:
            out.append(SiteSide(site, "unknown", None, None))
            continue
        truth, terms = {}, {}
        for line, column, via, values, inverted in site.atoms:
            if via == "predicate":
                value = (algorithm in members[values[0]]) != inverted if values[0] in members else None
            else:
                value = (algorithm in values) != inverted
            truth[(line, column)] = value
            terms[(line, column)] = _term_text(via, values, inverted)
        taken = _side_name(*side(site.test, site.context, truth))
        deciding = None
        if taken in ("true", "false", "unreachable"):
            for key in sorted(terms):
                if truth[key] is None:
                    continue
                flipped = _side_name(*side(site.test, site.context, {**truth, key: not truth[key]}))
                if flipped != taken:
                    deciding = key
                    break
        elif taken == "either":  # the term whose value for ALGO is unknown, if any, leaves it open
            deciding = next((key for key in sorted(terms) if truth[key] is None), None)
        out.append(
            SiteSide(
                site, taken, terms[deciding] if deciding else None, f"{deciding[0]}:{deciding[1]}" if deciding else None
            )
        )
    return tuple(out)


def text_lines(header_and_sites: list[str], sides: tuple[SiteSide, ...]) -> list[str]:
    """`format_dispatch`'s lines (three header lines, then one per site, in the sides' order), each
    site line followed by the side its algorithm takes and the deciding term."""
    head, rows = header_and_sites[:3], header_and_sites[3:]
    if len(rows) != len(sides):  # a listing this module does not know how to annotate: leave it whole
        return header_and_sites
    out = list(head)
    for row, s in zip(rows, sides, strict=True):
        decided = (
            f", decided by {s.term} at {s.term_at}"
            if s.term
            else " (the test reads more than the algorithm)"
            if s.side == "either"
            else ""
        )
        out.append(f"{row}  side: {s.side}{decided}")
    return out


def document(listing, sides: tuple[SiteSide, ...], tree: dict, scope: dict, tool_version: str) -> dict:
    """The listing as plain JSON types (kind "sgl-scan/dispatch")."""
    algo = listing.algorithm
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "sgl-scan/dispatch",
        "tool": {"name": "sgl-scan", "version": tool_version},
        "tree": tree,
        "scope": scope,
        "algorithm": {
            "name": algo.name,
            "location": str(algo.location),
            "worker": algo.worker,
            "worker_location": str(algo.worker_location) if algo.worker_location else None,
            "predicates": list(algo.predicates),
        },
        "sites": [
            {
                "path": s.site.location.path,
                "line": s.site.location.line,
                "column": s.site.location.column,
                "function": s.site.function,
                "via": s.site.via,
                "detail": s.site.detail,
                "negated": s.site.negated,
                "worker": s.site.worker,
                "side": s.side,
                "decided_by": None if s.term is None else {"term": s.term, "at": s.term_at},
            }
            for s in sides
        ],
    }
