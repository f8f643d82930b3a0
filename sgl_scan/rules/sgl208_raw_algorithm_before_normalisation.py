"""SGL208 raw-algorithm-before-normalisation: a string test on the value before it is upper-cased
and its aliases resolved."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.finding import Finding


class RawAlgorithmBeforeNormalisation(Rule):
    """
    ## What it does
    Flags a comparison of `speculative_algorithm` with string literals in code that runs **before**
    the release upper-cases the value and resolves its aliases (`NEXTN` -> `EAGLE`), where a name
    the literals do not hold silently skips the code they select (as SGL202 decides it), and a
    spelling the CLI accepts for one of their members is such a name: the value is not upper-cased
    there (`eagle`), or an alias of a member is missing from the literals (`NEXTN`). A test on an
    upper-cased local that lists the aliases (0.5.23 `nemotron_h.py:137`,
    `in ("EAGLE", "NEXTN", "DSPARK")` on `cfg.speculative_algorithm.upper()`) is SGL202's. The order
    is read from the code of each release (`analyzer/normalization.py`): the function that resolves
    the aliases is one step of the server-args pipeline (`run_hook(handle_speculative_decoding,
    server_args)` in 0.5.17+, `handle_speculative_decoding(self)` in `ServerArgs.__post_init__` in
    0.5.16), and what the steps before it run is followed through calls, functions handed as
    arguments and decorator registries (the model-override providers).

    ## Why it matters
    There the value is still what the user typed: `--speculative-algorithm NEXTN` and
    `--speculative-algorithm eagle` both end up as EAGLE, yet both skip `== "EAGLE"` silently (the
    multi-layer EAGLE switch of a model override, the draft MoE runner of a DeepSeek FP4
    checkpoint), and so does any new algorithm.

    ## Example
    ```python
    @register_model_override("MiMoV2ForCausalLM")       # runs in handle_model_specific_adjustments,
    def _mimo_v2_overrides(server_args, hf_config):      # before handle_speculative_decoding
        if server_args.speculative_algorithm == "EAGLE":   # SGL208
            return {"enable_multi_layer_eagle": True}
        return {}
    ```

    ## Use instead
    Compare the normalised member: `SpeculativeAlgorithm.from_string(...)` upper-cases and resolves
    the aliases, then a predicate (the hint names one true for exactly the members meant, or says to
    add it); or move the decision after the normalising step.
    """

    id = "SGL208"
    name = "raw-algorithm-before-normalisation"
    severity = "warning"
    message = "`--speculative-algorithm NEXTN` / `eagle` skip this: the name is compared before it is normalised"

    examples = (
        Example(
            {
                # the 0.5.17+ form: a pipeline that hands its steps to a runner, and model-override
                # providers registered by decorator (0.5.23 pipeline.py:225 before :306)
                "sglang/srt/arg_groups/pipeline.py": """\
from sglang.srt.arg_groups.model_hook import handle_model_specific_adjustments
from sglang.srt.arg_groups.speculative_hook import handle_speculative_decoding


def run_hook(hook, server_args):
    hook(server_args)


def resolve(server_args):
    run_hook(handle_model_specific_adjustments, server_args)
    run_hook(handle_speculative_decoding, server_args)
""",
                "sglang/srt/arg_groups/speculative_hook.py": """\
def _resolve_speculative_algorithm_alias(speculative_algorithm):
    if speculative_algorithm == "NEXTN" or speculative_algorithm == "EAGLE":
        return "EAGLE"
    return speculative_algorithm


def handle_speculative_decoding(server_args):
    upper = server_args.speculative_algorithm.upper()
    server_args.speculative_algorithm = _resolve_speculative_algorithm_alias(upper)
    if server_args.speculative_algorithm == "STANDALONE":
        server_args.topk = 1
""",
                "sglang/srt/arg_groups/model_override_base.py": """\
_MODEL_OVERRIDE_FNS = {}


def register_model_override(architecture):
    def decorator(fn):
        _MODEL_OVERRIDE_FNS.setdefault(architecture, []).append(fn)
        return fn

    return decorator


def _register_for(*architectures):
    def decorator(fn):
        for architecture in architectures:
            register_model_override(architecture)(fn)
        return fn

    return decorator
""",
                "sglang/srt/arg_groups/model_hook.py": """\
from sglang.srt.arg_groups import model_override_base


def handle_model_specific_adjustments(server_args):
    declared = {}
    for fn in model_override_base._MODEL_OVERRIDE_FNS.get(server_args.arch, ()):
        declared.update(fn(server_args, None))
    if server_args.speculative_algorithm == "EAGLE":  # expect
        server_args.multi_layer = True
    return declared
""",
                "sglang/srt/arg_groups/model_overrides/gigachat35.py": """\
from sglang.srt.arg_groups.model_override_base import _register_for


@_register_for("GigaChat35ForCausalLM", "GigaChat35ForCausalLMNextN")
def _gigachat35_overrides(server_args, hf_config):
    overrides = {"disable_shared_experts_fusion": True}
    if server_args.speculative_algorithm == "EAGLE":  # expect
        overrides["enable_multi_layer_eagle"] = True
    return overrides
""",
                # 0.5.23 nemotron_h.py:125/137: upper-cased, NEXTN listed: only a new algorithm skips it (SGL202)
                "sglang/srt/arg_groups/model_overrides/nemotron_h.py": """\
from sglang.srt.arg_groups.model_override_base import register_model_override


@register_model_override("NemotronHForCausalLM")
def _nemotron_h_overrides(server_args, hf_config):
    overrides = {}
    speculative_algorithm = server_args.speculative_algorithm.upper()
    if speculative_algorithm in ("EAGLE", "NEXTN", "DSPARK"):
        overrides["speculative_draft_attention_backend"] = "trtllm_mha"
    return overrides
""",
            },
            note="a runner pipeline and registered providers; the test after normalisation is SGL202's",
        ),
        Example(
            {
                # the 0.5.16 form: methods of ServerArgs called in order from __post_init__
                "sglang/srt/server_args.py": """\
from sglang.srt.arg_groups.speculative_hook import handle_speculative_decoding


class ServerArgs:
    def __post_init__(self):
        self._handle_model_specific_adjustments()
        handle_speculative_decoding(self)

    def _handle_model_specific_adjustments(self):
        if self.speculative_algorithm == "EAGLE" and self.quantization == "modelopt_fp4":  # expect
            self.set_moe_runner("deep_gemm")
        if self.speculative_algorithm not in ("EAGLE", "EAGLE3", None):
            raise ValueError("only EAGLE is supported with this model")
""",
                "sglang/srt/arg_groups/speculative_hook.py": """\
def handle_speculative_decoding(server_args):
    if server_args.speculative_algorithm == "NEXTN":
        server_args.speculative_algorithm = "EAGLE"
""",
            },
            note="methods called in order; a guard that refuses is loud, not silent",
        ),
        Example(
            {
                "sglang/srt/server_args.py": """\
from sglang.srt.arg_groups.speculative_hook import handle_speculative_decoding


class ServerArgs:
    def __post_init__(self):
        handle_speculative_decoding(self)
        self._handle_model_specific_adjustments()

    def _handle_model_specific_adjustments(self):
        if self.speculative_algorithm == "EAGLE":
            self.set_moe_runner("deep_gemm")
""",
                "sglang/srt/arg_groups/speculative_hook.py": """\
def handle_speculative_decoding(server_args):
    if server_args.speculative_algorithm == "NEXTN":
        server_args.speculative_algorithm = "EAGLE"
""",
            },
            note="after the normalising step the value is a member name (SGL202 decides)",
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        from sgl_scan.rules.string_sites import predicate_hint, silent_string_sites  # (a warm scan runs no rule)

        for found in silent_string_sites(analysis):
            if found.raw is None:
                continue
            message = (
                f"speculative_algorithm compared with {found.shown} before it is upper-cased and its aliases "
                f"resolved ({found.raw}): {' / '.join(found.spellings)} and any new algorithm "
                + ("leave here early and skip the code below" if found.early_exit else "skip this")
            )
            yield self.finding(
                analysis,
                found.site.location,
                message,
                symbol=found.symbol,
                data=found.data(),
                hint=predicate_hint(analysis, found),
            )
