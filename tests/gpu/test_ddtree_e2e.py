"""End to end on a GPU: `gen ddtree` output inside a real SGLang server, greedy output token-identical.

Skipped unless CUDA and an installed `sglang` with the plugin API are present (the patch form is not
applied here). Run on a GPU box that has sglang installed (one command, about 5-10 minutes on one H200):

    SGLSCAN_GPU_E2E=1 python -m pytest -q -s tests/gpu/test_ddtree_e2e.py

Without model paths it builds a tiny random-weight target and DFlash drafter from local configs
(`--load-format dummy`, no model hub, token ids in and out: `--skip-tokenizer-init`); the acceptance
lengths and tokens/s it prints are then smoke figures only. For a meaningful comparison give real
models: SGLSCAN_GPU_TARGET=<target path> SGLSCAN_GPU_DRAFT=<DFlash drafter path>.

Checked for batch 1 and 8: DDTREE's greedy output equals no speculation's and DFLASH's, token for
token; printed: acceptance length (completion tokens per verify step) and tokens/s, DDTREE vs DFLASH.
Not checked here: the KV pool's free size after the run (the server's info endpoint differs by
release); a leak would show as a failed long run instead.
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
BUDGET = 15  # verify width 16: DFlash's default block size
MAX_NEW = 48
PROMPTS = [[(7 * i + 3 * j) % 200 + 10 for j in range(12 + i)] for i in range(8)]

TARGET_CONFIG = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 32, "vocab_size": 1024,
    "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "torch_dtype": "bfloat16",
    "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2,
}
DRAFT_CONFIG = {
    **TARGET_CONFIG, "architectures": ["DFlashDraftModel"], "num_hidden_layers": 1, "block_size": BUDGET + 1,
    "dflash_config": {"target_layer_ids": [1, 2], "mask_token_id": 3}, "num_target_layers": 4,
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", target, "--port", str(port),
            "--host", "127.0.0.1", "--attention-backend", "flashinfer", "--disable-cuda-graph", "--mem-fraction-static", "0.5"]
    if dummy:
        argv += ["--load-format", "dummy", "--skip-tokenizer-init"]
    if algorithm:
        argv += ["--speculative-algorithm", algorithm, "--speculative-draft-model-path", draft,
                 "--speculative-num-draft-tokens", str(BUDGET + 1)]
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
        results = {}
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
        return results
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def test_ddtree_greedy_equals_no_speculation_and_dflash(setup):
    plain = _serve_and_generate(setup, None)
    dflash = _serve_and_generate(setup, "DFLASH")
    ddtree = _serve_and_generate(setup, "DDTREE")
    for batch in (1, 8):
        assert ddtree[batch]["outputs"] == plain[batch]["outputs"], f"batch {batch}: DDTREE differs from no speculation"
        assert dflash[batch]["outputs"] == plain[batch]["outputs"], f"batch {batch}: DFLASH differs from no speculation"
        print(f"batch {batch}: acceptance DDTREE {ddtree[batch]['accept']} vs DFLASH {dflash[batch]['accept']}; "
              f"tokens/s DDTREE {ddtree[batch]['tok_s']:.1f} vs DFLASH {dflash[batch]['tok_s']:.1f} vs none {plain[batch]['tok_s']:.1f}"
              + (" (random weights: smoke figures)" if setup[3] else ""))
