"""SGL301 d2t-used-as-direct-map: a draft->target map taken from `d2t` without adding `arange`."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.finding import Finding


class D2tUsedAsDirectMap(Rule):
    """
    ## What it does
    Flags code that takes `hot_token_id` (or any draft->target token map) straight from a `d2t`
    tensor, without adding `torch.arange(...)`.

    ## Why it matters
    EAGLE-3 drafters store `d2t` as offsets: `target = draft + d2t[draft]`. Used as a direct map,
    almost every draft token maps to a wrong target token (the first hundreds of `d2t` entries are 0,
    so draft tokens 0..n all become target token 0). Nothing crashes; the drafter simply never
    gets a token accepted. This exact mismatch produced 0 % draft accuracy in a real deployment.

    ## Example
    ```python
    if name == "d2t":
        self.hot_token_id = loaded_weight          # SGL301: offsets used as target ids
    if "d2t" in name:
        self.hot_token_id.copy_(loaded_weight)     # SGL301: the same, written in place
    if "d2t" in name or "hot_token_id" in name:
        self.hot_token_id = loaded_weight          # SGL301: the d2t tensor reaches this body too
    ```

    ## Use instead
    ```python
    if name == "d2t":
        # d2t stores diffs between draft id and target id
        self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])
    ```
    """

    id = "SGL301"
    name = "d2t-used-as-direct-map"
    severity = "error"
    message = "d2t offsets used as a direct draft->target map"

    examples = (
        Example(
            {
                "sglang/srt/models/llama_eagle3.py": """\
class LlamaForCausalLMEagle3:
    def load_weights(self, weights):
        for name, loaded_weight in weights:
            if name == "d2t" or name.endswith(".d2t"):
                self.hot_token_id = loaded_weight  # expect
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
                continue
""",
            }
        ),
        Example(
            {
                "sglang/srt/models/llama_eagle3.py": """\
class LlamaForCausalLMEagle3:
    def load_weights(self, weights):
        for name, loaded_weight in weights:
            if "d2t" in name:
                self.hot_token_id.copy_(loaded_weight)  # expect
                continue
            if "d2t" in name or "hot_token_id" in name:
                self.hot_token_id = loaded_weight  # expect
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
            if "d2t" in name:
                self.hot_token_id.copy_(loaded_weight + torch.arange(loaded_weight.shape[0]), non_blocking=True)
                continue
            if "d2t" in name or "hot_token_id" in name:
                self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])
            if "hot_token_id" in name:  # a checkpoint that ships target ids already
                self.hot_token_id.copy_(loaded_weight)
""",
            }
        ),
        Example(
            {
                "sglang/srt/models/llama_eagle3.py": """\
import torch


class LlamaForCausalLMEagle3:
    def draft_ids_to_target_ids(self, draft_ids):
        return self.d2t[draft_ids]  # expect

    def target_ids(self, draft_ids):
        return draft_ids + self.d2t[draft_ids]

    def load_weights(self, weights):
        for name, loaded_weight in weights:
            if "d2t" in name:
                loaded_weight = loaded_weight + torch.arange(loaded_weight.shape[0])
                self.hot_token_id = loaded_weight
            if name == "d2t":
                self.hot_token_id = torch.add(loaded_weight, torch.arange(loaded_weight.shape[0])).long()
""",
            },
            note="dataflow within the function: a conversion in two statements, torch.add, .long(), and d2t[ids] "
            "returned as target ids",
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        for site in analysis.inventory.d2t_sites:
            if site.kind == "d2t_index":
                yield from self._index(analysis, site)
                continue
            if site.kind != "direct_map" or "+ arange" in site.chain:
                continue
            yield self.finding(
                analysis,
                site.location,
                f"d2t holds offsets (target = draft + d2t[draft]) but is used as a direct map: {site.detail}",
                symbol=f"{site.function}:{site.detail}",
                data={"kind": site.kind, "function": site.function, "detail": site.detail},
                hint="add torch.arange(d2t.shape[0]) to d2t before using it as hot_token_id",
            )

    def _index(self, analysis: Analysis, site) -> Iterable[Finding]:
        """`d2t[ids]` returned or assigned without adding `ids`: an offset used as a target id (by dataflow
        within the function: the extractor records how the read's result is used)."""
        if (
            any(step.startswith(("returned", "assigned to")) for step in site.chain)
            and "added to the index" not in site.chain
        ):
            yield self.finding(
                analysis,
                site.location,
                f"d2t holds offsets (target = draft + d2t[draft]) but an entry is used as a target id: {site.detail} "
                f"({', '.join(site.chain)})",
                symbol=f"{site.function}:{site.detail}",
                data={"kind": site.kind, "function": site.function, "detail": site.detail, "chain": list(site.chain)},
                hint="add the draft ids: draft_ids + d2t[draft_ids]",
            )
