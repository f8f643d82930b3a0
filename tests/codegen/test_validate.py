"""Validation catches broken output: syntax, a patch that no longer applies, unknown names, bad calls."""

from __future__ import annotations

import re
import shutil

import pytest

from sgl_scan.codegen.ddtree.generate import generate_ddtree
from sgl_scan.codegen.ddtree.validate import check_patch, validate_output
from sgl_scan.errors import CodegenError

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def generated_0_5_11(release_0_5_11):
    tree, analysis = release_0_5_11
    return tree, analysis, generate_ddtree(analysis, tree, package="ddtree_sglang", budget=16, topk=4)


@pytest.fixture(scope="module")
def generated_0_5_23(release_0_5_23):
    tree, analysis = release_0_5_23
    return tree, analysis, generate_ddtree(analysis, tree, package="ddtree_sglang", budget=16, topk=4)


def _validate(generated, **changes):
    tree, analysis, gen = generated
    files = dict(gen.files)
    files.update(changes)
    validate_output(files, gen.plan, analysis, tree, gen.patch)


def test_untouched_output_validates(generated_0_5_11, generated_0_5_23):
    _validate(generated_0_5_11)
    _validate(generated_0_5_23)


def test_a_file_that_does_not_parse_is_refused(generated_0_5_11):
    with pytest.raises(CodegenError, match=r"generated tree.py does not parse: line 1"):
        _validate(generated_0_5_11, **{"tree.py": "def broken(:\n"})


def test_an_import_the_snapshot_lacks_is_refused(generated_0_5_11):
    worker = generated_0_5_11[2].files["worker.py"].replace("import DFlashWorker\n", "import DFlashWorkerV9 as DFlashWorker\n")
    with pytest.raises(CodegenError, match="imports DFlashWorkerV9 from sglang.srt.speculative.dflash_worker"):
        _validate(generated_0_5_11, **{"worker.py": worker})


def test_a_constructor_keyword_the_base_lacks_is_refused(generated_0_5_23):
    worker = generated_0_5_23[2].files["worker.py"].replace("target_worker=target_worker)", "target_worker=target_worker, tp_rank=0)")
    assert "tp_rank=0" in worker
    with pytest.raises(CodegenError, match=r"passes \['tp_rank'\] to .*DFlashWorkerV2.__init__ .*dflash_worker_v2.py:388"):
        _validate(generated_0_5_23, **{"worker.py": worker})


def test_a_missing_required_argument_is_refused(generated_0_5_11):
    worker = generated_0_5_11[2].files["worker.py"].replace(", target_worker=target_worker)", ")")
    with pytest.raises(CodegenError, match=r"without \['target_worker'\]"):
        _validate(generated_0_5_11, **{"worker.py": worker})


def test_a_plugin_class_missing_a_predicate_is_refused(generated_0_5_23):
    register = generated_0_5_23[2].files["register.py"]
    trimmed = re.sub(r"\n    def is_uno\(self\) -> bool:[^\n]*\n        return False\n", "\n", register)
    assert trimmed != register
    with pytest.raises(CodegenError, match=r"lacks methods of SpeculativeAlgorithm objects: \['is_uno'\]"):
        _validate(generated_0_5_23, **{"register.py": trimmed})


def test_a_register_keyword_the_release_lacks_is_refused(generated_0_5_23):
    register = generated_0_5_23[2].files["register.py"].replace("spec_class=DDTreeSpecAlgo)", "spec_class=DDTreeSpecAlgo, priority=1)")
    with pytest.raises(CodegenError, match=r"passes \['priority'\] to .*SpeculativeAlgorithm.register"):
        _validate(generated_0_5_23, **{"register.py": register})


def test_a_patch_that_no_longer_applies_is_refused(generated_0_5_11, tmp_path):
    tree, _, gen = generated_0_5_11
    for rel in gen.patch.files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tree / rel, tmp_path / rel)
    check_patch(gen.patch, tmp_path)  # the copy still matches
    spec_info = tmp_path / "sglang/srt/speculative/spec_info.py"
    spec_info.write_text(spec_info.read_text().replace("    DFLASH = auto()\n", "    DFLASH = auto()  # moved\n"))
    with pytest.raises(CodegenError, match="ddtree.patch does not apply to the snapshot"):
        check_patch(gen.patch, tmp_path)


def test_a_verify_field_the_release_lacks_is_refused(generated_0_5_23):
    worker = generated_0_5_23[2].files["worker.py"].replace("custom_mask=custom_mask,\n", "tree_mask=custom_mask,\n")
    assert "tree_mask=custom_mask" in worker
    with pytest.raises(CodegenError, match=r"passes \['tree_mask'\] to sglang.srt.speculative.dflash_info.DFlashVerifyInput .*dflash_info.py:27"):
        _validate(generated_0_5_23, **{"worker.py": worker})


def test_a_prepare_call_the_release_does_not_take_is_refused(generated_0_5_11):
    # 0.5.11's prepare_for_verify takes (batch, page_size, *, build_custom_mask): no target worker
    worker = generated_0_5_11[2].files["worker.py"].replace("(batch, self.page_size, build_custom_mask=False)", "(batch, self.target_worker, self.page_size)")
    assert "self.target_worker, self.page_size)" in worker
    with pytest.raises(CodegenError, match=r"passes 3 positional arguments to .*DFlashVerifyInput.prepare_for_verify .*dflash_info.py:178"):
        _validate(generated_0_5_11, **{"worker.py": worker})


def test_a_target_forward_keyword_the_release_lacks_is_refused(generated_0_5_11):
    # 0.5.11's TpModelWorker.forward_batch_generation has no capture_hidden_mode (0.5.23's has)
    worker = generated_0_5_11[2].files["worker.py"].replace("is_verify=True)", "is_verify=True, capture_hidden_mode=None)")
    with pytest.raises(CodegenError, match=r"passes \['capture_hidden_mode'\] to self.target_worker.forward_batch_generation .*tp_worker.py:445"):
        _validate(generated_0_5_11, **{"worker.py": worker})


def test_an_import_from_outside_the_scope_needs_a_scanned_importer(generated_0_5_11):
    worker = generated_0_5_11[2].files["worker.py"]
    assert "from sglang.srt.model_executor.forward_batch_info import ForwardMode\n" in worker
    _validate(generated_0_5_11, **{"worker.py": worker})  # dflash_worker.py itself imports it from there
    bad = worker.replace("import ForwardMode\n", "import ForwardModeV9 as ForwardMode\n")
    with pytest.raises(CodegenError, match="imports ForwardModeV9 from sglang.srt.model_executor.forward_batch_info"):
        _validate(generated_0_5_11, **{"worker.py": bad})
