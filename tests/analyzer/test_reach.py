"""`analyzer/reach.py`, `extractors/branches.py` and `analyzer/normalization.py` on shapes copied from
real releases (release and file:line in each test's name)."""

from __future__ import annotations

from pathlib import Path

from sgl_scan.analyzer.inventory import NEW
from sgl_scan.analyzer.normalization import raw_before_normalisation
from sgl_scan.analyzer.pipeline import analyze_tree
from sgl_scan.analyzer.reach import Reach, dead_branch, picks_out, reach, shape_of
from sgl_scan.rules.common import predicate_sets

ENUM = """\
import enum


class SpeculativeAlgorithm(enum.IntEnum):
    NONE = enum.auto()
    EAGLE = enum.auto()
    EAGLE3 = enum.auto()
    NGRAM = enum.auto()
    DSPARK = enum.auto()

    def is_eagle(self):
        return self == SpeculativeAlgorithm.EAGLE
"""


def analyse(tmp_path: Path, files: dict[str, str]):
    tree = tmp_path / "tree"
    for path, text in {"sglang/srt/speculative/spec_info.py": ENUM, **files}.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    return analyze_tree(tree, snapshot_id="t", sglang_version=None, cache_dir=tmp_path / "cache", jobs=1, progress=False)


def site_at(analysis, path: str, line: int):
    return next(s for s in analysis.inventory.dispatch_sites if s.location.path == path and s.location.line == line)


def answers(analysis, path, line, *algorithms):
    site = site_at(analysis, path, line)
    shape = shape_of(analysis, site)
    predicates = predicate_sets(analysis.inventory)
    return [reach(site, a, predicates, shape) for a in algorithms]


def test_0_5_23_overrides_858_early_exit_negation_entering_is_the_skip(tmp_path):
    path = "sglang/srt/arg_groups/overrides.py"
    analysis = analyse(tmp_path, {path: """\
def resolve(view):
    if not (
        view.quantization == "modelopt_fp4"
        and view.speculative_algorithm == "EAGLE"
    ):
        return {}
    return {"speculative_moe_runner_backend": "deep_gemm"}
"""})
    site = site_at(analysis, path, 4)
    assert shape_of(analysis, site).body_exit == "neutral"
    assert answers(analysis, path, 4, NEW, "EAGLE3") == [Reach.SKIPS, Reach.SKIPS]
    assert picks_out(site, ["EAGLE"], predicate_sets(analysis.inventory), shape_of(analysis, site))


def test_0_5_23_lora_hook_247_exemption_and_tokenizer_control_221_failure_returned(tmp_path):
    path = "sglang/srt/arg_groups/lora_hook.py"
    analysis = analyse(tmp_path, {path: """\
def validate(cfg, Output):
    if cfg.speculative_algorithm in ["NGRAM", None]:
        return
    cfg.check()


def corpus(spec, Output):
    if spec.speculative_algorithm != "NGRAM":
        return Output(success=False, message="Ngram speculative decoding is not enabled.")
    return Output(success=True)
"""})
    assert answers(analysis, path, 2, NEW, "NGRAM") == [Reach.ENTERS, Reach.SKIPS]  # NGRAM skips the checks
    assert answers(analysis, path, 8, NEW) == [Reach.REFUSED]


def test_0_5_23_attention_90_literal_is_the_exception(tmp_path):
    path = "sglang/srt/layers/layer_boundary/adapters/attention.py"
    analysis = analyse(tmp_path, {path: """\
def allow(spec, cuda):
    return cuda and spec.speculative_algorithm != "EAGLE3"
"""})
    site = site_at(analysis, path, 2)
    assert not picks_out(site, ["EAGLE3"], predicate_sets(analysis.inventory), None)


def test_0_5_23_speculative_hook_109_resolver_passes_through_but_a_reassigned_name_does_not(tmp_path):
    path = "sglang/srt/arg_groups/speculative_hook.py"
    analysis = analyse(tmp_path, {path: """\
def _resolve_speculative_algorithm_alias(speculative_algorithm, is_gemma4_draft):
    if speculative_algorithm == "NEXTN" or speculative_algorithm == "EAGLE":
        if is_gemma4_draft:
            return "FROZEN_KV_MTP"
        return "EAGLE"
    return speculative_algorithm


def not_a_resolver(speculative_algorithm):
    if speculative_algorithm == "EAGLE":
        return "flashinfer"
    speculative_algorithm = "triton"
    return speculative_algorithm
"""})
    assert shape_of(analysis, site_at(analysis, path, 2)).passes_through
    assert not shape_of(analysis, site_at(analysis, path, 10)).passes_through


def test_0_5_23_attention_registry_63_dead_branch_until_someone_reads_it(tmp_path):
    path = "sglang/srt/layers/attention/attention_registry.py"
    source = """\
def create(runner, spec):
    if spec.speculative_algorithm == "EAGLE":
        if not hasattr(runner, "plan_stream_for_flashinfer") or not runner.plan_stream_for_flashinfer:
            runner.plan_stream_for_flashinfer = object()
    return runner
"""
    analysis = analyse(tmp_path / "a", {path: source})
    site = site_at(analysis, path, 2)
    assert dead_branch(analysis, site, shape_of(analysis, site)) == ("plan_stream_for_flashinfer",)
    reader = "sglang/srt/layers/attention/flashinfer_backend.py"
    analysis = analyse(tmp_path / "b", {path: source, reader: "def plan(runner):\n    return runner.plan_stream_for_flashinfer\n"})
    site = site_at(analysis, path, 2)
    assert dead_branch(analysis, site, shape_of(analysis, site)) == ()


PIPELINE = {
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
    server_args.speculative_algorithm = _resolve_speculative_algorithm_alias(server_args.speculative_algorithm)
""",
    "sglang/srt/arg_groups/model_hook.py": """\
from sglang.srt.arg_groups.overrides import run_post_process_pass, spec_moe


def handle_model_specific_adjustments(server_args):
    run_post_process_pass(server_args, spec_moe)
""",
    "sglang/srt/arg_groups/overrides.py": """\
def run_post_process_pass(server_args, fn):
    fn(server_args)


def spec_moe(view):
    if view.speculative_algorithm == "EAGLE":
        view.use_deep_gemm()


def later(view):
    if view.speculative_algorithm == "EAGLE":
        view.use_deep_gemm()
""",
}


def test_0_5_23_pipeline_225_before_306_through_a_function_handed_to_a_runner(tmp_path):
    """model_hook.py:468 `run_post_process_pass(server_args, _deepseek_spec_moe_resolution)`."""
    analysis = analyse(tmp_path, PIPELINE)
    raw = {(loc.path, loc.line): why for loc, why in raw_before_normalisation(analysis).items()}
    assert set(raw) == {("sglang/srt/arg_groups/overrides.py", 6)}  # `later` is run by nothing shown
    assert raw[("sglang/srt/arg_groups/overrides.py", 6)] == (
        "`handle_model_specific_adjustments` runs at sglang/srt/arg_groups/pipeline.py:10, before "
        "`handle_speculative_decoding` at :11")


def test_steps_after_the_normaliser_see_the_normalised_name(tmp_path):
    files = dict(PIPELINE)
    files["sglang/srt/arg_groups/pipeline.py"] = files["sglang/srt/arg_groups/pipeline.py"].replace(
        "    run_hook(handle_model_specific_adjustments, server_args)\n    run_hook(handle_speculative_decoding, server_args)\n",
        "    run_hook(handle_speculative_decoding, server_args)\n    run_hook(handle_model_specific_adjustments, server_args)\n")
    assert raw_before_normalisation(analyse(tmp_path, files)) == {}
