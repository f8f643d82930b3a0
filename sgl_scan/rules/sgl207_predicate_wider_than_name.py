"""SGL207 predicate-wider-than-name: `is_x()` is also true for algorithms that are not variants of X."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.finding import Finding


class PredicateWiderThanName(Rule):
    """
    ## What it does
    Flags a predicate named after one algorithm (`is_eagle` for `EAGLE`) that is also true for
    algorithms whose names are not variants of it (their names do not start with `EAGLE`): in
    0.5.23, `is_eagle()` is true for `FROZEN_KV_MTP` as well. `EAGLE3` under `is_eagle()` is
    a variant and is not reported.

    ## Why it matters
    Every `if spec_algorithm.is_eagle():` branch in the scheduler, the CUDA-graph runners and the
    server-argument hooks then also runs for the extra algorithm. Someone adding an algorithm next
    to it (DDTree next to DFlash, say) reads `is_eagle()` as "EAGLE and EAGLE3" and misjudges which
    code paths a change touches.

    ## Example
    ```python
    def is_eagle(self) -> bool:          # SGL207: also true for FROZEN_KV_MTP
        return self in (
            SpeculativeAlgorithm.EAGLE,
            SpeculativeAlgorithm.EAGLE3,
            SpeculativeAlgorithm.FROZEN_KV_MTP,
        )
    ```

    ## Use instead
    Keep `is_eagle()` to the EAGLE variants and give shared behaviour its own predicate (as
    `is_dflash_family()` does), or check `sgl-scan graph --dispatch FROZEN_KV_MTP` before relying
    on the name.
    """

    id = "SGL207"
    name = "predicate-wider-than-name"
    severity = "warning"
    message = "predicate named after one algorithm is true for unrelated ones"

    examples = (
        Example(
            {
                "sglang/srt/speculative/spec_info.py": """\
from enum import Enum, auto


class SpeculativeAlgorithm(Enum):
    EAGLE = auto()
    EAGLE3 = auto()
    FROZEN_KV_MTP = auto()
    NONE = auto()

    def is_none(self):
        return self == SpeculativeAlgorithm.NONE

    def is_eagle(self):  # expect
        return self in (
            SpeculativeAlgorithm.EAGLE,
            SpeculativeAlgorithm.EAGLE3,
            SpeculativeAlgorithm.FROZEN_KV_MTP,
        )

    def is_frozen_kv_mtp(self):
        return self == SpeculativeAlgorithm.FROZEN_KV_MTP
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

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE or self == SpeculativeAlgorithm.EAGLE3

    def is_speculative(self):
        return self != SpeculativeAlgorithm.NONE
""",
            },
            note="variants and predicates not named after a member are fine",
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        members = {a.name for a in analysis.inventory.algorithms}
        for predicate in analysis.inventory.predicates:
            if not predicate.name.startswith("is_"):
                continue
            named = predicate.name[3:].upper()
            if named not in members or named not in predicate.members:
                continue
            extra = [m for m in predicate.members if not m.startswith(named)]
            if not extra:
                continue
            yield self.finding(
                analysis,
                predicate.location,
                f"{predicate.name}() is also true for {', '.join(extra)}: every branch on it runs for "
                f"{'them' if len(extra) > 1 else 'it'} too",
                symbol=f"{predicate.name}:{','.join(extra)}",
                data={"predicate": predicate.name, "named": named, "members": list(predicate.members), "extra": extra},
            )
