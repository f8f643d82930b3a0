"""End to end: `sgl-scan drafter check ... --path <real SGLang release>` through snapshot and analyzer.

Expected sites were read from the releases' model files: 0.5.23 `models/llama_eagle3.py` tests
`"d2t" in name` at line 350 and converts offsets at 352; `models/kimi_k25_eagle3.py` tests
`name == "d2t" or name.endswith(".d2t")` at 437 and converts at 440. 0.4.6 converts at 184.
0.5.23 is pulled and analysed once per module (the expensive part); later checks name that snapshot.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from sgl_scan.cli import main
from tests.drafter import factory

pytestmark = pytest.mark.slow

LLAMA = "sglang/srt/models/llama_eagle3.py"
KIMI = "sglang/srt/models/kimi_k25_eagle3.py"


def check(argv) -> tuple[int, dict]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
        main(["drafter", "check", *argv, "--format", "json"])
    assert exc.value.code in (0, 1), err.getvalue()
    return exc.value.code, json.loads(out.getvalue())


@pytest.fixture(scope="module")
def module_home(tmp_path_factory):
    return tmp_path_factory.mktemp("sgl-scan-home")


@pytest.fixture(autouse=True)
def _shared_home(module_home, monkeypatch):
    """One store and facts cache for this module."""
    monkeypatch.setenv("SGLSCAN_HOME", str(module_home))


@pytest.fixture(scope="module")
def first_check(module_home, sglang_0_5_23, tmp_path_factory):
    """A correct drafter checked with `--path <0.5.23>`: pulls the snapshot and analyses it cold."""
    folder = tmp_path_factory.mktemp("drafters")
    good = factory.good_drafter(folder / "good")
    target = factory.target_config(folder / "target")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SGLSCAN_HOME", str(module_home))
        return check([str(good), "--target-config", str(target), "--path", str(sglang_0_5_23)])


def test_offset_drafter_against_0_5_23(first_check):
    rc, data = first_check
    engine = data["engine"]
    assert rc == 0, engine
    assert (engine["reading"], engine["scope"], engine["verdict"]) == ("offset", "class LlamaForCausalLMEagle3", "compatible")
    assert [(s["kind"], s["location"]) for s in engine["sites"]] == [
        ("name_test_in", f"{LLAMA}:350"),
        ("offset_conversion", f"{LLAMA}:352"),
    ]
    assert data["aux_layers"]["sglang_default"] == "unknown for this snapshot"


def test_direct_drafter_against_0_5_23(first_check, tmp_path, target_cfg, ids):
    snapshot = first_check[1]["engine"]["snapshot"]
    direct = factory.write_drafter(tmp_path / "direct", factory.tensors(ids.copy(), factory.mask(ids)), factory.config())
    rc, data = check([str(direct), "--target-config", str(target_cfg), "--snapshot", snapshot])
    assert rc == 1
    assert data["engine"]["verdict"] == "incompatible"
    assert data["engine"]["reason"].startswith(f"the release adds arange to d2t ({LLAMA}:352)")


def test_kimi_drafter_with_prefixed_names_against_0_5_23(first_check, tmp_path, target_cfg, ids):
    snapshot = first_check[1]["engine"]["snapshot"]
    cfg = factory.config(architectures=["Eagle3DeepseekV2ForCausalLM"])
    folder = factory.write_drafter(tmp_path / "kimi", factory.tensors(factory.offsets(ids), factory.mask(ids), prefix="model."), cfg)
    rc, data = check([str(folder), "--target-config", str(target_cfg), "--snapshot", snapshot])
    engine = data["engine"]
    assert rc == 0 and (engine["scope"], engine["verdict"]) == ("class Eagle3DeepseekV2ForCausalLM", "compatible")
    assert [(s["kind"], s["location"]) for s in engine["sites"]] == [
        ("name_test_eq", f"{KIMI}:437"),
        ("name_test_endswith", f"{KIMI}:437"),
        ("offset_conversion", f"{KIMI}:440"),
    ]


def test_no_source_uses_the_latest_stored_snapshot(first_check, tmp_path, target_cfg):
    from sgl_scan.snapshots.store import Store

    latest = Store().latest(verify=False)
    good = factory.good_drafter(tmp_path / "good")
    rc, data = check([str(good), "--target-config", str(target_cfg)])
    assert rc == 0 and data["engine"]["snapshot"] == latest.id
    assert data["engine_note"] is None


def test_offset_drafter_against_0_4_6(sglang_0_4_6, tmp_path, target_cfg):
    good = factory.good_drafter(tmp_path / "good")
    rc, data = check([str(good), "--target-config", str(target_cfg), "--path", str(sglang_0_4_6)])
    engine = data["engine"]
    assert rc == 0 and engine["verdict"] == "compatible"
    assert [(s["kind"], s["location"]) for s in engine["sites"]] == [
        ("name_test_in", f"{LLAMA}:182"),
        ("offset_conversion", f"{LLAMA}:184"),
    ]
