"""SGL204 predicate-contract: predicates a plugin algorithm lacks, and members no predicate selects."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.common import null_members, predicate_sets
from sgl_scan.rules.finding import Finding

CONTRACT_PREFIXES = ("is_", "supports_")


class PredicateContract(Rule):
    """
    ## What it does
    Checks the predicate interface of `SpeculativeAlgorithm`:

    1. every `is_*` / `supports_*` predicate on the class must also exist on the plugin base class
       (`CustomSpecAlgo`, in releases that have one), because callers dispatch on the shared
       interface without `isinstance` checks;
    2. every enum member must be selectable: some predicate true for it must either be named after
       it (`is_ddtree` for `DDTREE`) or be false for some other real algorithm (`is_some()` and
       `is_speculative()`, true for all of them, select nothing).

    ## Why it matters
    A predicate missing on the plugin base raises `AttributeError` at the first call site that meets
    a plugin-registered algorithm (SGLang's own registry notes that `is_some` and `is_frozen_kv_mtp`
    once went missing this way). A member without a predicate of its own cannot be dispatched on
    except by string comparison, which SGL202 flags.

    ## Example
    ```python
    class SpeculativeAlgorithm(Enum):
        EAGLE = auto()
        DDTREE = auto()                  # SGL204: no predicate selects DDTREE

        def is_eagle(self):
            return self == SpeculativeAlgorithm.EAGLE
    ```

    ## Use instead
    ```python
        def is_ddtree(self):
            return self == SpeculativeAlgorithm.DDTREE
    ```
    and add `def is_ddtree(self): return False` to `CustomSpecAlgo` where it exists.
    """

    id = "SGL204"
    name = "predicate-contract"
    severity = "error"
    message = "speculative predicate contract broken"

    examples = (
        Example(
            {
                "sglang/srt/speculative/spec_registry.py": """\
class CustomSpecAlgo:
    def __init__(self, name, factory):
        self.name = name
        self.factory = factory

    def is_none(self):
        return False

    def is_eagle(self):
        return False
""",
                "sglang/srt/speculative/spec_info.py": """\
from enum import Enum, auto

from sglang.srt.speculative.spec_registry import CustomSpecAlgo, register_algorithm


class SpeculativeAlgorithm(Enum):
    NONE = auto()
    EAGLE = auto()
    DDTREE = auto()  # expect

    @classmethod
    def register(cls, name, *, spec_class=CustomSpecAlgo):
        return register_algorithm(name, spec_class=spec_class)

    def is_none(self):
        return self == SpeculativeAlgorithm.NONE

    def is_some(self):  # expect
        return self != SpeculativeAlgorithm.NONE

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE
""",
            }
        ),
        Example(
            {
                "sglang/srt/speculative/spec_info.py": """\
from enum import IntEnum, auto


class SpeculativeAlgorithm(IntEnum):
    NONE = auto()
    EAGLE = auto()
    EAGLE3 = auto()

    def is_none(self):
        return self == SpeculativeAlgorithm.NONE

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE or self == SpeculativeAlgorithm.EAGLE3

    def is_eagle3(self):
        return self == SpeculativeAlgorithm.EAGLE3
""",
            },
            note="no plugin base; every member has its own predicate",
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        inventory = analysis.inventory
        if inventory.plugin_base:
            base_has = frozenset(inventory.plugin_base_predicates)
            base_name = inventory.plugin_base.rsplit(".", 1)[-1]
            for predicate in inventory.predicates:
                if not predicate.name.startswith(CONTRACT_PREFIXES) or predicate.name in base_has:
                    continue
                yield self.finding(
                    analysis,
                    predicate.location,
                    f"predicate {predicate.name}() is missing on the plugin base {base_name}: "
                    "plugin-registered algorithms raise AttributeError where it is called",
                    symbol=f"plugin-base:{predicate.name}",
                    data={
                        "problem": "missing_on_plugin_base",
                        "predicate": predicate.name,
                        "plugin_base": inventory.plugin_base,
                    },
                    hint=f"add `def {predicate.name}(self) -> bool: return False` to {base_name}",
                )
        sets = predicate_sets(inventory)
        null = null_members(inventory)
        real = frozenset(a.name for a in inventory.algorithms if a.kind == "enum") - null
        for algorithm in inventory.algorithms:
            if algorithm.kind != "enum" or algorithm.name in null:
                continue
            own = [name for name, members in sets.items() if algorithm.name in members]
            if any(name == f"is_{algorithm.name.lower()}" or not real <= sets[name] for name in own):
                continue
            yield self.finding(
                analysis,
                algorithm.location,
                f"no predicate selects {algorithm.name}: "
                + ("none is true for it" if not own else f"{', '.join(own)} are true for every algorithm"),
                symbol=f"unselectable:{algorithm.name}",
                data={"problem": "member_not_selectable", "member": algorithm.name, "predicates": own},
                hint=(
                    f"add `def is_{algorithm.name.lower()}(self): return self == SpeculativeAlgorithm.{algorithm.name}`"
                ),
            )
