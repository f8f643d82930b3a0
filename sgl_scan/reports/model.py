"""What every reporter receives: one frozen value with the snapshot, inventory and findings."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, NamedTuple

from sgl_scan.analyzer.model import ParseError, SpecInventory
from sgl_scan.rules.doc import RuleDoc
from sgl_scan.rules.finding import Finding
from sgl_scan.snapshots.manifest import Manifest


class ArtifactRoot(NamedTuple):
    """Where SARIF locations are anchored when the user's folder is known: `base_uri` (a file URI
    ending in "/": the repository root in `check`, `--sarif-root` in `scan`) and the package folder
    relative to it (`python/sglang`), which replaces the snapshot's `sglang/` in every uri."""

    base_uri: str
    package: str  # POSIX, relative to base_uri, no trailing slash ("" when the package is the base)

    @classmethod
    def containing(cls, manifest: Manifest, base: Path) -> "ArtifactRoot":
        """Locations relative to `base` (`scan --sarif-root`: a folder holding the scanned local package)."""
        from sgl_scan.errors import ConfigError

        if manifest.source_kind != "local":
            raise ConfigError(
                f"--sarif-root needs a local source (--path); snapshot {manifest.id} was read from "
                f"{manifest.source_kind}"
            )
        package = Path(manifest.root).resolve()
        folder = base.expanduser().resolve()
        try:
            relative = package.relative_to(folder)
        except ValueError:
            raise ConfigError(f"--sarif-root {base}: the scanned package {package} is not inside it") from None
        return cls(folder.as_uri().rstrip("/") + "/", relative.as_posix() if str(relative) != "." else "")

    def uri(self, snapshot_path: str) -> str:
        rest = snapshot_path[len("sglang/") :] if snapshot_path.startswith("sglang/") else snapshot_path
        return f"{self.package}/{rest}" if self.package else rest


class Report(NamedTuple):
    manifest: Manifest
    inventory: SpecInventory
    findings: tuple[Finding, ...]
    parse_errors: tuple[ParseError, ...]
    rules: tuple[RuleDoc, ...]  # the rules that ran (SARIF lists each once)
    tool_version: str
    sources: dict | None = None  # path -> list of source lines, for excerpts (filled by the CLI from the snapshot)
    config: str | None = None  # the settings file the run used (found upwards or named by --config)
    review: bool = False  # a review run (`check`): the text report puts findings first, the inventory in one line
    artifact_root: ArtifactRoot | None = None  # SARIF: uris relative to the repository (check) or --sarif-root
    latest: str | None = None  # what an implicit `latest` was (summary.latest_note); None when the user named the tree
    hidden: Mapping[str, int] | None = None  # findings left out by suppression comments and the baseline (counts)
