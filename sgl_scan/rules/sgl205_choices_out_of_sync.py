"""SGL205 choices-out-of-sync: the `--speculative-algorithm` choices disagree with the enum."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.common import null_members
from sgl_scan.rules.finding import Finding


class ChoicesOutOfSync(Rule):
    """
    ## What it does
    In releases whose `--speculative-algorithm` option has a literal `choices=[...]` list (argparse,
    0.4.x and early 0.5.x), compares that list with the members of `SpeculativeAlgorithm`: every
    member except the "none" member must be a choice, and every choice must be a member, a
    registered algorithm or a known alias (`NEXTN`).

    ## Why it matters
    A member missing from the choices cannot be selected at all (argparse rejects it before SGLang
    sees it); a choice that is no member passes the parser and then fails in
    `SpeculativeAlgorithm.from_string` at startup. Both happen when one list is edited and the other
    forgotten.

    ## Example
    ```python
    class SpeculativeAlgorithm(IntEnum):
        NONE = auto()
        EAGLE = auto()
        DDTREE = auto()

    parser.add_argument("--speculative-algorithm", choices=["EAGLE"])   # SGL205: DDTREE missing
    ```

    ## Use instead
    ```python
    parser.add_argument("--speculative-algorithm", choices=["EAGLE", "DDTREE"])
    ```
    """

    id = "SGL205"
    name = "choices-out-of-sync"
    severity = "error"
    message = "--speculative-algorithm choices and SpeculativeAlgorithm members disagree"

    examples = (
        Example(
            {
                "sglang/srt/speculative/spec_info.py": """\
from enum import IntEnum, auto


class SpeculativeAlgorithm(IntEnum):
    NONE = auto()
    EAGLE = auto()
    DDTREE = auto()

    def is_none(self):
        return self == SpeculativeAlgorithm.NONE
""",
                "sglang/srt/server_args.py": """\
import argparse


def add_cli_args(parser: argparse.ArgumentParser):
    parser.add_argument(  # expect
        "--speculative-algorithm",
        type=str,
        choices=["EAGLE"],
        help="Speculative algorithm.",
    )
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
""",
                "sglang/srt/server_args.py": """\
import argparse


def add_cli_args(parser: argparse.ArgumentParser):
    parser.add_argument(
        "--speculative-algorithm",
        type=str,
        choices=["EAGLE", "EAGLE3"],
        help="Speculative algorithm.",
    )
""",
            }
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        inventory = analysis.inventory
        option = inventory.algorithm_option
        if option is None or not option.values or not inventory.algorithms:
            return
        choices = frozenset(option.values)
        members = frozenset(a.name for a in inventory.algorithms)
        missing = sorted(
            frozenset(a.name for a in inventory.algorithms if a.kind == "enum") - null_members(inventory) - choices
        )
        unknown = sorted(choices - members - frozenset(inventory.aliases))
        if not missing and not unknown:
            return
        parts = []
        if missing:
            parts.append(f"members not among the choices: {', '.join(missing)}")
        if unknown:
            parts.append(f"choices that are no member or alias: {', '.join(unknown)}")
        yield self.finding(
            analysis,
            option.location,
            f"{option.name} choices and SpeculativeAlgorithm disagree; {'; '.join(parts)}",
            symbol=f"{option.name}:{','.join(missing)}|{','.join(unknown)}",
            data={
                "option": option.name,
                "choices": list(option.values),
                "missing_choices": missing,
                "unknown_choices": unknown,
            },
        )
