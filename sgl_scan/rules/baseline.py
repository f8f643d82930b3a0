"""Baselines: a JSON file of known findings, matched by fingerprint so line moves do not matter.

Format (`baseline_version` 1):
    {"baseline_version": 1, "tool": "sgl-scan", "findings": [
        {"fingerprint": "...", "group": "...", "rule_id": "SGL302", "path": "sglang/srt/...", "line": 350,
         "message": "..."}]}
`fingerprint` (the statement with its neighbours, `rules/identity.py`) and `group` (the statement
alone) are used for matching; the other fields are there for people reading the file. Matching is
one assignment over all findings (`KnownFindings.match`): first by fingerprint, each entry taken
once; then, for a statement whose neighbours were edited, by group — but only where the group has
no more findings than unmatched entries, so a new copy of a known statement is never hidden.
An entry without `group` (an older file) uses its fingerprint as its group.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

from sgl_scan.errors import ConfigError
from sgl_scan.rules.finding import Finding

BASELINE_VERSION = 1


class KnownFindings(NamedTuple):
    """Findings known before (a baseline file, or the diff base in `check --include-new`), as
    (fingerprint, group) pairs; `match` tells which current findings they account for."""

    entries: tuple[tuple[str, str], ...]
    source: str = ""

    @classmethod
    def of(cls, findings: Iterable[Finding], source: str = "") -> "KnownFindings":
        return cls(tuple((f.fingerprint or "", f.group or f.fingerprint or "") for f in findings), source)

    @property
    def fingerprints(self) -> frozenset[str]:
        return frozenset(fp for fp, _ in self.entries)

    def match(self, findings: Sequence[Finding]) -> set[int]:
        """Indices of the `findings` that a known entry accounts for, each entry used once."""
        unused = Counter(fp for fp, _ in self.entries)
        matched: set[int] = set()
        for i, finding in enumerate(findings):
            if unused[finding.fingerprint or ""] > 0:
                unused[finding.fingerprint or ""] -= 1
                matched.add(i)
        spare_groups: Counter[str] = Counter()
        for fp, group in self.entries:
            if unused[fp] > 0:
                unused[fp] -= 1
                spare_groups[group] += 1
        waiting: dict[str, list[int]] = {}
        for i, finding in enumerate(findings):
            if i not in matched:
                waiting.setdefault(finding.group or finding.fingerprint or "", []).append(i)
        for group, indices in waiting.items():
            if 0 < len(indices) <= spare_groups[group]:  # as many as before (neighbours edited): nothing new
                matched.update(indices)
        return matched


# The baseline file's matcher; the name reads better where a file is meant.
Baseline = KnownFindings


def baseline_json(findings: Iterable[Finding]) -> str:
    entries = [
        {
            "fingerprint": f.fingerprint,
            "group": f.group or f.fingerprint,
            "rule_id": f.rule_id,
            "path": f.path,
            "line": f.line,
            "message": f.message,
        }
        for f in findings
    ]
    return json.dumps({"baseline_version": BASELINE_VERSION, "tool": "sgl-scan", "findings": entries}, indent=2) + "\n"


def write_baseline(path: str | Path, findings: Iterable[Finding]) -> Path:
    """Write `findings` as a baseline, atomically (a crash leaves the old file intact)."""
    import tempfile  # only when a baseline is written

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".baseline-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(baseline_json(findings))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def read_baseline(path: str | Path) -> Baseline:
    """Read a baseline file; a missing or malformed one is a configuration error (exit 2)."""
    from sgl_scan.smallfiles import BASELINE_LIMIT, read_small

    source = Path(path)
    try:
        data = json.loads(read_small(source, BASELINE_LIMIT, "baseline").decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"baseline {source} does not exist (write one with --write-baseline)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"baseline {source} is not readable JSON: {exc}") from None
    except RecursionError:
        raise ConfigError(f"baseline {source} is not readable JSON: nested too deeply") from None
    if not isinstance(data, dict) or data.get("baseline_version") != BASELINE_VERSION:
        raise ConfigError(f"baseline {source}: expected baseline_version {BASELINE_VERSION}")
    entries = data.get("findings")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("fingerprint"), str) for e in entries
    ):
        raise ConfigError(f"baseline {source}: 'findings' must be a list of objects with a 'fingerprint'")
    if not all(isinstance(e.get("group", ""), str) for e in entries):
        raise ConfigError(f"baseline {source}: 'group' must be a string")
    return Baseline(tuple((e["fingerprint"], e.get("group") or e["fingerprint"]) for e in entries), str(source))
