"""Every rule's embedded examples, run through the real analyzer on a tiny tree in tmp_path.

A new rule is tested the moment it is written: lines marked `# expect` must be flagged by that
rule, and no other line.
"""

from __future__ import annotations

import pytest

from sgl_scan.analyzer.pipeline import analyze_tree
from sgl_scan.rules.registry import load_rules

CASES = [
    pytest.param(rule, number, example, id=f"{rule.id}-{'flag' if example.expected() else 'clean'}-{number}")
    for rule in load_rules().rules
    for number, example in enumerate(rule.examples)
]


@pytest.mark.parametrize("rule, number, example", CASES)
def test_rule_example(rule, number, example, tmp_path):
    tree = tmp_path / "tree"
    for path, text in example.files.items():
        target = tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    analysis = analyze_tree(
        tree, snapshot_id="example", sglang_version=None, cache_dir=tmp_path / "cache", jobs=1, progress=False
    )
    assert not analysis.parse_errors, analysis.parse_errors
    found = sorted((f.path, f.line) for f in rule.check(analysis))
    assert found == sorted(example.expected()), f"{rule.id} example {number} ({example.note or 'no note'})"
