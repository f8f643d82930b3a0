"""SGL102 choice-hook: the extension points for CLI choices in server_args."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis, ChoiceHook
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.finding import Finding


class ChoiceHookRule(Rule):
    """
    ## What it does
    Lists every place where the choices of a server option can be extended: functions named
    `add_*_choices`, their alias form (`add_x_choices = X_CHOICES.extend`, as in 0.5.23's
    `arg_groups/choices.py`), and the `--speculative-algorithm` definition itself (argparse
    `add_argument(..., choices=[...])` in older releases, an annotated config field in newer ones).

    ## Why it matters
    A new algorithm must be accepted on the command line before anything else runs. Knowing whether
    a hook exists for speculative algorithms — or whether the option has a fixed `choices` list that
    needs a patch — decides how an integration is registered.

    ## Example
    ```python
    LOAD_FORMAT_CHOICES = ["auto", "pt"]
    add_load_format_choices = LOAD_FORMAT_CHOICES.extend   # SGL102: alias hook
    parser.add_argument("--speculative-algorithm", choices=["EAGLE", "EAGLE3"])   # SGL102
    ```

    ## Use instead
    Nothing to change: this is an inventory rule (severity info). Its `data` has `hook`, `kind`,
    `choices` (the list it extends), `speculative` (whether algorithms can be added there) and
    `values` (literal choices where known).
    """

    id = "SGL102"
    name = "choice-hook"
    severity = "info"
    message = "extension point for server_args choices"

    examples = (
        Example(
            {
                "sglang/srt/server_args.py": """\
import argparse

LOAD_FORMAT_CHOICES = ["auto", "pt"]


def add_load_format_choices(choices):  # expect
    LOAD_FORMAT_CHOICES.extend(choices)


add_quantization_choices = LOAD_FORMAT_CHOICES.extend  # expect


def add_cli_args(parser: argparse.ArgumentParser):
    parser.add_argument(  # expect
        "--speculative-algorithm",
        type=str,
        choices=["EAGLE", "EAGLE3"],
        help="Speculative algorithm.",
    )
""",
            }
        ),
        Example(
            {
                "sglang/srt/server_args.py": """\
import argparse


def add_cli_args(parser: argparse.ArgumentParser):
    parser.add_argument("--load-format", type=str, choices=["auto", "pt"])


def add_numbers(values):
    return sum(values)
""",
            },
            note="other options and other add_* functions are no hooks",
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        inventory = analysis.inventory
        hooks = list(inventory.choice_hooks)
        option = inventory.algorithm_option
        if option is not None and all(h.location != option.location for h in hooks):
            hooks.append(option)
        for hook in hooks:
            yield self.finding(
                analysis,
                hook.location,
                _message(hook),
                symbol=f"{hook.kind}:{hook.name}",
                data={
                    "hook": hook.name,
                    "kind": hook.kind,
                    "choices": hook.choices,
                    "speculative": hook.speculative,
                    "values": list(hook.values),
                },
            )


def _message(hook: ChoiceHook) -> str:
    where = f" extends {hook.choices}" if hook.choices else ""
    algorithms = "; speculative algorithms can be added here" if hook.speculative else ""
    return f"choice hook {hook.name} ({hook.kind}){where}{algorithms}"
