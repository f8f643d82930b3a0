"""The scope rules: which files a snapshot takes, on a tiny tree and on real releases."""

from __future__ import annotations

import re
import zipfile

import pytest

from sgl_scan.snapshots import scope
from tests.snapshots.conftest import MINI_FILES, MINI_FULL, MINI_SPECULATIVE
from tests.support.releases import release_wheel


def _select(kind):
    data = {p: c.encode() for p, c in MINI_FILES.items()}
    return ["sglang/" + p for p in scope.select_local(data, kind, data.__getitem__)]


def test_speculative_scope_takes_exactly_the_documented_files():
    assert _select("speculative") == MINI_SPECULATIVE


def test_full_scope_takes_every_python_file_under_srt():
    assert _select("full") == MINI_FULL


@pytest.mark.parametrize("text, hit", [
    ("if 'd2t' in name:", True),
    ("self.t2d = x", True),
    ("hot = d2t_tensor", True),
    ("torch.nn.Dropout2d", False),
    ("torch.nn.UpsamplingNearest2d", False),
    ("rpd2tracing", False),
])
def test_vocab_pattern_is_a_token_search(text, hit):
    assert scope.matches(scope.VOCAB_PATTERN, text.encode()) is hit


def test_attention_backends_and_their_registry_are_taken_by_name():
    """`gen ddtree` reads which backend each name builds and whether its verify reads the tree mask."""
    data = {p: b"x = 1\n" for p in ("srt/layers/attention/flashinfer_backend.py", "srt/layers/attention/attention_registry.py",
                                    "srt/layers/attention/utils.py", "srt/layers/attention/triton_ops/extend_backend.py",
                                    "srt/layers/other_backend.py")}
    assert scope.select_local(list(data), "speculative", data.__getitem__) == [
        "srt/layers/attention/attention_registry.py", "srt/layers/attention/flashinfer_backend.py"]


def test_unknown_scope_is_refused():
    with pytest.raises(ValueError):
        scope.check_scope("everything")


@pytest.mark.slow
def test_real_release_speculative_scope_against_the_wheel_listing():
    """Independent reading of sglang 0.5.23's wheel: what the documented rules must take."""
    with zipfile.ZipFile(release_wheel("0.5.23")) as archive:
        names = [n[len("sglang/"):] for n in archive.namelist() if n.startswith("sglang/") and n.endswith(".py")]
        data = {n: archive.read("sglang/" + n) for n in names if n.startswith("srt/")}
    chosen = set(scope.select_local(names, "speculative", lambda p: data[p]))
    expected = {n for n in names if n.startswith(("srt/speculative/", "srt/arg_groups/"))}
    expected |= {"srt/server_args.py", "version.py", "_version.py"}
    for name, body in data.items():
        top_model = name.startswith("srt/models/") and name.count("/") == 2
        attention = name.startswith("srt/layers/attention/") and name.count("/") == 3
        if attention and (name.endswith("_backend.py") or name.endswith("/attention_registry.py")):
            expected.add(name)
        elif top_model and ("eagle" in name.rsplit("/", 1)[1] or "dflash" in name.rsplit("/", 1)[1]):
            expected.add(name)
        elif re.search(rb"(^|\W)(d2t|t2d)(\W|$)", body.replace(b"_", b" ")):
            expected.add(name)
        elif re.search(rb"SpeculativeAlgorithm|spec_algo|speculative_algo", body):
            expected.add(name)
    assert chosen == expected
    # facts read from the real tree
    assert "srt/models/llama_eagle3.py" in chosen
    assert "srt/managers/scheduler.py" in chosen
    assert "srt/models/llama.py" not in chosen
    # files outside speculative/ and managers/ that dispatch on the algorithm (issue 18, case 7)
    assert {"srt/model_executor/runner/decode_cuda_graph_runner.py", "srt/disaggregation/prefill.py", "srt/model_executor/pool_configurator.py",
            "srt/mem_cache/kv_cache_configurator.py",
            "srt/layers/layer_boundary/exit.py"} <= chosen
    assert "srt/layers/linear.py" not in chosen
    assert {"srt/layers/attention/flashattention_backend.py", "srt/layers/attention/trtllm_mha_backend.py",
            "srt/layers/attention/attention_registry.py"} <= chosen


@pytest.mark.slow
def test_local_search_and_remote_grep_agree_on_a_real_release(sglang_0_5_23):
    """The local substring-then-regex search and `grep -E SCOPE_PATTERN` (what the remote runs) pick the
    same files of 0.5.23's srt/."""
    import os
    import subprocess

    package = sglang_0_5_23 / "sglang"
    grep = subprocess.run(["grep", "-rlZE", "--include=*.py", "-e", scope.SCOPE_PATTERN, "--", "srt"], cwd=package,
                          capture_output=True, env={**os.environ, "LC_ALL": "C"}, check=True)
    remote = {p.decode() for p in grep.stdout.split(b"\0") if p}
    files = [p.relative_to(package).as_posix() for p in (package / "srt").rglob("*.py")]
    local = {p for p in files if scope.matches(scope.SCOPE_PATTERN, (package / p).read_bytes())}
    assert local == remote and len(local) > 140
