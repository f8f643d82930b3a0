"""`gen ddtree` output loaded into the REAL sglang package (0.5.23: plugin; 0.5.11: patch), on CPU.

The package comes from `scripts/real_sglang_env.sh` (tests/support/real_sglang.py) and is only ever
imported in a subprocess. What is checked there:
- the registration loads and `SpeculativeAlgorithm.from_string("DDTREE")` answers;
- every method SGLang may call on an algorithm object (the enum's public instance methods, from
  the facts) exists on it and answers: predicates as DFLASH answers them, the rest run;
- `ServerArgs` parses and resolves `--speculative-algorithm DDTREE` (dummy weights, tiny local configs);
- the worker imports and subclasses the release's own DFlash worker;
- its constructor refuses, before the base loads anything, what would not be exact (TP > 1, CUDA
  graphs captured without the tree mask or for another width, attention backends that ignore the
  mask), given real `ServerArgs` objects; and lets an exact configuration through to the base;
- the base is built (and builds its draft side) reading the drafter's trained block, read from the
  draft config by the release's own loader, while the setting holds the tree's width otherwise;
- spec v2: the tree verify's KV-location plan call, the verify field it fills and the base's
  write-ids method are the release's own.
- the release's default attention backend on Hopper (its own predicate made to answer yes): fa3,
  replaced by 0.5.23's server-args hook, refused by 0.5.11's worker naming the release's line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from sgl_scan.codegen.ddtree.generate import generate_ddtree
from sgl_scan.codegen.ddtree.plan import algorithm_methods
from sgl_scan.codegen.write import write_tree
from tests.codegen.conftest import release_analysis
from tests.support.real_sglang import real_sglang_site, run_python

pytestmark = pytest.mark.slow

BUDGET = 32

TARGET_CONFIG = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
    "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "torch_dtype": "bfloat16",
    "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2,
}
DRAFT_CONFIG = {
    **TARGET_CONFIG, "architectures": ["DFlashDraftModel"], "num_hidden_layers": 1, "block_size": 16,
    "dflash_config": {"target_layer_ids": [0, 1], "mask_token_id": 3}, "num_target_layers": 2,
}

# An MLA target shaped like DeepSeek-V3 and an MHA target with learned attention sinks shaped like
# gpt-oss (tiny, dummy weights: only the server arguments are resolved).
MLA_CONFIG = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 64, "intermediate_size": 128,
    "moe_intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 256,
    "kv_lora_rank": 32, "q_lora_rank": 48, "qk_rope_head_dim": 16, "qk_nope_head_dim": 16, "v_head_dim": 16, "n_routed_experts": 4,
    "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1, "moe_layer_freq": 1, "n_group": 1, "topk_group": 1,
    "routed_scaling_factor": 1.0, "scoring_func": "sigmoid", "topk_method": "noaux_tc", "norm_topk_prob": True,
    "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "torch_dtype": "bfloat16",
    "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2,
}
SINKS_CONFIG = {
    "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 64, "intermediate_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
    "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention"],
    "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": 150000.0, "torch_dtype": "bfloat16",
    "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2,
}


class Real:
    def __init__(self, version, site, root, paths, plan, methods, predicates, routes=True):
        self.version, self.site, self.root, self.paths = version, site, root, paths
        self.plan, self.methods, self.predicates = plan, methods, predicates
        self.routes = routes  # a server-args check routes the attention backend (plugin hook / patched ServerArgs)

    def run(self, body: str) -> dict:
        return run_python(self.site, PRELUDE.format(version=self.version, root=str(self.root)) + textwrap.dedent(body),
                          extra_path=self.paths, cwd=self.root)


# Every check starts here: make DDTREE known (plugin: register(); patch: the patched package is
# first on the path), and a helper that builds real, resolved ServerArgs.
PRELUDE = '''
import argparse, json, sys
from pathlib import Path
VERSION, ROOT = {version!r}, Path({root!r})
try:
    import ddtree_sglang.register as _r
    _r.register()
except ImportError as exc:
    if "register" not in str(exc):
        raise
import sglang
from sglang.srt.server_args import ServerArgs
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
assert str(ROOT) in sglang.__file__ or (ROOT / "ddtree_sglang" / "register.py").exists(), sglang.__file__

def server_args(*extra):
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    argv = ["--model-path", str(ROOT / "target"), "--speculative-algorithm", "DDTREE",
            "--speculative-draft-model-path", str(ROOT / "draft"), "--load-format", "dummy",
            "--skip-tokenizer-init", "--device", "cuda", *extra]
    args = ServerArgs.from_cli_args(parser.parse_args(argv))
    if hasattr(args, "resolve_once"):
        args.resolve_once()
    return args
'''


def _patched_package(site: Path, patch_text: str, files: tuple[str, ...], dest: Path) -> Path:
    """A copy of the installed package (symlinks; the patched files real copies) with the patch applied."""
    shutil.copytree(site / "sglang", dest / "sglang", symlinks=True, copy_function=os.symlink)
    for rel in files:
        target = dest / rel
        target.unlink()
        shutil.copyfile(site / rel, target)
    (dest / "ddtree.patch").write_text(patch_text)
    applied = subprocess.run(["patch", "-p1", "-i", "ddtree.patch"], cwd=dest, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    return dest


@pytest.fixture(scope="module", params=["0.5.23", "0.5.11"])
def real(request, facts_cache, tmp_path_factory):
    version = request.param
    site = real_sglang_site(version)
    tree, analysis = release_analysis(version, facts_cache)
    gen = generate_ddtree(analysis, tree, package="ddtree_sglang", budget=BUDGET, topk=8)
    root = tmp_path_factory.mktemp(f"real-{version}")
    write_tree(gen.files, root / "ddtree_sglang", force=False, protected=tree)
    for name, config in (("target", TARGET_CONFIG), ("draft", DRAFT_CONFIG), ("mla_target", MLA_CONFIG), ("sinks_target", SINKS_CONFIG)):
        (root / name).mkdir()
        (root / name / "config.json").write_text(json.dumps(config))
    paths = (root,)
    if gen.plan.mode == "patch":
        paths = (_patched_package(site, gen.patch.text, gen.patch.files, root / "patched"), root)
    predicates = {p.name: p.value for p in gen.plan.predicates}
    routes = gen.plan.mode == "plugin" or gen.patch.server_args_hook
    return Real(version, site, root, paths, gen.plan, algorithm_methods(analysis), predicates, routes)


def test_the_registration_loads_and_every_algorithm_method_answers(real):
    assert {"need_topk", "carries_draft_hidden_states"} <= set(real.methods) or real.version == "0.5.11"
    found = real.run(f'''
        import inspect, torch, types
        algo = SpeculativeAlgorithm.from_string("DDTREE")
        dflash = SpeculativeAlgorithm.DFLASH
        out = {{"type": type(algo).__name__, "name": algo.name, "missing": [], "answers": {{}}, "dflash": {{}}, "ran": {{}}}}
        for name in {list(real.methods)!r}:
            fn = getattr(algo, name, None)
            if fn is None:
                out["missing"].append(name)
                continue
            required = [p for p in inspect.signature(fn).parameters.values()
                        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if not required:
                value = fn()
                out["answers"][name] = value if isinstance(value, (bool, type(None))) else type(value).__name__
                if isinstance(value, bool):
                    out["dflash"][name] = getattr(dflash, name)()
        pool = types.SimpleNamespace(req_to_token=torch.zeros((4, 64), dtype=torch.int32))
        if "create_future_map" in out["answers"] or hasattr(algo, "create_future_map"):
            out["ran"]["create_future_map"] = type(algo.create_future_map(torch.device("cpu"), pool)).__name__
        print(json.dumps(out))
    ''')
    assert found["name"] == "DDTREE" and found["missing"] == [], found
    for name, value in real.predicates.items():
        assert found["answers"].get(name) == value == found["dflash"][name], (name, found)
    if real.version == "0.5.23":
        assert found["type"] == "DDTreeSpecAlgo"
        assert found["answers"]["get_platform_worker_cls"] is None  # the release's own: no out-of-tree platform here
        assert found["ran"]["create_future_map"] == "FutureMap"


def test_server_args_parse_and_resolve_ddtree(real):
    found = real.run('''
        args = server_args("--disable-cuda-graph", "--attention-backend", "triton", "--speculative-num-draft-tokens", "33")
        view = args
        try:
            from sglang.srt.arg_groups.overrides import resolving_view
            view = resolving_view(args)
        except ImportError:
            pass
        print(json.dumps({"algorithm": str(view.speculative_algorithm), "tokens": view.speculative_num_draft_tokens}))
    ''')
    assert found == {"algorithm": "DDTREE", "tokens": 33}


def test_the_worker_subclasses_the_release_base_and_refuses_before_loading(real):
    base = real.plan.base
    found = real.run(f'''
        from ddtree_sglang import worker
        from {base.module} import {base.name} as Base
        refusals = {{}}
        cases = {{
            "tp": ["--tp-size", "2", "--disable-cuda-graph", "--attention-backend", "triton", "--speculative-num-draft-tokens", "33"],
            "graphs": ["--attention-backend", "triton", "--speculative-num-draft-tokens", "33"],
            "width": ["--attention-backend", "triton", "--speculative-num-draft-tokens", "16"],
            "fa3": ["--disable-cuda-graph", "--attention-backend", "fa3", "--speculative-num-draft-tokens", "33"],
            "ok": ["--disable-cuda-graph", "--attention-backend", "triton", "--speculative-num-draft-tokens", "33"],
        }}
        for case, argv in cases.items():
            try:
                args = server_args(*argv)
            except ValueError as exc:  # the plugin's server-args hook refused first
                refusals[case] = "hook: " + str(exc)
                continue
            try:  # spec v2 reads the scheduler's per-step reservation from the published settings, as the release does
                from sglang.srt.runtime_context import get_context
                get_context().set_server_args(args)
            except ImportError:
                pass
            params = dict.fromkeys(worker.DDTreeWorker.__init__.__code__.co_varnames[1:worker.DDTreeWorker.__init__.__code__.co_argcount], 0)
            params.update(server_args=args, target_worker=None)
            try:
                worker.DDTreeWorker(**params)
            except RuntimeError as exc:
                refusals[case] = str(exc) if str(exc).startswith("DDTree") else "base: " + str(exc)
            except Exception as exc:  # the base started (needs a GPU): nothing was refused
                refusals[case] = "base: " + type(exc).__name__
        print(json.dumps({{"subclass": issubclass(worker.DDTreeWorker, Base), "refusals": refusals}}))
    ''')
    assert found["subclass"], found
    refusals = found["refusals"]
    assert "refuses tensor parallelism (tp_size=2)" in refusals["tp"], refusals
    # CUDA graphs on: nothing refused, the release's own constructor ran (only the tree verify runs eager, see
    # test_the_tree_verify_closes_the_releases_own_graph_gates)
    assert refusals["graphs"].startswith("base: "), refusals
    if real.plan.engine.reservation_attr:  # spec v2: the window comes from the scheduler's per-step reservation
        assert "the tree verifies budget + 1 = 33 tokens" in refusals["width"] and "= 16" in refusals["width"], refusals
    else:  # spec v1: the verify's own prepare allocates the tree's window; the graphs' width no longer matters (eager verify)
        assert refusals["width"].startswith("base: "), refusals
    # fa3 chosen on a machine whose default is not fa3: refused at server-args time (0.5.23's hook, 0.5.11's patched ServerArgs)
    assert real.routes and refusals["fa3"].startswith("hook: "), refusals
    assert "needs an attention backend whose verify reads the tree mask" in refusals["fa3"] and "attention_backend=fa3" in refusals["fa3"], refusals
    assert refusals["ok"].startswith("base: "), refusals  # nothing refused: the release's own constructor ran
    for case in ("tp", "width", "fa3")[:: 1 if real.plan.engine.reservation_attr else 2]:
        assert "\n" not in refusals[case]


# The graph runner classes each release's model runner keeps in the attributes it asks before a replay.
GRAPH_RUNNERS = {
    "0.5.23": {"decode_cuda_graph_runner": "sglang.srt.model_executor.runner.decode_cuda_graph_runner.DecodeCudaGraphRunner"},
    "0.5.11": {"graph_runner": "sglang.srt.model_executor.cuda_graph_runner.CudaGraphRunner"},
}


def test_the_tree_verify_closes_the_releases_own_graph_gates(real):
    """Graphs stay on; the tree verify runs eager because, inside eager_verify, the gate methods the release's
    model runner asks (read from model_runner.py by sgl-scan) answer no on the release's own graph runner objects,
    and afterwards the release's own method answers again (here: it fails on a bare object, proving it is the
    real one), as the base forces its single eager verify."""
    runners = GRAPH_RUNNERS[real.version]
    found = real.run(f'''
        import importlib, inspect
        from types import SimpleNamespace
        from ddtree_sglang import worker
        gates = {{a: m for a, m, _ in worker.GRAPH_GATES}}
        model_runner = SimpleNamespace()
        objects = {{}}
        for attribute, qualname in {runners!r}.items():
            module, _, name = qualname.rpartition(".")
            cls = getattr(importlib.import_module(module), name)
            objects[attribute] = object.__new__(cls)
            setattr(model_runner, attribute, objects[attribute])
        fb = SimpleNamespace(can_run_decode_cuda_graph=True)
        inside = {{}}
        with worker.eager_verify(model_runner, fb):
            for attribute, runner in objects.items():
                inside[attribute] = getattr(runner, gates[attribute])(fb)
        after = {{}}
        for attribute, runner in objects.items():
            try:
                after[attribute] = getattr(runner, gates[attribute])(SimpleNamespace())
            except Exception as exc:
                after[attribute] = "real: " + type(exc).__name__
        source = inspect.getsource(worker.DDTreeWorker.ddtree_target_verify)
        print(json.dumps({{"gates": gates, "inside": inside, "after": after, "flag": fb.can_run_decode_cuda_graph,
                          "scoped": "with eager_verify(self." in source}}))
    ''')
    assert set(runners) <= set(found["gates"]), found
    assert found["inside"] == {a: False for a in runners}, found
    assert all(str(v).startswith("real: ") for v in found["after"].values()), found
    assert found["flag"] is False and found["scoped"], found


# How the release's own DFlash worker reads the setting it takes its block size from (dflash_worker_v2.py:507,
# dflash_worker.py:164; test_plan.py checks the facts give the same).
READ_WIDTH = {
    "0.5.23": "__import__('sglang.srt.runtime_context', fromlist=['get_spec']).get_spec().speculative_num_draft_tokens",
    "0.5.11": "args.speculative_num_draft_tokens",
}


def test_the_base_is_built_on_the_drafters_trained_block(real):
    """Fix 5: --speculative-num-draft-tokens 33 is the tree's verify width; the release's DFlash worker, which takes
    its block size from that setting, is built (and builds its draft side) while it reads the drafter's trained
    block, 16 in the draft config, read by the release's own config loader; the setting reads 33 again after."""
    base = real.plan.base
    phases = list(real.plan.width.phases)
    found = real.run(f'''
        from ddtree_sglang import worker
        from {base.module} import {base.name} as Base
        args = server_args("--disable-cuda-graph", "--attention-backend", "triton", "--speculative-num-draft-tokens", "33")
        try:
            from sglang.srt.runtime_context import get_context
            get_context().set_server_args(args)
        except ImportError:
            pass
        read = lambda: {READ_WIDTH[real.version]}
        seen = {{}}
        class Stop(Exception):
            pass
        def init(self, *a, **k):
            seen["__init__"] = read()
            raise Stop()
        Base.__init__ = init
        for name in {phases!r}:
            setattr(Base, name, lambda self, *a, _name=name, **k: seen.__setitem__(_name, read()))
        params = dict.fromkeys(worker.DDTreeWorker.__init__.__code__.co_varnames[1:worker.DDTreeWorker.__init__.__code__.co_argcount], 0)
        params.update(server_args=args, target_worker=None)
        try:
            worker.DDTreeWorker(**params)
        except Stop:
            pass
        after = read()
        built = object.__new__(worker.DDTreeWorker)
        built.server_args, built.ddtree_draft_width = args, worker.drafter_block_size(args)
        for name in {phases!r}:
            getattr(built, name)()
        print(json.dumps({{"seen": seen, "after": after, "block": built.ddtree_draft_width}}))
    ''')
    assert found["block"] == DRAFT_CONFIG["block_size"] == 16
    assert found["seen"] == {name: 16 for name in ["__init__", *real.plan.width.phases]}, found
    assert found["after"] == BUDGET + 1 == 33
    if real.version == "0.5.23":
        assert set(real.plan.width.phases) == {"alloc_memory_pool", "init_attention_backends", "init_cuda_graphs"}


def test_the_tree_verify_passes_what_the_release_base_passes(real):
    """Fix 5 (spec v2): the KV-location plan the tree verify builds is the release's own call (the translator's
    plan() takes every keyword the worker passes), the verify input takes the plan in the field the base fills, and
    the base has the write-ids method the commit reads the draft KV's ids with. Spec v1 plans nothing."""
    engine = real.plan.engine
    if real.version == "0.5.11":
        assert engine.kv_plan is None and engine.write_ids_method is None
        return
    verify = real.plan.verify
    base = real.plan.base
    found = real.run(f'''
        import inspect, torch
        from ddtree_sglang import worker
        from {base.module} import {base.name} as Base
        from {verify.verify_module} import {verify.verify_name} as Verify
        from sglang.srt.mem_cache.kv_index_translator import KVIndexTranslator
        params = inspect.signature(KVIndexTranslator.{engine.kv_plan.rpartition(".")[2]}).parameters
        plan = object()
        verify_input = Verify(draft_token=torch.zeros(4, dtype=torch.long), positions=torch.zeros(4, dtype=torch.long),
                              draft_token_num=4, custom_mask=None, {engine.kv_field}=plan)
        print(json.dumps({{"plan_params": list(params), "passed": getattr(verify_input, "{engine.kv_field}") is plan,
                          "write_ids": callable(getattr(Base, "{engine.write_ids_method}", None)),
                          "source": inspect.getsource(worker.DDTreeWorker.ddtree_target_verify)}}))
    ''')
    assert set(engine.kv_plan_keywords) <= set(found["plan_params"]), found["plan_params"]
    assert found["passed"] and found["write_ids"]
    assert f"{engine.kv_field}=kv_plan" in found["source"] and "batch.seq_lens_cpu = saved[0] + width" in found["source"]


# The arm of each release's default chain that picks fa3 on Hopper (read by hand from the source).
HOPPER_DEFAULT = {
    "0.5.23": ("platform", "sglang.srt.runtime_context", "get_platform", "is_hopper_with_cuda_12_3",
               "sglang/srt/arg_groups/model_override_base.py:305"),
    "0.5.11": ("call", "sglang.srt.utils.common", "is_hopper_with_cuda_12_3", None, "sglang/srt/server_args.py:2492"),
}


def test_the_release_default_on_hopper_is_forced_by_the_hook_or_refused_by_the_worker(real):
    """Real ServerArgs, no --attention-backend: on this CPU the release's default (its else arm) reads
    the tree mask and nothing changes; with the release's Hopper predicate answering yes, it picks fa3,
    which 0.5.23's server-args hook and 0.5.11's patched ServerArgs (its DFLASH branch) replace."""
    kind, module, getter, attribute, where = HOPPER_DEFAULT[real.version]
    arm = real.plan.attention.arms[0]
    assert (arm.kind, arm.module, arm.getter, arm.attribute, str(arm.location), arm.backends) == (kind, module, getter, attribute, where, ("fa3",))
    found = real.run(f'''
        import contextlib
        from ddtree_sglang import worker
        try:
            from sglang.srt.arg_groups.overrides import resolving_view
        except ImportError:
            resolving_view = lambda args: args
        out = {{}}

        def attempt(key, *argv):
            try:
                args = server_args(*argv)
            except ValueError as exc:
                out[key] = {{"hook": str(exc)}}
                return
            out[key] = {{"backend": resolving_view(args).attention_backend, "refusal": worker.ddtree_refusal(args, {BUDGET})}}

        @contextlib.contextmanager
        def hopper():
            if {kind!r} == "platform":
                from sglang.srt.runtime_context import override_platform
                with override_platform(**{{{attribute!r}: True}}):
                    yield
                return
            import sglang.srt.server_args as sa, sglang.srt.utils.common as common
            saved = sa.{getter}, common.{getter}
            sa.{getter} = common.{getter} = lambda: True
            try:
                yield
            finally:
                sa.{getter}, common.{getter} = saved

        argv = ("--disable-cuda-graph", "--speculative-num-draft-tokens", "{BUDGET + 1}")
        attempt("here", *argv)
        with hopper():
            attempt("hopper", *argv)
        print(json.dumps(out))
    ''')
    assert found["here"]["refusal"] is None and found["here"]["backend"] in ("flashinfer", "triton"), found
    hopper = found["hopper"]
    if real.routes:  # forced at server-args time (plugin hook; the patched ServerArgs' DFLASH branch), then accepted
        assert hopper == {"backend": "flashinfer", "refusal": None}, found
    else:
        assert hopper["backend"] == "fa3", found  # the release's own choice on Hopper
        assert f"default attention backend on this GPU" in hopper["refusal"] and f"is fa3 ({where})" in hopper["refusal"], found
        assert "--attention-backend flashinfer" in hopper["refusal"] and "\n" not in hopper["refusal"], found


# How each release's GPU predicates are made to answer yes here (the arms the MLA default and the
# gpt-oss override test; read by hand from the source).
PLATFORM = {
    "0.5.23": {"sm100": ("platform", ("is_sm100", "is_blackwell")), "sm90": ("platform", ("is_sm90",))},
    "0.5.11": {"sm100": ("call", ("is_sm100_supported", "is_blackwell_supported")), "sm90": ("call", ("is_sm90_supported",))},
}


def _kind_run(real, target: str, gpu: str, cases: dict) -> dict:
    kind, names = PLATFORM[real.version][gpu]
    return real.run(f'''
        import contextlib
        from ddtree_sglang import worker
        try:
            from sglang.srt.arg_groups.overrides import resolving_view
        except ImportError:
            resolving_view = lambda args: args
        out = {{}}

        @contextlib.contextmanager
        def gpu():
            if {kind!r} == "platform":
                from sglang.srt.runtime_context import override_platform
                with override_platform(**dict.fromkeys({names!r}, True)):
                    yield
                return
            import sglang.srt.server_args as sa, sglang.srt.utils.common as common
            saved = {{(m, n): getattr(m, n) for m in (sa, common) for n in {names!r} if hasattr(m, n)}}
            for m, n in saved:
                setattr(m, n, lambda: True)
            try:
                yield
            finally:
                for (m, n), value in saved.items():
                    setattr(m, n, value)

        def attempt(key, on_gpu, *argv):
            argv = ("--model-path", str(ROOT / {target!r}), "--disable-cuda-graph", "--speculative-num-draft-tokens", "{BUDGET + 1}", *argv)
            try:
                with (gpu() if on_gpu else contextlib.nullcontext()):
                    args = server_args(*argv)
                    view = resolving_view(args)
                    kinds = worker.model_kind(view if view is not args else args)[0]
                    out[key] = {{"backend": view.attention_backend, "kinds": list(kinds), "refusal": worker.ddtree_refusal(args, {BUDGET})}}
            except (ValueError, AssertionError) as exc:
                out[key] = {{"hook": f"{{type(exc).__name__}}: {{exc}}"}}

        for key, (on_gpu, argv) in {cases!r}.items():
            attempt(key, on_gpu, *argv)
        print(json.dumps(out))
    ''')


def test_an_mla_target_is_routed_or_refused_on_the_real_server_args(real):
    """DeepSeek-V3-shaped target with --speculative-algorithm DDTREE on the real ServerArgs: never a silent causal
    verify. Here (no GPU) the release's MLA default is triton, which verifies a tree; on sm100 the release picks
    flashinfer (or the DeepSeek override trtllm_mla): 0.5.23's hook routes to triton, 0.5.11's patched ServerArgs refuses;
    flashinfer chosen explicitly is refused, naming the line where its MLA plan drops the mask. Both releases
    route at server-args time (the 0.5.11 patch calls the same check from ServerArgs' DFLASH branch)."""
    found = _kind_run(real, "mla_target", "sm100", {
        "here": (False, ()), "sm100": (True, ()), "flashinfer": (False, ("--attention-backend", "flashinfer")),
    })
    assert found["here"] == {"backend": "triton", "kinds": ["mla"], "refusal": None}, found
    flashinfer = found["flashinfer"].get("hook") or found["flashinfer"]["refusal"]
    assert flashinfer, found  # flashinfer's MLA verify drops the tree mask: never accepted
    assert "attention_backend=flashinfer" in flashinfer and "never hands it on" in flashinfer and "flashinfer_mla_backend.py:" in flashinfer, found
    assert "\n" not in flashinfer
    if real.plan.mode == "plugin":  # 0.5.23: the hook tells the release's choice (default, override provider) from the user's
        assert found["sm100"] == {"backend": "triton", "kinds": ["mla"], "refusal": None}, found  # routed before weights load
    else:  # 0.5.11 (patched): ServerArgs sets trtllm_mla itself before its DFLASH branch runs the check, which cannot
        # tell that from a user's choice: refused loudly at server-args time, naming the fix (never a causal verify)
        refusal = found["sm100"].get("hook") or found["sm100"].get("refusal")
        assert "for this MLA target" in refusal and "--attention-backend triton" in refusal and "\n" not in refusal, found


def test_a_sinks_target_is_routed_or_refused_on_the_real_server_args(real):
    """gpt-oss-shaped target (learned attention sinks): the release's own default/override gives triton here; an
    explicit flashinfer (no sinks in its forward_extend) is refused (both releases assert it themselves first); on
    Hopper the gpt-oss override's fa3 is routed to triton (0.5.23 hook) or refused (0.5.11 worker); fa3 passed
    explicitly is the same value the override sets, so it is treated the same way."""
    found = _kind_run(real, "sinks_target", "sm90", {
        "here": (False, ()), "sm90": (True, ()), "flashinfer": (False, ("--attention-backend", "flashinfer")),
        "fa3": (False, ("--attention-backend", "fa3")),
    })
    assert found["here"] == {"backend": "triton", "kinds": ["sinks"], "refusal": None}, found
    flashinfer = found["flashinfer"].get("hook") or found["flashinfer"].get("refusal")
    assert flashinfer and "flashinfer" in flashinfer, found  # never accepted
    if real.plan.mode == "plugin":
        assert found["sm90"] == {"backend": "triton", "kinds": ["sinks"], "refusal": None}, found
        assert found["fa3"] == {"backend": "triton", "kinds": ["sinks"], "refusal": None}, found
    else:  # 0.5.11 (patched): refused at server-args time (see the MLA test), never accepted
        for key in ("sm90", "fa3"):
            refusal = found[key].get("hook") or found[key].get("refusal")
            assert "fa3" in refusal and "SINKS target" in refusal and "--attention-backend triton" in refusal, found


PROBE = '''
def check(queue=None):
    """What every SGLang process does first (load_plugins()), then whether DDTREE is known."""
    from sglang.srt.plugins import load_plugins
    load_plugins()
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
    try:
        answer = str(SpeculativeAlgorithm.from_string("DDTREE"))
    except Exception as exc:
        answer = "unknown: " + type(exc).__name__
    if queue is not None:
        queue.put(answer)
    return answer
'''


def test_the_hook_registers_ddtree_in_every_fresh_process_through_the_releases_entry_point(real, tmp_path):
    """Item 3: `python -m ddtree_sglang.hook install SITE` makes DDTREE an entry point of the release's plugin group;
    a fresh `python -c` and a multiprocessing spawn child (how SGLang starts schedulers/TP workers and the
    detokenizer) that only run the release's load_plugins() know DDTREE, with no register() by hand. Before the
    install, the same processes do not (the control). 0.5.11 is patched: DDTREE is in its enum, no hook."""
    files = sorted(p.name for p in (real.root / "ddtree_sglang").iterdir())
    if real.plan.mode != "plugin":
        assert "hook.py" not in files
        return
    assert "hook.py" in files
    (tmp_path / "probe.py").write_text(PROBE)
    site = tmp_path / "site"
    site.mkdir()
    code = textwrap.dedent('''
        import json, multiprocessing as mp, subprocess, sys
        from probe import check
        fresh = subprocess.run([sys.executable, "-c", "from probe import check; print(check())"], capture_output=True, text=True)
        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        child = ctx.Process(target=check, args=(queue,))
        child.start()
        spawned = queue.get(timeout=300)
        child.join(60)
        print(json.dumps({"fresh": fresh.stdout.strip().splitlines()[-1:] or [fresh.stderr[-500:]], "spawned": spawned}))
    ''')
    before = run_python(real.site, code, extra_path=(site, tmp_path, real.root), cwd=tmp_path)
    installed = run_python(real.site, "import json\nfrom ddtree_sglang import hook\nprint(json.dumps([str(p) for p in hook.install(%r)]))" % str(site),
                           extra_path=(real.root,), cwd=tmp_path)
    assert any(p.endswith("entry_points.txt") for p in installed), installed
    assert (site / "ddtree_sglang_ddtree_plugin.pth").read_text().strip() == str(real.root.resolve())
    after = run_python(real.site, code, extra_path=(site, tmp_path, real.root), cwd=tmp_path)
    assert before["spawned"].startswith("unknown") and before["fresh"][0].startswith("unknown"), before
    assert "DDTREE" in after["spawned"] and "DDTREE" in after["fresh"][0], after
    run_python(real.site, "import json\nfrom ddtree_sglang import hook\nprint(json.dumps([str(p) for p in hook.uninstall(%r)]))" % str(site),
               extra_path=(real.root,), cwd=tmp_path)
    assert list(site.iterdir()) == []


def test_the_generated_worker_tests_run_with_the_real_package_importable(real):
    """The generated stand-in tests no longer skip themselves where sglang is importable; they pass there."""
    found = real.run('''
        import importlib.util, pytest
        assert importlib.util.find_spec("sglang") is not None
        class Outcomes:
            passed = skipped = 0
            def pytest_runtest_logreport(self, report):
                Outcomes.passed += report.when == "call" and report.passed
                Outcomes.skipped += bool(report.skipped)
        rc = pytest.main(["-q", "-p", "no:cacheprovider", str(ROOT / "ddtree_sglang" / "tests" / "test_worker.py")], plugins=[Outcomes()])
        print(json.dumps({"rc": int(rc), "passed": Outcomes.passed, "skipped": Outcomes.skipped}))
    ''')
    skips = 0 if real.plan.mode == "plugin" else 1  # 0.5.11 has no per-model override provider of the 0.5.20+ form
    assert found["rc"] == 0 and found["skipped"] == skips and found["passed"] >= 20, found


def test_a_site_that_cannot_be_built_skips_with_the_reason(tmp_path, monkeypatch):
    import tests.support.real_sglang as support

    failing = tmp_path / "env.sh"
    failing.write_text("echo 'ERROR: Could not find a version that satisfies the requirement sglang==9.9' >&2\nexit 1\n")
    monkeypatch.setattr(support, "SCRIPT", failing)
    monkeypatch.setenv("SGLSCAN_TEST_CACHE", str(tmp_path / "cache"))
    with pytest.raises(pytest.skip.Exception, match=r"real sglang==9\.9 environment could not be built by env\.sh: ERROR: Could not find"):
        real_sglang_site("9.9")
