"""SGL202 string-dispatch: code that branches on `speculative_algorithm` by comparing strings."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.finding import Finding


class StringDispatch(Rule):
    """
    ## What it does
    Flags a test that compares `speculative_algorithm` (or `spec_algorithm`, directly, after
    `.upper()`/`str(...)`/`(x or "")`, or through a local alias) with string literals where an
    algorithm the literals do not name **silently skips the code they select**, and nothing refuses
    (`analyzer/reach.py` answers from the control-flow facts). The selected code is the branch's
    body, or, where the body only leaves with nothing (`if not (... algo == "EAGLE" ...): return {}`,
    `if algo != "DSPARK": return`), the rest of the function: there entering the `if` is the skip.
    Not reported:

    - guards that refuse: `if algo not in (...): raise`, `assert algo in (...)`, an `if` whose
      other side raises, or one that returns a failure (`return False, reason`,
      `return Output(success=False, ...)`);
    - problems collected, then raised: an entry of a table `[(algo == "X" and ..., "why"), ...]`
      iterated by `for bad, why in table: if bad: raise`, or `if algo == "X": problems.append(...)`
      with `if problems: raise` below (a table or list that is only logged still counts as silent);
    - tests only reachable after such a guard (a new algorithm was already refused);
    - tests whose literals are the exception rather than the branch (`if algo != "NONE":`,
      `... and algo != "EAGLE3"`): a new algorithm takes the general path;
    - exemptions (`if algo in ("NGRAM", None): return`: a new algorithm gets the checks that follow)
      and conditional expressions that only pick message text;
    - functions whose job is to pass unknown names through: the `if`'s body leaves and the rest of
      the function returns the compared parameter unchanged (the alias resolver
      `if algo == "NEXTN" or algo == "EAGLE": return "EAGLE"` ... `return algo`), decided by what
      it does, not by its name;
    - a branch whose only effect is to set attributes that nothing else in the scanned tree
      mentions (skipping it changes nothing);
    - tests in code that runs before the name is normalised: SGL208 reports them, with that hazard.

    One finding per test expression (`algo == "NEXTN" or algo == "EAGLE"` is one). The hint never
    drops a literal: a predicate true for exactly the named members, and `None` kept where the
    literals hold it (`in (None, "DSPARK")`).

    ## Why it matters
    A predicate such as `is_eagle()` is updated in one place when a new algorithm joins a family; a
    string comparison is not. A new algorithm silently falls through such a branch, so its server
    arguments, memory sizing or attention backend quietly take the defaults of "not this
    algorithm".

    ## Example
    ```python
    if server_args.speculative_algorithm in ("EAGLE", "EAGLE3"):   # SGL202
        server_args.speculative_eagle_topk = 1
    ```

    ## Use instead
    A predicate whose members are exactly the literals (the hint names it when one exists, or
    says which members a new one should cover):
    ```python
    if SpeculativeAlgorithm.from_string(server_args.speculative_algorithm).is_eagle():
        server_args.speculative_eagle_topk = 1
    ```
    """

    id = "SGL202"
    name = "string-dispatch"
    severity = "warning"
    message = "a new algorithm silently skips a branch selected by string literals"

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
        if str(self.speculative_algorithm).upper() in ("EAGLE", None):  # expect
            self.speculative_eagle_topk = 3
        if (self.speculative_algorithm or "").upper() == "NGRAM":  # expect
            self.speculative_eagle_topk = 4
""",
            }
        ),
        Example(
            {
                "sglang/srt/arg_groups/draft_hook.py": """\
def draft_backend(speculative_algorithm, is_gemma4_draft):
    if speculative_algorithm == "NEXTN" or speculative_algorithm == "EAGLE":  # expect
        if is_gemma4_draft:
            return "trtllm_mha"
    return "flashinfer"
""",
            },
            note="one finding per expression",
        ),
        Example(
            {
                # 0.5.23 arg_groups/overrides.py:858 (0.5.20 :917, 0.5.16 :1429): an early exit whose
                # test names EAGLE; every other algorithm leaves with no MoE runner chosen
                "sglang/srt/arg_groups/overrides.py": """\
def _deepseek_spec_moe_resolution(view):
    if not view.is_hip:
        return {}
    if not (
        view.quantization == "modelopt_fp4"
        and view.speculative_algorithm == "EAGLE"  # expect
        and view.speculative_moe_runner_backend is None
    ):
        return {}
    return {"speculative_moe_runner_backend": "deep_gemm"}


def dspark_only(cfg):
    if cfg.speculative_algorithm != "DSPARK":  # expect
        return None
    cfg.page_size = 1
""",
                # 0.5.23 configs/model_config.py:1052: `None` is part of the set (the hint keeps it)
                "sglang/srt/configs/model_config.py": """\
class ModelConfig:
    def pick(self, bundled):
        if bundled and self.speculative_algorithm in (None, "DSPARK"):  # expect
            self.hf_config.architectures[0] = "DeepseekV4ForCausalLMDSpark"
        else:
            self.hf_config.architectures[0] = "DeepseekV4ForCausalLMNextN"
""",
            },
            note="early exits: entering the `if` is the skip; None in the literal set",
        ),
        Example(
            {
                # 0.5.23 arg_groups/speculative_hook.py:109: the alias resolver passes every other name through
                "sglang/srt/arg_groups/speculative_hook.py": """\
def _resolve_speculative_algorithm_alias(speculative_algorithm, is_gemma4_draft):
    if speculative_algorithm == "EAGLE3" and is_gemma4_draft:
        raise ValueError("EAGLE3 is not supported for this draft architecture")
    if speculative_algorithm == "NEXTN" or speculative_algorithm == "EAGLE":
        if is_gemma4_draft:
            return "FROZEN_KV_MTP"
        return "EAGLE"
    return speculative_algorithm
""",
                # 0.5.23 layers/attention/attention_registry.py:63: only sets an attribute nothing reads
                "sglang/srt/layers/attention/attention_registry.py": """\
def create_flashinfer_backend(runner, spec):
    if spec.speculative_algorithm == "EAGLE":
        if not hasattr(runner, "plan_stream_for_flashinfer") or not runner.plan_stream_for_flashinfer:
            runner.plan_stream_for_flashinfer = object()
    return runner
""",
                # 0.5.23 layers/layer_boundary/adapters/attention.py:90: EAGLE3 is the exception
                "sglang/srt/layers/layer_boundary/adapters/attention.py": """\
def allow(spec, cuda, lora_rank):
    return cuda and lora_rank is not None and spec.speculative_algorithm != "EAGLE3"
""",
                # 0.5.23 managers/tokenizer_control_mixin.py:221: a failure the caller sees
                "sglang/srt/managers/tokenizer_control_mixin.py": """\
def add_corpus(spec, Output):
    if spec.speculative_algorithm != "NGRAM":
        return Output(success=False, message="Ngram speculative decoding is not enabled.")
    return Output(success=True, message="")
""",
            },
            note="pass-through resolvers, dead branches, exceptions and failures returned are fine",
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
        Example(
            {
                # 0.5.23 arg_groups/speculative_hook.py:176 (a guard that raises), and
                # arg_groups/kv_cache_hook.py:590-608 (an assert allow-list, then tests it dominates)
                "sglang/srt/arg_groups/kv_cache_hook.py": """\
def handle(cfg):
    if cfg.speculative_use_block_verification:
        if cfg.speculative_algorithm not in ("EAGLE", "EAGLE3", "DFLASH", "DSPARK"):
            raise ValueError("--speculative-use-block-verification only supports EAGLE / EAGLE3")
    if cfg.speculative_algorithm == "EAGLE3" and cfg.is_gemma4_draft:
        raise ValueError("EAGLE3 is not supported for this draft architecture")


def unified(cfg):
    assert cfg.speculative_algorithm in ("DSPARK", "EAGLE", "EAGLE3", "DFLASH"), "not audited"
    if cfg.speculative_algorithm in ("EAGLE", "EAGLE3"):
        cfg.fused = True
    if cfg.speculative_algorithm != "NONE":
        cfg.spec = True
    if cfg.speculative_algorithm == "NEXTN":
        cfg.speculative_algorithm = "EAGLE"


def validate_lora(cfg):  # 0.5.23 arg_groups/lora_hook.py:247-263
    if cfg.speculative_algorithm in ["NGRAM", None]:
        return
    if cfg.speculative_algorithm not in ("EAGLE", "EAGLE3", "DFLASH", "DSPARK"):
        promoted = " (promoted)" if cfg.speculative_algorithm == "FROZEN_KV_MTP" else ""
        raise ValueError(f"LoRA is not compatible with {cfg.speculative_algorithm}{promoted}")
""",
            },
            note="guards, tests they dominate, !=, exemptions, message text and the alias resolver are fine",
        ),
        Example(
            {
                # 0.5.23 arg_groups/lora_hook.py:270-301: a table of unsupported combinations, raised below
                "sglang/srt/arg_groups/lora_hook.py": """\
def check_lora(cfg, ragged_mode):
    unsupported = [
        (
            cfg.speculative_algorithm == "DSPARK" and ragged_mode != "static",
            f"does not support SGLANG_RAGGED_VERIFY_MODE={ragged_mode!r}",
        ),
        (cfg.speculative_adaptive, "does not support --speculative-adaptive"),
    ]
    for is_unsupported, reason in unsupported:
        if is_unsupported:
            raise ValueError(f"LoRA with speculative decoding {reason}.")


def check_pages(cfg):
    problems = []
    if cfg.speculative_algorithm == "DSPARK" and cfg.page_size != 1:
        problems.append("DSPARK needs page size 1")
    if problems:
        raise ValueError("; ".join(problems))
""",
            },
            note="problems collected into a table or list that is raised are refusals",
        ),
        Example(
            {
                "sglang/srt/arg_groups/lora_hook.py": """\
def check_lora(cfg, ragged_mode):
    unsupported = [
        (
            cfg.speculative_algorithm == "DSPARK" and ragged_mode != "static",  # expect
            "ragged verify is experimental with LoRA",
        ),
    ]
    for is_unsupported, reason in unsupported:
        if is_unsupported:
            logger.warning(reason)


def draft_backend(cfg):
    choices = [(cfg.speculative_algorithm == "EAGLE", "flashinfer")]  # expect
    for matches, backend in choices:
        if matches:
            return backend
    return "triton"
""",
            },
            note="a table that is only logged, or one that picks a value, lets a new algorithm default silently",
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        from sgl_scan.rules.string_sites import predicate_hint, silent_string_sites  # (a warm scan runs no rule)

        for found in silent_string_sites(analysis):
            if found.raw is not None:
                continue  # runs before the name is normalised: SGL208 says so (NEXTN / eagle skip it too)
            message = f"speculative_algorithm compared with {found.shown}: any other algorithm " + (
                "leaves here early and silently skips the code below, which runs for these only"
                if found.early_exit
                else "silently skips this branch"
            )
            yield self.finding(
                analysis,
                found.site.location,
                message,
                symbol=found.symbol,
                data=found.data(),
                hint=predicate_hint(analysis, found),
            )
