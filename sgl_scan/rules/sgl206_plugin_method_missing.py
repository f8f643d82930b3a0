"""SGL206 plugin-method-missing: an algorithm method called in dispatch that the plugin base lacks."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.finding import Finding
from sgl_scan.rules.sgl204_predicate_contract import CONTRACT_PREFIXES


class PluginMethodMissing(Rule):
    """
    ## What it does
    Flags each call of a boolean method of `SpeculativeAlgorithm` that the plugin base class
    (`CustomSpecAlgo`) does not define, for methods outside the `is_*` / `supports_*` interface that
    SGLang's own registration check (and SGL204) covers — `need_topk()`, `has_draft_kv()`,
    `carries_draft_hidden_states()` and the like.

    ## Why it matters
    `SpeculativeAlgorithm.from_string` returns a `CustomSpecAlgo` for a plugin-registered algorithm,
    and callers use it exactly like an enum member. SGLang's registration check only compares the
    `is_*` / `supports_*` names, so a helper such as `carries_draft_hidden_states()` can be missing on
    the plugin base without any warning; the call then raises `AttributeError` the first time a
    plugin algorithm reaches it — typically in a rarely used mode such as PD disaggregation.

    ## Example
    ```python
    if self.spec_algorithm.carries_draft_hidden_states():   # SGL206: CustomSpecAlgo has no such method
        ...
    ```

    ## Use instead
    Give the plugin base a conservative default:
    ```python
    class CustomSpecAlgo:
        def carries_draft_hidden_states(self) -> bool:
            return False
    ```
    """

    id = "SGL206"
    name = "plugin-method-missing"
    severity = "error"
    message = "algorithm method called that plugin-registered algorithms lack"

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

    @classmethod
    def register(cls, name, *, spec_class=CustomSpecAlgo):
        return register_algorithm(name, spec_class=spec_class)

    def is_none(self):
        return self == SpeculativeAlgorithm.NONE

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE

    def need_topk(self):
        return self.is_eagle()
""",
                "sglang/srt/managers/scheduler.py": """\
class Scheduler:
    def init_buffers(self):
        if self.spec_algorithm.need_topk():  # expect
            self.topk = 1
        if self.spec_algorithm.is_eagle():
            self.topk = 2
""",
            }
        ),
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

    def need_topk(self):
        return False
""",
                "sglang/srt/speculative/spec_info.py": """\
from enum import Enum, auto

from sglang.srt.speculative.spec_registry import CustomSpecAlgo, register_algorithm


class SpeculativeAlgorithm(Enum):
    NONE = auto()
    EAGLE = auto()

    @classmethod
    def register(cls, name, *, spec_class=CustomSpecAlgo):
        return register_algorithm(name, spec_class=spec_class)

    def is_none(self):
        return self == SpeculativeAlgorithm.NONE

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE

    def need_topk(self):
        return self.is_eagle()
""",
                "sglang/srt/managers/scheduler.py": """\
class Scheduler:
    def init_buffers(self):
        if self.spec_algorithm.need_topk():
            self.topk = 1
""",
            }
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        inventory = analysis.inventory
        if not inventory.plugin_base:
            return
        base_name = inventory.plugin_base.rsplit(".", 1)[-1]
        missing = {
            p.name
            for p in inventory.predicates
            if not p.name.startswith(CONTRACT_PREFIXES) and p.name not in set(inventory.plugin_base_predicates)
        }
        for site in inventory.dispatch_sites:
            if site.via != "predicate" or site.detail not in missing:
                continue
            yield self.finding(
                analysis,
                site.location,
                f"{site.detail}() is called on the algorithm here, but {base_name} (plugin-registered "
                "algorithms) does not define it: AttributeError for any plugin algorithm",
                symbol=f"{site.function}:{site.detail}",
                data={"method": site.detail, "function": site.function, "plugin_base": inventory.plugin_base},
                hint=f"define {site.detail}() on {base_name} with a conservative default",
            )
