"""Upgrades: a scan of a new release or a new commit when the store already holds the previous one.

Issue 33's cases, each in the same rounds as a cold scan of the new tree (its baseline), default scope:
- `upgrade_cold`: the new tree into an empty `$SGLSCAN_HOME`;
- `upgrade_after_old`: the new tree into a home that scanned the old release first (untimed): only
  files whose content changed are parsed again, the rest come from the old tree's facts;
- `upgrade_warm`: the new tree again, right after (nothing changed);
- `upgrade_one_file`: a copy of the new tree with one file edited (a PR-sized change, new bytes each
  round, so no round finds a snapshot an earlier one stored) after the
  unedited copy was scanned (untimed): one file is parsed, the inventory and the rules run again.

And two floors (`parse_floor.py`), which bound what an upgrade can cost whatever sgl-scan does:
- `upgrade_floor_new`: read + `ast.parse` of every file of the new tree's default scope;
- `upgrade_floor_changed`: the same for the files whose content the old tree's default scope lacks.
  Facts are reused by content, so an upgrade parses at least these.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from bench.analysis_bench import SCAN_OK, _fresh, code_env, env_for, floor_command, scope_listing, sgl_scan_command
from bench.measure import Stats, Step, run_checked, unavailable

EDITED = "sglang/srt/speculative/spec_info.py"  # the algorithm's own module: every release has it
EDIT = "\n\ndef _bench_added_helper_{round}(value):\n    return value\n"  # new bytes every round
KEYS = ("upgrade_cold", "upgrade_after_old", "upgrade_warm", "upgrade_one_file", "upgrade_floor_new",
        "upgrade_floor_changed")


def changed_listing(new_listing: Path, old_listing: Path, out: Path) -> Path:
    """A `parse_floor.py` listing of the files in `new_listing` whose content no file in `old_listing` has."""
    def shas(listing: Path) -> dict[str, str]:
        paths = [line for line in listing.read_text().splitlines() if line]
        return {path: hashlib.sha256(Path(path).read_bytes()).hexdigest() for path in paths}

    held = set(shas(old_listing).values())
    out.write_text("".join(f"{path}\n" for path, sha in shas(new_listing).items() if sha not in held))
    return out



def upgrade_steps(new: Path, old: Path | None, work: Path, old_label: str) -> tuple[list[Step], dict[str, Stats]]:
    """The upgrade measurements as steps for `measure.interleave`, and those that cannot run."""
    missing: dict[str, Stats] = {}
    if old is None or not (old / "sglang" / "srt").is_dir():
        for key in KEYS:
            missing[key] = unavailable(key, f"no {old_label} tree to upgrade from")
        return [], missing
    scan_new, scan_old = sgl_scan_command(new, "speculative"), sgl_scan_command(old, "speculative")
    cold_home, home, edit_home = work / "home-cold", work / "home-upgrade", work / "home-edit"
    copy = work / "edited"
    shutil.copytree(new / "sglang", copy / "sglang")
    edited = copy / EDITED
    original = edited.read_bytes() if edited.exists() else None
    scan_copy = sgl_scan_command(copy, "speculative")

    def scan(command: list[str], where: Path):
        return lambda: run_checked(command, env=env_for(where), ok_codes=SCAN_OK)

    def after_old() -> None:
        _fresh(home)
        run_checked(scan_old, env=env_for(home), ok_codes=SCAN_OK)

    rounds = iter(range(1, 1_000_000))

    def unedited_then_edit() -> None:
        """Scan the unedited copy (warm after the first round), then make an edit no earlier round
        made: each round measures a real one-file change, never a snapshot stored by an earlier one."""
        if original is None:
            raise RuntimeError(f"{EDITED} is not in the tree")
        edited.write_bytes(original)
        run_checked(scan_copy, env=env_for(edit_home), ok_codes=SCAN_OK)
        edited.write_bytes(original + EDIT.format(round=next(rounds)).encode())

    new_listing = scope_listing(new, work / "floor-new", "speculative")
    changed = changed_listing(new_listing, scope_listing(old, work / "floor-old", "speculative"),
                              work / "floor-changed.txt")

    def floor(listing: Path):
        return lambda: run_checked(floor_command(listing), env=code_env())

    steps = [
        Step("upgrade_floor_new", "floor: read + ast.parse of the new tree's default-scope files", floor(new_listing)),
        Step("upgrade_floor_changed", f"floor: read + ast.parse of those files whose content {old_label}'s lacks",
             floor(changed)),
        Step("upgrade_cold", "upgrade baseline: new tree, default scope, cold", scan(scan_new, cold_home),
             before=lambda: _fresh(cold_home)),
        Step("upgrade_after_old", f"new tree after {old_label} (store holding it), default scope",
             scan(scan_new, home), before=after_old),
        Step("upgrade_warm", "new tree again, warm, default scope", scan(scan_new, home), requires="upgrade_after_old"),
        Step("upgrade_one_file", f"one file edited ({EDITED}), default scope", scan(scan_copy, edit_home),
             before=unedited_then_edit),
    ]
    return steps, missing
