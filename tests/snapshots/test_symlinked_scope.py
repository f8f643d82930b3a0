"""Symlinked folders never vanish (issue 19, case 4): a symlinked scope root is followed, locally
and over a real loopback sshd; every other symlink is recorded as skipped; a snapshot without a
single `srt/speculative` file makes scan say so and exit 3 instead of "Algorithms (0)", exit 0."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.snapshots.conftest import ssh_params
from tests.support.cli import run_main as _run

pytestmark = pytest.mark.slow

# Real 0.5.23 files: enough for the algorithm inventory and the d2t rules.
FILES = (
    "version.py",
    "srt/speculative/spec_info.py",
    "srt/speculative/spec_registry.py",
    "srt/models/llama_eagle3.py",
    "srt/layers/sampler.py",
)


def _ssh_args(server, root):
    params = ssh_params(server, root)
    return ["--host", params["host"], "--port", str(params["port"]), "--user", params["user"],
            "--identity", params["identity"], "--known-hosts", params["known_hosts"], "--remote-root", str(root)]


def _tree(base: Path, sglang: Path) -> Path:
    """A package whose files are the real ones; returns the package folder."""
    package = base / "sglang"
    for rel in FILES:
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sglang / "sglang" / rel, package / rel)
    return package


def _move_and_link(package: Path, rel: str, elsewhere: Path) -> None:
    """Move `package/rel` to `elsewhere` and leave a symlink to it in its place."""
    elsewhere.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(package / rel, elsewhere)
    (package / rel).symlink_to(elsewhere, target_is_directory=True)


def _pull(capsys, how, server, package, *extra):
    source = ["--path", str(package), "--follow-outside-links"] if how == "local" else _ssh_args(server, package)
    code, out, err = _run(capsys, "snapshot", "pull", *source, *extra)
    assert code == 0, err
    code, out, err = _run(capsys, "snapshot", "show", "latest", "--json")
    manifest = json.loads(out)
    return [f["path"] for f in manifest["files"]], {s["path"]: s["reason"] for s in manifest["skipped"]}


@pytest.fixture(params=["local", "ssh"])
def how(request):
    return request.param


@pytest.fixture
def server(request, how):
    return request.getfixturevalue("sshd_server") if how == "ssh" else None


def test_a_symlinked_speculative_folder_is_followed_and_other_links_are_recorded(capsys, tmp_path, sglang_0_5_23, how, server):
    package = _tree(tmp_path / "t", sglang_0_5_23)
    _move_and_link(package, "srt/speculative", tmp_path / "elsewhere" / "speculative")
    (package / "srt" / "models" / "shared").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (package / "srt" / "models" / "gone").symlink_to(tmp_path / "nowhere")
    files, skipped = _pull(capsys, how, server, package)
    assert "sglang/srt/speculative/spec_info.py" in files and "sglang/srt/speculative/spec_registry.py" in files
    assert skipped == {"sglang/srt/models/shared": "symlink, not followed", "sglang/srt/models/gone": "symlink, not followed"}
    code, out, err = _run(capsys, "scan", "--snapshot", "latest", "--format", "json")
    report = json.loads(out)
    assert code == 0 and len(report["inventory"]["algorithms"]) >= 5, err


def test_a_symlinked_srt_is_followed_in_the_full_scope(capsys, tmp_path, sglang_0_5_23, how, server):
    package = _tree(tmp_path / "t", sglang_0_5_23)
    _move_and_link(package, "srt", tmp_path / "store" / "srt")
    files, skipped = _pull(capsys, how, server, package, "--scope", "full")
    assert sorted(files) == sorted("sglang/" + rel for rel in FILES)
    assert skipped == {}


def test_a_scope_without_speculative_files_is_an_error_not_a_clean_scan(capsys, tmp_path, sglang_0_5_23, how, server):
    package = _tree(tmp_path / "t", sglang_0_5_23)
    shutil.rmtree(package / "srt" / "speculative")
    (package / "srt" / "speculative").symlink_to(package.parent, target_is_directory=True)  # a loop
    files, skipped = _pull(capsys, how, server, package)
    assert not [f for f in files if "/speculative/" in f]
    assert skipped["sglang/srt/speculative"] == "symlink to a folder holding the package (a loop), not followed"
    code, out, err = _run(capsys, "scan", "--snapshot", "latest")
    assert (code, out) == (3, "")
    assert "holds no sglang/srt/speculative files; skipped symlinks: sglang/srt/speculative; see: sgl-scan snapshot show" in err
    assert len(err.strip().splitlines()) == 1


def test_a_symlinked_speculative_folder_is_followed_in_the_full_scope_too(capsys, tmp_path, sglang_0_5_23, how, server):
    package = _tree(tmp_path / "t", sglang_0_5_23)
    _move_and_link(package, "srt/speculative", tmp_path / "elsewhere" / "speculative")
    files, skipped = _pull(capsys, how, server, package, "--scope", "full")
    assert sorted(files) == sorted("sglang/" + rel for rel in FILES)
    assert skipped == {}
