"""SGL203 unknown-algorithm-literal: a string compared with `speculative_algorithm` that names nothing."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.common import known_names, literals_of, quoted
from sgl_scan.rules.finding import Finding
from sgl_scan.analyzer.kinds import Via


class UnknownAlgorithmLiteral(Rule):
    """
    ## What it does
    Flags a string literal compared with `speculative_algorithm` that is neither a member of
    `SpeculativeAlgorithm`, a registered algorithm, a known alias (such as `"NEXTN"`, which the
    engine maps to `EAGLE`), nor one of the `--speculative-algorithm` choices.

    ## Why it matters
    A misspelt literal (`"EAGEL"`, `"EAGLE_3"`) makes the branch dead code: the condition is never
    true, and nothing fails. (Case is ignored: names are upper-cased by `from_string`.) Renamed or
    removed algorithms leave the same trace.

    ## Example
    ```python
    if server_args.speculative_algorithm == "EAGEL":   # SGL203: no such algorithm (did you mean EAGLE?)
        ...
    ```

    ## Use instead
    ```python
    if SpeculativeAlgorithm.from_string(server_args.speculative_algorithm).is_eagle():
        ...
    ```
    """

    id = "SGL203"
    name = "unknown-algorithm-literal"
    severity = "error"
    message = "comparison with a string that is no speculative algorithm"

    examples = (
        Example(
            {
                "sglang/srt/speculative/spec_info.py": """\
from enum import IntEnum, auto


class SpeculativeAlgorithm(IntEnum):
    NONE = auto()
    EAGLE = auto()

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE
""",
                "sglang/srt/server_args.py": """\
class ServerArgs:
    speculative_algorithm = None

    def __post_init__(self):
        if self.speculative_algorithm == "EAGEL":  # expect
            self.speculative_eagle_topk = 1
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

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE
""",
                "sglang/srt/server_args.py": """\
class ServerArgs:
    speculative_algorithm = None

    def __post_init__(self):
        if self.speculative_algorithm == "NEXTN":
            self.speculative_algorithm = "EAGLE"
        if self.speculative_algorithm == "EAGLE":
            self.speculative_eagle_topk = 1
""",
            },
            note="members and aliases are known",
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        import difflib  # here: a warm scan loads every rule but runs none (rules/memo.py)

        inventory = analysis.inventory
        if not inventory.algorithms:
            return  # nothing to compare against: no algorithm class in this snapshot
        known = known_names(inventory)
        for site in inventory.dispatch_sites:
            if site.via != Via.STRING:
                continue
            for literal in literals_of(site):
                if literal in known or literal.upper() in known:
                    continue  # from_string upper-cases names, so "eagle" after .lower() is fine
                close = difflib.get_close_matches(literal.upper(), sorted(known), n=1, cutoff=0.6)
                suggestion = close[0] if close else None
                yield self.finding(
                    analysis,
                    site.location,
                    f"{quoted(literal)} is no speculative algorithm or alias"
                    + (f" (did you mean {suggestion}?)" if suggestion else ""),
                    symbol=f"{site.function}:{site.detail}:{literal}",
                    data={"literal": literal, "function": site.function, "suggestion": suggestion},
                    hint=f"known names: {', '.join(sorted(known))}",
                )
