"""What every reporter receives: one frozen value with the snapshot, inventory and findings."""

from __future__ import annotations

from dataclasses import dataclass

from sgl_scan.analyzer.model import ParseError, SpecInventory
from sgl_scan.rules.finding import Finding
from sgl_scan.snapshots.manifest import Manifest


@dataclass(frozen=True)
class RuleDoc:
    id: str  # "SGL301"
    name: str  # "d2t-used-as-direct-map"
    severity: str
    message: str  # the one-line summary
    docs: str  # Markdown with What it does / Why it matters / Example / Use instead


@dataclass(frozen=True)
class Report:
    manifest: Manifest
    inventory: SpecInventory
    findings: tuple[Finding, ...]
    parse_errors: tuple[ParseError, ...]
    rules: tuple[RuleDoc, ...]  # the rules that ran (SARIF lists each once)
    tool_version: str
    sources: dict | None = None  # path -> list of source lines, for excerpts (filled by the CLI from the snapshot)
    config: str | None = None  # the settings file the run used (found upwards or named by --config)
    review: bool = False  # a review run (`check`): the text report puts findings first, the inventory in one line
