"""SARIF locations that code scanning can place (issue 19, case 7), on real git checkouts of 0.5.23,
and the README's GitHub Actions recipe run end to end."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from urllib.parse import unquote, urlparse

import jsonschema
import pytest

from tests.cli.test_review_safety import DIRECT, LLAMA, OFFSETS, copy_files, edit, git, line_of
from tests.support.cli import run_main_in

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).parents[2]
SCHEMA = json.loads((REPO_ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())


def locations(document: dict):
    """(uri, uriBaseId) of every result and notification location."""
    run = document["runs"][0]
    for result in run["results"]:
        for loc in result["locations"]:
            yield loc["physicalLocation"]["artifactLocation"]
    for invocation in run["invocations"]:
        for note in invocation["toolExecutionNotifications"]:
            for loc in note.get("locations", []):
                yield loc["physicalLocation"]["artifactLocation"]


def assert_placeable(document: dict, repository: Path) -> list[str]:
    """Valid SARIF 2.1.0 whose every location is a file inside `repository`, read both ways code
    scanning may read it: relative to the repository root, and through originalUriBaseIds."""
    jsonschema.Draft4Validator(SCHEMA).validate(document)
    bases = document["runs"][0]["originalUriBaseIds"]
    uris = []
    for artifact in locations(document):
        uri = artifact["uri"]
        assert not uri.startswith("/") and ".." not in uri.split("/"), uri
        assert (repository / uri).is_file(), f"{uri} is not a file in {repository}"
        base = unquote(urlparse(bases[artifact["uriBaseId"]]["uri"]).path)
        assert Path(base, uri).resolve() == (repository / uri).resolve()
        uris.append(uri)
    assert uris
    return uris


@pytest.fixture
def repo_with_bug(tmp_path, sglang_0_5_23):
    from tests.cli.gitrepo import commit_all, init_repo

    root = tmp_path / "my repo"  # a space: file URIs must be percent-encoded
    copy_files(sglang_0_5_23, root / "python")
    repo = init_repo(root)
    commit_all(repo, "upstream")
    repo.git.checkout("-b", "feature")
    edit(root / "python" / LLAMA, OFFSETS, DIRECT)
    commit_all(repo, "bug")
    return root


def test_check_sarif_locations_are_repository_paths(capsys, repo_with_bug):
    root = repo_with_bug
    code, out, err = run_main_in(capsys, root, "check", "--diff-base", "main", "--format", "sarif")
    assert code == 1, err
    document = json.loads(out)
    uris = assert_placeable(document, root)
    assert f"python/{LLAMA}" in uris
    assert list(document["runs"][0]["originalUriBaseIds"]) == ["SRCROOT"]


def test_scan_sarif_root_and_the_default_snapshot_root_both_resolve(capsys, repo_with_bug, tmp_path):
    root = repo_with_bug
    code, out, err = run_main_in(capsys, tmp_path, "scan", "--path", str(root / "python"), "--format", "sarif",
                              "--sarif-root", str(root))
    assert code == 1, err
    assert f"python/{LLAMA}" in assert_placeable(json.loads(out), root)
    # without --sarif-root: relative to the snapshot tree root, the folder holding sglang/
    code, out, err = run_main_in(capsys, tmp_path, "scan", "--path", str(root / "python"), "--format", "sarif")
    assert LLAMA in assert_placeable(json.loads(out), root / "python")
    # a --sarif-root that does not hold the package is a usage error
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, out, err = run_main_in(capsys, tmp_path, "scan", "--path", str(root / "python"), "--format", "sarif",
                              "--sarif-root", str(elsewhere))
    assert (code, out) == (2, "") and "is not inside it" in err


def actions_recipe() -> tuple[dict, list[str]]:
    """The README's GitHub Actions recipe: its checkout options and its `run:` commands."""
    text = (REPO_ROOT / "README.md").read_text()
    start = text.index("GitHub Actions, uploading SARIF to code scanning")
    block = text[text.index("```yaml", start) + len("```yaml"):]
    block = re.split(r"^```|^#+ ", block, maxsplit=1, flags=re.MULTILINE)[0]
    checkout = re.search(r"uses: actions/checkout@\S+\s*\n\s*with: \{(.*)\}", block)
    options = dict(part.split(": ", 1) for part in checkout.group(1).split(", ")) if checkout else {}
    runs = [line.split("- run:", 1)[1].strip() for line in block.splitlines() if "- run:" in line]
    upload = re.search(r"sarif_file: ([^}\s]+)", block)
    return {**options, "sarif_file": upload.group(1) if upload else None}, runs


def test_the_readme_actions_recipe_uploads_placeable_locations(capsys, tmp_path, sglang_0_5_23):
    options, runs = actions_recipe()
    assert options.get("fetch-depth") == "0" and options["sarif_file"]
    # The pull request: feature adds the bug; main moves on; GitHub checks out the merge ref, detached.
    upstream = tmp_path / "upstream"
    copy_files(sglang_0_5_23, upstream / "python")
    git(upstream, "init", "-q", "-b", "main")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-qm", "upstream")
    git(upstream, "checkout", "-qb", "feature")
    edit(upstream / "python" / LLAMA, OFFSETS, DIRECT)
    git(upstream, "commit", "-qam", "bug")
    git(upstream, "checkout", "-q", "main")
    edit(upstream / "python" / "sglang" / "srt" / "speculative" / "spec_info.py", "\n", "\n# main moved\n")
    git(upstream, "commit", "-qam", "main moves")
    git(upstream, "checkout", "-q", "--detach", "main")
    git(upstream, "merge", "-q", "--no-ff", "feature", "-m", "Merge pull/7")
    git(upstream, "update-ref", "refs/pull/7/merge", "HEAD")
    git(upstream, "checkout", "-q", "main")
    # actions/checkout with fetch-depth 0: every branch as origin/*, the merge ref detached
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    git(workspace, "init", "-q")
    git(workspace, "remote", "add", "origin", f"file://{upstream}")
    git(workspace, "fetch", "-q", "origin", "+refs/heads/*:refs/remotes/origin/*", "+refs/pull/7/merge:refs/remotes/pull/7/merge")
    git(workspace, "checkout", "-q", "--detach", "refs/remotes/pull/7/merge")

    steps = [shlex.split(r.replace("${{ github.base_ref }}", "main")) for r in runs if r.startswith("sgl-scan ")]
    assert steps and all(step[0] == "sgl-scan" for step in steps), runs
    for step in steps:
        code, _, err = run_main_in(capsys, workspace, *step[1:])
        assert code in (0, 1), err
    document = json.loads((workspace / options["sarif_file"]).read_text())
    uris = assert_placeable(document, workspace)
    hits = [r for r in document["runs"][0]["results"] if r["ruleId"] == "SGL301"]
    assert [(h["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
             h["locations"][0]["physicalLocation"]["region"]["startLine"]) for h in hits] == [
        (f"python/{LLAMA}", line_of(workspace / "python" / LLAMA, DIRECT))]
    assert all(u.startswith("python/sglang/") for u in uris)
