"""`diff` pairs dispatch sites by meaning on real upgrades and real one-line edits (issue 18, case 1).

Sites that share (function, via, detail) used to pair by position, so a site inserted before two old
ones shifted every partner: the old sites were "changed" with their algorithm sets flipped and the
last one "added". These expectations are read from the releases' sources.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from sgl_scan.cli import cli
from tests.support.releases import release_tree

pytestmark = pytest.mark.slow

OVERLAP = "sglang/srt/managers/overlap_utils.py"
SCHEDULER = "sglang/srt/managers/scheduler.py"


def _diff(a, b) -> dict:
    result = CliRunner().invoke(cli, ["diff", f"path:{a}", f"path:{b}", "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _sites(doc: dict, function: str) -> list[tuple]:
    return sorted((c["status"], (c["before"] or {}).get("line"), (c["after"] or {}).get("line"), tuple(c["details"]))
                  for c in doc["changes"] if c["category"] == "dispatch_site" and function in c["key"])


def test_0_5_16_to_0_5_19_resolve_forward_inputs_gains_one_site(reports_home, monkeypatch):
    """0.5.16 overlap_utils.py: `elif ... future_map.spec_algo.is_none():` (105), `if batch.enable_overlap and
    not batch.spec_algorithm.is_none():` (114). 0.5.19 inserts the same `not ... is_none()` test at 96; the
    old two are at 110 and 119, untouched. Likewise batch_result_processor.py gains `if
    batch.spec_algorithm.is_none() and logits_output is not None:` (0.5.19:925) before the old
    `is_spec = not batch.spec_algorithm.is_none()` (0.5.16:706 -> 0.5.19:954)."""
    monkeypatch.setenv("SGLSCAN_HOME", str(reports_home))
    doc = _diff(release_tree("0.5.16") / "sglang", release_tree("0.5.19") / "sglang")
    assert _sites(doc, "overlap_utils.resolve_forward_inputs") == [("added", None, 96, ())]
    assert _sites(doc, "process_batch_result_decode [") == [("added", None, 925, ())]
    # nothing in the two files the upgrade only inserted into is "changed"; the one changed site of the
    # whole diff is a real rewrite (prefill_cuda_graph_runner.py: 0.5.16:199 `needs_full_hidden_states =
    # (flag or is_dflash_family())` became the elif test at 0.5.19:328, after the EAGLE draft branch)
    changed = [c for c in doc["changes"] if c["category"] == "dispatch_site" and c["status"] == "changed"]
    assert not [c for c in changed if "overlap_utils" in c["key"] or "batch_result_processor" in c["key"]]
    assert [(c["before"]["line"], c["after"]["line"]) for c in changed] == [(199, 328)]
    assert "prefill_cuda_graph_runner.PrefillCudaGraphRunner.__init__" in changed[0]["key"]


def test_0_5_23_one_dispatch_test_edited_away(sglang_0_5_23, tmp_path, reports_home, monkeypatch):
    """scheduler.py:4751 `if not batch.spec_algorithm.is_none():` -> `if True:` removes that site only."""
    monkeypatch.setenv("SGLSCAN_HOME", str(reports_home))
    edited = tmp_path / "B"
    shutil.copytree(sglang_0_5_23 / "sglang", edited, copy_function=os.link)
    path = edited / "srt/managers/scheduler.py"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[4750].strip() == "if not batch.spec_algorithm.is_none():"
    lines[4750] = lines[4750].replace("not batch.spec_algorithm.is_none()", "True")
    path.unlink()  # a hard link into the cache: write a new file, never through the link
    path.write_text("".join(lines), encoding="utf-8")
    doc = _diff(sglang_0_5_23 / "sglang", edited)
    assert [(c["status"], c["before"]["path"], c["before"]["line"], c["after"]) for c in doc["changes"]] == [
        ("removed", SCHEDULER, 4751, None)
    ]
    assert doc["summary"]["shifted"] == 0
