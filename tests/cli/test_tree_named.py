"""Every command's output names the tree it answered about, in every format (issue 29).

The tree is an edited git checkout (commit, dirty) so that the name has something to get wrong:
each output must carry the snapshot id, the source (the path) and the git state; an answer that
used `latest` because no source was named must say so; `drafter check` must not call the checkout
"SGLang X" as if it were the release.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_source_position import _package
from tests.drafter.factory import good_drafter
from tests.support.cli import run_main as _run, run_main_in
from tests.support.gitrepo import commit_all, make_repo

REPORT_FORMATS = ("text", "json", "sarif", "markdown", "html")


def _no_cr(text: str) -> str:
    return text.replace("<wbr>", "")  # HTML breaks long names between parts


@pytest.fixture
def checkout(tmp_path, capsys):
    """(repo folder, package folder, snapshot id, commit) of a dirty checkout pulled into the store."""
    repo = tmp_path / "repo"
    package = _package(repo / "python", "1.0.0")
    commit = commit_all(make_repo(repo), "1.0.0")
    use = package / "srt" / "speculative" / "use.py"
    use.write_text(use.read_text() + "\n# a local edit\n")
    code, out, err = _run(capsys, "snapshot", "pull", "--path", str(package))
    assert code == 0, err
    return repo, package, out.strip(), commit


def _names_tree(document: str, snap_id: str, package: Path, commit: str) -> None:
    text = _no_cr(document)
    assert snap_id in text and str(package) in text and commit[:12] in text and "dirty" in text, text[:3000]


@pytest.mark.parametrize("fmt", REPORT_FORMATS)
def test_scan_names_its_tree_and_says_when_it_used_latest(capsys, checkout, fmt):
    repo, package, snap_id, commit = checkout
    code, named, err = _run(capsys, "scan", "--path", str(package), "--format", fmt)
    assert code in (0, 1), err
    _names_tree(named, snap_id, package, commit)
    assert "latest: no source was named" not in named
    code, implicit, err = _run(capsys, "scan", "--format", fmt)
    _names_tree(implicit, snap_id, package, commit)
    assert "no source was named" in _no_cr(implicit), implicit[:2000]
    code, explicit, err = _run(capsys, "scan", "--snapshot", "latest", "--format", fmt)  # named: says what latest was, not "no source"
    _names_tree(explicit, snap_id, package, commit)
    assert "no source was named" not in _no_cr(explicit) and "--snapshot latest is the tree last pulled" in _no_cr(explicit), explicit[:2000]


@pytest.mark.parametrize("fmt", REPORT_FORMATS)
def test_check_names_its_tree(capsys, checkout, fmt):
    repo, package, snap_id, commit = checkout
    code, out, err = run_main_in(capsys, repo, "check", "--format", fmt)
    assert code in (0, 1), err
    text = _no_cr(out)
    assert str(package.parent) in text and commit[:12] in text and "dirty" in text, text[:2000]  # check reads the package's parent


@pytest.mark.parametrize("args, fmt", [(["--dispatch", "EAGLE"], "text"), (["--dispatch", "EAGLE"], "json"),
                                       ([], "dot"), ([], "graphml"), ([], "json")])
def test_graph_names_its_tree_in_every_format(capsys, checkout, args, fmt):
    repo, package, snap_id, commit = checkout
    code, out, err = _run(capsys, "graph", *args, "--format", fmt)
    assert code == 0, err
    _names_tree(out, snap_id, package, commit)
    assert "no source was named" in out
    if fmt == "json":
        doc = json.loads(out)
        assert doc["tree"]["snapshot_id"] == snap_id and doc["tree"]["git"]["dirty"] is True
        assert doc["tree"]["latest"].startswith("latest: no source was named")


@pytest.mark.parametrize("fmt", ["dot", "graphml"])
def test_graph_dispatch_refuses_formats_it_cannot_write(capsys, checkout, fmt):
    code, out, err = _run(capsys, "graph", "--dispatch", "EAGLE", "--format", fmt)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert f"--dispatch lists sites as text or json, not {fmt}" in err


def test_graph_format_follows_the_output_file(capsys, checkout, tmp_path):
    out = tmp_path / "sites.json"
    code, _, err = _run(capsys, "graph", "--dispatch", "EAGLE", "-o", str(out))
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["kind"] == "sgl-scan/dispatch" and doc["sites"][0]["side"] == "true"
    assert doc["sites"][0]["decided_by"]["term"] == "is_eagle()"


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_drafter_check_names_the_checkout_and_never_calls_it_the_release(capsys, checkout, tmp_path, fmt):
    repo, package, snap_id, commit = checkout
    drafter = good_drafter(tmp_path / "drafter")
    code, out, err = _run(capsys, "drafter", "check", str(drafter), "--path", str(package), "--format", fmt)
    assert code in (0, 1), err
    _names_tree(out, snap_id, package, commit)
    if fmt == "text":
        assert "SGLang 1.0.0 (snapshot" not in out and "not as the published release" in out
        assert "verdict" in out and "the release " not in out.split("verdict", 1)[1]
    else:
        assert json.loads(out)["engine"]["tree"]["source"] == f"path {package}"


@pytest.mark.parametrize("fmt", REPORT_FORMATS)
def test_diff_names_both_trees(capsys, checkout, tmp_path, fmt):
    repo, package, snap_id, commit = checkout
    other = _package(tmp_path / "other", "2.0.0")
    code, out, err = _run(capsys, "diff", "snapshot:latest", f"path:{other}", "--format", fmt)
    assert code == 0, err
    _names_tree(out, snap_id, package, commit)
    assert str(other) in _no_cr(out)


def test_gen_ddtree_names_its_tree(capsys, sglang_0_5_23, tmp_path):
    code, out, err = _run(capsys, "gen", "ddtree", "--path", str(sglang_0_5_23 / "sglang"), "--dry-run")
    assert code == 0, err
    assert out.startswith("tree: SGLang 0.5.23, snapshot ") and f"from path {sglang_0_5_23 / 'sglang'}" in out.splitlines()[0]
    code, out, err = _run(capsys, "gen", "ddtree", "--out", str(tmp_path / "ddtree_pkg"))  # `latest`: the same tree
    assert code == 0, err
    assert "for SGLang 0.5.23, snapshot " in out and "no source was named" in out


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html"])
def test_fleet_names_each_hosts_snapshot(capsys, tmp_path, sshd_server, fmt):
    remote = _package(tmp_path / "remote", "1.0.0")
    code, out, err = _run(capsys, "fleet", sshd_server.host, "--port", str(sshd_server.port), "--user", sshd_server.user,
                          "--identity", str(sshd_server.client_key), "--known-hosts", str(sshd_server.known_hosts),
                          "--remote-root", str(remote), "--format", fmt)
    assert code in (0, 1), err
    listed = [json.loads(line) for line in _run(capsys, "snapshot", "list", "--json")[1].splitlines()]
    [snap_id] = [m["id"] for m in listed if m["source_kind"] == "ssh"]
    text = _no_cr(out)
    assert snap_id and snap_id in text and str(remote) in text, (err, text[:2000])
