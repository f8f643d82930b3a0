"""Sources never run what they fetch and read nothing beyond the limits (issue 20, cases 2, 4, 5).

The bombs are small here (a 24 MB member or blob or file of zeros under --max-file-size 1M) and
Python's own allocations are measured: a search that reads the member whole allocates its size.
"""

from __future__ import annotations

import base64
import io
import random
import tarfile
import tracemalloc
import zipfile

import pytest

from sgl_scan.errors import ConfigError, SnapshotError
from sgl_scan.snapshots import scope
from sgl_scan.snapshots.git import pull_git
from sgl_scan.snapshots.local import pull_local
from sgl_scan.snapshots.store import Store
from sgl_scan.snapshots.wheel import pull_pip
from tests.snapshots.conftest import make_mini_package
from tests.support.gitrepo import commit_all, make_repo

BOMB = 24 << 20
LIMIT = 1 << 20


def _peak(pull) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = pull()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _bomb_bytes() -> bytes:
    return b"# SpeculativeAlgorithm\n" + b"\0" * BOMB


def _wheel(path, extra: dict[str, bytes]):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("sglang/version.py", '__version__ = "9.9.6"\n')
        archive.writestr("sglang/srt/speculative/spec_info.py", "class SpeculativeAlgorithm:\n    EAGLE = 1\n")
        for name, data in extra.items():
            archive.writestr(name, data)
    return path


def _oversized(snapshot, rel):
    return [s.reason for s in snapshot.manifest.skipped if s.path == "sglang/" + rel]


def test_pip_member_over_the_limit_is_skipped_unread(tmp_path):
    wheel = _wheel(tmp_path / "sglang-9.9.6-py3-none-any.whl", {"sglang/srt/managers/bomb.py": _bomb_bytes()})
    snap, peak = _peak(lambda: pull_pip({"pip_spec": str(wheel), "max_file_size": LIMIT}, store=Store(tmp_path / "store")))
    assert _oversized(snap, "srt/managers/bomb.py") and peak < BOMB // 3


def test_git_blob_over_the_limit_is_skipped_unread(tmp_path):
    root = tmp_path / "repo"
    package = make_mini_package(root / "python")
    (package / "srt/models/bomb.py").write_bytes(_bomb_bytes())
    repo = make_repo(root, branch="main")
    commit_all(repo, "bomb")
    (package / "srt/models/bomb.py").unlink()
    snap, peak = _peak(lambda: pull_git({"git_repo": str(root), "max_file_size": LIMIT}, store=Store(tmp_path / "store")))
    assert _oversized(snap, "srt/models/bomb.py") and peak < BOMB // 3


def test_local_file_over_the_limit_is_skipped_unread(tmp_path):
    package = make_mini_package(tmp_path / "tree")
    with open(package / "srt/models/big.py", "wb") as handle:
        handle.truncate(BOMB)  # sparse: no disk used
    snap, peak = _peak(lambda: pull_local({"local_path": str(package), "max_file_size": LIMIT}, store=Store(tmp_path / "store")))
    assert _oversized(snap, "srt/models/big.py") and peak < BOMB // 3


def test_pip_applies_max_files_and_max_bytes(tmp_path):
    fillers = {f"sglang/srt/speculative/filler_{i}.py": b"x = 0\n" * 40_000 for i in range(6)}
    wheel = _wheel(tmp_path / "sglang-9.9.4-py3-none-any.whl", fillers)
    with pytest.raises(SnapshotError, match="--max-files 5"):
        pull_pip({"pip_spec": str(wheel), "max_files": 5}, store=Store(tmp_path / "store"))
    with pytest.raises(SnapshotError, match="--max-bytes"):
        pull_pip({"pip_spec": str(wheel), "max_bytes": LIMIT}, store=Store(tmp_path / "store"))
    assert not list((tmp_path / "store").glob("2*"))


def test_git_applies_max_files_and_max_bytes(tmp_path):
    root = tmp_path / "repo"
    package = make_mini_package(root / "python")
    for i in range(4):
        (package / f"srt/speculative/filler_{i}.py").write_text("x = 0\n" * 60_000)
    commit_all(make_repo(root, branch="main"), "fillers")
    with pytest.raises(SnapshotError, match="--max-files 5"):
        pull_git({"git_repo": str(root), "max_files": 5}, store=Store(tmp_path / "store"))
    with pytest.raises(SnapshotError, match="--max-bytes"):
        pull_git({"git_repo": str(root), "max_bytes": LIMIT}, store=Store(tmp_path / "store"))


def test_pip_never_builds_an_sdist(tmp_path, monkeypatch):
    """An index offering only an sdist: pip would run its build backend to prepare metadata."""
    version, marker = "9.9.7", tmp_path / "SDIST_CODE_RAN"
    source = tmp_path / f"sglang-{version}"
    (source / "sglang/srt/speculative").mkdir(parents=True)
    (source / "sglang/srt/speculative/spec_info.py").write_text("class SpeculativeAlgorithm:\n    EAGLE = 1\n")
    (source / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "evilbackend"\nbackend-path = ["."]\n')
    (source / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n")
    (source / "evilbackend.py").write_text(
        "import pathlib\n"
        f"pathlib.Path({str(marker)!r}).write_text('ran')\n"
        "def get_requires_for_build_wheel(config_settings=None):\n    return []\n"
        "def prepare_metadata_for_build_wheel(d, config_settings=None):\n"
        f"    p = pathlib.Path(d) / 'sglang-{version}.dist-info'\n    p.mkdir()\n"
        f"    (p / 'METADATA').write_text('Metadata-Version: 2.1\\nName: sglang\\nVersion: {version}\\n')\n"
        "    return p.name\n"
    )
    links = tmp_path / "links"
    links.mkdir()
    with tarfile.open(links / f"sglang-{version}.tar.gz", "w:gz") as archive:
        archive.add(source, arcname=source.name)
    monkeypatch.setenv("SGLSCAN_DOWNLOADS", str(tmp_path / "downloads"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    with pytest.raises(SnapshotError, match="only wheels"):
        pull_pip({"pip_spec": f"sglang=={version}"}, store=Store(tmp_path / "store"))
    assert not marker.exists()
    # the same sdist given as a file is read as an archive, never built
    snap = pull_pip({"pip_spec": str(links / f"sglang-{version}.tar.gz")}, store=Store(tmp_path / "store"))
    assert "sglang/srt/speculative/spec_info.py" in {f.path for f in snap.manifest.files} and not marker.exists()


@pytest.mark.parametrize("spec", ["sglang @ git+https://127.0.0.1/x.git", "sglang[all]==0.5.23", "sglang==1; python_version>'3'",
                                  "sglang==0.5.23 --index-url http://127.0.0.1:9/"])
def test_pip_takes_version_clauses_only(tmp_path, spec):
    with pytest.raises(ConfigError, match="version clauses only"):
        pull_pip({"pip_spec": spec}, store=Store(tmp_path / "store"))


def test_streamed_search_agrees_with_the_whole_file_search(monkeypatch):
    rng = random.Random(7)
    tokens = [b"d2t", b"t2d", b"x", b"_", b" ", b"\n", b"SpeculativeAlgorithm", b"spec_algorithm", b"9", b"\0"]
    for chunk in (1, 2, 3, 7, 64):
        monkeypatch.setattr(scope, "SEARCH_CHUNK", chunk)
        for _ in range(400):
            data = b"".join(rng.choice(tokens) for _ in range(rng.randint(0, 30)))
            for pattern in (scope.VOCAB_PATTERN, scope.SPEC_ALGO_PATTERN):
                assert scope.matches_stream(pattern, io.BytesIO(data), 1 << 30) == scope.matches(pattern, data), (chunk, data)


@pytest.fixture
def authenticated_git_server(tmp_path):
    """A loopback dumb-HTTP git server that answers only with `Authorization: Basic alice:SeCrEt…`."""
    import functools
    import http.server
    import threading

    import git

    source = tmp_path / "src"
    make_mini_package(source / "python")
    commit_all(make_repo(source, branch="main"), "init")
    served = tmp_path / "srv"
    git.Repo.clone_from(str(source), served / "repo.git", bare=True).git.update_server_info()
    expected = "Basic " + base64.b64encode(b"alice:SeCrEtToKeN123").decode()
    seen: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            seen.append(self.headers.get("Authorization") or "")
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="x"')
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://alice:SeCrEtToKeN123@127.0.0.1:{server.server_port}/repo.git", seen
    finally:
        server.shutdown()
        server.server_close()


def test_a_url_credential_is_sent_but_never_stored(tmp_path, authenticated_git_server):
    url, seen = authenticated_git_server
    home = tmp_path / "sgl-scan-home"
    for _ in range(2):  # clone, then fetch into the cached clone
        snap = pull_git({"git_repo": url}, store=Store(tmp_path / "store"))
        assert snap.manifest.source["repo"].startswith("http://***@127.0.0.1:")
    assert seen and all(h.startswith("Basic ") for h in seen)  # git authenticated every request it made
    encoded = base64.b64encode(b"alice:SeCrEtToKeN123")
    assert not [p for p in home.rglob("*") if p.is_file() and (b"SeCrEtToKeN123" in p.read_bytes() or encoded in p.read_bytes())]
    assert (home / "git").stat().st_mode & 0o777 == 0o700


def test_wheel_members_with_dotdot_absolute_paths_or_links_never_leave_the_snapshot(tmp_path):
    import stat as stat_module

    def wheel(kind):
        path = tmp_path / f"sglang-9.9.{len(kind)}-py3-none-any.whl"
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("sglang/version.py", '__version__ = "9.9.9"\n')
            archive.writestr("sglang/srt/speculative/spec_info.py", "class SpeculativeAlgorithm:\n    EAGLE = 1\n")
            if kind == "dotdot":
                archive.writestr("sglang/srt/speculative/../../../../escape.py", "x = 1\n")
            elif kind == "absolute":
                archive.writestr("/abs/sglang/srt/speculative/escape.py", "x = 1\n")
            else:
                info = zipfile.ZipInfo("sglang/srt/speculative/link.py")
                info.external_attr = (stat_module.S_IFLNK | 0o777) << 16
                archive.writestr(info, "/etc/passwd")
        return path

    with pytest.raises(SnapshotError, match="unsafe path"):
        pull_pip({"pip_spec": str(wheel("dotdot"))}, store=Store(tmp_path / "store"))
    snap = pull_pip({"pip_spec": str(wheel("absolute"))}, store=Store(tmp_path / "store"))
    assert sorted(f.path for f in snap.manifest.files) == ["sglang/srt/speculative/spec_info.py", "sglang/version.py"]
    snap = pull_pip({"pip_spec": str(wheel("link"))}, store=Store(tmp_path / "store"))
    link = snap.tree / "sglang/srt/speculative/link.py"
    assert not link.is_symlink() and link.read_bytes() == b"/etc/passwd"  # the entry's text, never the target
    assert not list(tmp_path.rglob("escape.py"))
