"""Draft width on a small synthetic tree (the release-based checks are in test_plan.py)."""

from __future__ import annotations

from types import SimpleNamespace

from sgl_scan.analyzer.model import Location
from sgl_scan.analyzer.pipeline import analyze_tree
from sgl_scan.codegen.ddtree.width import draft_width

FILES = {
    "pkg/__init__.py": "",
    "pkg/bag.py": '"""The settings bag, in its own module."""\n\n\nclass Bag:\n    size = 1\n\n    def override(self, **values):\n        return self\n',
    "pkg/ctx.py": "from pkg.bag import Bag\n\n\ndef get_spec() -> Bag:\n    return Bag()\n",
    "pkg/worker.py": (
        "from pkg.ctx import get_spec\n\n\n"
        "class Worker:\n"
        "    def __init__(self, cfg):\n"
        "        get_spec()\n"
        "        self.block = cfg.resolve_block_size()\n"
    ),
}


def test_the_width_scope_is_located_in_the_bag_class_file_not_the_getter_file(tmp_path):
    """The settings bag's class is imported by the module of the function returning it: the scope's
    location is the class's `override` in its own file (it once took the getter's file with the
    class file's line)."""
    tree = tmp_path / "tree"
    for rel, text in FILES.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    analysis = analyze_tree(tree, sorted(FILES), cache_dir=tmp_path / "cache", jobs=1)
    base = SimpleNamespace(
        qualname="pkg.worker.Worker",
        name="Worker",
        init=SimpleNamespace(location=Location("pkg/worker.py", 5, 5)),
        entry=SimpleNamespace(name="forward_batch_generation"),
    )
    width = draft_width(analysis, base)
    assert width.settings_bag == "pkg.ctx.get_spec"
    assert str(width.where("scope")) == "pkg/bag.py:7"
