"""d2t/t2d/hot_token_id sites, and grep's noise that must not count."""

from sgl_scan.analyzer.extractors.d2t import D2tExtractor
from tests.analyzer.extractors.driver import records

EX = D2tExtractor()


def sites(source, path="sglang/srt/models/llama_eagle3.py"):
    return [(r.line, r.kind) for r in records(source, EX, path)]


def test_llama_eagle3_load_weights_forms():
    assert sites('''
        class LlamaForCausalLMEagle3:
            def load_weights(self, weights):
                for name, loaded_weight in weights:
                    if "d2t" in name:
                        # d2t stores diffs between draft id and target id
                        self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])
                        continue
                    if "d2t" not in name and "t2d" not in name and "lm_head" not in name:
                        pass
    ''') == [(5, "name_test_in"), (7, "offset_conversion"), (9, "name_test_in"), (9, "name_test_in")]


def test_exact_name_tests_and_function_name():
    found = records('''
        def load_weights(self, weights):
            for name, loaded_weight in weights:
                if name == "d2t" or name.endswith(".d2t"):
                    self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])
                if name != "t2d" and not name.endswith((".t2d",)):
                    pass
    ''', EX, "sglang/srt/models/kimi_k25_eagle3.py")
    assert [(r.line, r.kind) for r in found] == [
        (4, "name_test_eq"), (4, "name_test_endswith"), (5, "offset_conversion"),
        (6, "name_test_eq"), (6, "name_test_endswith")]
    assert found[0].function == "sglang.srt.models.kimi_k25_eagle3.load_weights"
    assert found[0].detail == 'name == "d2t"'


def test_direct_map_is_flagged_offsets_are_not():
    assert sites('''
        def load_weights(self, weights):
            for name, w in weights:
                if name.endswith(".d2t"):
                    self.hot_token_id = w.long()
            d2t = state["d2t"]
            hot_token_id = d2t
            self.hot_token_id = None
            self.hot_token_id = load_token_map(path)
    ''') == [(4, "name_test_endswith"), (5, "direct_map"), (7, "direct_map"), (9, "load_token_map")]


def test_hot_token_uses():
    assert sites('''
        class EAGLEWorker:
            def __init__(self, server_args):
                self.hot_token_id = load_token_map(server_args.speculative_token_map)
                logger.info(f"{len(self.hot_token_id)}")
                self.hot_token_id = self.draft_model_runner.model.hot_token_id.to(head.device)
                self.hot_token_id = self.draft_model_runner.model.get_hot_token_id().to(head.device)
                head.data = head.data[self.hot_token_id]
                if self.hot_token_id is not None:
                    n = self.hot_token_id.shape[0]

            def draft(self, topk_index):
                topk_index = self.hot_token_id[topk_index]
    ''', "sglang/srt/speculative/eagle_worker.py") == [
        (4, "load_token_map"), (5, "hot_token_use"), (6, "hot_token_use"), (8, "hot_token_use"),
        (9, "hot_token_use"), (10, "hot_token_use"),  # `is not None` and `.shape[0]` are uses too (issue 13)
        (13, "hot_token_use")]


def test_grep_noise_is_not_a_site():
    assert sites('''
        # https://raw.githubusercontent.com/ROCm/rocmProfileData/master/tools/rpd2tracing.py
        import torch

        MODULES = (torch.nn.Dropout2d, torch.nn.UpsamplingNearest2d)


        def panel(ax):
            """Mentions "d2t" in name and hot_token_id[x] only in a docstring."""
            ax.hist2d([1], [2])  # "d2t" in name
            return "d2t_proj"
    ''', "sglang/srt/utils/nvtx_pytorch_hooks.py") == []


def test_trigger_skips_grep_noise():
    assert EX.trigger.search('if "d2t" in name:')
    assert EX.trigger.search("self.hot_token_id = None")
    for noise in ("torch.nn.Dropout2d", "ax.hist2d(x)", "# rpd2tracing.py", "UpsamplingNearest2d"):
        assert not EX.trigger.search(noise)


def test_shape_and_none_tests_of_hot_token_id_are_uses_in_0_5_23():
    """Issue 13: SGL103 missed `hot_token_id.shape[0]` and `hot_token_id is None` (0.5.23
    eagle_worker_v2.py:263-264 `self.hot_token_id.shape[0] if self.hot_token_id is not None ...`,
    :347 `and self.hot_token_id is None`); `head is not None` and `x.shape[0]` are not uses."""
    import pytest

    from tests.analyzer.extractors.driver import facts_for
    from tests.support.releases import release_tree

    path = "sglang/srt/speculative/eagle_worker_v2.py"
    try:
        text = (release_tree("0.5.23") / path).read_text(encoding="utf-8")
    except Exception as exc:  # pragma: no cover - no network for the wheel
        pytest.skip(f"0.5.23 not available: {exc}")
    found = {(r.line, r.detail) for r in facts_for(path, text, (EX,)).extras["spec_d2t"] if r.kind == "hot_token_use"}
    assert (263, "self.hot_token_id.shape[0]") in found
    assert (264, "self.hot_token_id is not None") in found
    assert (347, "self.hot_token_id is None") in found
    assert (372, "self.hot_token_id is not None") in found  # `... and head is not None` is not one
    assert not any("head is not None" in detail for _, detail in found)
    assert sites('''
        def f(self, x, head):
            n = x.shape[0]
            if head is None or x is not None:
                return self.hot_token_id.shape[0]
    ''') == [(5, "hot_token_use")]
