"""`--select` / `--ignore`: rule ids, id prefixes (`SGL3`) or rule names, the most specific wins.

As in Ruff, `--select SGL3 --ignore SGL302` keeps SGL301, and `--ignore SGL3 --select SGL301`
keeps SGL301 too; on a tie, ignore wins. A selector that matches no rule is a usage error.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from sgl_scan.errors import ConfigError
from sgl_scan.rules.base import RuleSet

ALL = "SGL"


def split_selectors(values: Iterable[str] | str | None) -> tuple[str, ...]:
    """Flatten `("SGL1,SGL3", "SGL205")` or `"SGL1, SGL3"` into `("SGL1", "SGL3", "SGL205")`."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        out.extend(part.strip() for part in str(value).split(",") if part.strip())
    return tuple(out)


class Selection(NamedTuple):
    """Which rule ids a run reports."""

    select: tuple[str, ...] = (ALL,)
    ignore: tuple[str, ...] = ()

    @classmethod
    def build(
        cls, rules: RuleSet, select=None, ignore=None, *, select_from: str = "--select", ignore_from: str = "--ignore"
    ) -> "Selection":
        """Validate selectors against `rules` and normalise names to ids (`*_from`: where they were
        given, for the error: an option, or a settings file and key)."""
        chosen = tuple(_normalise(rules, s, select_from) for s in split_selectors(select)) or (ALL,)
        dropped = tuple(_normalise(rules, s, ignore_from) for s in split_selectors(ignore))
        return cls(chosen, dropped)

    def overlap(self) -> tuple[str, ...]:
        """Selectors given to both select and ignore (ignore wins between equals)."""
        return tuple(s for s in self.select if s in self.ignore)

    def without_ignored(self, selectors: tuple[str, ...]) -> "Selection":
        return Selection(self.select, tuple(s for s in self.ignore if s not in selectors))

    def allows(self, rule_id: str) -> bool:
        picked = _specificity(rule_id, self.select)
        dropped = _specificity(rule_id, self.ignore)
        return picked > dropped

    def rule_ids(self, rules: RuleSet) -> tuple[str, ...]:
        return tuple(rule_id for rule_id in rules.ids() if self.allows(rule_id))


def _specificity(rule_id: str, selectors: tuple[str, ...]) -> int:
    return max((len(s) for s in selectors if rule_id.startswith(s)), default=-1)


def _normalise(rules: RuleSet, selector: str, option: str) -> str:
    if selector.upper() == "ALL":
        return ALL
    named = rules.get(selector)
    if named is not None:
        return named.id
    upper = selector.upper()
    if any(rule_id.startswith(upper) for rule_id in rules.ids()):
        return upper
    raise ConfigError(f"{option} {selector}: no rule has that id, prefix or name (see `sgl-scan rules`)")
