"""`--git` inputs that used to end in Python errors or wait forever (issue 31, 5): `ext::`/`fd::`
transports and option-like arguments, revisions gitpython could not parse (`@{-1}`), a server that
accepts and never answers (the clone has a deadline, --timeout), a clone larger than --max-bytes."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time

import pytest

from tests.support.cli import run_main


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in err and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("spec", ["ext::sh -c touch% {mark}", "fd::3", "--upload-pack=touch {mark}", "EXT::sh -c touch% {mark}"])
def test_command_transports_and_options_are_usage_errors(capsys, tmp_path, spec):
    mark = tmp_path / "PWNED"
    code, out, err = run_main(capsys, "snapshot", "pull", "--git", spec.format(mark=mark))
    assert code == 2 and "not a repository path or a URL sgl-scan fetches" in _one_line(err)
    assert not mark.exists()


def _repo(root, *files):
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for rel, data in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "x"], check=True, env=env)


PACKAGE = (("python/sglang/version.py", b'__version__ = "0.5.23"\n'),
           ("python/sglang/srt/speculative/eagle_worker.py", b"class EagleWorker:\n    pass\n"))


@pytest.mark.parametrize("rev", ["@{-1}", "HEAD@{5}", "-x", "HEAD^{tree}", "nope~2"])
def test_revisions_git_cannot_resolve_are_one_line(capsys, tmp_path, rev):
    _repo(tmp_path / "r", *PACKAGE)
    code, out, err = run_main(capsys, "snapshot", "pull", "--git", str(tmp_path / "r"), "--rev", rev)
    assert code == 3 and "unknown revision" in _one_line(err)


def test_a_server_that_never_answers_meets_the_deadline(capsys, tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    held = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])  # accepted, never answered
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        port = server.getsockname()[1]
        started = time.monotonic()
        code, out, err = run_main(capsys, "snapshot", "pull", "--git", f"git://127.0.0.1:{port}/sglang", "--timeout", "2")
        assert code == 3 and "no complete answer within 2 s (--timeout)" in _one_line(err)
        assert time.monotonic() - started < 30
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


def test_a_clone_larger_than_max_bytes_is_refused(capsys, tmp_path):
    _repo(tmp_path / "big", *PACKAGE, ("blob.bin", os.urandom(3 * 1024 * 1024)))
    code, out, err = run_main(capsys, "snapshot", "pull", "--git", (tmp_path / "big").as_uri(), "--max-bytes", "1M")
    assert code == 3 and "more than --max-bytes 1.0 MB" in _one_line(err)
    code, out, err = run_main(capsys, "snapshot", "pull", "--git", (tmp_path / "big").as_uri())
    assert code == 0, err
