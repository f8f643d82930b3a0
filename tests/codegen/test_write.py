"""The output writer: atomic replacement, overwrite refusal, never inside the snapshot."""

from __future__ import annotations

import pytest

from sgl_scan.codegen.write import MARKER, write_tree
from sgl_scan.errors import CodegenError, ConfigError


def test_writes_a_new_folder(tmp_path):
    out = write_tree({"a.py": "x = 1\n", "tests/b.py": "y = 2\n"}, tmp_path / "pkg", force=False, protected=tmp_path / "snap")
    assert (out / "a.py").read_text() == "x = 1\n" and (out / "tests/b.py").read_text() == "y = 2\n"
    assert [p.name for p in tmp_path.iterdir()] == ["pkg"]  # no staging folder left behind
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "a.py", "tests"]


def test_refuses_to_overwrite_without_force_and_replaces_with_it(tmp_path):
    out = tmp_path / "pkg"
    write_tree({"old.py": "1\n"}, out, force=False, protected=tmp_path / "snap")
    with pytest.raises(ConfigError, match="exists and is not empty; pass --force"):
        write_tree({"new.py": "2\n"}, out, force=False, protected=tmp_path / "snap")
    assert (out / "old.py").exists()
    (out / "old.py").write_text("# edited by hand\n")  # a file gen wrote, edited: --force replaces it
    (out / "__pycache__").mkdir()  # what running the generated tests leaves behind
    (out / "__pycache__" / "old.cpython-312.pyc").write_bytes(b"\0")
    write_tree({"new.py": "2\n"}, out, force=True, protected=tmp_path / "snap")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "new.py"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg"]


def test_an_empty_existing_folder_is_fine(tmp_path):
    (tmp_path / "pkg").mkdir()
    write_tree({"a.py": ""}, tmp_path / "pkg", force=False, protected=tmp_path / "snap")
    assert (tmp_path / "pkg" / "a.py").exists()


@pytest.mark.parametrize("where", ["snap/tree/out", "snap", "."])
def test_refuses_a_folder_overlapping_the_snapshot(tmp_path, where):
    (tmp_path / "snap" / "tree").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"refusing --out .*: it (is inside|contains) .*snap"):
        write_tree({"a.py": ""}, tmp_path / where, force=True, protected=tmp_path / "snap")
    assert not (tmp_path / "snap" / "tree" / "out").exists()


@pytest.mark.parametrize("force", [False, True])
def test_force_never_replaces_a_folder_sgl_scan_did_not_write(tmp_path, force):
    out = tmp_path / "pkg"
    (out / "notes").mkdir(parents=True)
    (out / "notes" / "todo.txt").write_text("mine\n")
    with pytest.raises(ConfigError, match=f"refusing --out {out}: it is not empty and sgl-scan did not generate it"):
        write_tree({"a.py": ""}, out, force=force, protected=tmp_path / "snap")
    assert (out / "notes" / "todo.txt").read_text() == "mine\n"


def test_force_refuses_a_generated_folder_that_now_holds_a_users_file(tmp_path):
    out = write_tree({"a.py": ""}, tmp_path / "pkg", force=False, protected=tmp_path / "snap")
    (out / "sub").mkdir()
    (out / "sub" / "mine.py").write_text("keep = 1\n")
    with pytest.raises(ConfigError, match="it holds sub/mine.py, which sgl-scan did not write"):
        write_tree({"a.py": ""}, out, force=True, protected=tmp_path / "snap")
    assert (out / "sub" / "mine.py").read_text() == "keep = 1\n"


def test_force_refuses_a_git_repository_even_with_a_marker(tmp_path):
    out = write_tree({"a.py": ""}, tmp_path / "pkg", force=False, protected=tmp_path / "snap")
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    with pytest.raises(ConfigError, match=r"it holds a git repository \("):
        write_tree({"a.py": ""}, out, force=True, protected=tmp_path / "snap")
    assert (out / ".git" / "HEAD").exists()


def test_a_forged_marker_file_does_not_count(tmp_path):
    out = tmp_path / "pkg"
    out.mkdir()
    (out / MARKER).write_text("not json")
    (out / "a.py").write_text("mine\n")
    with pytest.raises(ConfigError, match="sgl-scan did not generate it"):
        write_tree({"a.py": ""}, out, force=True, protected=tmp_path / "snap")
    assert (out / "a.py").read_text() == "mine\n"


def test_a_generated_file_may_not_shadow_the_marker(tmp_path):
    with pytest.raises(CodegenError, match=MARKER):
        write_tree({MARKER: "{}"}, tmp_path / "pkg", force=False, protected=tmp_path / "snap")


def test_force_refuses_a_generated_folder_with_a_repository_inside(tmp_path):
    out = write_tree({"a.py": ""}, tmp_path / "pkg", force=False, protected=tmp_path / "snap")
    (out / "vendored" / ".git").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"it holds a git repository \(.*vendored/\.git\)"):
        write_tree({"a.py": ""}, out, force=True, protected=tmp_path / "snap")
    assert (out / "vendored" / ".git").is_dir()
