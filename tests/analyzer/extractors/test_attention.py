"""The attention extractor and `attention_facts`: shapes copied from real releases, negative examples,
and the real releases with exact file:line (read by hand from each wheel's source)."""

from __future__ import annotations

import pytest

from sgl_scan.analyzer.attention import attention_facts
from sgl_scan.analyzer.extractors.attention import AttentionExtractor, BackendRegistration, DefaultArm, MaskRead, VerifyGraphCapture
from tests.analyzer.extractors.driver import facts_for, records, scan_tree
from tests.support.releases import analyse_release, release_tree

EX = AttentionExtractor()


def arms(source: str, path: str = "sglang/srt/server_args.py") -> list[tuple]:
    return [(r.line, r.family, r.arch, r.backends, bool(r.conditions)) for r in records(source, EX, path) if isinstance(r, DefaultArm)]


def test_0_5_11_server_args_get_default_attn_backend_method_returns():
    source = '''
        from sglang.srt.utils.common import is_hip, is_hopper_with_cuda_12_3, is_sm100_supported

        class ServerArgs:
            def _get_default_attn_backend(self, use_mla_backend, model_config):
                if not use_mla_backend:
                    if is_hopper_with_cuda_12_3() and is_no_spec_infer_or_topk_one(self):
                        return "fa3"
                    elif is_sm100_supported() and self.speculative_algorithm is None:
                        return "trtllm_mha"
                    elif is_hip():
                        return "aiter"
                    else:
                        if is_flashinfer_available():
                            return "flashinfer"
                        return "triton"
                else:
                    if is_hopper_with_cuda_12_3():
                        return "fa3"
                    return "triton"
    '''
    assert arms(source) == [
        (7, "mha", "call:sglang.srt.utils.common.is_hopper_with_cuda_12_3", ("fa3",), True),
        (9, "mha", "call:sglang.srt.utils.common.is_sm100_supported", ("trtllm_mha",), True),
        (11, "mha", "call:sglang.srt.utils.common.is_hip", ("aiter",), False),
        (14, "mha", "else", ("flashinfer", "triton"), False),
        (18, "mla", "call:sglang.srt.utils.common.is_hopper_with_cuda_12_3", ("fa3",), False),
    ]


def test_0_5_4_model_runner_assigns_and_a_module_flag_stands_for_its_predicate():
    source = '''
        from sglang.srt.utils import is_hip, is_hopper_with_cuda_12_3
        _is_hip = is_hip()

        class ModelRunner:
            def model_specific_adjustment(self):
                if server_args.attention_backend is None:
                    if not self.use_mla_backend:
                        if is_hopper_with_cuda_12_3() and is_no_spec_infer_or_topk_one(server_args):
                            server_args.attention_backend = "fa3"
                        elif _is_hip:
                            server_args.attention_backend = "aiter"
                        else:
                            server_args.attention_backend = "flashinfer" if is_flashinfer_available() else "triton"
                    else:
                        server_args.attention_backend = "triton"
    '''
    assert arms(source, "sglang/srt/model_executor/model_runner.py") == [
        (9, "mha", "call:sglang.srt.utils.is_hopper_with_cuda_12_3", ("fa3",), True),
        (11, "mha", "call:sglang.srt.utils.is_hip", ("aiter",), False),
        (14, "mha", "else", ("flashinfer", "triton"), False),
    ]


def test_0_5_23_model_override_base_platform_attributes():
    source = '''
        from sglang.srt.runtime_context import get_platform

        def get_default_attn_backend(server_args, use_mla_backend, model_config):
            if not use_mla_backend:
                if get_platform().is_hopper_with_cuda_12_3 and is_no_spec_infer_or_topk_one(server_args):
                    return "fa3"
                elif get_platform().is_sm100:
                    if model_config.has_asymmetric_kv:
                        return "fa4"
                    return "trtllm_mha"
                else:
                    return "triton"
            else:
                return "triton"
    '''
    assert arms(source, "sglang/srt/arg_groups/model_override_base.py") == [
        (6, "mha", "platform:sglang.srt.runtime_context.get_platform:is_hopper_with_cuda_12_3", ("fa3",), True),
        (8, "mha", "platform:sglang.srt.runtime_context.get_platform:is_sm100", ("fa4", "trtllm_mha"), False),
        (13, "mha", "else", ("triton",), False),
    ]


def test_not_default_chains():
    """0.5.4 `_handle_deterministic_inference` picks by architecture too, but not under use_mla_backend;
    a use_mla_backend branch without backend literals, and an unreadable test, give no arch."""
    assert arms('''
        class ServerArgs:
            def _handle_deterministic_inference(self):
                if self.attention_backend is None:
                    if is_sm100_supported() or is_sm120_supported():
                        self.attention_backend = "flashinfer"
                    else:
                        self.attention_backend = "fa3"
    ''') == []
    assert arms('''
        def pick(use_mla_backend):
            if not use_mla_backend:
                if is_sm100_supported():
                    return choose()
            else:
                return None
    ''') == []
    assert arms('''
        def pick(cfg):
            if not cfg.use_mla_backend:
                if cfg.gpu == 9:
                    return "fa3"
                return "triton"
            else:
                return "triton"
    ''')[0][2] == "unread:cfg.gpu == 9"


def test_mask_reads_with_their_guards_and_what_is_not_a_read():
    found = records('''
        class FlashAttentionBackend:
            def init_forward_metadata(self, forward_batch):
                if forward_batch.forward_mode.is_target_verify():
                    if self.topk <= 1:
                        pass
                    else:
                        mask = forward_batch.spec_info.custom_mask[0]

        class Updater:
            def call_begin_forward(self, spec_info):
                # custom_mask in a comment is no read
                spec_info.custom_mask = None
                if spec_info is None:
                    custom_mask = None
                else:
                    a, b, c, custom_mask = spec_info.generate_attn_arg_prefill(1)
                use = getattr(spec_info, "custom_mask", None)
    ''', EX, "sglang/srt/layers/attention/x_backend.py")
    reads = [(r.line, r.owner, r.function, r.guards, r.how) for r in found if isinstance(r, MaskRead)]
    assert reads == [
        (8, "FlashAttentionBackend", "init_forward_metadata",
         ("forward_batch.forward_mode.is_target_verify()", "not (self.topk <= 1)"), "attribute"),
        (17, "Updater", "call_begin_forward", ("not (spec_info is None)",), "generate_attn_arg_prefill"),
        (18, "Updater", "call_begin_forward", (), "getattr"),
    ]


def test_registrations_and_verify_graph_capture():
    found = records('''
        @register_attention_backend("flashinfer")
        def create_flashinfer_backend(runner):
            if not runner.use_mla_backend:
                from sglang.srt.layers.attention.flashinfer_backend import FlashInferAttnBackend
                return FlashInferAttnBackend(runner)
            else:
                from sglang.srt.layers.attention.flashinfer_mla_backend import FlashInferMLAAttnBackend
                return FlashInferMLAAttnBackend(runner)

        class CudaGraphRunner:
            def __init__(self, model_runner):
                if model_runner.spec_algorithm.is_speculative():
                    self.capture_forward_mode = ForwardMode.TARGET_VERIFY
                else:
                    self.capture_forward_mode = ForwardMode.DECODE
    ''', EX, "sglang/srt/layers/attention/attention_registry.py")
    (reg,) = [r for r in found if isinstance(r, BackendRegistration)]
    assert (reg.line, reg.name, reg.classes) == (3, "flashinfer", (
        ("sglang.srt.layers.attention.flashinfer_backend.FlashInferAttnBackend", ("not runner.use_mla_backend",)),
        ("sglang.srt.layers.attention.flashinfer_mla_backend.FlashInferMLAAttnBackend", ("not (not runner.use_mla_backend)",)),
    ))
    assert [(r.line, r.owner, r.function) for r in found if isinstance(r, VerifyGraphCapture)] == [(14, "CudaGraphRunner", "__init__")]


def test_the_trigger_skips_files_without_attention_words():
    assert facts_for("sglang/srt/a.py", "x = 1\n", (EX,)) is None


# --- real releases -----------------------------------------------------------------------------

CHAINS = {
    "0.5.4": ("sglang/srt/model_executor/model_runner.py", [
        (561, "call:sglang.srt.utils.is_hopper_with_cuda_12_3", ("fa3",)),
        (566, "call:sglang.srt.utils.is_hip", ("aiter",)),
        (568, "call:sglang.srt.utils.is_npu", ("ascend",)),
        (571, "else", ("flashinfer", "triton")),
    ]),
    "0.5.20": ("sglang/srt/arg_groups/model_override_base.py", [
        (323, "platform:sglang.srt.runtime_context.get_platform:is_hopper_with_cuda_12_3", ("fa3",)),
        (331, "platform:sglang.srt.runtime_context.get_platform:is_sm100", ("fa4", "trtllm_mha")),
        (343, "platform:sglang.srt.runtime_context.get_platform:is_hip", ("aiter",)),
        (345, "call:sglang.srt.utils.common.is_mps", ("torch_native",)),
        (349, "else", ("flashinfer", "triton")),
    ]),
}


@pytest.mark.slow
@pytest.mark.parametrize("version", sorted(CHAINS))
def test_default_chain_of_older_and_newer_releases(version):
    path, expected = CHAINS[version]
    files = scan_tree(release_tree(version), only=(path,))
    found = [(r.line, r.arch, r.backends) for r in files[path].extras["spec_attention"] if isinstance(r, DefaultArm) and r.family == "mha"]
    assert found == expected


FACTS = {
    "0.5.11": {
        "function": "ServerArgs._get_default_attn_backend",
        "arms": [
            ("sglang/srt/server_args.py:2492", "call:sglang.srt.utils.common.is_hopper_with_cuda_12_3", ("fa3",), True),
            ("sglang/srt/server_args.py:2498", "call:sglang.srt.utils.common.is_sm100_supported", ("trtllm_mha",), True),
            ("sglang/srt/server_args.py:2506", "call:sglang.srt.utils.common.is_hip", ("aiter",), False),
            ("sglang/srt/server_args.py:2508", "call:sglang.srt.utils.common.is_mps", ("torch_native",), False),
            ("sglang/srt/server_args.py:2512", "else", ("flashinfer", "triton"), False),
        ],
        "backends": {
            "flashinfer": ("reads", "sglang/srt/layers/attention/flashinfer_backend.py:1439"),
            "triton": ("reads", "sglang/srt/layers/attention/triton_backend.py:374"),
            "fa3": ("guarded", "sglang/srt/layers/attention/flashattention_backend.py:438"),
            "trtllm_mha": ("none", None),
        },
        "graphs": ["sglang/srt/model_executor/cuda_graph_runner.py:629", "sglang/srt/model_executor/model_runner.py:2444"],
        "mla_arms": [("sglang/srt/server_args.py:2517", ("fa3",)), ("sglang/srt/server_args.py:2519", ("flashinfer",)),
                     ("sglang/srt/server_args.py:2521", ("aiter", "triton")), ("sglang/srt/server_args.py:2528", ("torch_native",)),
                     ("sglang/srt/server_args.py:2531", ("triton",))],
        # FlashInferMLAAttnBackend: "TODO: Support topk > 1 with custom mask" (flashinfer_mla_backend.py:857), plan causal
        "mla": {"flashinfer": ("dropped", "sglang/srt/layers/attention/flashinfer_mla_backend.py:859"),
                "triton": ("reads", "sglang/srt/layers/attention/triton_backend.py:374")},
        "sinks": {"flashinfer": False, "triton": True, "fa3": True},
        "probes": ("method:use_mla_backend", "method:get_model_config", "has_attention_sinks"),
    },
    "0.5.23": {
        "function": "get_default_attn_backend",
        "arms": [
            ("sglang/srt/arg_groups/model_override_base.py:305", "platform:sglang.srt.runtime_context.get_platform:is_hopper_with_cuda_12_3", ("fa3",), True),
            ("sglang/srt/arg_groups/model_override_base.py:313", "platform:sglang.srt.runtime_context.get_platform:is_sm100", ("fa4", "trtllm_mha"), True),
            ("sglang/srt/arg_groups/model_override_base.py:326", "platform:sglang.srt.runtime_context.get_platform:is_hip", ("aiter",), False),
            ("sglang/srt/arg_groups/model_override_base.py:328", "call:sglang.srt.utils.common.is_mps", ("torch_native",), False),
            ("sglang/srt/arg_groups/model_override_base.py:332", "else", ("flashinfer", "triton"), False),
        ],
        "backends": {
            # 867 and 637 only test the mask against None; these lines hand it on
            "flashinfer": ("reads", "sglang/srt/layers/attention/flashinfer_backend.py:2273"),
            "triton": ("reads", "sglang/srt/layers/attention/triton_backend.py:638"),
            "fa3": ("guarded", "sglang/srt/layers/attention/flashattention_backend.py:1136"),
            "trtllm_mha": ("none", None),
        },
        "graphs": ["sglang/srt/model_executor/runner/base_runner.py:515", "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py:367"],
        "mla_arms": [("sglang/srt/arg_groups/model_override_base.py:337", ("fa3",)), ("sglang/srt/arg_groups/model_override_base.py:339", ("flashinfer",)),
                     ("sglang/srt/arg_groups/model_override_base.py:341", ("aiter", "triton")),
                     ("sglang/srt/arg_groups/model_override_base.py:348", ("torch_native",)),
                     ("sglang/srt/arg_groups/model_override_base.py:351", ("triton",))],
        # FlashInferMLAAttnBackend: "TODO: Support topk > 1 with custom mask" (flashinfer_mla_backend.py:1110), plan causal
        "mla": {"flashinfer": ("dropped", "sglang/srt/layers/attention/flashinfer_mla_backend.py:1099"),
                "triton": ("reads", "sglang/srt/layers/attention/triton_backend.py:638")},
        "sinks": {"flashinfer": False, "triton": True, "fa3": True},
        "probes": ("call:sglang.srt.arg_groups.model_override_base.use_mla_backend",
                   "call:sglang.srt.arg_groups.model_override_base.model_config_of", "has_attention_sinks"),
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("version", sorted(FACTS))
def test_attention_facts_of_real_releases(version):
    facts = attention_facts(analyse_release(version))
    want = FACTS[version]
    assert facts.default_unread is None and facts.default_function == want["function"]
    assert [(str(a.location), a.arch, a.backends, bool(a.conditions)) for a in facts.default_arms] == want["arms"]
    for name, (verify, at) in want["backends"].items():
        backend = facts.backend(name)
        assert (backend.verify, str(backend.read_at) if backend.read_at else None) == (verify, at), backend
    assert [str(g) for g in facts.verify_graphs] == want["graphs"]
    assert facts.mla_unread is None and [(str(a.location), a.backends) for a in facts.mla_arms] == want["mla_arms"]
    for name, (verify, at) in want["mla"].items():
        mla = facts.backend(name).mla
        assert (mla.verify, str(mla.read_at)) == (verify, at), mla
    assert {name: facts.backend(name).sinks for name in want["sinks"]} == want["sinks"]
    assert (facts.mla_probe[0], facts.config_probe[0], facts.sinks_attribute) == want["probes"]
    else_arm = facts.default_arms[-1]  # the release's own words: no flashinfer for a sinks model
    assert else_arm.choices[0][0] == "flashinfer" and "not model_config.has_attention_sinks" in else_arm.choices[0][1][0]


class _Files(dict):
    pass


class _Analysis:
    def __init__(self, files):
        self.files = _Files(files)


def _analysis(sources: dict[str, str]):
    import textwrap

    return _Analysis({path: facts_for(path, textwrap.dedent(text), (EX,)) for path, text in sources.items()})


CHAIN = '''
    def pick(use_mla_backend):
        if not use_mla_backend:
            if is_sm100_supported():
                return "trtllm_mha"
            return "triton"
        else:
            return "triton"
'''


def test_two_default_chains_or_none_are_unread():
    assert "no default-backend chain" in attention_facts(_analysis({"sglang/srt/a.py": "x = custom_mask\n"})).default_unread
    two = attention_facts(_analysis({"sglang/srt/a.py": CHAIN, "sglang/srt/b.py": CHAIN}))
    assert two.default_arms == () and two.default_unread == "several default-backend chains: sglang/srt/a.py:4, sglang/srt/b.py:4"
    one = attention_facts(_analysis({"sglang/srt/a.py": CHAIN}))
    assert one.default_unread is None and [a.backends for a in one.default_arms] == [("trtllm_mha",)]


@pytest.mark.parametrize("version", ["0.5.11", "0.5.23"])
def test_skipping_statements_that_name_no_attention_word_loses_no_record(version, monkeypatch):
    """The walk skips statements whose lines name none of the extractor's words; on every file of a real
    release that the trigger takes, the records equal those of the walk that visits every node."""
    import ast
    import types

    from sgl_scan.analyzer.extractors import attention

    root = release_tree(version) / "sglang"
    extractor = AttentionExtractor()
    compared = found = 0
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not extractor.trigger.search(text):
            continue
        tree = ast.parse(text)
        context = types.SimpleNamespace(text=text, module=".".join(path.relative_to(root.parent).with_suffix("").parts))
        pruned = extractor.extract(tree, context)
        with monkeypatch.context() as m:
            m.setattr(attention._Walker, "may_hold", lambda self, node: True)
            assert extractor.extract(tree, context) == pruned, path
        compared, found = compared + 1, found + len(pruned)
    assert compared > 20 and found > 20


def _uses(source: str) -> list[tuple]:
    return [(r.line, r.use, r.bound) for r in records(source, EX, "sglang/srt/layers/attention/x_backend.py") if isinstance(r, MaskRead)]


def test_0_5_23_flashinfer_mla_backend_1111_computes_the_mask_and_drops_it():
    """The MLA verify plan: the mask comes back from generate_attn_arg_prefill and is never handed on (plan causal)."""
    source = '''
        class FlashInferMLAIndicesUpdaterPrefill:
            def call_begin_forward(self, spec_info, wrapper_paged):
                if spec_info is None:
                    custom_mask = None
                else:
                    # TODO: Support topk > 1 with custom mask
                    kv_indices, kv_indptr, qo_indptr, custom_mask = (
                        spec_info.generate_attn_arg_prefill(req_pool_indices=1)
                    )
                wrapper_paged.plan(qo_indptr, kv_indptr, kv_indices, 1, True)
    '''
    assert _uses(source) == [(9, "dropped", "custom_mask")]
    handed_on = source.replace("wrapper_paged.plan(qo_indptr, kv_indptr, kv_indices, 1, True)",
                               "wrapper_paged.plan(qo_indptr, kv_indptr, kv_indices, 1, True, custom_mask=custom_mask)")
    assert _uses(handed_on) == [(9, "passed", "")]
    renamed = source.replace("wrapper_paged.plan(qo_indptr, kv_indptr, kv_indices, 1, True)",
                             "use_custom_mask = custom_mask\n                wrapper_paged.plan(qo_indptr, use_custom_mask)")
    assert _uses(renamed) == [(9, "passed", "")]  # 0.5.11 flashinfer_backend.py:1477 hands it on under another name


def test_0_5_23_triton_backend_637_a_none_test_is_not_a_read_and_638_copies_into_a_buffer():
    source = '''
        class TritonAttnBackend:
            def _update_target_verify_buffers(self, spec_info, custom_mask):
                if spec_info is not None and spec_info.custom_mask is not None:
                    custom_mask[: spec_info.custom_mask.shape[0]] = spec_info.custom_mask
                return custom_mask
            def fast(self, spec_info):
                if getattr(spec_info, "custom_mask", None) is None:
                    return None
    '''
    found = _uses(source)
    assert (4, "tested", "") in found and (5, "passed", "") in found and (8, "tested", "") in found
