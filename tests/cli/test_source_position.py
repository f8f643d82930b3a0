"""Source options mean the same before and after a subcommand, or are refused in one line (issue 29).

`sgl-scan --pip X graph ...` once ran `graph` on `latest` and said nothing: every source option given
before the subcommand was dropped. Here every command of the CLI (found by walking the click tree,
so a new one is covered the day it is added) meets every source option in both positions: a command
that takes the option receives the very same arguments either way; one that does not take it
refuses it in one line, exit 2, before doing anything. Then the cases of the issue end to end, on
real trees: `--snapshot ID scan`, `--path /missing scan`, `--scope full scan`, `--pip WHEEL graph`,
`--host H graph` (a loopback sshd).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import click
import pytest

from sgl_scan.cli import cli
from tests.support.cli import run_main as _run

# (flag, value on the command line, parameter name, the value the command receives)
OPTIONS = [
    ("--host", "gpu-box", "host", "gpu-box"),
    ("--port", "2222", "port", 2222),
    ("--user", "me", "user", "me"),
    ("--identity", "id_key", "identity", "id_key"),
    ("--ssh-config", "ssh_cfg", "ssh_config", "ssh_cfg"),
    ("--known-hosts", "known", "known_hosts", "known"),
    ("--accept-new-host-key", None, "accept_new_host_key", True),
    ("--remote-root", "/r/sglang", "remote_root", "/r/sglang"),
    ("--connect-timeout", "3", "connect_timeout", 3.0),
    ("--path", "some/folder", "local_path", "some/folder"),
    ("--follow-outside-links", None, "follow_outside_links", True),
    ("--git", "some/repo", "git_repo", "some/repo"),
    ("--rev", "v1", "rev", "v1"),
    ("--pip", "sglang==0.5.23", "pip_spec", "sglang==0.5.23"),
    ("--snapshot", "20261202T140200", "snapshot_ref", "20261202T140200"),
    ("--scope", "full", "scope", "full"),
    ("--timeout", "9", "timeout", 9.0),
    ("--max-bytes", "1M", "max_bytes", 1 << 20),
    ("--max-files", "7", "max_files", 7),
    ("--max-file-size", "1K", "max_file_size", 1024),
]

# arguments each command needs to parse (nothing is run: its callback is replaced)
ARGUMENTS = {
    ("drafter", "check"): ["drafter-folder"],
    ("drafter", "diff"): ["a", "b"],
    ("diff",): ["pip:0.5.22", "pip:0.5.23"],
    ("fleet",): ["gpu-1"],
    ("graph",): ["--dispatch", "EAGLE"],
    ("gen", "ddtree"): ["--dry-run"],
    ("snapshot", "show"): ["latest"],
    ("snapshot", "rm"): ["some-id"],
}


def _leaves(group: click.Group = cli, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    ctx = click.Context(group)
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            found += _leaves(command, (*path, name))
        else:
            found.append(((*path, name), command))
    return found


LEAVES = _leaves()
CASES = [pytest.param(path, option, id=f"{' '.join(path)}:{option[0]}") for path, _ in LEAVES for option in OPTIONS]


def _takes(command: click.Command, name: str) -> bool:
    return any(p.name == name for p in command.params)


@pytest.fixture
def recorded(monkeypatch):
    """Every command's callback replaced by one that records the arguments it got."""
    calls: list[dict] = []
    for _, command in LEAVES:
        monkeypatch.setattr(command, "callback", lambda **kwargs: calls.append(kwargs))
    return calls


def test_every_command_and_option_is_covered():
    names = {" ".join(path) for path, _ in LEAVES}
    assert {"scan", "check", "graph", "gen ddtree", "drafter check", "drafter diff", "diff", "fleet", "rules",
            "snapshot pull", "snapshot list", "snapshot show", "snapshot rm", "snapshot gc"} <= names
    source = [p.name for p in cli.params if p.name not in ("verbose", "config", "version")]
    assert sorted(source) == sorted(name for _, _, name, _ in OPTIONS)  # every top-level source option is tested


@pytest.mark.parametrize("path, option", CASES)
def test_a_source_option_before_the_command_means_what_it_means_after_it(capsys, recorded, path, option):
    flag, value, name, expected = option
    command = dict(LEAVES)[path]
    given = [flag] + ([value] if value is not None else [])
    args = [*path, *ARGUMENTS.get(path, [])]
    before = _run(capsys, *given, *args)
    if not _takes(command, name):
        code, out, err = before
        assert (code, out, recorded) == (2, "", []), err
        assert err.count("\n") == 1 and f"{flag} does not apply to 'sgl-scan {' '.join(path)}'" in err, err
        return
    after = _run(capsys, *args, *given)
    assert before[0] == after[0] == 0, (before, after)
    assert len(recorded) == 2 and recorded[0] == recorded[1], recorded
    assert recorded[0][name] == expected


@pytest.mark.parametrize("path", [p for p, c in LEAVES if _takes(c, "scope")], ids=lambda p: " ".join(p))
def test_an_option_given_on_both_sides_is_refused(capsys, recorded, path):
    args = [*path, *ARGUMENTS.get(path, [])]
    code, out, err = _run(capsys, "--scope", "full", *args, "--scope", "speculative")
    assert (code, out, recorded) == (2, "", [])
    assert err.strip() == f"sgl-scan: error: --scope is given both before and after 'sgl-scan {' '.join(path)}'; " \
                          f"give it once (see: sgl-scan --help)"


def test_the_group_alone_still_scans(capsys, recorded):
    code, _, err = _run(capsys, "--pip", "sglang==0.5.23")
    assert code == 0 and len(recorded) == 1 and recorded[0]["pip_spec"] == "sglang==0.5.23", err


# -- end to end: the tree named before the command is the tree answered about ---------------------------

ENUM_PACKAGE = {
    "__init__.py": "",
    "version.py": '__version__ = "{version}"\n',
    "srt/__init__.py": "",
    "srt/speculative/__init__.py": "",
    "srt/speculative/spec_info.py": (
        "from enum import IntEnum, auto\n\n\n"
        "class SpeculativeAlgorithm(IntEnum):\n"
        "    NONE = auto()\n"
        "    EAGLE = auto()\n"
        "{extra}"
        "\n"
        "    def is_eagle(self):\n"
        "        return self == SpeculativeAlgorithm.EAGLE\n"
    ),
    "srt/speculative/use.py": (
        "def pick(algo):\n"
        "    if algo.is_eagle():\n"
        "        return 1\n"
        "    return 0\n"
    ),
}


def _package(folder: Path, version: str, extra: str = "") -> Path:
    package = folder / "sglang"
    for rel, text in ENUM_PACKAGE.items():
        target = package / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace("{version}", version).replace("{extra}", extra))
    return package


def _wheel(folder: Path, version: str, extra: str = "") -> Path:
    package = _package(folder / "src", version, extra)
    wheel = folder / f"sglang-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for file in sorted(package.rglob("*.py")):
            archive.write(file, "sglang/" + file.relative_to(package).as_posix())
    return wheel


def test_snapshot_named_before_scan_is_the_one_reported(capsys, tmp_path):
    old = _package(tmp_path / "old", "1.0.0")
    new = _package(tmp_path / "new", "2.0.0", "    DFLASH = auto()\n")
    code, first, _ = _run(capsys, "snapshot", "pull", "--path", str(old))
    code, second, _ = _run(capsys, "snapshot", "pull", "--path", str(new))
    assert code == 0 and first != second  # the second is `latest`
    code, out, err = _run(capsys, "--snapshot", first.strip(), "scan", "--format", "json")
    doc = json.loads(out)
    assert doc["tree"]["snapshot_id"] == first.strip() and doc["tree"]["sglang_version"] == "1.0.0", err
    assert doc["tree"]["latest"] is None and "DFLASH" not in [a["name"] for a in doc["inventory"]["algorithms"]]


def test_pip_named_before_graph_is_the_tree_listed(capsys, tmp_path):
    _run(capsys, "snapshot", "pull", "--path", str(_package(tmp_path / "other", "2.0.0")))  # `latest`
    wheel = _wheel(tmp_path, "1.0.0")
    code, out, err = _run(capsys, "--pip", str(wheel), "graph", "--dispatch", "EAGLE")
    assert code == 0, err
    assert out.splitlines()[0].startswith(f"tree: SGLang 1.0.0, snapshot ") and f"from pip {wheel}" in out.splitlines()[0]
    assert "sglang/srt/speculative/use.py:2" in out and "side: true, decided by is_eagle()" in out


def test_missing_path_and_unheld_scope_are_refused_in_one_line(capsys, tmp_path):
    _run(capsys, "snapshot", "pull", "--path", str(_package(tmp_path / "p", "1.0.0")))
    missing, a_file = tmp_path / "missing", tmp_path / "file"
    a_file.write_text("x")
    for args in (["--path", str(missing), "scan"], ["scan", "--path", str(missing)],
                 ["--path", str(a_file), "scan"], ["--scope", "full", "scan"], ["scan", "--scope", "full"],
                 ["--scope", "full", "graph", "--dispatch", "EAGLE"]):
        code, out, err = _run(capsys, *args)
        assert (code, out) == (2, ""), (args, err)
        assert err.count("\n") == 1 and err.startswith("sgl-scan: error: "), (args, err)
    assert "holds the speculative scope" in _run(capsys, "--scope", "full", "scan")[2]


def test_host_named_before_graph_is_pulled_over_ssh(capsys, tmp_path, sshd_server):
    _run(capsys, "snapshot", "pull", "--path", str(_package(tmp_path / "local", "2.0.0")))  # `latest`
    remote = _package(tmp_path / "remote", "1.0.0")
    ssh = ["--host", sshd_server.host, "--port", str(sshd_server.port), "--user", sshd_server.user,
           "--identity", str(sshd_server.client_key), "--known-hosts", str(sshd_server.known_hosts),
           "--remote-root", str(remote), "--connect-timeout", "10"]
    code, out, err = _run(capsys, *ssh, "graph", "--dispatch", "EAGLE")
    assert code == 0, err
    head = out.splitlines()[0]
    assert head.startswith("tree: SGLang 1.0.0, snapshot ") and f"from ssh {sshd_server.user}@{sshd_server.host}:" in head
    assert str(remote) in head
    code, listing, _ = _run(capsys, "snapshot", "list")  # the SSH row shows the alias and the remote root
    [row] = [line for line in listing.splitlines() if " ssh " in line]
    assert f"{sshd_server.user}@{sshd_server.host}:{remote}" in row and row.startswith("*")
