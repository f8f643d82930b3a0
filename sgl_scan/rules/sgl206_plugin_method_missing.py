"""SGL206 plugin-method-missing: a method called on an algorithm object that the plugin base lacks."""

from __future__ import annotations

import re
from typing import Iterable

from sgl_scan.analyzer.model import Analysis, Location
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.common import literals_of
from sgl_scan.rules.finding import Finding
from sgl_scan.rules.sgl204_predicate_contract import CONTRACT_PREFIXES
from sgl_scan.analyzer.kinds import Via

# What an algorithm object is called where SGLang uses one: `self.spec_algorithm`, `spec_algo`,
# `server_args.speculative_algorithm` after `from_string`, ... (the last name of the receiver).
_RECEIVER = re.compile(r"(?i)^(?:spec(?:ulative)?_?)?algo(?:rithm)?$")
_NOT_INSTANCE = ("classmethod", "staticmethod")


class PluginMethodMissing(Rule):
    """
    ## What it does
    Flags each call, on an algorithm object (`self.spec_algorithm.m(...)`, `spec_algo.m(...)`,
    `SpeculativeAlgorithm.from_string(x).m(...)`), of an instance method of `SpeculativeAlgorithm`
    that the plugin base class (`CustomSpecAlgo`, with its bases) does not define — any method, not
    only boolean predicates: `create_future_map(...)` at scheduler start, `need_topk()`,
    `carries_draft_hidden_states()`. The `is_*` / `supports_*` names are SGL204's (SGLang's own
    registration check compares them). A call in a function after a test that refuses every name
    outside a literal list (`if algo not in ("EAGLE", "EAGLE3"): return ...`) is taken to be behind
    that allow-list, which plugin algorithms never pass, and is not flagged. When the plugin base
    has a base class outside the snapshot, its methods are unknown and nothing is flagged.

    ## Why it matters
    `SpeculativeAlgorithm.from_string` returns a `CustomSpecAlgo` for a plugin-registered algorithm,
    and callers use it exactly like an enum member. A method the plugin base lacks raises
    `AttributeError` the first time a plugin algorithm reaches the call: at server start for
    `create_future_map()` (0.5.23 `Scheduler.init_overlap`), or later in a rarely used mode such as
    PD disaggregation for `carries_draft_hidden_states()`.

    ## Example
    ```python
    if self.spec_algorithm.carries_draft_hidden_states():   # SGL206: CustomSpecAlgo has no such method
        ...
    self.future_map = self.spec_algorithm.create_future_map(self.device)   # SGL206
    ```

    ## Use instead
    Give the plugin base a conservative default (or the same implementation):
    ```python
    class CustomSpecAlgo:
        def carries_draft_hidden_states(self) -> bool:
            return False

        def create_future_map(self, device, req_to_token_pool, **kwargs):
            return FutureMap(device, self, req_to_token_pool, **kwargs)
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

    def has_draft_kv(self):
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

    def has_draft_kv(self):
        return self.is_eagle()

    def create_future_map(self, device):
        return (device, self)

    @classmethod
    def from_string(cls, name):
        return cls[name.upper()]
""",
                "sglang/srt/managers/scheduler.py": """\
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


class Scheduler:
    def __init__(self, server_args):
        self.spec_algorithm = SpeculativeAlgorithm.from_string(server_args.speculative_algorithm)
        self.future_map = self.spec_algorithm.create_future_map(self.device)  # expect

    def init_buffers(self):
        if self.spec_algorithm.need_topk():  # expect
            self.topk = 1
        if self.spec_algorithm.is_eagle() and self.spec_algorithm.has_draft_kv():
            self.topk = 2
        self.lora_registry.register(self.spec_algorithm)


def adaptive_reason(server_args):
    if server_args.speculative_algorithm not in ("EAGLE",):
        return "only EAGLE"
    return SpeculativeAlgorithm.from_string(server_args.speculative_algorithm).need_topk()
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
        # here: the query API loads the per-file fact classes, and a warm scan runs no rule (rules/memo.py)
        from sgl_scan.analyzer.query import class_methods, projected_mentioning

        inventory = analysis.inventory
        if not inventory.plugin_base or inventory.algorithm_class is None:
            return
        offered, unknown_bases = class_methods(analysis, inventory.plugin_base)
        if unknown_bases:
            return  # the plugin base inherits from a class outside the snapshot: its methods are unknown
        own, _ = class_methods(analysis, inventory.algorithm_class.qualname)
        algo_class = inventory.algorithm_class.qualname
        missing = {
            name
            for name, (module, fn) in own.items()
            if fn.owner is not None
            and f"{module}.{fn.owner}" == algo_class
            and not name.startswith(CONTRACT_PREFIXES)
            and not name.startswith("__")
            and name not in offered
            and not any(d.rpartition(".")[2] in _NOT_INSTANCE for d in fn.decorators)
        }
        if not missing:
            return
        base_name = inventory.plugin_base.rsplit(".", 1)[-1]
        guards = _allow_list_guards(inventory)
        words = tuple(sorted(missing))
        for path, calls in projected_mentioning(analysis, words, algorithm_calls, (words, algo_class)):
            for location, name, function in calls:
                if any(line < location.line for line in guards.get((path, function), ())):
                    continue  # behind an allow-list of built-in names
                yield self.finding(
                    analysis,
                    location,
                    f"{name}() is called on the algorithm here, but {base_name} (plugin-registered "
                    "algorithms) does not define it: AttributeError for any plugin algorithm",
                    symbol=f"{function}:{name}",
                    data={"method": name, "function": function, "plugin_base": inventory.plugin_base},
                    hint=f"define {name}() on {base_name} with a conservative default",
                )


def algorithm_calls(facts, names: tuple[str, ...], algo_class: str) -> tuple[tuple[Location, str, str], ...]:
    """(location, method, function) of each call of one of `names` on an algorithm object in `facts`,
    outside the algorithm class's own methods (which run on members, never on plugins); one per
    line and method. Empty for facts that mention none of `names` (`projected_mentioning`)."""
    algo_name = algo_class.rpartition(".")[2]
    found = []
    for fn in getattr(facts, "functions", ()):
        if fn.owner is not None and f"{facts.module}.{fn.owner}" == algo_class:
            continue
        function = f"{facts.module}.{fn.qualname}"
        seen = set()
        for call in fn.calls:
            receiver, _, name = call.callee.rpartition(".")
            if name not in names or (call.line, name) in seen or not _is_algorithm(receiver, algo_name):
                continue
            seen.add((call.line, name))
            found.append((facts.location(call), name, function))
    return tuple(found)


def _is_algorithm(receiver: str, algo_name: str) -> bool:
    """Whether a call's receiver is an algorithm object (not the class itself)."""
    if re.search(rf"\b{re.escape(algo_name)}\.from_string\(", receiver):
        return True
    return bool(_RECEIVER.match(receiver.rpartition(".")[2]))


def _allow_list_guards(inventory) -> dict[tuple[str, str], list[int]]:
    """(path, function) -> lines of negated literal tests (`x not in ("EAGLE", ...)`, `x != "EAGLE"`):
    the sites whose algorithms are every known one except the literals."""
    universe = {a.name for a in inventory.algorithms}
    out: dict[tuple[str, str], list[int]] = {}
    for site in inventory.dispatch_sites:
        if site.via != Via.STRING:
            continue
        named = {inventory.aliases.get(v.upper(), v.upper()) for v in literals_of(site)} & universe
        if named and set(site.algorithms) == universe - named:
            out.setdefault((site.location.path, site.function), []).append(site.location.line)
    return out
