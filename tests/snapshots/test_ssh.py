"""The SSH source against a real private OpenSSH server on 127.0.0.1 (tests/support/sshd.py)."""

from __future__ import annotations

import hashlib
import io
import os
import pwd
import subprocess
import tarfile
from pathlib import Path

import pytest

from sgl_scan.errors import RemoteError
from sgl_scan.snapshots.progress import Progress
from sgl_scan.snapshots.ssh import pull_ssh
from sgl_scan.snapshots.store import Store
from tests.snapshots.conftest import MINI_SPECULATIVE, make_mini_package, ssh_params
from tests.support.gitrepo import make_repo, write_files
from tests.support.sshd import start_sshd

pytestmark = pytest.mark.slow


def _store(tmp_path) -> Store:
    return Store(tmp_path / "store")


def _tree_hashes(snapshot) -> dict[str, str]:
    return {f.path: f.sha256 for f in snapshot.manifest.files}


def _remote_hashes(package: Path, paths) -> dict[str, str]:
    return {p: hashlib.sha256((package / p[len("sglang/"):]).read_bytes()).hexdigest() for p in paths}


# -- host keys -----------------------------------------------------------------------------------

def test_first_contact_is_refused_without_accept_new_host_key(tmp_path, sshd_server, mini_package):
    known = tmp_path / "known_hosts"
    known.write_text("")
    params = ssh_params(sshd_server, mini_package, known_hosts=str(known))
    with pytest.raises(RemoteError, match=r"not known.*--accept-new-host-key"):
        pull_ssh(params, store=_store(tmp_path))
    assert _store(tmp_path).ids() == []
    snap = pull_ssh({**params, "accept_new_host_key": True}, store=_store(tmp_path)).snapshot
    assert known.read_text().split() == [sshd_server.known_hosts_name, *sshd_server.host_key_public.split()]
    assert [f.path for f in snap.manifest.files] == MINI_SPECULATIVE
    pull_ssh(params, store=_store(tmp_path))  # now trusted without the flag


def test_a_changed_host_key_is_always_refused(tmp_path, sshd_server, mini_package):
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    known = tmp_path / "known_hosts"
    known.write_text(f"{sshd_server.known_hosts_name} {Path(f'{other}.pub').read_text().split(' ', 2)[0]} "
                     f"{Path(f'{other}.pub').read_text().split()[1]}\n")
    params = ssh_params(sshd_server, mini_package, known_hosts=str(known))
    for accept in (False, True):
        with pytest.raises(RemoteError, match="CHANGED"):
            pull_ssh({**params, "accept_new_host_key": accept}, store=_store(tmp_path))
    assert _store(tmp_path).ids() == []
    assert len(known.read_text().splitlines()) == 1  # nothing was added


def test_malformed_lines_and_markers_for_other_keys_do_not_decide(tmp_path, sshd_server, mini_package):
    """Garbage, comments, unknown markers and marker lines naming other keys leave the decision to
    the plain line (what a marker naming *this* key does: tests/snapshots/test_known_hosts_policy.py)."""
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    other_key = " ".join(Path(f"{other}.pub").read_text().split()[:2])
    known = tmp_path / "known_hosts"
    known.write_text(
        f"@cert-authority *.example.com {other_key}\n@revoked * {other_key}\nthis line is garbage\n# comment\n"
        f"@bogus * {sshd_server.host_key_public}\n{sshd_server.known_hosts_name} {sshd_server.host_key_public}\n"
    )
    pull_ssh(ssh_params(sshd_server, mini_package, known_hosts=str(known)), store=_store(tmp_path))


# -- ~/.ssh/config --------------------------------------------------------------------------------

def test_ssh_config_alias_and_proxy_jump(tmp_path, sshd_server, mini_package):
    config = sshd_server.write_ssh_config(tmp_path / "config", "sglbox")
    params = {"host": "sglbox", "ssh_config": str(config), "known_hosts": str(sshd_server.known_hosts),
              "remote_root": str(mini_package)}
    snap = pull_ssh(params, store=_store(tmp_path)).snapshot
    assert snap.manifest.source["host"] == "sglbox"
    assert snap.manifest.source["hostname"] == "127.0.0.1" and snap.manifest.source["port"] == sshd_server.port
    assert snap.manifest.source["user"] == sshd_server.user and snap.manifest.source["jump"] == []
    # a second alias reached through the first one (ProxyJump = a direct-tcpip channel)
    with open(config, "a") as handle:
        handle.write(f"Host behind\n  HostName 127.0.0.1\n  Port {sshd_server.port}\n  User {sshd_server.user}\n"
                     f"  IdentityFile {sshd_server.client_key}\n  ProxyJump sglbox\n")
    snap = pull_ssh({**params, "host": "behind"}, store=Store(tmp_path / "store2")).snapshot
    assert snap.manifest.source["jump"] == [f"{sshd_server.user}@127.0.0.1:{sshd_server.port}"]
    assert [f.path for f in snap.manifest.files] == MINI_SPECULATIVE


# -- finding the tree ------------------------------------------------------------------------------

def test_remote_python_locates_the_package(tmp_path, mini_package):
    with start_sshd(tmp_path / "sshd", home=tmp_path / "home",
                    env={"PYTHONPATH": str(mini_package.parent)}) as server:
        snap = pull_ssh(ssh_params(server, None), store=_store(tmp_path)).snapshot
    assert snap.manifest.root == str(mini_package.resolve())
    assert snap.manifest.source["found_by"] in ("python3", "python")
    assert snap.manifest.sglang_version == "9.9.9"


def _remote_python_finds_sglang() -> bool:
    probe = subprocess.run(["/usr/bin/env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin", "python3", "-c",
                            "import importlib.util as u; print(u.find_spec('sglang') is not None)"],
                           capture_output=True, text=True)
    return probe.stdout.strip() == "True"


def test_fallback_path_under_home_is_used(tmp_path):
    if _remote_python_finds_sglang():
        pytest.skip("this machine's python3 has sglang installed; the fallback would not be reached")
    home = tmp_path / "home"
    package = make_mini_package(home / "sglang" / "python")
    with start_sshd(tmp_path / "sshd", home=home) as server:
        snap = pull_ssh(ssh_params(server, None), store=_store(tmp_path)).snapshot
    assert snap.manifest.root == str(package.resolve())
    assert snap.manifest.source["found_by"] == "fallback"


def test_a_remote_python_printing_garbage_is_not_trusted(tmp_path):
    if _remote_python_finds_sglang():
        pytest.skip("this machine's python3 has sglang installed")
    site = tmp_path / "site"
    write_files(site, {"sitecustomize.py": "import sys\nprint('garbage\\x00 /etc ;rm -rf /')\nsys.exit(0)\n"})
    with start_sshd(tmp_path / "sshd", home=tmp_path / "home", env={"PYTHONPATH": str(site)}) as server:
        with pytest.raises(RemoteError, match="could not find the sglang package.*--remote-root"):
            pull_ssh(ssh_params(server, None), store=_store(tmp_path))
    assert _store(tmp_path).ids() == []


# -- git state ------------------------------------------------------------------------------------

def test_a_dirty_checkout_is_recorded_with_its_diff(tmp_path, sshd_server):
    checkout = tmp_path / "sglang-checkout"
    make_mini_package(checkout / "python")
    repo = make_repo(checkout, branch="main")
    write_files(checkout, {})
    repo.git.add(A=True)
    from tests.support.gitrepo import commit_all

    sha = commit_all(repo, "import")
    with open(checkout / "python/sglang/srt/server_args.py", "a") as handle:
        handle.write("LOCAL_PATCH = True\n")
    snap = pull_ssh(ssh_params(sshd_server, checkout / "python" / "sglang"), store=_store(tmp_path)).snapshot
    git = snap.manifest.git
    assert (git.commit, git.branch, git.dirty) == (sha, "main", True)
    patch = (snap.folder / git.patch).read_text()
    assert "+LOCAL_PATCH = True" in patch and "python/sglang/srt/server_args.py" in patch
    # a clean checkout records no patch
    repo.git.checkout("--", ".")
    snap = pull_ssh(ssh_params(sshd_server, checkout / "python" / "sglang"), store=_store(tmp_path)).snapshot
    assert snap.manifest.git.dirty is False and snap.manifest.git.patch is None


# -- incremental re-pull ----------------------------------------------------------------------------

def test_incremental_re_pull_transfers_only_changes(tmp_path, sshd_server, mini_package):
    store = _store(tmp_path)
    params = ssh_params(sshd_server, mini_package)
    first = pull_ssh(params, store=store)
    assert set(first.fetched) == {p[len("sglang/"):] for p in MINI_SPECULATIVE} and first.base is None
    for rel in ("srt/server_args.py", "srt/speculative/spec_info.py", "srt/managers/scheduler.py"):
        with open(mini_package / rel, "a") as handle:
            handle.write("# changed on the remote\n")
    (mini_package / "srt/speculative/new worker.py").write_text("NEW = 1\n")  # a name with a space
    (mini_package / "srt/arg_groups/spec.py").unlink()
    second = pull_ssh(params, store=store)
    assert sorted(second.fetched) == sorted([
        "srt/server_args.py", "srt/speculative/spec_info.py", "srt/managers/scheduler.py",
        "srt/speculative/new worker.py",
    ])
    assert second.base == first.snapshot.id and len(second.reused) == len(MINI_SPECULATIVE) - 4
    paths = [f.path for f in second.snapshot.manifest.files]
    assert "sglang/srt/arg_groups/spec.py" not in paths and "sglang/srt/speculative/new worker.py" in paths
    assert _tree_hashes(second.snapshot) == _remote_hashes(mini_package, paths)
    store.open(second.snapshot.id)  # every hash verifies
    store.open(first.snapshot.id)  # the earlier snapshot is untouched
    third = pull_ssh(params, store=store)
    assert third.unchanged and third.fetched == () and third.snapshot.id == second.snapshot.id


# -- hostile names and servers ----------------------------------------------------------------------

# The marker an injected command would touch: a name of this run's own, so a file another run (or
# process) left in /tmp, the home or the working folder can neither fail nor hide this test.
PWNED = f"pwned-sglscan-{os.getpid()}-{os.urandom(4).hex()}"
HOSTILE = f"a b;touch {PWNED};$(touch {PWNED})'\"`touch {PWNED}`"


def test_a_hostile_remote_root_name_runs_nothing(tmp_path, sshd_server):
    package = make_mini_package(tmp_path / HOSTILE)
    places = [Path(pwd.getpwuid(os.getuid()).pw_dir), tmp_path / "remote-home", tmp_path, Path("/tmp"), Path.cwd()]
    before = {p for p in places if (p / PWNED).exists()}
    snap = pull_ssh(ssh_params(sshd_server, package), store=_store(tmp_path)).snapshot
    assert snap.manifest.root == str(package)
    assert [f.path for f in snap.manifest.files] == MINI_SPECULATIVE
    assert {p for p in places if (p / PWNED).exists()} == before == set()


class _KillAfter(Progress):
    def __init__(self, server, threshold):
        super().__init__("test", enabled=False)
        self.server, self.threshold, self.killed = server, threshold, 0

    def update(self, text, *, force=False):
        if "received" in text and not self.killed:
            amount = float(text.split()[0]) * (1024**2 if "MB" in text else 1024 if "KB" in text else 1)
            if amount > self.threshold:
                self.killed = self.server.kill_sessions()


def test_server_killed_mid_transfer_writes_nothing_and_keeps_the_old_snapshot(tmp_path, sshd_server, real_package):
    store = _store(tmp_path)
    params = ssh_params(sshd_server, real_package)
    old = pull_ssh(params, store=store).snapshot
    killer = _KillAfter(sshd_server, threshold=2 * 1024**2)
    with pytest.raises(RemoteError):
        pull_ssh({**params, "scope": "full"}, store=store, progress=killer)
    assert killer.killed > 0
    assert store.ids() == [old.id]
    store.open(old.id)
    assert list((store.root / ".staging").iterdir()) == []


def test_a_file_vanishing_during_the_pull_fails_cleanly(tmp_path, sshd_server, mini_package):
    store = _store(tmp_path)
    params = ssh_params(sshd_server, mini_package)
    with pytest.raises(RemoteError, match="ended before|remote tar failed"):
        pull_ssh(params, store=store, before_transfer=lambda names: (mini_package / names[0]).unlink())
    assert store.ids() == []


def _home_with_path(home: Path, path_dirs: list[Path]) -> Path:
    """A private remote HOME whose .bashrc (sourced by bash under sshd) sets PATH."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".bashrc").write_text(f"PATH={':'.join(map(str, path_dirs))}\nexport PATH\n")
    return home


def test_a_stand_in_tar_streaming_a_hostile_archive_is_refused(tmp_path, mini_package):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        link = tarfile.TarInfo("srt/server_args.py")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    (tmp_path / "hostile.tar").write_bytes(buf.getvalue())
    fakebin = tmp_path / "fakebin"
    write_files(fakebin, {"tar": f"#!/bin/sh\ncat >/dev/null\ncat '{tmp_path / 'hostile.tar'}'\n"})
    (fakebin / "tar").chmod(0o755)
    store = _store(tmp_path)
    with start_sshd(tmp_path / "sshd-good", home=tmp_path / "home") as server:
        old = pull_ssh(ssh_params(server, mini_package), store=store).snapshot
    (mini_package / "srt/server_args.py").write_text("changed = True\n")
    home = _home_with_path(tmp_path / "home2", [fakebin, Path("/usr/bin"), Path("/bin")])
    with start_sshd(tmp_path / "sshd", home=home) as server:
        with pytest.raises(RemoteError, match="refusing link in tar stream.*etc.passwd"):
            pull_ssh(ssh_params(server, mini_package), store=store)
    assert store.ids() == [old.id]
    store.open(old.id)


def test_a_remote_without_tar_is_a_clear_error(tmp_path, mini_package):
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("sh", "find", "grep", "head", "git", "python3"):
        found = subprocess.run(["sh", "-c", f"command -v {name}"], capture_output=True, text=True).stdout.strip()
        if found:
            (tools / name).symlink_to(found)
    with start_sshd(tmp_path / "sshd", home=_home_with_path(tmp_path / "home", [tools])) as server:
        with pytest.raises(RemoteError, match="no 'tar' command"):
            pull_ssh(ssh_params(server, mini_package), store=_store(tmp_path))


def test_limits_skip_big_files_and_refuse_big_pulls(tmp_path, sshd_server, mini_package):
    (mini_package / "srt/speculative/huge.py").write_text("x = 1\n" * 20000)
    snap = pull_ssh(ssh_params(sshd_server, mini_package, max_file_size=50_000), store=_store(tmp_path)).snapshot
    assert [(s.path, s.reason.split(" (")[0]) for s in snap.manifest.skipped] == [
        ("sglang/srt/speculative/huge.py", "larger than --max-file-size")]
    with pytest.raises(RemoteError, match="max-bytes"):
        pull_ssh(ssh_params(sshd_server, mini_package, max_bytes=10_000), store=_store(tmp_path))
    with pytest.raises(RemoteError, match="max-files"):
        pull_ssh(ssh_params(sshd_server, mini_package, max_files=3), store=_store(tmp_path))


def test_ssh_agent_keys_are_used(tmp_path, sshd_server, mini_package, monkeypatch):
    home = tmp_path / "client-home"  # no ~/.ssh/id_* keys: only the agent can authenticate
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        agent.stdout.readline()  # the agent prints its environment once it listens
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run(["ssh-add", "-q", str(sshd_server.client_key)], env=env, check=True, capture_output=True)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        params = {**ssh_params(sshd_server, mini_package), "identity": None}
        snap = pull_ssh(params, store=_store(tmp_path)).snapshot
        assert [f.path for f in snap.manifest.files] == MINI_SPECULATIVE
        monkeypatch.delenv("SSH_AUTH_SOCK")
        with pytest.raises(RemoteError, match="authentication failed"):
            pull_ssh(params, store=Store(tmp_path / "store2"))
    finally:
        agent.terminate()
        agent.wait()
