"""SGL201 algorithm-without-worker: an algorithm that no dispatch path turns into a worker."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.common import null_members
from sgl_scan.rules.finding import Finding


class AlgorithmWithoutWorker(Rule):
    """
    ## What it does
    Flags a speculative algorithm (an enum member or a registered one) for which no dispatch path —
    `create_worker`, a worker factory, or an `if`/`elif` chain in the scheduler — creates a worker
    class. The member meaning "no speculative decoding" (the one `is_none()` selects, or `NONE`) is
    exempt. When predicates, dispatch sites, registrations or workers could not be read, the result is
    incomplete: the finding says so and is a warning, never an error.

    ## Why it matters
    An algorithm that can be selected on the command line but has no worker fails only at startup,
    deep inside the scheduler (`Unreachable code path in create_worker`), after the model has loaded.
    This is the most common half-finished integration.

    ## Example
    ```python
    class SpeculativeAlgorithm(Enum):
        EAGLE = auto()
        DDTREE = auto()          # SGL201: no branch of create_worker returns a worker for it

        def create_worker(self, server_args):
            if self.is_eagle():
                return EAGLEWorker
    ```

    ## Use instead
    Add the branch that returns the worker, next to the others:
    ```python
            if self.is_ddtree():
                from sglang.srt.speculative.ddtree_worker import DDTreeWorker
                return DDTreeWorker
    ```
    """

    id = "SGL201"
    name = "algorithm-without-worker"
    severity = "error"
    message = "speculative algorithm without a worker"

    examples = (
        Example(
            {
                "sglang/srt/speculative/spec_info.py": """\
from enum import Enum, auto


class SpeculativeAlgorithm(Enum):
    NONE = auto()
    EAGLE = auto()
    DDTREE = auto()  # expect

    def is_none(self):
        return self == SpeculativeAlgorithm.NONE

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE

    def is_ddtree(self):
        return self == SpeculativeAlgorithm.DDTREE

    def create_worker(self, server_args):
        assert not self.is_none()
        if self.is_eagle():
            from sglang.srt.speculative.eagle_worker import EAGLEWorker

            return EAGLEWorker
        raise ValueError("Unreachable code path in create_worker.")
""",
                "sglang/srt/speculative/eagle_worker.py": """\
class EAGLEWorker:
    pass
""",
            }
        ),
        Example(
            {
                "sglang/srt/speculative/spec_info.py": """\
from enum import Enum, auto


class SpeculativeAlgorithm(Enum):
    NONE = auto()
    EAGLE = auto()
    DDTREE = auto()

    def is_none(self):
        return self == SpeculativeAlgorithm.NONE

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE

    def is_ddtree(self):
        return self == SpeculativeAlgorithm.DDTREE

    def create_worker(self, server_args):
        assert not self.is_none()
        if self.is_eagle():
            from sglang.srt.speculative.eagle_worker import EAGLEWorker

            return EAGLEWorker
        if self.is_ddtree():
            from sglang.srt.speculative.ddtree_worker import DDTreeWorker

            return DDTreeWorker
        raise ValueError("Unreachable code path in create_worker.")
""",
                "sglang/srt/speculative/eagle_worker.py": """\
class EAGLEWorker:
    pass
""",
                "sglang/srt/speculative/ddtree_worker.py": """\
class DDTreeWorker:
    pass
""",
            }
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        inventory = analysis.inventory
        exempt = null_members(inventory)
        # Worker paths are read through predicates and dispatch sites: when some could not be read,
        # a missing worker may be one the analyzer could not follow, so the result is incomplete.
        unread = inventory.unread_of("predicate", "dispatch", "registration", "worker")
        for algorithm in inventory.algorithms:
            if algorithm.worker or algorithm.name in exempt:
                continue
            finding = self.finding(
                analysis,
                algorithm.location,
                f"speculative algorithm {algorithm.name} ({algorithm.kind}) has no dispatch path that creates a worker"
                + (f" (incomplete: {len(unread)} fact(s) could not be read)" if unread else ""),
                symbol=f"{algorithm.kind}:{algorithm.name}",
                data={
                    "member": algorithm.name,
                    "kind": algorithm.kind,
                    "predicates": list(algorithm.predicates),
                    **({"incomplete": [f"{u.what} {u.name} at {u.location}" for u in unread[:10]]} if unread else {}),
                },
                hint="return its worker class from create_worker (or the worker factory) like the other algorithms"
                if not unread
                else "see the facts that could not be read (inventory `unread`) before trusting this",
            )
            yield replace(finding, severity="warning") if unread else finding
