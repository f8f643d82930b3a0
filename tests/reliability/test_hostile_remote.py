"""A hostile or broken remote: stand-in `tar`/`find`/`python3` behind a real loopback sshd, and a tree
full of links and devices. Each case is one clear error line (or a recorded skip) from the real
`sgl-scan` entry point; nothing lands outside the store's staging area; the earlier snapshot stays
intact and verifiable."""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile
from pathlib import Path

import pytest

from sgl_scan.snapshots.store import Store
from tests.reliability.remote import home_with_path, one_error_line, run_cli, ssh_cli_args, tool_dir
from tests.snapshots.conftest import MINI_SPECULATIVE, make_mini_package
from tests.support.sshd import start_sshd

pytestmark = pytest.mark.slow

# A name of this process's own, so the escape checks never see (or race with) another run's files.
ESCAPE = f"sgl-scan-escape-{os.getpid()}-{os.urandom(4).hex()}.py"
PWNED = f"/tmp/sgl-scan-pwned-{os.getpid()}-{os.urandom(4).hex()}"  # what an injected command would touch


def _member(name: str, data: bytes = b"x = 1\n", **fields) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in fields.items():
        setattr(info, key, value)
    return info, (data if info.isreg() else None)


def _tar(*members, fmt=tarfile.GNU_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as archive:
        for info, data in members:
            if not info.isreg():
                info.size = 0
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _claims(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(format=tarfile.GNU_FORMAT) + b"A" * 4096


def _cut() -> bytes:
    whole = _tar(_member("srt/server_args.py", b"s = 1\n" * 2000))
    return whole[: 512 + 3000]


def _pax_claim() -> bytes:
    info = tarfile.TarInfo("srt/server_args.py")
    info.pax_headers = {"size": str(10 * 1024**3)}
    return info.tobuf(format=tarfile.PAX_FORMAT) + b"B" * 4096


# name -> (the bytes the stand-in tar sends, what the error line must say)
HOSTILE_STREAMS = {
    "absolute path": (lambda: _tar(_member(f"/tmp/{ESCAPE}")), "absolute path"),
    "dot-dot": (lambda: _tar(_member(f"../../../{ESCAPE}")), r"climbs out with '\.\.'"),
    "dot-dot inside": (lambda: _tar(_member(f"srt/../../../../{ESCAPE}")), r"climbs out"),
    "symlink out": (lambda: _tar(_member("srt/server_args.py", type=tarfile.SYMTYPE, linkname="/etc/shadow")), "refusing link"),
    "hardlink out": (lambda: _tar(_member("srt/server_args.py", type=tarfile.LNKTYPE, linkname="/etc/passwd")), "refusing link"),
    "char device": (lambda: _tar(_member("srt/server_args.py", type=tarfile.CHRTYPE, devmajor=1, devminor=3)), "device"),
    "fifo": (lambda: _tar(_member("srt/server_args.py", type=tarfile.FIFOTYPE)), "device or FIFO"),
    "directory": (lambda: _tar(_member("srt/server_args.py", type=tarfile.DIRTYPE)), "non-file"),
    "claims 10 GB": (lambda: _claims("srt/server_args.py", 10 * 1024**3), "claims 10.0 GB, over --max-file-size"),
    "pax claims 10 GB": (_pax_claim, "claims 10.0 GB"),
    "cut mid-file": (_cut, "cut short"),
    "deep nesting": (lambda: _tar(_member("srt/" + "d/" * 300 + "x.py")), "suspicious path"),
    "bomb of tiny files": (lambda: _tar(*[_member(f"srt/bomb/{i}.py", b"") for i in range(3000)]), "not requested"),
    "repeated member": (lambda: _tar(_member("srt/server_args.py"), _member("srt/server_args.py")), "repeated"),
    "unrequested member": (lambda: _tar(_member("srt/managers/io_struct.py")), "not requested"),
    "garbage": (lambda: b"Last login: yesterday\nWelcome!\n" * 200, "not a valid tar|did not start with a tar"),
    "empty": (lambda: b"", "did not start with a tar stream"),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """One sshd whose remote `tar` sends `<dir>/stream.tar` when it exists, else is the real tar."""
    base = tmp_path_factory.mktemp("hostile")
    package = make_mini_package(base / "remote")
    stream = base / "stream.tar"
    real_tar = Path(os.path.realpath("/usr/bin/tar")) if Path("/usr/bin/tar").exists() else Path("/bin/tar")
    tools = tool_dir(base / "tools", {
        "tar": f'if [ -f "{stream}" ]; then cat >/dev/null; cat "{stream}"; exit 0; fi\nexec "{real_tar}" "$@"\n',
    })
    home = home_with_path(base / "remote-home", [tools])
    with start_sshd(base / "sshd", home=home) as server:
        yield server, package, stream, base


def _escapes(*roots: Path) -> list[Path]:
    """Escaped files: anywhere under our own folders `roots`, or right inside one of their
    ancestors (where '..' climbs to) or /tmp (the absolute member). Never a walk of all of /tmp,
    whose files other processes create and delete meanwhile."""
    found = []
    for root in roots:
        found += [p for p in root.rglob(ESCAPE)]
    for place in {Path("/tmp"), *(parent for root in roots for parent in root.parents)}:
        if (place / ESCAPE).exists():
            found.append(place / ESCAPE)
    return found


def test_every_hostile_tar_stream_is_one_clear_error_and_loses_nothing(hostile, tmp_path):
    server, package, stream, base = hostile
    home = tmp_path / "home"
    first = run_cli(["snapshot", "pull", *ssh_cli_args(server, package)], home)
    assert first.returncode == 0, first.stderr
    old_id = first.stdout.strip()
    store = Store(home / "snapshots")
    before = {p for p in home.rglob("*") if ".staging" not in p.parts}
    mtime = 1_700_000_000
    try:
        for case, (make, expected) in HOSTILE_STREAMS.items():
            stream.write_bytes(make())
            mtime += 10  # a changed file, so the client asks for it and reads the stream
            os.utime(package / "srt/server_args.py", (mtime, mtime))
            result = run_cli(["snapshot", "pull", *ssh_cli_args(server, package)], home)
            assert result.returncode == 3, (case, result.stdout, result.stderr)
            line = one_error_line(result)
            assert __import__("re").search(expected, line), (case, line)
            assert store.ids() == [old_id], case
            assert list((store.root / ".staging").iterdir()) == [], case
            assert {p for p in home.rglob("*") if ".staging" not in p.parts} == before, case
            assert _escapes(base, tmp_path) == [], case
    finally:
        stream.unlink(missing_ok=True)
    store.open(old_id)  # every hash still verifies
    again = run_cli(["snapshot", "pull", *ssh_cli_args(server, package)], home)  # the real tar again
    assert again.returncode == 0 and again.stdout.strip() != old_id
    assert len(HOSTILE_STREAMS) == 17  # the figure docs/testing.md gives


def _broken_remote(tmp_path, stand_ins=None, drop=()) -> tuple:
    tools = tool_dir(tmp_path / "tools", stand_ins or {}, drop=drop)
    return start_sshd(tmp_path / "sshd", home=home_with_path(tmp_path / "remote-home", [tools]))


@pytest.mark.parametrize("stand_ins, drop, root_given, expected", [
    ({}, ("find",), True, "has no 'find' command"),
    ({}, ("tar",), True, "has no 'tar' command"),
    ({"find": "exit 1\n"}, (), True, "the remote find cannot list the files with their stamps"),
    ({"find": "printf 'garbage without separators'\n"}, (), True, "listing is malformed"),
    ({"find": "printf '12 notatime srt/x.py\\0'\n"}, (), True, "listing is malformed"),
    ({"tar": "cat >/dev/null; echo 'tar: boom' >&2; exit 2\n"}, (), True, "did not start with a tar stream"),
    ({"python3": f"echo '/etc'; echo '$(touch {PWNED})'\n"}, ("python",), False, "could not find the sglang package"),
    ({"python3": "head -c 3000 /dev/urandom\n"}, ("python",), False, "could not find the sglang package"),
    ({"python3": "exit 1\n"}, ("python",), False, "could not find the sglang package"),
], ids=["no find", "no tar", "find fails", "find garbage", "find bad mtime", "tar fails", "python prints a path",
        "python prints binary", "python fails"])
def test_broken_remote_tools_give_one_clear_line(tmp_path, stand_ins, drop, root_given, expected):
    package = make_mini_package(tmp_path / "remote")
    home = tmp_path / "home"
    with _broken_remote(tmp_path, stand_ins, drop) as server:
        result = run_cli(["snapshot", "pull", *ssh_cli_args(server, package if root_given else None)], home)
    assert result.returncode == 3, result.stdout + result.stderr
    assert expected in one_error_line(result)
    assert not (home / "snapshots").exists() or Store(home / "snapshots").ids() == []
    assert not Path(PWNED).exists()


def test_links_devices_and_fifos_in_the_remote_tree_are_skipped_not_followed(tmp_path, sshd_server):
    package = make_mini_package(tmp_path / "remote")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("SECRET = 'outside-the-tree'\n")
    spec = package / "srt/speculative"
    (spec / "link_out.py").symlink_to(outside / "secret.py")
    (spec / "link_abs.py").symlink_to("/etc/passwd")
    (spec / "loop_a.py").symlink_to(spec / "loop_b.py")
    (spec / "loop_b.py").symlink_to(spec / "loop_a.py")
    (spec / "linked_dir").symlink_to(outside, target_is_directory=True)
    (spec / "self").symlink_to(spec, target_is_directory=True)
    os.mkfifo(spec / "pipe.py")
    os.mknod(spec / "null.py", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    os.link(outside / "secret.py", spec / "hardlinked.py")  # a hard link is the same regular file
    home = tmp_path / "home"
    result = run_cli(["snapshot", "pull", *ssh_cli_args(sshd_server, package)], home)
    assert result.returncode == 0, result.stderr
    manifest = json.loads(next((home / "snapshots").glob("*/manifest.json")).read_text())
    paths = [f["path"] for f in manifest["files"]]
    assert paths == sorted(MINI_SPECULATIVE + ["sglang/srt/speculative/hardlinked.py"])
    skipped = {(s["path"], s["reason"]) for s in manifest["skipped"]}
    assert skipped == {(f"sglang/srt/speculative/{n}", "not a regular file")
                       for n in ("link_out.py", "link_abs.py", "loop_a.py", "loop_b.py", "pipe.py", "null.py")} | {
        (f"sglang/srt/speculative/{n}", "symlink, not followed") for n in ("linked_dir", "self")}  # recorded, not dropped
    tree = next((home / "snapshots").glob("*/tree"))
    assert not any(p.is_symlink() or not (p.is_file() or p.is_dir()) for p in tree.rglob("*"))
    assert "root:" not in "".join(p.read_text() for p in tree.rglob("*.py"))


HOSTILE_ROOT = f"a b;touch {PWNED};$(id)'\""


def test_a_remote_root_named_like_a_command_runs_nothing(tmp_path, sshd_server):
    package = make_mini_package(tmp_path / HOSTILE_ROOT)
    pwned = Path(PWNED)
    before = pwned.stat().st_mtime_ns if pwned.exists() else None
    home = tmp_path / "home"
    result = run_cli(["snapshot", "pull", *ssh_cli_args(sshd_server, package)], home)
    assert result.returncode == 0, result.stderr
    shown = run_cli(["snapshot", "show", "latest", "--json"], home)
    data = json.loads(shown.stdout)
    assert data["root"] == str(package) and [f["path"] for f in data["files"]] == MINI_SPECULATIVE
    assert (pwned.stat().st_mtime_ns if pwned.exists() else None) == before
    # the same name, missing on the remote: one line naming the problem, still nothing run
    result = run_cli(["snapshot", "pull", *ssh_cli_args(sshd_server, tmp_path / "gone" / HOSTILE_ROOT)], home)
    assert result.returncode == 3 and "cannot enter the remote root" in one_error_line(result)
    assert (pwned.stat().st_mtime_ns if pwned.exists() else None) == before
