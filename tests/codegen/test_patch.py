"""ddtree.patch for 0.5.11, applied to the release's own files: what SGLang looks like afterwards."""

from __future__ import annotations

import ast
import shutil

import git
import pytest

from sgl_scan.codegen.ddtree.generate import generate_ddtree

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def patched_0_5_11(release_0_5_11, tmp_path_factory):
    tree, analysis = release_0_5_11
    gen = generate_ddtree(analysis, tree, package="ddtree_pkg", budget=24, topk=6)
    work = tmp_path_factory.mktemp("patched")
    repo = git.Repo.init(work)
    for rel in gen.patch.files:
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tree / rel, work / rel)
    (work / "ddtree.patch").write_text(gen.patch.text)
    repo.git.apply("ddtree.patch")
    return gen, work


def _namespace(path, names):
    """Execute the patched enum module's class body with just enough stubs to call its predicates."""
    source = path.read_text()
    module = ast.parse(source)
    enum_class = next(n for n in module.body if isinstance(n, ast.ClassDef) and n.name == "SpeculativeAlgorithm")
    keep = [f for f in enum_class.body if not isinstance(f, ast.FunctionDef) or f.name in names or f.name.startswith("is_")]
    enum_class.body = keep
    code = compile(ast.Module(body=[enum_class], type_ignores=[]), str(path), "exec")
    from enum import Enum, auto

    namespace = {"Enum": Enum, "auto": auto, "Optional": object}
    exec(code, namespace)
    return namespace["SpeculativeAlgorithm"]


def test_touches_exactly_the_enum_and_server_args(patched_0_5_11):
    gen, _ = patched_0_5_11
    assert gen.patch.files == ("sglang/srt/server_args.py", "sglang/srt/speculative/spec_info.py")
    assert gen.patch.skipped == ()


def test_ddtree_is_a_member_that_counts_as_dflash(patched_0_5_11):
    _, work = patched_0_5_11
    algo = _namespace(work / "sglang/srt/speculative/spec_info.py", {"from_string"})
    assert [m.name for m in algo][:2] == ["DFLASH", "DDTREE"]
    assert algo.DDTREE.is_dflash() and algo.DDTREE.is_speculative()
    assert not algo.DDTREE.is_eagle() and not algo.DDTREE.is_none()
    assert algo.from_string("ddtree") is algo.DDTREE
    assert algo.DFLASH.is_dflash() and not algo.EAGLE.is_dflash()


def test_create_worker_returns_the_generated_worker_inside_the_dflash_branch(patched_0_5_11):
    _, work = patched_0_5_11
    text = (work / "sglang/srt/speculative/spec_info.py").read_text()
    branch = text[text.index("        if self.is_dflash():"): text.index("            return DFlashWorker\n")]
    assert "DFLASH does not support overlap scheduling" in branch  # DDTREE keeps DFLASH's overlap refusal
    assert "            if self is SpeculativeAlgorithm.DDTREE:\n                from ddtree_pkg.worker import DDTreeWorker\n" in branch


def test_server_args_accept_ddtree_and_its_budget(patched_0_5_11):
    _, work = patched_0_5_11
    text = (work / "sglang/srt/server_args.py").read_text()
    ast.parse(text)
    assert 'choices=["DFLASH", "DDTREE", "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"],' in text
    assert '"--speculative-ddtree-budget",\n            type=int,\n            default=24,' in text
    assert "    speculative_algorithm: Optional[str] = None\n    speculative_ddtree_budget: int = 24\n" in text
    assert 'if self.speculative_algorithm in ("DFLASH", "DDTREE"):' in text
