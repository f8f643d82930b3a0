"""Parser memory per file is bounded by default (issue 31, 6): parsing takes ~80x a file's size, so
the default --max-file-size is 4 MiB (SGLang's largest file is under 400 KB); a 5 MB `.py` is a
recorded skip, never parsed, unless the user raises the limit."""

from __future__ import annotations

import json

from sgl_scan.snapshots.tarstream import Limits
from tests.support.cli import run_main


def test_the_default_limit_is_4_mib():
    assert Limits().max_file_size == 4 * 1024**2 == Limits.from_params({}).max_file_size


def test_a_5_mb_py_file_is_skipped_by_default(capsys, tmp_path):
    package = tmp_path / "sglang"
    spec = package / "srt" / "speculative"
    spec.mkdir(parents=True)
    (package / "version.py").write_text('__version__ = "0.5.23"\n')
    (spec / "eagle_worker.py").write_text("class EagleWorker:\n    pass\n")
    (spec / "huge.py").write_text("X = 1\n" * (5 * 1024 * 1024 // 6 + 1))
    code, out, err = run_main(capsys, "snapshot", "pull", "--path", str(package), "--scope", "full")
    assert code == 0, err
    code, out, err = run_main(capsys, "snapshot", "show", "latest", "--json")
    skipped = {s["path"]: s["reason"] for s in json.loads(out)["skipped"]}
    assert skipped["sglang/srt/speculative/huge.py"].startswith("larger than --max-file-size (5.0 MB)")
    code, out, err = run_main(capsys, "snapshot", "pull", "--path", str(package), "--scope", "full", "--max-file-size", "8M")
    code, out, err = run_main(capsys, "snapshot", "show", "latest", "--json")
    assert "sglang/srt/speculative/huge.py" in {f["path"] for f in json.loads(out)["files"]}
