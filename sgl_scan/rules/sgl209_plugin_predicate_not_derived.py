"""SGL209 plugin-predicate-not-derived: the plugin base answers a derived predicate with a constant."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis, Location
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.common import null_members
from sgl_scan.rules.finding import Finding
from sgl_scan.analyzer.kinds import Via

_ENUM = """\
import enum


class SpeculativeAlgorithm(enum.IntEnum):
    NONE = enum.auto()
    EAGLE = enum.auto()
    DFLASH = enum.auto()
    DSPARK = enum.auto()

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE

    def is_dflash(self):
        return self == SpeculativeAlgorithm.DFLASH

    def is_dspark(self):
        return self == SpeculativeAlgorithm.DSPARK

    def is_dflash_family(self):
        return self.is_dflash() or self.is_dspark()

    @classmethod
    def register(cls, name, factory, spec_class=None):
        return None
"""


class PluginPredicateNotDerived(Rule):
    """
    ## What it does
    Flags, once, each predicate that the plugin base (`CustomSpecAlgo`) answers with a constant
    `False` while the algorithm enum derives it from other predicates
    (`is_dflash_family(): return self.is_dflash() or self.is_dspark()`). The finding sits on the
    plugin base's definition and counts the dispatch sites on that predicate: those a plugin that
    claims the predicates it derives from (overrides `is_dflash()` to return True) silently misses.
    In `check`, the change that adds such a constant (0.5.15 -> 0.5.16 moved DFLASH dispatch from
    `is_dflash()` to `is_dflash_family()` and gave `CustomSpecAlgo` `is_dflash_family(): return
    False`) is reported there.

    ## Why it matters
    Plugins are told to override `is_*()` to join the built-in branches. One that overrides
    `is_dflash()` passes every `is_dflash()` test and none of the `is_dflash_family()` ones: 27
    sites in 0.5.23 (request validation, KV sizing, CUDA-graph inputs) take the non-DFLASH path,
    and nothing says so.

    ## Example
    ```python
    class CustomSpecAlgo:
        def is_dflash(self) -> bool:
            return False

        def is_dflash_family(self) -> bool:   # SGL209: the enum derives it from is_dflash/is_dspark
            return False
    ```

    ## Use instead
    Derive it the same way in the plugin base:
    ```python
        def is_dflash_family(self) -> bool:
            return self.is_dflash() or self.is_dspark()
    ```
    """

    id = "SGL209"
    name = "plugin-predicate-not-derived"
    severity = "warning"
    message = "the plugin base answers a predicate the enum derives from others with a constant"

    examples = (
        Example(
            {
                "sglang/srt/speculative/spec_info.py": _ENUM,
                # 0.5.16-0.5.23 speculative/spec_registry.py: CustomSpecAlgo
                "sglang/srt/speculative/spec_registry.py": """\
class CustomSpecAlgo:
    def is_eagle(self) -> bool:
        return False

    def is_dflash(self) -> bool:
        return False

    def is_dspark(self) -> bool:
        return False

    def is_dflash_family(self) -> bool:  # expect
        return False
""",
                "sglang/srt/managers/scheduler.py": """\
def init(spec_algorithm):
    if spec_algorithm.is_dflash_family():
        return 1
    return 0
""",
            },
        ),
        Example(
            {
                "sglang/srt/speculative/spec_info.py": _ENUM,
                # 0.5.15: the plugin base did not define it (SGL204/SGL206 say so), or it derives it
                "sglang/srt/speculative/spec_registry.py": """\
class CustomSpecAlgo:
    def is_eagle(self) -> bool:
        return False

    def is_dflash(self) -> bool:
        return False

    def is_dspark(self) -> bool:
        return False

    def is_dflash_family(self) -> bool:
        return self.is_dflash() or self.is_dspark()
""",
            },
            note="derived the same way: nothing to report",
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        from sgl_scan.analyzer.extractors.records import AlgoClassRecord
        from sgl_scan.analyzer.query import files_with_records, records_in_passing

        inventory = analysis.inventory
        if inventory.algorithm_class is None or not inventory.plugin_base:
            return
        records: dict[str, tuple[str, AlgoClassRecord]] = {}
        for path in files_with_records(analysis, ["AlgoClassRecord"]):
            for values in records_in_passing(analysis, path).values():
                for record in values:
                    if isinstance(record, AlgoClassRecord):
                        records.setdefault(record.qualname, (path, record))
        enum = records.get(inventory.algorithm_class.qualname)
        plugin = records.get(inventory.plugin_base)
        if enum is None or plugin is None:
            return
        derived = {body.name: body.expr for body in enum[1].predicates}
        counts: dict[str, int] = {}
        own = inventory.algorithm_class.qualname + "."
        for site in inventory.dispatch_sites:
            if site.via == Via.PREDICATE and not site.function.startswith(
                own
            ):  # the enum's own methods never run for plugins
                counts[site.detail] = counts.get(site.detail, 0) + 1
        null = {p.name for p in inventory.predicates if p.members and set(p.members) <= null_members(inventory)}
        plugin_path = plugin[0]
        base = inventory.plugin_base.rpartition(".")[2]
        for body in plugin[1].predicates:
            if body.expr != ("const", False) or body.name not in derived:
                continue
            sources = _positive_calls(derived[body.name])
            if not sources:
                continue
            leaves = sorted(_leaves(body.name, derived) - null) or sorted(_leaves(body.name, derived))
            claimed = " / ".join(f"{n}()" for n in leaves)
            n = counts.get(body.name, 0)
            yield self.finding(
                analysis,
                Location(plugin_path, body.line, body.column, body.end_line),
                f"{base}.{body.name}() returns False, but the enum derives it from "
                f"{' or '.join(f'{s}()' for s in sources)}: a plugin that claims {claimed} silently misses "
                f"the {n} dispatch site{'s' if n != 1 else ''} on {body.name}()",
                symbol=f"{base}.{body.name}",
                data={"predicate": body.name, "derived_from": sources, "claims": leaves, "sites": n},
                hint=f"derive it the same way in {base}: `return " + " or ".join(f"self.{s}()" for s in sources) + "`",
            )


def _positive_calls(expr: tuple) -> list[str]:
    """Predicates a bool expression calls outside any `not`, when it is an `or`/single call of them
    (and members or flags beside them): true when one of those is."""
    op = expr[0]
    if op == "call":
        return [expr[1]]
    if op == "or":
        out = []
        for part in expr[1]:
            if part[0] == "call":
                out.append(part[1])
        return out
    return []


def _leaves(name: str, derived: dict, seen: frozenset = frozenset()) -> set[str]:
    """The predicates `name` derives from, followed down to those not derived from others."""
    if name in seen:
        return set()
    calls = _positive_calls(derived.get(name, ("const", False)))
    if not calls:
        return {name}
    out: set[str] = set()
    for call in calls:
        out |= _leaves(call, derived, seen | {name})
    return out
