"""The fleet's result as frozen values: hosts, groups of identical snapshots, diffs to the baseline."""

from __future__ import annotations

from dataclasses import dataclass

from sgl_scan.analyzer.model import SpecInventory
from sgl_scan.compare import InventoryDiff
from sgl_scan.rules.doc import RuleDoc
from sgl_scan.rules.finding import Finding
from sgl_scan.snapshots.manifest import Manifest


@dataclass(frozen=True)
class FleetHost:
    """One host's row: where its snapshot went (group) or why it has none (error)."""

    label: str  # HOST or HOST:REMOTE_ROOT, as given
    host: str
    remote_root: str | None  # the root that was scanned (as found on the host) or asked for
    error: str | None = None  # one line; None when the host was scanned
    snapshot_id: str | None = None
    group: str | None = None  # "G1", "G2", ... (G1 is the largest group)
    sglang_version: str | None = None
    git: str | None = None  # "1a2b3c4d5e6f (main, dirty)"
    fetched: int = 0  # files that crossed the wire
    unchanged: bool = False  # nothing changed since the host's previous snapshot
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class FleetGroup:
    """Hosts whose snapshots hold exactly the same files (same paths and contents)."""

    id: str
    hosts: tuple[str, ...]  # labels, in the order given
    content_key: str  # sha256 over the sorted (path, sha256) pairs and the scope
    manifest: Manifest  # the first host's snapshot (every host of the group has the same files)
    inventory: SpecInventory
    findings: tuple[Finding, ...]  # after --select/--ignore and suppression comments
    patch_files: tuple[str, ...]  # files touched by the local patch (git diff HEAD) of any host in the group

    @property
    def workers(self) -> dict[str, str | None]:
        return {alg.name: alg.worker for alg in self.inventory.algorithms}


@dataclass(frozen=True)
class FleetDiff:
    """What a group changes against the baseline group (inventory and findings)."""

    group: str
    against: str
    diff: InventoryDiff


@dataclass(frozen=True)
class FleetReport:
    hosts: tuple[FleetHost, ...]
    groups: tuple[FleetGroup, ...]
    baseline: str | None  # the group every other group is compared with
    diffs: tuple[FleetDiff, ...]
    scope: str
    rules: tuple[RuleDoc, ...] = ()
    tool_version: str = ""
    notes: tuple[str, ...] = ()

    def group(self, group_id: str) -> FleetGroup:
        return next(g for g in self.groups if g.id == group_id)

    @property
    def failed(self) -> tuple[FleetHost, ...]:
        return tuple(h for h in self.hosts if not h.ok)

    @property
    def drift(self) -> bool:
        """Whether some group differs from the baseline (inventory or findings)."""
        return any(not d.diff.empty for d in self.diffs)
