"""SGL301 on one-line edits of sglang 0.5.23's llama_eagle3.py (issue 18, case 6).

0.5.23 `srt/models/llama_eagle3.py`:
    350            if "d2t" in name:
    351                # d2t stores diffs between draft id and target id
    352                self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])
Each edit below makes line 352 take d2t as a direct map; the release itself has no SGL301.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from sgl_scan.cli import cli
from tests.support.releases import cache_root

pytestmark = pytest.mark.slow

MODEL = "sglang/srt/models/llama_eagle3.py"
TEST_LINE = '            if "d2t" in name:\n'
OFFSETS = "                self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])\n"


def _scan(tree) -> tuple[int, list[tuple[str, int, str]]]:
    result = CliRunner().invoke(cli, ["scan", "--path", str(tree), "--select", "SGL301", "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(result.stdout)
    return result.exit_code, [(f["path"], f["line"], f["data"]["detail"]) for f in doc["findings"]]


def _edited(release, tmp_path, test_line: str, line_352: str):
    tree = tmp_path / "sglang"
    shutil.copytree(release / "sglang", tree, copy_function=os.link)
    path = tree / "srt/models/llama_eagle3.py"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert (lines[349], lines[351]) == (TEST_LINE, OFFSETS)
    lines[349], lines[351] = test_line, line_352
    path.unlink()  # a hard link into the release cache: never write through it
    path.write_text("".join(lines), encoding="utf-8")
    return tree


@pytest.fixture(autouse=True)
def _shared_facts(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "facts").symlink_to(cache_root() / "facts-cache")
    monkeypatch.setenv("SGLSCAN_HOME", str(home))


def test_the_release_itself_is_clean(sglang_0_5_23):
    assert _scan(sglang_0_5_23 / "sglang") == (0, [])


def test_copy_in_place_under_a_d2t_test(sglang_0_5_23, tmp_path):
    tree = _edited(sglang_0_5_23, tmp_path, TEST_LINE, "                self.hot_token_id.copy_(loaded_weight)\n")
    assert _scan(tree) == (1, [(MODEL, 352, "self.hot_token_id.copy_(loaded_weight)")])


def test_assignment_under_a_test_with_one_d2t_arm(sglang_0_5_23, tmp_path):
    tree = _edited(sglang_0_5_23, tmp_path, '            if "d2t" in name or "hot_token_id" in name:\n',
                   "                self.hot_token_id = loaded_weight\n")
    assert _scan(tree) == (1, [(MODEL, 352, "self.hot_token_id = loaded_weight")])


def test_offsets_written_in_place_are_fine(sglang_0_5_23, tmp_path):
    tree = _edited(sglang_0_5_23, tmp_path, '            if "d2t" in name or "hot_token_id" in name:\n',
                   "                self.hot_token_id.copy_(loaded_weight + torch.arange(loaded_weight.shape[0]))\n")
    assert _scan(tree) == (0, [])


# issue 27 (d2t by dataflow within the function): the conversion written in other forms is no finding, and
# an entry of d2t used as a target id is one
@pytest.mark.parametrize("line_352", [
    "                loaded_weight = loaded_weight + torch.arange(loaded_weight.shape[0])\n"
    "                self.hot_token_id = loaded_weight\n",
    "                converted = torch.add(loaded_weight, torch.arange(loaded_weight.shape[0]))\n"
    "                self.hot_token_id = converted.long()\n",
    "                self.hot_token_id = (loaded_weight + torch.arange(loaded_weight.shape[0])).long()\n",
    "                self.hot_token_id = torch.add(loaded_weight, torch.arange(loaded_weight.shape[0])).to(torch.int64)\n",
    "                self.hot_token_id = loaded_weight.add(torch.arange(loaded_weight.shape[0]))\n",
    # the arange term bound to a local first (the metamorphic rewrite d2t_two_statements)
    "                offset = torch.arange(loaded_weight.shape[0])\n"
    "                self.hot_token_id = loaded_weight + offset\n",
    "                offset = torch.arange(loaded_weight.shape[0]).to(loaded_weight.device)\n"
    "                steps = offset\n"
    "                self.hot_token_id = torch.add(loaded_weight, steps)\n",
])
def test_offset_conversions_in_other_forms_are_no_finding(sglang_0_5_23, tmp_path, line_352):
    tree = _edited(sglang_0_5_23, tmp_path, TEST_LINE, line_352)
    assert _scan(tree) == (0, [])


def test_a_two_step_copy_without_arange_is_still_flagged(sglang_0_5_23, tmp_path):
    tree = _edited(sglang_0_5_23, tmp_path, TEST_LINE, "                converted = loaded_weight.long()\n"
                                                        "                self.hot_token_id = converted\n")
    assert _scan(tree) == (1, [(MODEL, 353, "self.hot_token_id = converted")])


def test_a_local_that_is_not_arange_added_to_d2t_is_still_flagged(sglang_0_5_23, tmp_path):
    """Only a local bound to `torch.arange(...)` is the offset term: `d2t + ones` is no conversion."""
    tree = _edited(sglang_0_5_23, tmp_path, TEST_LINE, "                offset = torch.ones(loaded_weight.shape[0])\n"
                                                        "                self.hot_token_id = loaded_weight + offset\n")
    assert _scan(tree) == (1, [(MODEL, 353, "self.hot_token_id = loaded_weight + offset")])


@pytest.mark.parametrize("helper,flagged", [
    ("        return self.d2t[draft_ids]\n", True),
    ("        target = self.d2t[draft_ids].long()\n        return target\n", True),
    ("        return draft_ids + self.d2t[draft_ids]\n", False),
])
def test_d2t_entries_used_as_target_ids(sglang_0_5_23, tmp_path, helper, flagged):
    """hunt4/d2t_index_direct_use_missed.sh: d2t kept as a buffer and read back by index."""
    tree = _edited(sglang_0_5_23, tmp_path, TEST_LINE,
                   '                self.register_buffer("d2t", loaded_weight, persistent=False)\n'
                   "                self.hot_token_id = self.d2t + torch.arange(self.d2t.shape[0])\n")
    path = tree / "srt/models/llama_eagle3.py"
    text = path.read_text(encoding="utf-8")
    anchor = "    def load_weights("
    assert text.count(anchor) == 1
    path.unlink()
    path.write_text(text.replace(anchor, "    def draft_ids_to_target_ids(self, draft_ids):\n" + helper + "\n" + anchor),
                    encoding="utf-8")
    code, found = _scan(tree)
    assert (code, [(p, line) for p, line, _d in found]) == ((1, [(MODEL, 326)]) if flagged else (0, []))
