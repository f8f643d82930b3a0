"""SGL101 speculative-algorithm-member: every algorithm the snapshot defines or registers."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.finding import Finding


class SpeculativeAlgorithmMember(Rule):
    """
    ## What it does
    Lists every member of `SpeculativeAlgorithm`, wherever the class lives in this release, and every
    algorithm registered with `SpeculativeAlgorithm.register("NAME", ...)`, with the predicates that
    are true for it and the worker class its dispatch creates.

    ## Why it matters
    Adding an algorithm (DDTree, say) starts with knowing which ones exist and how each is
    recognised: `is_eagle()` also covers `EAGLE3` (and `FROZEN_KV_MTP` in 0.5.23), so a branch on it
    silently catches more than its name says. This inventory replaces `grep`ping the enum by hand.

    ## Example
    ```python
    class SpeculativeAlgorithm(IntEnum):
        NONE = auto()
        EAGLE = auto()    # SGL101: EAGLE (enum); predicates is_eagle; worker EAGLEWorker
        EAGLE3 = auto()
    ```

    ## Use instead
    Nothing to change: this is an inventory rule (severity info). Read its `data` (`member`, `kind`,
    `predicates`, `worker`) in `--format json`, or ignore it with `--ignore SGL1`.
    """

    id = "SGL101"
    name = "speculative-algorithm-member"
    severity = "info"
    message = "speculative algorithm member"

    examples = (
        Example(
            {
                "sglang/srt/speculative/spec_info.py": """\
from enum import IntEnum, auto


class SpeculativeAlgorithm(IntEnum):
    NONE = auto()  # expect
    EAGLE = auto()  # expect
    EAGLE3 = auto()  # expect

    def is_none(self):
        return self == SpeculativeAlgorithm.NONE

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE or self == SpeculativeAlgorithm.EAGLE3

    def is_eagle3(self):
        return self == SpeculativeAlgorithm.EAGLE3
""",
            }
        ),
        Example(
            {
                "sglang/srt/model_executor/forward_batch_info.py": """\
from enum import IntEnum, auto


class ForwardMode(IntEnum):
    EXTEND = auto()
    DECODE = auto()

    def is_extend(self):
        return self == ForwardMode.EXTEND
""",
            },
            note="other enums are not algorithms",
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        for algorithm in analysis.inventory.algorithms:
            predicates = ", ".join(algorithm.predicates) or "no predicates"
            worker = algorithm.worker.rsplit(".", 1)[-1] if algorithm.worker else "no worker"
            yield self.finding(
                analysis,
                algorithm.location,
                f"speculative algorithm {algorithm.name} ({algorithm.kind}): {predicates}; {worker}",
                symbol=f"{algorithm.kind}:{algorithm.name}",
                data={
                    "member": algorithm.name,
                    "kind": algorithm.kind,
                    "predicates": list(algorithm.predicates),
                    "worker": algorithm.worker,
                },
            )
