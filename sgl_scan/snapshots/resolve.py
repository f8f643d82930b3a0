"""Turn the CLI's source options into a snapshot: open a stored one or pull a new one.

    from sgl_scan.snapshots.resolve import obtain_snapshot
    snapshot = obtain_snapshot({"pip_spec": "sglang==0.5.23"})   # keys: options.SOURCE_PARAM_NAMES

Exactly one source may be given: `snapshot_ref` (an id, unique prefix or "latest") opens a stored
snapshot (hashes verified); `host`, `local_path`, `git_repo` or `pip_spec` pull into the store (a
pull whose content is stored already gives that snapshot back); with none, the latest snapshot is
used. What a pull did (`reused snapshot ID`, `pulled N files (M unchanged) ...`) is said on stderr.

`latest` is the snapshot the user most recently pulled, reused or scanned: every obtained snapshot
becomes it, unless the caller passes `mark_latest=False` (`diff` and the base side of `check`,
whose sides are not what the user is working on). A command with several store references pins
them all first (`pin_ref`), before anything is pulled, so pulling one side cannot change what
another side's `latest` names.
"""

from __future__ import annotations

import sys
from typing import Callable, Mapping

from sgl_scan.errors import ConfigError
from sgl_scan.snapshots.manifest import Snapshot
from sgl_scan.snapshots.store import Store

SOURCES = {
    "host": "--host",
    "local_path": "--path",
    "git_repo": "--git",
    "pip_spec": "--pip",
    "snapshot_ref": "--snapshot",
}


def check_params(params: Mapping) -> str | None:
    """The one source kind named in `params` (None for none); ConfigError for two sources.

    Options of other sources (an --identity next to --pip, a --scope next to --snapshot) are
    ignored, so callers such as `sgl-scan diff` can share one set of options across sources.
    """
    given = [key for key in SOURCES if params.get(key)]
    if len(given) > 1:
        raise ConfigError(f"give one source, not {' and '.join(SOURCES[k] for k in given)}")
    if params.get("rev") and given != ["git_repo"]:
        raise ConfigError("--rev only applies with --git")
    return given[0] if given else None


def pin_ref(params: Mapping, *, store: Store | None = None) -> dict:
    """`params` with a store reference (`latest`, an id prefix) replaced by the id it names now."""
    params = dict(params)
    if params.get("snapshot_ref"):
        params["snapshot_ref"] = (store or Store()).resolve(params["snapshot_ref"])
    return params


def say_on_stderr(line: str) -> None:
    sys.stderr.write(f"sgl-scan: {line}\n")
    sys.stderr.flush()


def obtain_snapshot(
    params: Mapping,
    *,
    store: Store | None = None,
    mark_latest: bool = True,
    say: Callable[[str], None] | None = say_on_stderr,
) -> Snapshot:
    """The snapshot the source options name (pulling it when the source is not the store).

    It becomes `latest` unless `mark_latest` is False; `say` gets one line on what a pull did.
    """
    store = store or Store()
    kind = check_params(params)
    snapshot = _obtain(kind, params, store)
    wanted = params.get("scope")
    if kind in (None, "snapshot_ref") and wanted and snapshot.manifest.scope != wanted:
        raise ConfigError(
            f"--scope {wanted}: snapshot {snapshot.id} holds the {snapshot.manifest.scope} scope; "
            f"pull its source again with --scope {wanted} (sgl-scan snapshot show {snapshot.id} says which)"
        )
    if snapshot.pulled is not None and say is not None:
        say(snapshot.pulled.describe(snapshot.id))
    if mark_latest and kind is not None:
        store.mark_latest(snapshot.id)
    return snapshot


def _obtain(kind: str | None, params: Mapping, store: Store) -> Snapshot:
    if kind is None:
        return store.latest()
    if kind == "snapshot_ref":
        return store.open(params["snapshot_ref"])
    if kind == "host":
        from sgl_scan.snapshots.sshimport import import_paramiko

        import_paramiko(params.get("ssh_config"))
        from sgl_scan.snapshots.ssh import pull_ssh

        return pull_ssh(params, store=store).snapshot
    if kind == "local_path":
        from sgl_scan.snapshots.local import pull_local

        return pull_local(params, store=store)
    if kind == "git_repo":
        from sgl_scan.snapshots.git import pull_git

        return pull_git(params, store=store)
    from sgl_scan.snapshots.wheel import pull_pip

    return pull_pip(params, store=store)
