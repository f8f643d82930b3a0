"""Pull every host concurrently, group identical snapshots, analyse each group once, diff the groups.

Each host goes through `pull_ssh`, the code path `--host` uses (same connection code, host-key
policy and incremental re-pull), in a thread pool: the work is waiting on the network and on the
remote host. A host that fails (refused key, timeout, no sglang, broken tar) becomes that host's row
with its one-line error; the run goes on. Snapshots with the same files (paths and sha256s) form one
group, which is analysed and checked once; every other group is compared with the baseline group
(`--baseline-host`'s, else the largest) by `compute_diff`, the matching `sgl-scan diff` uses.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence, cast

from sgl_scan.errors import SglScanError
from sgl_scan.fleet.hosts import HostEntry
from sgl_scan.fleet.model import FleetDiff, FleetGroup, FleetHost, FleetReport
from sgl_scan.rules.doc import RuleDoc
from sgl_scan.snapshots.manifest import Manifest, Snapshot

DEFAULT_JOBS = 16  # pulls wait on the network and the remote host, not on this machine's CPU
DEFAULT_FLEET_TIMEOUT = 3600.0  # s: the whole fleet's pulls (--fleet-timeout); a cron run always ends
FLEET_GRACE = 5.0  # s: after the fleet deadline, for pulls to report their own deadline error
_PATCH_FILE = re.compile(r"^diff --git a/(.+?) b/(.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Pulled:
    entry: HostEntry
    snapshot: Snapshot | None
    error: str | None
    fetched: int = 0
    unchanged: bool = False
    seconds: float = 0.0


class Tally:
    """Hosts done / failed / running, for the progress line (updated from the pull threads)."""

    def __init__(self, total: int, show: Callable[[str], None]) -> None:
        self.total, self.done, self.failed, self.running = total, 0, 0, 0
        self.lock = threading.Lock()
        self.show = show

    def started(self) -> None:
        with self.lock:
            self.running += 1
            self._show()

    def finished(self, ok: bool) -> None:
        with self.lock:
            self.running -= 1
            self.done += 1
            self.failed += 0 if ok else 1
            self._show()

    def _show(self) -> None:
        self.show(f"{self.done}/{self.total} hosts done, {self.failed} failed, {self.running} running")


def content_key(manifest: Manifest) -> str:
    """Identity of a snapshot's content: its scope and every (path, sha256), whatever host it came from."""
    digest = hashlib.sha256(manifest.scope.encode())
    for entry in sorted(manifest.files, key=lambda f: f.path):
        digest.update(b"\0" + entry.path.encode("utf-8", "surrogateescape") + b"\0" + entry.sha256.encode())
    return digest.hexdigest()


def patch_files(snapshot: Snapshot) -> tuple[str, ...]:
    """Files the snapshot's local patch (`git diff HEAD` of a dirty checkout) touches."""
    git = snapshot.manifest.git
    if git is None or not git.patch:
        return ()
    try:
        text = (snapshot.folder / git.patch).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    return tuple(sorted({m.group(2) for m in _PATCH_FILE.finditer(text)}))


def pull_hosts(
    entries: Sequence[HostEntry],
    params: Mapping,
    *,
    jobs: int = DEFAULT_JOBS,
    store=None,
    show: Callable[[str], None] = lambda text: None,
    fleet_timeout: float = DEFAULT_FLEET_TIMEOUT,
) -> list[Pulled]:
    """Pull every host (at most `jobs` at once); each result in the order the hosts were given.

    The whole fleet has one deadline, `fleet_timeout` seconds from now: each pull gets the sooner of
    its own `--timeout` and that deadline (the SSH layer ends a pull at its deadline, wherever it
    waits), a host not started by then is not started, and a host still running `FLEET_GRACE`
    seconds after it is given up: each of those becomes that host's error row, and the report is
    written from what finished. The pull threads are daemons, so a wedged one never holds up exit."""
    from sgl_scan.snapshots.progress import Progress
    from sgl_scan.snapshots.sshimport import import_paramiko
    from sgl_scan.snapshots.store import Store

    import_paramiko(params.get("ssh_config"))
    from sgl_scan.snapshots.ssh import pull_ssh

    store = store or Store()
    tally = Tally(len(entries), show)
    fleet_deadline = time.monotonic() + fleet_timeout
    why = f"--fleet-timeout {fleet_timeout:g} s"

    def one(entry: HostEntry) -> Pulled:
        start = time.monotonic()
        if start >= fleet_deadline:
            return Pulled(entry, None, f"not started: the fleet deadline ({why}) had passed")
        tally.started()
        host_params = {**params, "host": entry.host, "remote_root": entry.remote_root}
        try:
            pulled = pull_ssh(
                host_params,
                store=store,
                progress=Progress("pull", enabled=False),
                deadline=fleet_deadline,
                deadline_name=why,
            )
        except SglScanError as exc:
            result = Pulled(entry, None, str(exc), seconds=time.monotonic() - start)
        except Exception as exc:  # one host's surprise is that host's row, never the end of the run
            result = Pulled(
                entry, None, f"internal error: {type(exc).__name__}: {exc}", seconds=time.monotonic() - start
            )
        else:
            result = Pulled(
                entry, pulled.snapshot, None, len(pulled.fetched), pulled.unchanged, time.monotonic() - start
            )
        tally.finished(result.error is None)
        return result

    results: dict[int, Pulled] = {}
    lock = threading.Condition()
    todo = list(enumerate(entries))
    closed = False

    def worker() -> None:
        while True:
            with lock:
                if closed or not todo:
                    return
                index, entry = todo.pop(0)
            result = one(entry)
            with lock:
                if not closed:
                    results[index] = result
                    lock.notify_all()

    for number in range(max(1, min(jobs, len(entries)))):
        threading.Thread(target=worker, name=f"sgl-scan-fleet-{number}", daemon=True).start()
    with lock:
        while len(results) < len(entries):
            remaining = fleet_deadline + FLEET_GRACE - time.monotonic()
            if remaining <= 0:
                break
            lock.wait(remaining)
        closed = True
        for index, entry in enumerate(entries):
            if index not in results:
                results[index] = Pulled(
                    entry,
                    None,
                    f"did not finish before the fleet deadline ({why}); gave up",
                    seconds=round(fleet_timeout, 3),
                )
    return [results[i] for i in range(len(entries))]


def build_report(
    pulled: Sequence[Pulled],
    rules: Sequence[RuleDoc],
    check: Callable[[Snapshot, object], list],
    *,
    scope: str,
    baseline_host: str | None = None,
    tool_version: str = "",
    show: Callable[[str], None] = lambda text: None,
) -> FleetReport:
    """Group the pulled snapshots, analyse and check each group once (`check(snapshot, analysis)`: the
    selected rules' findings), diff every group with the baseline. `rules`: the selected rules' docs."""
    from sgl_scan.analyzer.pipeline import analyze
    from sgl_scan.compare import compute_diff
    from sgl_scan.snapshots.summary import git_label

    members: dict[str, list[Pulled]] = {}
    for item in pulled:
        if item.snapshot is not None:
            members.setdefault(content_key(item.snapshot.manifest), []).append(item)
    # G1 is the largest group; ties keep the order in which hosts were given
    order = sorted(members, key=lambda key: -len(members[key]))
    group_of = {key: f"G{i}" for i, key in enumerate(order, 1)}

    groups, analyses = [], {}
    for key in order:
        first = members[key][0].snapshot
        assert first is not None  # members hold pulled snapshots only
        show(f"analysing {group_of[key]} ({first.manifest.sglang_version or '?'}, {len(members[key])} hosts)")
        analysis = analyze(first)
        analyses[group_of[key]] = analysis
        touched = sorted({path for item in members[key] for path in patch_files(cast(Snapshot, item.snapshot))})
        groups.append(
            FleetGroup(
                id=group_of[key],
                hosts=tuple(item.entry.label for item in members[key]),
                content_key=key,
                manifest=first.manifest,
                inventory=analysis.inventory,
                findings=tuple(check(first, analysis)),
                patch_files=tuple(touched),
            )
        )

    hosts = []
    for item in pulled:
        snap = item.snapshot
        hosts.append(
            FleetHost(
                label=item.entry.label,
                host=item.entry.host,
                remote_root=snap.manifest.root if snap else item.entry.remote_root,
                error=item.error,
                snapshot_id=snap.id if snap else None,
                group=group_of[content_key(snap.manifest)] if snap else None,
                sglang_version=snap.manifest.sglang_version if snap else None,
                git=git_label(snap.manifest) if snap else None,
                fetched=item.fetched,
                unchanged=item.unchanged,
                seconds=round(item.seconds, 3),
            )
        )

    notes = []
    baseline = groups[0].id if groups else None
    if baseline_host is not None:
        chosen = [h for h in hosts if baseline_host in (h.label, h.host)]
        if not chosen:
            notes.append(
                f"--baseline-host {baseline_host} is not one of the hosts; comparing with the largest group {baseline}"
            )
        elif chosen[0].group is None:
            notes.append(
                f"--baseline-host {baseline_host} could not be scanned; comparing with the largest group {baseline}"
            )
        else:
            baseline = chosen[0].group
    diffs = []
    by_id = {g.id: g for g in groups}
    for group in groups:
        if group.id == baseline:
            continue
        assert baseline is not None  # the first group's, or the chosen host's
        base = by_id[baseline]
        diffs.append(
            FleetDiff(
                group.id,
                baseline,
                compute_diff(
                    analyses[baseline],
                    base.findings,
                    analyses[group.id],
                    group.findings,
                    a_manifest=base.manifest,
                    b_manifest=group.manifest,
                    a_label=f"{baseline} ({', '.join(base.hosts)})",
                    b_label=f"{group.id} ({', '.join(group.hosts)})",
                ),
            )
        )
    return FleetReport(
        hosts=tuple(hosts),
        groups=tuple(groups),
        baseline=baseline,
        diffs=tuple(diffs),
        scope=scope,
        rules=tuple(rules),
        tool_version=tool_version,
        notes=tuple(notes),
    )
