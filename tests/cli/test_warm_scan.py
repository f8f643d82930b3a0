"""The warm path on a real release: the same report, byte for byte, no libcst (every extractor reads the
stdlib ast), and no per-file facts read when the rules' findings are kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Runs the CLI, then says on stderr which of the heavy modules the process ever imported.
_DRIVER = """
import sys
from sgl_scan.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = ("libcst", "networkx", "multiprocessing", "sgl_scan.analyzer.facts")
print("IMPORTED", " ".join(sorted(m for m in heavy if m in sys.modules)), file=sys.stderr)
sys.exit(code)
"""


def _run(args, home: Path, cwd: Path) -> tuple[bytes, set[str]]:
    env = dict(os.environ, SGLSCAN_HOME=str(home), PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, "-c", _DRIVER, *args], capture_output=True, env=env, cwd=cwd, timeout=900)
    assert result.returncode in (0, 1), result.stderr.decode(errors="replace")[-2000:]
    line = next(x for x in result.stderr.decode().splitlines() if x.startswith("IMPORTED"))
    return result.stdout, set(line.split()[1:])


@pytest.mark.slow
def test_warm_report_is_the_cold_report_and_loads_no_libcst(sglang_0_5_23, tmp_path):
    home = tmp_path / "home"
    args = ["scan", "--path", str(sglang_0_5_23 / "sglang"), "--format", "json"]
    cold, cold_modules = _run(args, home, tmp_path)
    assert "libcst" not in cold_modules  # every extractor reads the stdlib ast
    warm, warm_modules = _run(args, home, tmp_path)
    again, _ = _run(args, home, tmp_path)
    assert warm == cold and again == cold  # byte for byte
    assert json.loads(warm)["inventory"]["algorithms"]
    assert not warm_modules & {"libcst", "networkx", "multiprocessing"}
    assert "sgl_scan.analyzer.facts" in cold_modules
    assert "sgl_scan.analyzer.facts" not in warm_modules  # the rules' findings were kept: no facts read


def test_an_ast_only_scan_never_imports_libcst(tmp_path):
    """Files that only the stdlib-`ast` extractors read (dispatch, d2t): libcst is never loaded, cold or warm."""
    package = tmp_path / "src" / "sglang"
    files = {
        "version.py": '__version__ = "9.9.9"\n',
        "srt/speculative/worker.py": (
            "def pick(server_args):\n"
            "    if server_args.speculative_algorithm == 'EAGLE':\n"
            "        return 1\n"
            "    return 2\n"
        ),
        "srt/models/llama_eagle3.py": "def load(self, name, w):\n    if 'd2t' in name:\n        self.hot_token_id = w\n",
    }
    for rel, text in files.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(text)
    home = tmp_path / "home"
    args = ["scan", "--path", str(package), "--format", "json"]
    cold, cold_modules = _run(args, home, tmp_path)
    warm, warm_modules = _run(args, home, tmp_path)
    assert warm == cold
    assert "libcst" not in cold_modules and "libcst" not in warm_modules


def test_a_file_the_stdlib_parser_cannot_read_loads_libcst(tmp_path):
    """The control for the tests above: libcst is loaded where the stdlib parser fails (its general
    facts, or the reason it cannot be read, come from libcst), so its absence above means something."""
    package = tmp_path / "src" / "sglang"
    (package / "srt/speculative").mkdir(parents=True)
    (package / "srt/speculative/spec_info.py").write_text("from enum import IntEnum\n\nclass SpeculativeAlgorithm(IntEnum):\n    EAGLE = 1\n")
    (package / "srt/speculative/broken.py").write_text("def f(:\n    return 1\n")
    _, modules = _run(["scan", "--path", str(package), "--format", "json"], tmp_path / "home", tmp_path)
    assert "libcst" in modules


def test_help_lists_every_command_without_importing_them_for_a_scan():
    from sgl_scan.cli import COMMANDS

    result = subprocess.run([sys.executable, "-m", "sgl_scan", "--help"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0
    listed = result.stdout.split("Commands:", 1)[1]
    assert all(f"  {name} " in listed for name in COMMANDS)
    probe = subprocess.run([sys.executable, "-c", "import sys, sgl_scan.cli; print(sorted(m for m in sys.modules if m.endswith('_cmd')))"],
                           capture_output=True, text=True, cwd=REPO)
    assert probe.stdout.strip() == "[]"
