"""`sgl_scan.cli.run`, the process's entry point, ends the process without tearing the interpreter
down, but loses nothing: main's exit code, everything written to stdout and stderr, the exit handlers
(a kept process pool, logs, temporary folders); and where that is not safe (another thread still
runs, a profiler writes its data after the program) it exits as Python does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _python(code: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, SGLSCAN_HOME=str(tmp_path / "home"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env.pop("PYTHONUNBUFFERED", None)  # buffered, as a user's is: what is not flushed is lost
    return subprocess.run([sys.executable, *args, "-c", code], capture_output=True, text=True, env=env, timeout=120)


_RUN = """
import atexit, sys
from sgl_scan.cli import run
atexit.register(lambda: sys.stdout.write("|exit handler ran"))  # no newline: only a flush sends it
sys.stdout.write("x" * 200000)  # more than a pipe's buffer: flushed before the end
sys.argv = ["sgl-scan", *{args!r}]
run()
"""


def test_run_keeps_the_exit_code_the_output_and_the_exit_handlers(tmp_path):
    done = _python(_RUN.format(args=["--version"]), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("x" * 200000) and "sgl-scan" in done.stdout[200000:]
    assert done.stdout.endswith("|exit handler ran") and not done.stderr
    refused = _python(_RUN.format(args=["scan", "--path", str(tmp_path / "missing")]), tmp_path)
    assert refused.returncode not in (0, 1) and "error:" in refused.stderr
    assert refused.stdout.endswith("|exit handler ran")


def test_run_exits_as_python_does_while_another_thread_runs(tmp_path):
    marker = tmp_path / "written-by-the-thread"
    code = f"""
import sys, threading, time
from pathlib import Path
from sgl_scan.cli import run
def later():
    time.sleep(0.5)
    Path({str(marker)!r}).write_text("done")
threading.Thread(target=later).start()
sys.argv = ["sgl-scan", "--version"]
run()
"""
    done = _python(code, tmp_path)
    assert done.returncode == 0 and marker.read_text() == "done"  # not cut off by the exit


def test_a_profiled_run_writes_its_profile(tmp_path):
    out = tmp_path / "run.prof"
    env = dict(os.environ, SGLSCAN_HOME=str(tmp_path / "home"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "sgl_scan", "--version"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 0  # (the bench's `--profile` reads it)
