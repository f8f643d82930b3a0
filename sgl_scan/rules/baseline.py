"""Baselines: a JSON file of known findings, matched by fingerprint so line moves do not matter.

Format (`baseline_version` 1):
    {"baseline_version": 1, "tool": "sgl-scan", "findings": [
        {"fingerprint": "...", "rule_id": "SGL302", "path": "sglang/srt/...", "line": 350, "message": "..."}]}
Only `fingerprint` is used for matching; the other fields are there for people reading the file.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from sgl_scan.errors import ConfigError
from sgl_scan.rules.finding import Finding

BASELINE_VERSION = 1


@dataclass(frozen=True)
class Baseline:
    fingerprints: frozenset[str]
    source: str = ""

    def __contains__(self, finding: Finding) -> bool:
        return finding.fingerprint in self.fingerprints


def baseline_json(findings: Iterable[Finding]) -> str:
    entries = [
        {"fingerprint": f.fingerprint, "rule_id": f.rule_id, "path": f.path, "line": f.line, "message": f.message}
        for f in findings
    ]
    return json.dumps({"baseline_version": BASELINE_VERSION, "tool": "sgl-scan", "findings": entries}, indent=2) + "\n"


def write_baseline(path: str | Path, findings: Iterable[Finding]) -> Path:
    """Write `findings` as a baseline, atomically (a crash leaves the old file intact)."""
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
    source = Path(path)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"baseline {source} does not exist (write one with --write-baseline)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"baseline {source} is not readable JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("baseline_version") != BASELINE_VERSION:
        raise ConfigError(f"baseline {source}: expected baseline_version {BASELINE_VERSION}")
    entries = data.get("findings")
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("fingerprint"), str) for e in entries):
        raise ConfigError(f"baseline {source}: 'findings' must be a list of objects with a 'fingerprint'")
    return Baseline(frozenset(e["fingerprint"] for e in entries), str(source))
