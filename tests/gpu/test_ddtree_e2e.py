"""End to end on a GPU: `gen ddtree` output inside a real SGLang server, greedy output token-identical.

Skipped unless CUDA and an installed `sglang` with the plugin API are present (the patch form is not
applied here). Run on a GPU box that has sglang installed (one command, about 5-10 minutes on one H200):

    SGLSCAN_GPU_E2E=1 python -m pytest -q -s tests/gpu/test_ddtree_e2e.py

Without model paths it builds a tiny random-weight target and DFlash drafter from local configs
(`--load-format dummy`, no model hub, token ids in and out: `--skip-tokenizer-init`); the acceptance
lengths and tokens/s it prints are then smoke figures only. For a meaningful comparison give real
models: SGLSCAN_GPU_TARGET=<target path> SGLSCAN_GPU_DRAFT=<DFlash drafter path>.

Checked for batch 1 and 8: DDTREE's greedy output equals no speculation's and DFLASH's, token for
token (`test_ddtree_greedy_equals_no_speculation_and_dflash`); the KV pool's used tokens
(`num_used_tokens` of the server's load endpoint, `/v1/loads?include=core`) are back to their value
before the first request once the server is idle (`test_the_kv_pool_is_back_to_its_start_after_the_run`:
a tree commit that kept or lost slots shows here); the drafter ran on its trained block
(`draft block` in the log line DFlash prints at start-up equals the draft config's block_size,
while the tree verifies budget + 1); printed: acceptance length (completion tokens per verify step)
and tokens/s, DDTREE vs DFLASH.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(importlib.util.find_spec("sglang") is None, reason="needs sglang installed (pip install sglang==V)"),
    pytest.mark.skipif(os.environ.get("SGLSCAN_GPU_E2E") != "1", reason="set SGLSCAN_GPU_E2E=1 to start real servers"),
]

REPO = Path(__file__).resolve().parents[2]
BUDGET = 23  # verify width 24, wider than the drafter's block: the tree's width and the draft's are independent
BLOCK = 16  # the drafter's trained block (DFlash's default)
MAX_NEW = 48
PROMPTS = [[(7 * i + 3 * j) % 200 + 10 for j in range(12 + i)] for i in range(8)]

TARGET_CONFIG = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 32, "vocab_size": 1024,
    "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "torch_dtype": "bfloat16",
    "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2,
}
DRAFT_CONFIG = {
    **TARGET_CONFIG, "architectures": ["DFlashDraftModel"], "num_hidden_layers": 1, "block_size": BLOCK,
    "dflash_config": {"target_layer_ids": [1, 2], "mask_token_id": 3}, "num_target_layers": 4,
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _used_tokens(base: str) -> int:
    """KV tokens in use (not free, not evictable cache), summed over ranks, once the server has no request."""
    deadline = time.monotonic() + 60
    while True:
        with urllib.request.urlopen(base + "/v1/loads?include=core", timeout=30) as response:
            loads = json.loads(response.read())["loads"]
        flat = [{**load, **load.get("core", {})} for load in loads]
        if all(not f.get("num_running_reqs") for f in flat) or time.monotonic() > deadline:
            return sum(int(f["num_used_tokens"]) for f in flat)
        time.sleep(1)


def _post(url: str, payload: dict, timeout: float = 600) -> dict:
    request = urllib.request.Request(url, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    import sglang

    root = tmp_path_factory.mktemp("gpu-e2e")
    tree = root / "tree"  # the installed package's Python files, as a local snapshot source
    shutil.copytree(Path(sglang.__file__).resolve().parent, tree / "sglang", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    out = root / "ddtree_sglang"
    gen = subprocess.run(
        [sys.executable, "-m", "sgl_scan", "gen", "ddtree", "--path", str(tree), "--budget", str(BUDGET), "--out", str(out)],
        capture_output=True, text=True, env={**os.environ, "SGLSCAN_HOME": str(root / "home"), "PYTHONPATH": str(REPO)},
    )
    assert gen.returncode == 0, gen.stderr
    if not (out / "register.py").exists():
        pytest.skip(f"sglang {sglang.__version__} has no plugin API: apply {out}/ddtree.patch to it and rerun")
    (root / "sitecustomize.py").write_text("import ddtree_sglang.register as _r\n_r.register()\n")
    target, draft = os.environ.get("SGLSCAN_GPU_TARGET"), os.environ.get("SGLSCAN_GPU_DRAFT")
    dummy = not (target and draft)
    if dummy:
        for name, config in (("target", TARGET_CONFIG), ("draft", DRAFT_CONFIG)):
            (root / name).mkdir()
            (root / name / "config.json").write_text(json.dumps(config))
        target, draft = str(root / "target"), str(root / "draft")
    return root, target, draft, dummy


def _serve_and_generate(setup, algorithm: str | None) -> dict:
    root, target, draft, dummy = setup
    port = _free_port()
    spec_width = BUDGET + 1 if algorithm == "DDTREE" else BLOCK  # DFLASH verifies its block; DDTREE its tree
    argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", target, "--port", str(port),
            "--host", "127.0.0.1", "--attention-backend", "flashinfer", "--disable-cuda-graph", "--mem-fraction-static", "0.5"]
    if dummy:
        argv += ["--load-format", "dummy", "--skip-tokenizer-init"]
    if algorithm:
        argv += ["--speculative-algorithm", algorithm, "--speculative-draft-model-path", draft,
                 "--speculative-num-draft-tokens", str(spec_width)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
           "SGLANG_DDTREE_BUDGET": str(BUDGET)}
    log = open(root / f"server-{algorithm or 'none'}.log", "w")
    server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 600
        while True:
            assert server.poll() is None, f"server for {algorithm} exited: see {log.name}"
            try:
                urllib.request.urlopen(base + "/health", timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, f"server for {algorithm} not healthy after 600 s: see {log.name}"
                time.sleep(2)
        results = {"used_before": _used_tokens(base)}
        for batch in (1, 8):
            started = time.monotonic()
            reply = _post(base + "/generate", {
                "input_ids": PROMPTS[:batch],
                "sampling_params": {"temperature": 0, "max_new_tokens": MAX_NEW, "ignore_eos": True},
            })
            elapsed = time.monotonic() - started
            outputs = [r["output_ids"] for r in reply]
            tokens = sum(len(o) for o in outputs)
            verify = sum(r["meta_info"].get("spec_verify_ct", 0) for r in reply)
            results[batch] = {"outputs": outputs, "tok_s": tokens / elapsed, "accept": tokens / verify if verify else None}
        results["used_after"] = _used_tokens(base)
        log.flush()
        results["log"] = (root / f"server-{algorithm or 'none'}.log").read_text(errors="replace")
        return results
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


_RUNS: dict = {}


def _runs(setup) -> dict:
    """One server per algorithm for the module: (none, DFLASH, DDTREE) results."""
    if not _RUNS:
        _RUNS.update(none=_serve_and_generate(setup, None), DFLASH=_serve_and_generate(setup, "DFLASH"),
                     DDTREE=_serve_and_generate(setup, "DDTREE"))
    return _RUNS


def test_the_kv_pool_is_back_to_its_start_after_the_run(setup):
    for name, run in _runs(setup).items():
        assert run["used_after"] == run["used_before"], f"{name}: {run['used_before']} KV tokens in use before the run, {run['used_after']} after"


def test_the_drafter_runs_on_its_trained_block(setup):
    """DFlash logs `block_size=<n>` at start-up: under DDTREE it is the drafter's block, not budget + 1."""
    if not setup[3]:
        pytest.skip("real models: the drafter's block comes from its own config")
    log = _runs(setup)["DDTREE"]["log"]
    assert f"block_size={BLOCK}," in log and f"block_size={BUDGET + 1}," not in log, log[-3000:]


def test_ddtree_greedy_equals_no_speculation_and_dflash(setup):
    runs = _runs(setup)
    plain, dflash, ddtree = runs["none"], runs["DFLASH"], runs["DDTREE"]
    for batch in (1, 8):
        assert ddtree[batch]["outputs"] == plain[batch]["outputs"], f"batch {batch}: DDTREE differs from no speculation"
        assert dflash[batch]["outputs"] == plain[batch]["outputs"], f"batch {batch}: DFLASH differs from no speculation"
        print(f"batch {batch}: acceptance DDTREE {ddtree[batch]['accept']} vs DFLASH {dflash[batch]['accept']}; "
              f"tokens/s DDTREE {ddtree[batch]['tok_s']:.1f} vs DFLASH {dflash[batch]['tok_s']:.1f} vs none {plain[batch]['tok_s']:.1f}"
              + (" (random weights: smoke figures)" if setup[3] else ""))
