"""The Triton kernels against `tree.py` on CPU (interpreter) and compiled for sm_90 without a GPU.

Each check runs in a subprocess: TRITON_INTERPRET must be set before the kernels are defined.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None or importlib.util.find_spec("numpy") is None,
    reason="needs triton and numpy (pip install triton numpy)",
)

CHECK = Path(__file__).with_name("kernel_check.py")


def _run(mode: str, interpret: bool) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return subprocess.run([sys.executable, str(CHECK), mode], capture_output=True, text=True, env=env, timeout=900)


def test_kernels_match_the_reference_under_the_interpreter():
    result = _run("interpret", interpret=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "kernels match tree.py" in result.stdout


def test_kernels_compile_for_sm90_and_sm120():
    result = _run("compile", interpret=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "kernels compile for sm_90" in result.stdout and "kernels compile for sm_120" in result.stdout
