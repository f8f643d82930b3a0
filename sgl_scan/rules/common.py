"""Small questions several rules ask of the inventory (derived from it, never from release names)."""

from __future__ import annotations

import json
import re

from sgl_scan.analyzer.model import DispatchSite, SpecInventory

_QUOTED = re.compile(r"""(?P<q>['"])(?P<s>(?:\\.|(?!(?P=q)).)*)(?P=q)""")


MAX_LITERAL_CHARS = 200


def quoted(literal: str) -> str:
    """A string literal from the tree, quoted so quotes, backslashes and controls inside stay
    unambiguous; a longer one is cut (its length said outside the quotes)."""
    if len(literal) > MAX_LITERAL_CHARS:
        return json.dumps(literal[:MAX_LITERAL_CHARS], ensure_ascii=False) + f" (cut; {len(literal)} characters)"
    return json.dumps(literal, ensure_ascii=False)


def null_members(inventory: SpecInventory) -> frozenset[str]:
    """Members that mean "no speculative decoding": those of an `is_none` predicate, else `NONE`."""
    for predicate in inventory.predicates:
        if predicate.name == "is_none" and predicate.members:
            return frozenset(predicate.members)
    return frozenset(a.name for a in inventory.algorithms if a.name == "NONE")


def member_names(inventory: SpecInventory) -> frozenset[str]:
    return frozenset(a.name for a in inventory.algorithms)


def known_names(inventory: SpecInventory) -> frozenset[str]:
    """Every spelling the engine accepts: members, registered algorithms, aliases (also those whose
    target could not be read), CLI choices."""
    names = set(member_names(inventory)) | set(inventory.aliases)
    names.update(u.name for u in inventory.unread_of("alias"))  # accepted, though their target is unknown
    option = inventory.algorithm_option
    if option is not None:
        names.update(option.values)
    return frozenset(names)


def literals_of(site: DispatchSite) -> tuple[str, ...]:
    """The string literals a string-dispatch site compares against, in order, without duplicates.

    `literals` holds them exactly when the analyzer recorded them; otherwise `detail` holds them quoted
    (`"EAGLE", "EAGLE3"`) or bare and separated (`EAGLE, EAGLE3`); `None` in a tuple such as
    `(None, "DSPARK")` is not a literal and is left out.
    """
    if site.literals:  # exact values: a literal holding quotes or commas is never split
        return tuple(dict.fromkeys(v for v in site.literals if v != "None"))
    text = site.detail or ""
    quoted = [m.group("s") for m in _QUOTED.finditer(text)]
    parts = quoted if quoted else [p for p in re.split(r"[\s,|/()\[\]{}]+", text) if p]
    seen: dict[str, None] = {}
    for part in parts:
        if part != "None":
            seen.setdefault(part, None)
    return tuple(seen)


def predicate_sets(inventory: SpecInventory) -> dict[str, frozenset[str]]:
    """Predicate name -> the members it is true for."""
    return {p.name: frozenset(p.members) for p in inventory.predicates}
