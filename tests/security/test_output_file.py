"""`-o FILE` (issue 31, 5): written atomically, a symlink planted at FILE is replaced, never followed."""

from __future__ import annotations

import os

from sgl_scan.cli.output import emit


def test_a_planted_symlink_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    planted = tmp_path / "report.txt"
    planted.symlink_to(victim)
    emit("report\n", str(planted))
    assert victim.read_text() == "the user's own file\n"
    assert not planted.is_symlink() and planted.read_text() == "report\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_existing_report_is_replaced_whole_and_dev_null_still_works(tmp_path):
    out = tmp_path / "r.json"
    out.write_text("x" * 10000)
    emit("{}\n", str(out))
    assert out.read_text() == "{}\n"
    emit("{}\n", os.devnull)
