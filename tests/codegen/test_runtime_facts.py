"""The runtime facts the generated worker and hook read from a release (codegen/ddtree/runtime.py).

Exact file:line expectations on real releases (read by hand from the wheels), and hostile or odd
trees: a name that is not an identifier, a call of another shape, a missing file, a huge file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sgl_scan.codegen.ddtree.runtime import MAX_BYTES, MODEL_RUNNER, GraphGate, read_runtime_facts
from tests.support.releases import release_tree

pytestmark = pytest.mark.slow


def test_0_5_23_runtime_facts():
    facts = read_runtime_facts(release_tree("0.5.23"), "sglang.srt.speculative.dflash_worker_v2")
    assert facts.graph_gates == (
        GraphGate("decode_cuda_graph_runner", "can_run_graph", "sglang/srt/model_executor/model_runner.py:1994"),
        GraphGate("prefill_cuda_graph_runner", "can_run_graph", "sglang/srt/model_executor/model_runner.py:2040"),
    )
    assert facts.lora_unwrap == ("sglang.srt.lora.layers", "sglang/srt/lora/layers.py:40")
    assert facts.quantized_head == "sglang/srt/speculative/dflash_worker_v2.py:1563"
    assert facts.dense_check == ("sglang.srt.speculative.dflash_utils", "sglang/srt/speculative/dflash_utils.py:820")
    assert (facts.head_chunk, facts.head_chunk_location) == (256, "sglang/srt/speculative/dflash_worker_v2.py:1599")
    assert facts.plugin_group == ("sglang.srt.plugins", "sglang/srt/plugins/__init__.py:29")
    assert "sglang/srt/managers/scheduler.py:6323" in facts.plugin_loaders
    assert "sglang/srt/managers/detokenizer_manager.py:552" in facts.plugin_loaders


def test_0_5_11_runtime_facts():
    facts = read_runtime_facts(release_tree("0.5.11"), "sglang.srt.speculative.dflash_worker")
    assert {(g.attribute, g.method, g.location) for g in facts.graph_gates} == {
        ("piecewise_cuda_graph_runner", "can_run", "sglang/srt/model_executor/model_runner.py:3034"),
        ("graph_runner", "can_run", "sglang/srt/model_executor/model_runner.py:3211"),
    }
    assert facts.lora_unwrap is None and facts.quantized_head is None and facts.dense_check is None  # 0.5.11 has neither
    assert facts.head_chunk == 256
    assert "sglang/srt/managers/scheduler.py:3893" in facts.plugin_loaders


def _runner(tmp_path: Path, body: str) -> Path:
    path = tmp_path / MODEL_RUNNER
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return tmp_path


def test_only_self_runner_gate_calls_on_the_forward_batch_are_gates(tmp_path):
    tree = _runner(tmp_path, (
        "class ModelRunner:\n"
        "    def _forward_raw(self, forward_batch, other):\n"
        "        a = self.graph_runner.can_run(forward_batch)\n"          # a gate
        "        b = self.graph_runner.can_run(forward_batch)\n"          # the same gate once
        "        c = other.runner.can_run(forward_batch)\n"               # not the model runner's
        "        d = self.graph_runner.can_run(other)\n"                  # not the forward batch
        "        e = self.x.y.can_run(forward_batch)\n"                   # a deeper chain
        "        f = self.graph_runner.replay(forward_batch)\n"           # not a gate
    ))
    facts = read_runtime_facts(tree, "sglang.srt.speculative.dflash_worker")
    assert facts.graph_gates == (GraphGate("graph_runner", "can_run", f"{MODEL_RUNNER}:3"),)


def test_a_tree_without_or_with_an_unreadable_model_runner_gives_no_gate(tmp_path):
    assert read_runtime_facts(tmp_path, "sglang.srt.speculative.dflash_worker").graph_gates == ()
    _runner(tmp_path, "def broken(:\n")
    assert read_runtime_facts(tmp_path, "sglang.srt.speculative.dflash_worker").graph_gates == ()
    _runner(tmp_path, "x = self.graph_runner.can_run(forward_batch)\n" + "#" * (MAX_BYTES + 1))
    assert read_runtime_facts(tmp_path, "sglang.srt.speculative.dflash_worker").graph_gates == ()


def test_a_plugin_group_that_is_not_a_dotted_name_is_not_read(tmp_path):
    plugins = tmp_path / "sglang/srt/plugins/__init__.py"
    plugins.parent.mkdir(parents=True)
    plugins.write_text('GENERAL_PLUGINS_GROUP = "x\\"; import os"\ndef load_plugins():\n    pass\n')
    assert read_runtime_facts(tmp_path, "sglang.srt.speculative.dflash_worker").plugin_group is None
    plugins.write_text('GENERAL_PLUGINS_GROUP = "my.plugins"\ndef load_plugins():\n    pass\n')
    assert read_runtime_facts(tmp_path, "sglang.srt.speculative.dflash_worker").plugin_group == ("my.plugins", "sglang/srt/plugins/__init__.py:1")


def test_a_chunk_default_that_is_not_a_small_int_is_not_read(tmp_path):
    base = tmp_path / "sglang/srt/speculative/dflash_worker.py"
    base.parent.mkdir(parents=True)
    for default, expected in (("256", 256), ("'256'", None), ("10**9", None), ("True", None), ("0", None)):
        base.write_text(f"class W:\n    def _greedy_sample_from_vocab_parallel_head(self, *, hidden_states, lm_head, chunk_size={default}):\n        pass\n")
        assert read_runtime_facts(tmp_path, "sglang.srt.speculative.dflash_worker").head_chunk == expected, default


def test_a_chunk_default_after_positional_only_parameters_is_paired_with_its_own_parameter(tmp_path):
    base = tmp_path / "sglang/srt/speculative/dflash_worker.py"
    base.parent.mkdir(parents=True)
    base.write_text("class W:\n    def _greedy_sample_from_vocab_parallel_head(self, hidden_states=1, /, chunk_size=512):\n        pass\n")
    assert read_runtime_facts(tmp_path, "sglang.srt.speculative.dflash_worker").head_chunk == 512
