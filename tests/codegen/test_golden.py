"""Generated sources for real releases equal their golden copies (plugin: 0.5.23, patch: 0.5.11)."""

from __future__ import annotations

import pytest

from sgl_scan.codegen.ddtree.generate import generate_ddtree
from tests.codegen.golden import REFRESH, check_tree

pytestmark = pytest.mark.slow

REGENERATE = "sgl-scan gen ddtree --pip sglang=={version} --out <this folder>"


def _generate(release, version, mode="auto"):
    tree, analysis = release
    return generate_ddtree(
        analysis, tree, package="ddtree_sglang", budget=32, topk=None, mode=mode,
        regenerate=REGENERATE.format(version=version),
    )


def test_0_5_23_plugin_sources(release_0_5_23):
    generated = _generate(release_0_5_23, "0.5.23")
    assert "register.py" in generated.files and "ddtree.patch" not in generated.files
    check_tree("0.5.23", generated.files)


def test_0_5_11_patch_sources(release_0_5_11):
    generated = _generate(release_0_5_11, "0.5.11")
    assert "ddtree.patch" in generated.files and "register.py" not in generated.files
    check_tree("0.5.11", generated.files)


def test_a_changed_file_fails_and_prints_the_refresh_command(release_0_5_11, monkeypatch):
    monkeypatch.delenv("SGLSCAN_UPDATE_GOLDEN", raising=False)
    files = dict(_generate(release_0_5_11, "0.5.11").files)
    files["tree.py"] += "# drift\n"
    with pytest.raises(pytest.fail.Exception) as info:
        check_tree("0.5.11", files)
    assert REFRESH in str(info.value) and "+# drift" in str(info.value)
