"""SGL202 string-dispatch: code that branches on `speculative_algorithm` by comparing strings."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.common import literals_of, quoted
from sgl_scan.rules.finding import Finding


class StringDispatch(Rule):
    """
    ## What it does
    Flags comparisons of `speculative_algorithm` (or `spec_algorithm`) with string literals —
    directly (`== "EAGLE"`, `in ("EAGLE", "EAGLE3")`), after `.upper()`, or through a local alias
    (`algo = server_args.speculative_algorithm; if algo == "EAGLE": ...`).

    ## Why it matters
    A predicate such as `is_eagle()` is updated in one place when a new algorithm joins a family; a
    string comparison is not. A new algorithm silently falls through every such branch, so its
    server arguments, memory sizing or attention backend quietly take the defaults of "no
    speculative decoding".

    ## Example
    ```python
    if server_args.speculative_algorithm in ("EAGLE", "EAGLE3"):   # SGL202
        server_args.speculative_eagle_topk = 1
    ```

    ## Use instead
    ```python
    if SpeculativeAlgorithm.from_string(server_args.speculative_algorithm).is_eagle():
        server_args.speculative_eagle_topk = 1
    ```
    """

    id = "SGL202"
    name = "string-dispatch"
    severity = "warning"
    message = "speculative_algorithm compared with string literals"

    examples = (
        Example(
            {
                "sglang/srt/server_args.py": """\
class ServerArgs:
    speculative_algorithm = None
    speculative_eagle_topk = None

    def __post_init__(self):
        if self.speculative_algorithm in ("EAGLE", "EAGLE3"):  # expect
            self.speculative_eagle_topk = 1
        algo = self.speculative_algorithm
        if algo.upper() == "EAGLE":  # expect
            self.speculative_eagle_topk = 2
""",
            }
        ),
        Example(
            {
                "sglang/srt/server_args.py": """\
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


class ServerArgs:
    speculative_algorithm = None
    load_format = "auto"

    def __post_init__(self):
        if SpeculativeAlgorithm.from_string(self.speculative_algorithm).is_eagle():
            self.speculative_eagle_topk = 1
        if self.load_format == "EAGLE":
            self.load_format = "auto"
""",
            },
            note="predicates and unrelated strings are fine",
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        for site in analysis.inventory.dispatch_sites:
            if site.via != "string":
                continue
            literals = literals_of(site)
            shown = ", ".join(quoted(s) for s in literals) or site.detail
            yield self.finding(
                analysis,
                site.location,
                f"speculative_algorithm compared with {shown}: a new algorithm falls through this branch",
                symbol=f"{site.function}:{site.detail}",
                data={"literals": list(literals), "function": site.function, "algorithms": list(site.algorithms)},
                hint="dispatch on a SpeculativeAlgorithm predicate (is_eagle(), ...) instead of strings",
            )
