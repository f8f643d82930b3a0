"""Issue 18 cases 3 and 8 on real 0.5.23 files: module constants and import aliases are resolved, and
whatever still cannot be read is recorded (`SpecInventory.unread`) instead of silently dropped."""

from __future__ import annotations

import shutil

import pytest

from sgl_scan.analyzer.inventory import build_inventory
from sgl_scan.analyzer.pipeline import analyze_tree
from sgl_scan.rules.engine import run_rules
from tests.analyzer.extractors.driver import scan_tree
from tests.support.releases import release_tree

SPEC_INFO = "sglang/srt/speculative/spec_info.py"
REGISTRY = "sglang/srt/speculative/spec_registry.py"
AUX = "sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py"  # is_eagle() at 141
IS_EAGLE = """        return self in (
            SpeculativeAlgorithm.EAGLE,
            SpeculativeAlgorithm.EAGLE3,
            SpeculativeAlgorithm.FROZEN_KV_MTP,
        )"""
FAMILY = "_EAGLE_FAMILY = frozenset({SpeculativeAlgorithm.EAGLE, SpeculativeAlgorithm.EAGLE3, SpeculativeAlgorithm.FROZEN_KV_MTP})\n\n\n"


def _copy(tmp_path, edit=None, extra: dict[str, str] | None = None):
    source = release_tree("0.5.23")
    root = tmp_path / "t"
    for rel in (SPEC_INFO, REGISTRY, AUX):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, root / rel)
    if edit is not None:
        text = (root / SPEC_INFO).read_text()
        assert IS_EAGLE in text
        (root / SPEC_INFO).write_text(edit(text))
    for rel, text in (extra or {}).items():
        (root / rel).write_text(text)
    return root


def _inventory(root):
    return build_inventory(scan_tree(root, only=tuple(p.relative_to(root).as_posix() for p in root.rglob("*.py"))))


@pytest.mark.slow
def test_predicate_through_a_module_level_frozenset(tmp_path):
    """Case 3: `is_eagle` (0.5.23 spec_info.py:102) rewritten as `return self in _EAGLE_FAMILY`."""
    root = _copy(tmp_path, lambda t: t.replace(IS_EAGLE, "        return self in _EAGLE_FAMILY").replace(
        "class SpecInputType(IntEnum):", FAMILY + "class SpecInputType(IntEnum):"))
    inv = _inventory(root)
    table = {p.name: (p.members, p.location.line) for p in inv.predicates}
    assert table["is_eagle"] == (("EAGLE", "EAGLE3", "FROZEN_KV_MTP"), 102)
    assert table["need_topk"][0] == ("EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE")
    assert table["carries_draft_hidden_states"][0] == ("EAGLE", "EAGLE3", "FROZEN_KV_MTP")
    assert any(s.location.path == AUX and s.location.line == 141 and s.detail == "is_eagle" for s in inv.dispatch_sites)
    assert {a.name: a.worker for a in inv.algorithms}["EAGLE"] is not None
    # only the out-of-tree platform's worker (`return platform_worker_cls`, 322 in the release) is unread
    assert [(u.what, u.name, u.location.line) for u in inv.unread] == [("worker", "platform_worker_cls", 318)]


@pytest.mark.slow
def test_an_unreadable_predicate_is_said_out_loud(tmp_path):
    """A body the analyzer cannot read (`return self in _eagle_family()`, a call): the predicate, the
    predicates built on it and its dispatch sites are listed as unread with file:line, and SGL201
    says its result is incomplete (a warning) instead of raising errors."""
    root = _copy(tmp_path, lambda t: t.replace(IS_EAGLE, "        return self in _eagle_family()"))
    inv = _inventory(root)
    unread = {(u.what, u.name, u.location.path, u.location.line) for u in inv.unread}
    assert ("predicate", "is_eagle", SPEC_INFO, 102) in unread
    assert ("predicate", "need_topk", SPEC_INFO, 228) in unread  # 232 in the release; the edit took 4 lines
    assert ("dispatch", "spec_algorithm.is_eagle()", AUX, 141) in unread
    assert "is_eagle" not in {p.name for p in inv.predicates}

    analysis = analyze_tree(root, use_cache=False, jobs=1)
    assert {(u.what, u.name, u.location.line) for u in analysis.inventory.unread} >= {("predicate", "is_eagle", 102)}
    sgl201 = [f for f in run_rules(analysis) if f.rule_id == "SGL201"]
    assert sgl201 and all(f.severity == "warning" and "incomplete" in f.message for f in sgl201)


PLUGIN = "sglang/srt/speculative/ddtree_plugin.py"


@pytest.mark.slow
def test_plugin_registered_through_an_import_alias(tmp_path):
    """Case 8: `from ...spec_info import SpeculativeAlgorithm as SA` then `@SA.register("DDTREE")`."""
    root = _copy(tmp_path, extra={PLUGIN: """\
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm as SA


@SA.register("DDTREE", supports_overlap=False)
def _ddtree_factory(server_args):
    from sglang.srt.speculative.ddtree_worker import DDTreeWorker

    return DDTreeWorker


SA.register(PLUGIN_NAME)(_ddtree_factory)


@SA.register("DYN")
def _dynamic_factory(server_args):
    return load_worker_class(server_args)
"""})
    inv = _inventory(root)
    ddtree = {a.name: a for a in inv.algorithms}["DDTREE"]
    assert (ddtree.kind, ddtree.location.path, ddtree.location.line) == ("registered", PLUGIN, 4)
    assert ddtree.worker == "sglang.srt.speculative.ddtree_worker.DDTreeWorker"
    assert [(u.what, u.name, u.location.line) for u in inv.unread] == [
        ("registration", "SA.register", 11), ("worker", "DYN", 14), ("worker", "platform_worker_cls", 322)]


@pytest.mark.slow
def test_reserved_alias_without_a_resolver_is_unread_and_no_sgl203(tmp_path):
    """0.5.13: `_RESERVED_ALIASES = frozenset({"NEXTN"})` (spec_registry.py:116) names NEXTN; the resolver
    in arg_groups/speculative_hook.py:41 maps it to EAGLE. Without the resolver file, NEXTN is an
    accepted spelling whose target is unknown: listed as unread, and a `== "NEXTN"` test elsewhere is
    no SGL203 error."""
    source = release_tree("0.5.13")
    root = tmp_path / "t"
    for rel in (SPEC_INFO, REGISTRY):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, root / rel)
    hook = "sglang/srt/arg_groups/nextn_hook.py"
    (root / hook).parent.mkdir(parents=True, exist_ok=True)
    (root / hook).write_text('def f(server_args):\n    if server_args.speculative_algorithm == "NEXTN":\n        return 1\n')
    inv = _inventory(root)
    assert "NEXTN" not in inv.aliases
    assert [(u.what, u.name, u.location.path, u.location.line) for u in inv.unread] == [("alias", "NEXTN", REGISTRY, 116)]
    analysis = analyze_tree(root, use_cache=False, jobs=1)
    assert [f for f in run_rules(analysis) if f.rule_id == "SGL203"] == []

    (root / "sglang/srt/arg_groups/speculative_hook.py").write_bytes(
        (source / "sglang/srt/arg_groups/speculative_hook.py").read_bytes())
    inv = _inventory(root)
    assert inv.aliases["NEXTN"] == "EAGLE" and inv.unread == ()
