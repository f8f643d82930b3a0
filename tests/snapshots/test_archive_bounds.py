"""Every read of a wheel or sdist is bounded by what sgl-scan chose, not by what the archive claims
(issue 31): a member that declares 100 B and inflates to hundreds of MB is cut at its declared size
and refused in one line (no BadZipFile internal error, small RSS); listings are counted against
--max-files while they are read; a member that is both `x.py` and `x.py/y.py` is one line."""

from __future__ import annotations

import io
import resource
import struct
import subprocess
import sys
import tarfile
import textwrap
import zipfile
import zlib

import pytest

from sgl_scan.errors import SnapshotError
from sgl_scan.snapshots.store import Store
from sgl_scan.snapshots.wheel import pull_pip
from tests.reliability.remote import entry_point

BASE = {"sglang/version.py": b'__version__ = "9.1.0"\n',
        "sglang/srt/speculative/spec_info.py": b"class EagleWorker: pass\n"}


def lying_wheel(path, name: str, inflated_mib: int) -> None:
    """A wheel whose member `name` declares 100 bytes but whose deflate data inflates to `inflated_mib` MiB
    (the member's local and central headers are rewritten; CRC and sizes stay those of 100 bytes)."""
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    comp = b"".join(co.compress(b"\0" * (1 << 20)) for _ in range(inflated_mib)) + co.flush()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for member, data in BASE.items():
            z.writestr(member, data)
        z.writestr(zipfile.ZipInfo(name), b"x" * 100)
    data = bytearray(buf.getvalue())
    info = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo(name)
    lh = info.header_offset
    nlen, xlen = struct.unpack_from("<HH", data, lh + 26)
    start = lh + 30 + nlen + xlen
    new = data[:start] + comp + data[start + info.compress_size:]
    delta = len(comp) - info.compress_size
    struct.pack_into("<H", new, lh + 8, 8)
    struct.pack_into("<I", new, lh + 18, len(comp))
    pos = bytes(new).find(b"PK\x01\x02")
    while pos != -1:
        n = struct.unpack_from("<H", new, pos + 28)[0]
        if bytes(new[pos + 46:pos + 46 + n]) == name.encode():
            struct.pack_into("<H", new, pos + 10, 8)
            struct.pack_into("<I", new, pos + 20, len(comp))
        off = struct.unpack_from("<I", new, pos + 42)[0]
        if off > lh:
            struct.pack_into("<I", new, pos + 42, off + delta)
        pos = bytes(new).find(b"PK\x01\x02", pos + 4)
    end = bytes(new).rfind(b"PK\x05\x06")
    struct.pack_into("<I", new, end + 16, struct.unpack_from("<I", new, end + 16)[0] + delta)
    path.write_bytes(bytes(new))


@pytest.mark.parametrize("member", [
    "sglang/srt/speculative/eagle_worker.py",  # taken by its path
    "sglang/srt/layers/sampler.py",  # searched by content first (scope speculative)
])
def test_a_member_inflating_past_its_declared_size_is_refused_with_small_memory(tmp_path, member):
    wheel = tmp_path / "sglang-9.1.0-py3-none-any.whl"
    lying_wheel(wheel, member, 400)
    script = textwrap.dedent("""
        import resource, subprocess, sys
        p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=300)
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, p.returncode)
        sys.stderr.write(p.stderr)
    """)
    args = entry_point() + ["--pip", str(wheel), "--max-file-size", "1000"]
    result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300,
                            env={**__import__("os").environ, "SGLSCAN_HOME": str(tmp_path / "home")})
    rss, rc = map(int, result.stdout.split())
    assert rss < 250, f"peak RSS {rss} MB: the member was inflated whole"
    assert rc == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr and "internal error" not in lines[0], result.stderr
    assert member.removeprefix("sglang/") in lines[0] and "refusing" in lines[0]


def _wheel(path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in {**BASE, **members}.items():
            z.writestr(name, data)


def test_zip_listing_is_counted_against_max_files(tmp_path):
    wheel = tmp_path / "sglang-9.1.0-py3-none-any.whl"
    _wheel(wheel, {f"sglang/data/f{i}.txt": b"" for i in range(50)})
    with pytest.raises(SnapshotError, match="--max-files 20"):
        pull_pip({"pip_spec": str(wheel), "max_files": 20}, store=Store(tmp_path / "s"))
    # the end record may lie about the count: the central directory itself is counted
    data = bytearray(wheel.read_bytes())
    end = bytes(data).rfind(b"PK\x05\x06")
    struct.pack_into("<HH", data, end + 8, 3, 3)
    wheel.write_bytes(bytes(data))
    with pytest.raises(SnapshotError, match="more than --max-files 20"):
        pull_pip({"pip_spec": str(wheel), "max_files": 20}, store=Store(tmp_path / "s"))


def test_tar_listing_is_counted_against_max_files(tmp_path):
    sdist = tmp_path / "sglang-9.1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        for name, data in list(BASE.items()) + [(f"sglang/data/f{i}.txt", b"") for i in range(50)]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(SnapshotError, match="more than --max-files 20"):
        pull_pip({"pip_spec": str(sdist), "max_files": 20}, store=Store(tmp_path / "s"))
    assert pull_pip({"pip_spec": str(sdist), "scope": "full"}, store=Store(tmp_path / "s")).manifest.files


@pytest.mark.parametrize("order", ["file first", "folder first"])
def test_a_member_that_is_both_a_file_and_a_folder_is_one_line(tmp_path, order):
    wheel = tmp_path / "sglang-9.1.0-py3-none-any.whl"
    members = [("sglang/srt/speculative/x.py", b"A = 1\n"), ("sglang/srt/speculative/x.py/y.py", b"B = 2\n")]
    if order == "folder first":
        members.reverse()
    _wheel(wheel, dict(members))
    with pytest.raises(SnapshotError, match="both as a file and as a folder"):
        pull_pip({"pip_spec": str(wheel), "scope": "full"}, store=Store(tmp_path / "s"))
    home = tmp_path / "home"
    result = subprocess.run(entry_point() + ["--pip", str(wheel), "--scope", "full"], capture_output=True,
                            text=True, timeout=120, env={**__import__("os").environ, "SGLSCAN_HOME": str(home)})
    assert result.returncode == 3
    assert result.stderr.count("\n") == 1 and "internal error" not in result.stderr, result.stderr


def test_a_damaged_member_is_one_line(tmp_path):
    wheel = tmp_path / "sglang-9.1.0-py3-none-any.whl"
    _wheel(wheel, {"sglang/srt/speculative/w.py": b"W = 1\n" * 50})
    data = bytearray(wheel.read_bytes())
    at = bytes(data).find(b"W = 1\n")
    data[at] = ord("Q")  # stored (not deflated): the CRC no longer matches
    wheel.write_bytes(bytes(data))
    with pytest.raises(SnapshotError, match=r"'srt/speculative/w.py' is damaged or hostile \(Bad CRC-32"):
        pull_pip({"pip_spec": str(wheel), "scope": "full"}, store=Store(tmp_path / "s"))


def test_pip_download_from_an_index_that_never_answers_ends_at_timeout(tmp_path):
    """issue 31: every wait is bounded; `pip download` against a loopback index that accepts and
    never answers is killed at --timeout, one line, exit 3."""
    import os
    import socket
    import time

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)  # accepted by the kernel, never answered
    try:
        env = {**os.environ, "SGLSCAN_HOME": str(tmp_path / "home"), "SGLSCAN_DOWNLOADS": str(tmp_path / "dl"),
               "PIP_INDEX_URL": f"http://127.0.0.1:{server.getsockname()[1]}/simple", "PIP_TIMEOUT": "600",
               "PIP_RETRIES": "0", "PIP_CONFIG_FILE": os.devnull}
        start = time.monotonic()
        result = subprocess.run(entry_point() + ["--pip", "sglang==9.9.9", "--timeout", "4"], capture_output=True,
                                text=True, timeout=120, env=env)
        assert time.monotonic() - start < 60
    finally:
        server.close()
    assert result.returncode == 3
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "did not finish within 4 s (--timeout)" in lines[0], result.stderr
