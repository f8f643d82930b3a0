"""SGL103 d2t-site: every place that handles the drafter's vocabulary mapping."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.finding import Finding

KIND_TEXT = {
    "name_test_in": "weight-name substring test",
    "name_test_eq": "weight-name equality test",
    "name_test_endswith": "weight-name suffix test",
    "offset_conversion": "d2t offsets converted to target ids",
    "direct_map": "d2t used as a direct map",
    "load_token_map": "token map loaded from a file",
    "hot_token_use": "hot_token_id used",
}


class D2tSite(Rule):
    """
    ## What it does
    Lists every site that handles the drafter vocabulary mapping: weight-name tests on `d2t`/`t2d`
    (`"d2t" in name`, `name == "d2t"`, `name.endswith(".d2t")`), the conversion
    `hot_token_id = d2t + torch.arange(n)`, `load_token_map(...)` calls, and uses of `hot_token_id`
    (`hot_token_id[topk_index]`, `head.data[hot_token_id]`, `.to(device)`, `len(...)`).

    ## Why it matters
    Whether the engine treats `d2t` as offsets (`target = draft + d2t[draft]`) or as a direct map
    decides whether an EAGLE-3 drafter accepts anything at all. `grep d2t` answers this badly: it
    hits `Dropout2d`, `hist2d`, `rpd2tracing` and comments, and misses `hot_token_id` uses. This rule
    matches code, not text.

    ## Example
    ```python
    if "d2t" in name:                                   # SGL103 name_test_in
        self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])   # offset_conversion
    ```

    ## Use instead
    Nothing to change: this is an inventory rule (severity info); `data.kind` names the kind of site.
    """

    id = "SGL103"
    name = "d2t-site"
    severity = "info"
    message = "drafter vocabulary-mapping (d2t/t2d/hot_token_id) site"

    examples = (
        Example(
            {
                "sglang/srt/models/llama_eagle3.py": """\
import torch


class LlamaForCausalLMEagle3:
    def load_weights(self, weights):
        for name, loaded_weight in weights:
            if "d2t" in name:  # expect
                # d2t stores diffs between draft id and target id
                self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])  # expect
                continue
""",
            }
        ),
        Example(
            {
                "sglang/srt/utils/nvtx_pytorch_hooks.py": """\
# https://example.org/tools/rpd2tracing.py: mentions d2t only in a comment
import torch

LAYERS = (torch.nn.Dropout2d, torch.nn.UpsamplingNearest2d)


def plot(x, y):
    return torch.histogram2d(x, y)
""",
            },
            note="grep's noise",
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        for site in analysis.inventory.d2t_sites:
            yield self.finding(
                analysis,
                site.location,
                f"{KIND_TEXT.get(site.kind, site.kind)}: {site.detail}",
                symbol=f"{site.kind}:{site.function}:{site.detail}",
                data={"kind": site.kind, "function": site.function, "detail": site.detail},
            )
