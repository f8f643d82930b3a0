"""The output writer: atomic replacement, overwrite refusal, never inside the snapshot."""

from __future__ import annotations

import pytest

from sgl_scan.codegen.write import write_tree
from sgl_scan.errors import CodegenError


def test_writes_a_new_folder(tmp_path):
    out = write_tree({"a.py": "x = 1\n", "tests/b.py": "y = 2\n"}, tmp_path / "pkg", force=False, protected=tmp_path / "snap")
    assert (out / "a.py").read_text() == "x = 1\n" and (out / "tests/b.py").read_text() == "y = 2\n"
    assert [p.name for p in tmp_path.iterdir()] == ["pkg"]  # no staging folder left behind


def test_refuses_to_overwrite_without_force_and_replaces_with_it(tmp_path):
    out = tmp_path / "pkg"
    write_tree({"old.py": "1\n"}, out, force=False, protected=tmp_path / "snap")
    with pytest.raises(CodegenError, match="exists and is not empty; pass --force"):
        write_tree({"new.py": "2\n"}, out, force=False, protected=tmp_path / "snap")
    assert (out / "old.py").exists()
    write_tree({"new.py": "2\n"}, out, force=True, protected=tmp_path / "snap")
    assert sorted(p.name for p in out.iterdir()) == ["new.py"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg"]


def test_an_empty_existing_folder_is_fine(tmp_path):
    (tmp_path / "pkg").mkdir()
    write_tree({"a.py": ""}, tmp_path / "pkg", force=False, protected=tmp_path / "snap")
    assert (tmp_path / "pkg" / "a.py").exists()


@pytest.mark.parametrize("where", ["snap/tree/out", "snap", "."])
def test_refuses_a_folder_overlapping_the_snapshot(tmp_path, where):
    (tmp_path / "snap" / "tree").mkdir(parents=True)
    with pytest.raises(CodegenError, match="overlaps the snapshot"):
        write_tree({"a.py": ""}, tmp_path / where, force=True, protected=tmp_path / "snap")
    assert not (tmp_path / "snap" / "tree" / "out").exists()
