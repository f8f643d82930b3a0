"""The changed-lines machinery of `sgl-scan check`, on real git repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgl_scan.snapshots.changes import (
    changed_lines,
    diff_base_commit,
    open_checkout,
    package_parent,
    parse_unified_diff,
    to_snapshot_paths,
)
from sgl_scan.errors import ConfigError
from tests.cli.gitrepo import commit_all, init_repo

DIFF = """\
diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py
index 1..2 100644
--- a/python/sglang/srt/a.py
+++ b/python/sglang/srt/a.py
@@ -3 +3 @@ def f():
-    return 1
+    return 2
@@ -10,0 +11,3 @@ def g():
+    x = 1
+    y = 2
+    z = 3
@@ -20,2 +23,0 @@
-    gone = 1
-    gone = 2
diff --git a/old.py b/old.py
deleted file mode 100644
--- a/old.py
+++ /dev/null
@@ -1,2 +0,0 @@
-a
-b
"""


def test_parse_unified_diff_takes_new_side_lines_and_both_sides_of_a_deletion():
    assert parse_unified_diff(DIFF, prefix="b/") == {"python/sglang/srt/a.py": {3, 11, 12, 13, 23, 24}}


def test_changed_lines_since_a_base_include_commits_worktree_and_untracked(tmp_path):
    repo = init_repo(tmp_path)
    src = tmp_path / "python" / "sglang" / "srt"
    src.mkdir(parents=True)
    (src / "m.py").write_text("".join(f"line{i} = {i}\n" for i in range(1, 11)))
    (src / "same.py").write_text("x = 1\n")
    base = commit_all(repo, "base")

    text = (src / "m.py").read_text().splitlines(keepends=True)
    text[3] = "line4 = 'committed'\n"
    (src / "m.py").write_text("".join(text))
    commit_all(repo, "change line 4")
    text[7] = "line8 = 'unstaged'\n"
    (src / "m.py").write_text("".join(text))
    (src / "new.py").write_text("a = 1\nb = 2\n")

    with open_checkout(tmp_path) as safe:
        found = changed_lines(safe, diff_base_commit(safe, base), ["."])
        assert found == {"python/sglang/srt/m.py": {4, 8}, "python/sglang/srt/new.py": {1, 2}}
        assert changed_lines(safe, diff_base_commit(safe, "HEAD"), ["."]) == {
            "python/sglang/srt/m.py": {8},
            "python/sglang/srt/new.py": {1, 2},
        }
        only = changed_lines(safe, base, ["python/sglang/srt/new.py"])
    assert only == {"python/sglang/srt/new.py": {1, 2}}

    assert package_parent(tmp_path) == tmp_path / "python"
    assert to_snapshot_paths(found, "python/") == {"sglang/srt/m.py": frozenset({4, 8}), "sglang/srt/new.py": frozenset({1, 2})}


def test_diff_base_is_the_merge_base_with_a_diverged_branch(tmp_path):
    repo = init_repo(tmp_path)
    (tmp_path / "f.py").write_text("a = 1\n")
    first = commit_all(repo, "first")
    repo.git.checkout("-b", "feature")
    (tmp_path / "f.py").write_text("a = 1\nb = 2\n")
    commit_all(repo, "feature work")
    repo.git.checkout("main")
    (tmp_path / "g.py").write_text("upstream = 1\n")
    commit_all(repo, "upstream work")
    repo.git.checkout("feature")
    with open_checkout(tmp_path) as safe:
        base = diff_base_commit(safe, "main")
        assert base == first
        assert changed_lines(safe, base, ["."]) == {"f.py": {2}}


def test_usage_errors(tmp_path):
    with pytest.raises(ConfigError, match="not inside a git checkout"):
        with open_checkout(tmp_path):
            pass
    repo = init_repo(tmp_path)
    (tmp_path / "f.py").write_text("a = 1\n")
    commit_all(repo, "first")
    with open_checkout(tmp_path) as safe:
        for rev in ("nope", "@{-1}", "--output=/tmp/x", "HEAD@{99}"):
            with pytest.raises(ConfigError, match="no such revision"):
                diff_base_commit(safe, rev)
    with pytest.raises(ConfigError, match="no sglang/srt package"):
        package_parent(Path(tmp_path))
