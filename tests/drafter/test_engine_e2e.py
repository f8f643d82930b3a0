"""End to end: `sgl-scan drafter check ... --path <real SGLang release>` through snapshot and analyzer.

Expected sites were read from the releases' model files: 0.5.23 `models/llama_eagle3.py` tests
`"d2t" in name` at line 350 and converts offsets at 352; `models/kimi_k25_eagle3.py` tests
`name == "d2t" or name.endswith(".d2t")` at 437 and converts at 440. 0.4.6 converts at 184.
"""

from __future__ import annotations

import json

import pytest

from sgl_scan.cli import main
from tests.drafter import factory

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def module_home(tmp_path_factory):
    return tmp_path_factory.mktemp("sgl-scan-home")


@pytest.fixture(autouse=True)
def _shared_home(module_home, monkeypatch):
    """One store and facts cache for this module: a release is analysed cold once, then from cache."""
    monkeypatch.setenv("SGL_SCAN_HOME", str(module_home))

LLAMA = "sglang/srt/models/llama_eagle3.py"
KIMI = "sglang/srt/models/kimi_k25_eagle3.py"


def check(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["drafter", "check", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert exc.value.code in (0, 1), err
    return exc.value.code, json.loads(out)


def test_offset_drafter_against_0_5_23(sglang_0_5_23, tmp_path, target_cfg, capsys, ids):
    good = factory.good_drafter(tmp_path / "good")
    rc, data = check([str(good), "--target-config", str(target_cfg), "--path", str(sglang_0_5_23)], capsys)
    engine = data["engine"]
    assert rc == 0, engine
    assert (engine["reading"], engine["scope"], engine["verdict"]) == ("offset", "class LlamaForCausalLMEagle3", "compatible")
    assert [(s["kind"], s["location"]) for s in engine["sites"]] == [
        ("name_test_in", f"{LLAMA}:350"),
        ("offset_conversion", f"{LLAMA}:352"),
    ]
    assert data["aux_layers"]["sglang_default"] == "unknown for this snapshot"

    # the same vocabulary written as a direct map does not work there; the second run reuses the snapshot
    direct = factory.write_drafter(tmp_path / "direct", factory.tensors(ids.copy(), factory.mask(ids)), factory.config())
    rc, data = check([str(direct), "--target-config", str(target_cfg), "--snapshot", "latest"], capsys)
    assert rc == 1
    assert data["engine"]["verdict"] == "incompatible"
    assert data["engine"]["reason"].startswith(f"the release adds arange to d2t ({LLAMA}:352)")


def test_kimi_drafter_with_prefixed_names_against_0_5_23(sglang_0_5_23, tmp_path, target_cfg, capsys, ids):
    cfg = factory.config(architectures=["Eagle3DeepseekV2ForCausalLM"])
    folder = factory.write_drafter(tmp_path / "kimi", factory.tensors(factory.offsets(ids), factory.mask(ids), prefix="model."), cfg)
    rc, data = check([str(folder), "--target-config", str(target_cfg), "--path", str(sglang_0_5_23)], capsys)
    engine = data["engine"]
    assert (engine["scope"], engine["verdict"]) == ("class Eagle3DeepseekV2ForCausalLM", "compatible")
    assert [(s["kind"], s["location"]) for s in engine["sites"]] == [
        ("name_test_eq", f"{KIMI}:437"),
        ("name_test_endswith", f"{KIMI}:437"),
        ("offset_conversion", f"{KIMI}:440"),
    ]


def test_offset_drafter_against_0_4_6(sglang_0_4_6, tmp_path, target_cfg, capsys):
    good = factory.good_drafter(tmp_path / "good")
    rc, data = check([str(good), "--target-config", str(target_cfg), "--path", str(sglang_0_4_6)], capsys)
    engine = data["engine"]
    assert rc == 0 and engine["verdict"] == "compatible"
    assert [(s["kind"], s["location"]) for s in engine["sites"]] == [
        ("name_test_in", f"{LLAMA}:182"),
        ("offset_conversion", f"{LLAMA}:184"),
    ]
