"""`sgl-scan gen ddtree` through the CLI: dry run, writing, overwrite refusal, latest snapshot, refusal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from sgl_scan.cli import main
from tests.support.releases import cache_root, release_tree

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory):
    """One store for the module's CLI runs; facts come from the suite's persistent facts cache."""
    home = tmp_path_factory.mktemp("gen-home")
    facts = cache_root() / "facts"
    facts.mkdir(parents=True, exist_ok=True)
    (home / "facts").symlink_to(facts, target_is_directory=True)
    return home


@pytest.fixture
def home(shared_home, monkeypatch, capsys):
    monkeypatch.setenv("SGLSCAN_HOME", str(shared_home))
    if not any((shared_home / "snapshots").glob("*/tree")):  # a test run alone (or on another xdist worker) still has a 'latest'
        _run(capsys, "snapshot", "pull", "--path", str(release_tree("0.5.11")))
    return shared_home


def _run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_dry_run_prints_the_plan_and_writes_nothing(capsys, home, tmp_path):
    code, out, err = _run(capsys, "gen", "ddtree", "--path", str(release_tree("0.5.11")), "--dry-run", "--budget", "20")
    assert code == 0, err
    assert "base class:    sglang.srt.speculative.dflash_worker.DFlashWorker  sglang/srt/speculative/dflash_worker.py:50" in out
    assert "registration:  patch" in out
    assert "  joins  sglang/srt/server_args.py:3319  sglang.srt.server_args.ServerArgs._handle_speculative_decoding" in out
    assert "  sglang/srt/speculative/spec_info.py:18  add DDTREE = auto() to SpeculativeAlgorithm" in out
    assert "budget/top-K:  20 / min(budget, vocabulary) at run time" in out
    assert "tree verify:   sglang.srt.speculative.dflash_info.DFlashVerifyInput  sglang/srt/speculative/dflash_info.py:148" in out
    assert "  prepare:     prepare_for_verify(batch, page_size, build_custom_mask)  sglang/srt/speculative/dflash_info.py:178" in out
    assert "  target:      self.target_worker.forward_batch_generation(..., is_verify=True)  sglang/srt/managers/tp_worker.py:445" in out
    assert list(tmp_path.iterdir()) == []


def test_no_source_uses_the_latest_snapshot(capsys, home):
    _run(capsys, "snapshot", "pull", "--path", str(release_tree("0.5.11")))
    code, out, err = _run(capsys, "gen", "ddtree", "--dry-run", "--mode", "patch")
    assert code == 0, err
    assert "DDTree plan for SGLang" in out and "dflash_worker.py:50" in out


def test_writes_then_refuses_to_overwrite_without_force(capsys, home, tmp_path):
    out_dir = tmp_path / "ddtree_sglang"
    args = ("gen", "ddtree", "--snapshot", "latest", "--out", str(out_dir), "--budget", "16", "--topk", "4")
    code, out, err = _run(capsys, *args)
    assert code == 0, err
    assert "patch mode, base sglang.srt.speculative.dflash_worker.DFlashWorker" in out
    assert sorted(p.name for p in out_dir.iterdir()) == [
        ".sgl-scan-generated", "README.md", "__init__.py", "ddtree.patch", "kernels.py", "tests", "tree.py", "worker.py",
    ]
    (out_dir / "tree.py").write_text("# edited\n")
    code, _, err = _run(capsys, *args)
    assert code == 2 and "exists and is not empty; pass --force" in err
    assert (out_dir / "tree.py").read_text() == "# edited\n"
    code, _, err = _run(capsys, *args, "--force")
    assert code == 0, err
    assert (out_dir / "tree.py").read_text().startswith('"""DDTree reference')


def test_refuses_an_output_folder_inside_the_snapshot(capsys, home):
    code, out, _ = _run(capsys, "snapshot", "show", "latest", "--json")
    folder = home / "snapshots" / json.loads(out)["id"]
    assert (folder / "tree").is_dir()
    for inside in (folder / "tree" / "ddtree_x", home / "snapshots" / "ddtree_y"):
        code, _, err = _run(capsys, "gen", "ddtree", "--snapshot", "latest", "--out", str(inside))
        assert code == 2 and "refusing --out" in err and str(home / "snapshots") in err
        assert not inside.exists()


def test_usage_errors(capsys, home, tmp_path):
    code, _, err = _run(capsys, "gen", "ddtree", "--snapshot", "latest")
    assert code == 2 and "--out DIR is required" in err
    code, _, err = _run(capsys, "gen", "ddtree", "--snapshot", "latest", "--out", str(tmp_path / "not-a-name"))
    assert code == 2 and "not a Python identifier" in err


def test_release_without_dflash_is_refused_in_one_line(capsys, home, tmp_path):
    code, out, err = _run(capsys, "gen", "ddtree", "--path", str(release_tree("0.5.10")), "--out", str(tmp_path / "x"))
    assert code == 3 and out == ""
    pulled, refused = err.splitlines()  # what the pull did, then the one error line
    assert pulled.startswith("sgl-scan: pulled ") and refused.startswith("sgl-scan: error: ")
    assert "no DFlash worker" in refused and "sglang 0.5.11" in refused
    assert not (tmp_path / "x").exists()


def test_installed_entry_point_generates_the_plugin(home, tmp_path):
    found = shutil.which("sgl-scan")
    command = [found] if found else [sys.executable, "-m", "sgl_scan"]
    out_dir = tmp_path / "ddtree_plugin"
    result = subprocess.run(
        command + ["gen", "ddtree", "--path", str(release_tree("0.5.23")), "--out", str(out_dir)],
        capture_output=True, text=True, env=dict(os.environ), timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "plugin mode, base sglang.srt.speculative.dflash_worker_v2.DFlashWorkerV2" in result.stdout
    register = (out_dir / "register.py").read_text()
    assert "class DDTreeSpecAlgo(CustomSpecAlgo):" in register
    assert "SpeculativeAlgorithm.register(NAME, supports_overlap=True, spec_class=DDTreeSpecAlgo)(worker_factory)" in register


def test_force_never_deletes_the_scanned_checkout(capsys, home, tmp_path):
    """`--out` at the parent of the scanned `--path` (a typo away from the intended folder): the
    checkout stays whole; so does a git repository and a folder of the user's own files."""
    from tests.support.gitrepo import commit_all, copy_package, make_repo

    checkout = tmp_path / "sglang_checkout"
    repo = make_repo(checkout, {"README.md": "mine\n"})
    copy_package(release_tree("0.5.11"), checkout / "python" / "sglang")
    commit_all(repo, "add the tree")
    tracked = repo.git.ls_files().splitlines()
    source = checkout / "python" / "sglang"
    for out_dir, said in [
        (checkout / "python", f"it contains {source}"),
        (source / "srt" / "ddtree_x", f"it is inside {source}"),
    ]:
        code, out, err = _run(capsys, "gen", "ddtree", "--path", str(source), "--out", str(out_dir), "--force")
        assert (code, out) == (2, ""), err
        lines = err.strip().splitlines()  # the pull's own line, then one error line
        assert f"refusing --out {out_dir}: {said}" in lines[-1] and len(lines) == 2 and lines[0].startswith(("sgl-scan: pulled ", "sgl-scan: reused snapshot "))
    other = make_repo(tmp_path / "ddtree_repo", {"keep.py": "x = 1\n"})
    plain = tmp_path / "ddtree_plain"
    (plain / "docs").mkdir(parents=True)
    (plain / "docs" / "notes.md").write_text("mine\n")
    for out_dir, said in [(tmp_path / "ddtree_repo", "it holds a git repository"),
                          (plain, "it is not empty and sgl-scan did not generate it")]:
        code, out, err = _run(capsys, "gen", "ddtree", "--snapshot", "latest", "--out", str(out_dir), "--force")
        assert (code, out) == (2, ""), err
        assert f"refusing --out {out_dir}: {said}" in err
    assert repo.git.status("--porcelain") == "" and repo.git.ls_files().splitlines() == tracked
    assert other.git.status("--porcelain") == "" and (plain / "docs" / "notes.md").read_text() == "mine\n"


@pytest.mark.parametrize("version", ["0.5.12", "0.5.14"])
def test_a_release_the_plan_cannot_wire_fails_in_one_line(capsys, home, tmp_path, version):
    """0.5.12/0.5.14: the tree verify or the commit cannot be wired; gen used to write a worker that refuses to construct and exit 0."""
    out_dir = tmp_path / "ddtree_x"
    code, out, err = _run(capsys, "gen", "ddtree", "--path", str(release_tree(version)), "--out", str(out_dir))
    assert code == 3 and out == "", err
    lines = err.strip().splitlines()  # the pull's own line, then one error line
    assert len(lines) == 2 and f"DDTree cannot be wired to SGLang {version}: " in lines[-1]
    assert not out_dir.exists()
    code, out, err = _run(capsys, "gen", "ddtree", "--snapshot", "latest", "--dry-run")
    assert code == 3 and "cannot be wired" in out and "cannot be wired" in err.strip().splitlines()[-1]
    assert len([line for line in err.splitlines() if line.startswith("sgl-scan: error:")]) == 1
