"""SGL302 d2t-substring-match: `"d2t" in name` also matches unrelated weights."""

from __future__ import annotations

import re
from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.finding import Finding


class D2tSubstringMatch(Rule):
    """
    ## What it does
    Flags weight-name tests that look for `"d2t"` (or `"t2d"`) as a substring:
    `if "d2t" in name:`.

    ## Why it matters
    A substring test also matches any weight whose name merely contains the letters, such as
    `midlayer.d2t_proj.weight`: that tensor is then loaded as the vocabulary map (or dropped from the
    model), which breaks drafting without an error. Newer SGLang model files test the exact name.

    ## Example
    ```python
    if "d2t" in name:                 # SGL302
        self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])
    ```

    ## Use instead
    ```python
    if name == "d2t" or name.endswith(".d2t"):
        self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])
    ```
    """

    id = "SGL302"
    name = "d2t-substring-match"
    severity = "warning"
    message = "weight name matched against d2t/t2d as a substring"

    examples = (
        Example(
            {
                "sglang/srt/models/llama_eagle3.py": """\
import torch


class LlamaForCausalLMEagle3:
    def load_weights(self, weights):
        for name, loaded_weight in weights:
            if "d2t" in name:  # expect
                self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])
            elif "t2d" in name:  # expect
                continue
""",
            }
        ),
        Example(
            {
                "sglang/srt/models/llama_eagle3.py": """\
import torch


class LlamaForCausalLMEagle3:
    def load_weights(self, weights):
        for name, loaded_weight in weights:
            if name == "d2t" or name.endswith(".d2t"):
                self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])
            elif name == "t2d" or name.endswith(".t2d"):
                continue
""",
            }
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        for site in analysis.inventory.d2t_sites:
            if site.kind != "name_test_in":
                continue
            tensor = _tensor(site.detail)
            yield self.finding(
                analysis,
                site.location,
                f'substring test on "{tensor}" also matches unrelated weights such as {tensor}_proj: {site.detail}',
                symbol=f"{site.function}:{site.detail}",
                data={"kind": site.kind, "tensor": tensor, "function": site.function, "detail": site.detail},
                hint=f'test the exact name: name == "{tensor}" or name.endswith(".{tensor}")',
            )


def _tensor(detail: str) -> str:
    match = re.search(r"""['"](d2t|t2d)['"]""", detail or "")
    return match.group(1) if match else "d2t"
