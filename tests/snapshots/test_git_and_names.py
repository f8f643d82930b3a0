"""`--git URL` after upstream rewrote a tag, a broken clone cache, a name that is both a tag and a
branch, a submodule instead of the package, and file names that are not UTF-8 (issue 19, 8 and 9):
each is followed, recorded, or one line with the right exit code — never an internal error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.snapshots.conftest import ssh_params
from tests.support.cli import run_main as _run

pytestmark = pytest.mark.slow

FILES = ("version.py", "srt/speculative/spec_info.py", "srt/speculative/spec_registry.py", "srt/models/llama_eagle3.py")
LLAMA = "python/sglang/srt/models/llama_eagle3.py"
OFFSETS = "self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])"
ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "GIT_ALLOW_PROTOCOL": "file"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **ENV}, check=True, capture_output=True, text=True).stdout.strip()


def latest(capsys) -> dict:
    code, out, err = _run(capsys, "snapshot", "show", "latest", "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def upstream(tmp_path, sglang_0_5_23) -> Path:
    root = tmp_path / "upstream"
    for rel in FILES:
        (root / "python" / "sglang" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sglang_0_5_23 / "sglang" / rel, root / "python" / "sglang" / rel)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "0.5.23 files")
    return root


def test_a_tag_moved_upstream_is_followed_by_the_next_pull(capsys, upstream, monkeypatch):
    url = f"file://{upstream}"
    git(upstream, "tag", "-a", "v1", "-m", "release v1")
    assert _run(capsys, "snapshot", "pull", "--git", url, "--rev", "v1")[0] == 0
    model = upstream / LLAMA
    model.write_text(model.read_text().replace(OFFSETS, "self.hot_token_id = loaded_weight"))
    git(upstream, "commit", "-qam", "re-release v1 (with the bug)")
    git(upstream, "tag", "-f", "-a", "v1", "-m", "release v1, again")
    code, _, err = _run(capsys, "snapshot", "pull", "--git", url, "--rev", "v1")
    assert code == 0, err
    assert latest(capsys)["git"]["commit"] == git(upstream, "rev-parse", "v1^{commit}")
    assert _run(capsys, "scan", "--snapshot", "latest", "--select", "SGL301")[0] == 1
    assert _run(capsys, "snapshot", "pull", "--git", url, "--rev", "main")[0] == 0


def test_a_cache_that_cannot_be_fetched_is_cloned_again_saying_so(capsys, caplog, upstream, tmp_path):
    url = f"file://{upstream}"
    assert _run(capsys, "snapshot", "pull", "--git", url)[0] == 0
    (cache,) = (tmp_path / "sgl-scan-home" / "git").glob("*.git")
    (cache / "HEAD").unlink()  # the cached clone is broken: no longer a repository git can open
    git(upstream, "commit", "-q", "--allow-empty", "-m", "newer")
    code, _, err = _run(capsys, "snapshot", "pull", "--git", url)
    assert code == 0, err
    assert "could not be updated" in caplog.text and "cloning it again" in caplog.text
    assert latest(capsys)["git"]["commit"] == git(upstream, "rev-parse", "HEAD")
    assert [p.name for p in cache.parent.iterdir() if p.name.startswith(cache.name)] == [cache.name]  # no leftovers


def test_a_name_that_is_a_tag_and_a_branch_resolves_as_git_does(capsys, caplog, upstream):
    git(upstream, "tag", "v1")
    tagged = git(upstream, "rev-parse", "HEAD")
    git(upstream, "checkout", "-qb", "v1")
    git(upstream, "commit", "-q", "--allow-empty", "-m", "on the branch v1")
    branch = git(upstream, "rev-parse", "HEAD")
    git(upstream, "checkout", "-q", "main")
    code, _, err = _run(capsys, "snapshot", "pull", "--git", str(upstream), "--rev", "v1")
    assert code == 0 and "--rev v1 is both a tag and a branch; using the tag" in caplog.text, err
    shown = latest(capsys)["git"]
    assert (shown["commit"], shown["branch"]) == (tagged, None)
    assert _run(capsys, "snapshot", "pull", "--git", str(upstream), "--rev", "refs/heads/v1")[0] == 0
    shown = latest(capsys)["git"]
    assert (shown["commit"], shown["branch"]) == (branch, "v1")


def test_a_submodule_where_the_package_should_be_is_one_line(capsys, upstream, tmp_path):
    inner = tmp_path / "inner"
    shutil.copytree(upstream / "python" / "sglang", inner)
    git(inner, "init", "-q", "-b", "main")
    git(inner, "add", "-A")
    git(inner, "commit", "-qm", "the package in its own repository")
    outer = tmp_path / "outer"
    outer.mkdir()
    git(outer, "init", "-q", "-b", "main")
    git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sglang")
    git(outer, "commit", "-qm", "sglang/ is a submodule")
    code, out, err = _run(capsys, "snapshot", "pull", "--git", str(outer))
    assert (code, out) == (2, "")
    assert err == (f"sgl-scan: error: sglang/ in {outer} @ HEAD is a git submodule (its files are in another "
                   "repository); pull that repository with --git\n")


@pytest.mark.parametrize("how", ["local", "git", "ssh"])
def test_a_file_name_that_is_not_utf8_is_a_recorded_skip(capsys, upstream, how, request):
    bad = os.fsencode(upstream / "python" / "sglang" / "srt" / "speculative") + b"/caf\xe9.py"
    with open(bad, "wb") as handle:
        handle.write(b"x = 1\n")
    if how == "local":
        source = ["--path", str(upstream / "python")]
    elif how == "git":
        git(upstream, "add", "-A")
        git(upstream, "commit", "-qm", "a latin-1 name")
        source = ["--git", str(upstream)]
    else:
        params = ssh_params(request.getfixturevalue("sshd_server"), upstream / "python" / "sglang")
        source = ["--host", params["host"], "--port", str(params["port"]), "--user", params["user"], "--identity",
                  params["identity"], "--known-hosts", params["known_hosts"], "--remote-root", params["remote_root"]]
    code, _, err = _run(capsys, "snapshot", "pull", *source)
    assert code == 0, err
    skipped = {s["path"]: s["reason"] for s in latest(capsys)["skipped"]}
    assert skipped == {"sglang/srt/speculative/caf\ufffd.py": "file name is not UTF-8"}
    for _ in range(2):  # and every later scan works
        code, out, err = _run(capsys, "scan", "--snapshot", "latest", "--format", "json")
        assert code == 0 and json.loads(out)["snapshot"]["id"], err
