"""`check --diff-base` over the two most recent release diffs (issue 13): one release committed, the
next on top, `--scope full`. Before the control-flow facts these made 11 and 9 review comments, none
fair; the comments a maintainer gets now are pinned exactly (docs/precision-0.5.23.md, last table).
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.cli.gitrepo import commit_all, init_repo
from tests.cli.test_check_cli import check
from tests.support.releases import release_tree

pytestmark = pytest.mark.slow


def _comments(tmp_path, base: str, head: str) -> list[tuple[str, str, int]]:
    root = tmp_path / "sglang"
    repo = init_repo(root)
    for version in (base, head):
        package = root / "python" / "sglang"
        if package.exists():
            shutil.rmtree(package)
        shutil.copytree(release_tree(version) / "sglang", package)
        commit_all(repo, f"sglang {version}")
    result = check(root, "--diff-base", "HEAD~1", "--scope", "full", "--format", "json")
    assert result.exit_code in (0, 1), result.output
    return [(f["rule_id"], f["path"], f["line"]) for f in json.loads(result.stdout)["findings"]]


def test_0_5_21_to_0_5_22_makes_no_review_comment(tmp_path):
    assert _comments(tmp_path, "0.5.21", "0.5.22") == []


def test_0_5_22_to_0_5_23_makes_three_fair_review_comments(tmp_path):
    """Three string tests new in 0.5.23 (docs/precision-0.5.23.md #10, #25, #27): `self.speculative_algorithm
    == "DSPARK"` choosing the MiniMax-M3 DSpark draft config, `_forces_eagle_topk_one` naming DFLASH, and
    the AMD plugin's EAGLE3-only hidden-states feature; a predicate would say each."""
    assert _comments(tmp_path, "0.5.22", "0.5.23") == [
        ("SGL202", "sglang/srt/arg_groups/model_override_base.py", 274),
        ("SGL202", "sglang/srt/configs/model_config.py", 1022),
        ("SGL202", "sglang/srt/kernel_plugins/amd/binding.py", 108)]


def test_0_5_15_to_0_5_16_reports_the_move_onto_a_constant_plugin_predicate(tmp_path):
    """0.5.16 moved DFLASH dispatch from `is_dflash()` to `is_dflash_family()` and gave CustomSpecAlgo
    `is_dflash_family(): return False` (spec_registry.py:83): SGL209 says so (issue 28). The SGL206
    calls whose argument lines moved are the base's hazards and are no comment."""
    comments = _comments(tmp_path, "0.5.15", "0.5.16")
    assert ("SGL209", "sglang/srt/speculative/spec_registry.py", 83) in comments
    assert not [c for c in comments if c[0] == "SGL206"]
    assert len([c for c in comments if c[0] in ("SGL202", "SGL208", "SGL209")]) == 4
