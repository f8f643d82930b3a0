"""Pull a snapshot from a remote host over SSH: one `exec`, one tar stream, only changed files.

The remote side is one POSIX `sh` script (below) run by a single `exec_command`; every value it gets
(remote root, scope, patterns, nonce) is a positional argument quoted with `shlex.quote` and only
ever used as `"$1"`, so a remote root like `a b;touch /x;$(id)'"` is just a folder name. It

1. finds the package (`--remote-root`, else the remote Python's `importlib.util.find_spec("sglang")`
   — located, not imported — else `~/sglang/python/sglang`, `/root/sglang/python/sglang`,
   `/sgl-workspace/sglang/python/sglang`),
2. reports the git commit, branch, dirty state and `git diff HEAD` of a checkout (git runs only when
   `$GIT_DIR` is set or a `.git` exists in the root or a folder above it),
3. reads its clock (`date +%s.%N`), then lists, in one walk (`find -printf`, NUL-separated, tagged),
   the `*.py` regular files with size, mtime, ctime and inode, the symlinks and the other non-folders
   named `*.py`, then the byte-search hits (`grep -lZE`); a find without `-printf` (busybox, BSD) is an
   error, never an empty or unstamped listing, then
4. reads the NUL-separated names the client wants from stdin and streams them with
   `tar --null -T -`.

Sections of the reply are framed by a random nonce. The client compares the listing with the latest
snapshot of the same host and root (found and size-checked in a thread while the remote works, not
while the connection is made, whose packets the thread would hold up),
asks only for new or changed files, takes the rest from that snapshot, and extracts
the tar while reading it (`tarstream`). A file is unchanged only when its size, mtime, ctime and inode
all match the snapshot's: an edit that keeps the size and sets the mtime back (`touch -r`, a checkout
tool) still moves the ctime, which no user can set back. A snapshot stored without ctimes, or a ctime
too close to the remote clock to be settled (`SETTLE_FINE`), is never trusted: the file is fetched.
If nothing changed, the earlier snapshot is returned as is.
Compression is off: on loopback/LAN `gzip -1` costs the remote more CPU than the smaller stream saves.
"""

from __future__ import annotations

import logging
import secrets
import shlex
import socket
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable, Mapping, NamedTuple, cast

import paramiko

from sgl_scan.errors import RemoteError, SnapshotError
from sgl_scan.snapshots import scope as scopes
from sgl_scan.snapshots.manifest import FileEntry, GitState, PullInfo, Snapshot, SkippedFile
from sgl_scan.snapshots.progress import Progress
from sgl_scan.snapshots.sshconnect import Connector, Target, resolve_target
from sgl_scan.snapshots.store import PATCH_FILE, SourceHint, Store
from sgl_scan.snapshots.tarstream import MAX_PATH_CHARS, Limits, extract_stream, human

log = logging.getLogger(__name__)

PREFIX = "sglang/"
RECV = 1 << 24  # take paramiko's whole buffer at once: its reads shift the rest
# records of the one `find` walk: f<size> <mtime> <ctime> <inode> <path> (a regular file), l<path> (a
# symlink), o<path> (another non-folder named *.py)
FIND_FMT = "f%s %T@ %C@ %i %p\\0"
# A file's ctime is its change stamp: any write, chmod or `touch -r` sets it to the current time and no
# user can set it back. A ctime this close to the remote's clock (taken before the walk) may be shared
# by a change made right after the walk (same clock tick), so it is not trusted: the file is fetched,
# and recorded without a ctime, so the next pull fetches it again. Whole-second stamps (a coarse
# filesystem) get the longer window.
SETTLE_FINE = 0.05  # s: a few coarse-clock ticks (the kernel stamps files from a 1-10 ms clock)
SETTLE_COARSE = 2.0  # s: filesystems with 1 s or 2 s stamps
DEFAULT_TIMEOUT = 900.0  # s: one SSH pull, connect to last byte (--timeout)

REMOTE_SCRIPT = (  # one string, split only to keep its lines short
    r"""
set -u
unset CDPATH
LC_ALL=C; export LC_ALL
root=$1; scope=$2; n=$3; pattern=$4; maxpatch=$5
sec() { printf '\n%s %s\n' "$n" "$1"; }
fail() { sec error; printf '%s' "$1"; exit 0; }
for tool in find tar; do
  command -v "$tool" >/dev/null 2>&1 || fail "the remote host has no '$tool' command"
done
how=given
if [ -z "$root" ]; then
  how=
  for py in python3 python; do
    command -v "$py" >/dev/null 2>&1 || continue
    cand=$("$py" -c 'import importlib.util as u, os
s = u.find_spec("sglang")
print(os.path.dirname(s.origin) if s and s.origin else
      next(iter(s.submodule_search_locations or ()), "") if s else "")' 2>/dev/null) || cand=
    if [ -n "$cand" ] && [ -d "$cand/srt" ]; then root=$cand; how=$py; break; fi
  done
fi
if [ -z "$root" ]; then
  for cand in "${HOME:-/root}/sglang/python/sglang" /root/sglang/python/sglang /sgl-workspace/sglang/python/sglang; do
    if [ -d "$cand/srt" ]; then root=$cand; how=fallback; break; fi
  done
fi
[ -n "$root" ] || fail "could not find the sglang package (the remote python cannot locate it and no fallback """
    r"""path exists); pass --remote-root"
cd -P -- "$root" 2>/dev/null || fail "cannot enter the remote root $root (no such folder, or no permission)"
[ -d srt ] || fail "the remote root has no srt/ folder; give the sglang package folder (.../python/sglang)"
here=$(pwd -P)
sec root; printf '%s\n' "$here"
sec how; printf '%s' "$how"
# git is asked only where it can find a repository: $GIT_DIR, or a .git here or in a folder above
repo=${GIT_DIR:+yes}; d=$here
while [ -z "$repo" ]; do
  [ -e "$d/.git" ] && repo=yes
  [ -n "$d" ] || break
  d=${d%/*}
done
g() { git -c 'safe.directory=*' -c core.quotepath=off "$@"; }
if [ -n "$repo" ] && command -v git >/dev/null 2>&1 && g rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  sec git-commit; g rev-parse HEAD 2>/dev/null
  sec git-branch; g symbolic-ref -q --short HEAD 2>/dev/null
  sec git-status; g status --porcelain --untracked-files=no 2>/dev/null | head -c 4096
  sec git-diff; g diff HEAD --no-color --no-ext-diff 2>/dev/null | head -c "$maxpatch"
fi
# a scope root that is a symlink is followed (find -H: the starting point only), unless it leads
# back to the package or above it (a loop); every other symlink is listed as not followed
loops() { t=$(cd -P -- "$1" 2>/dev/null && pwd -P) || return 1; case "$here/" in "$t"/*) return 0;; esac; return 1; }
follow=; loop=
for d in srt srt/speculative srt/arg_groups srt/managers srt/models; do
  if [ -L "$d" ] && [ -d "$d" ]; then
    if loops "$d"; then loop="$loop $d"; elif [ "$d" != srt ]; then follow="$follow $d"; fi
  fi
done
case " $loop " in *" srt "*) fail "srt/ is a symlink to a folder holding the package (a loop)";; esac
sec now; date +%s.%N 2>/dev/null
sec list
find -H srt $follow \( -type f -name '*.py' -printf "$FMT" \) \
  -o \( -type l \( -name '*.py' -o -xtype d -o -xtype l \) -printf 'l%p\0' \) \
  -o \( -name '*.py' ! -type d -printf 'o%p\0' \) 2>/dev/null ||
  [ -n "$(find srt -maxdepth 0 -printf x 2>/dev/null)" ] ||
  fail "the remote find cannot list the files with their stamps (GNU find's -printf; busybox and BSD find """
    r"""lack it), so nothing is pulled; install GNU findutils on the remote host"
if [ "$scope" != full ]; then
  sec grep; find -H srt $follow -type f -name '*.py' -exec grep -lZE -e "$pattern" -- {} + 2>/dev/null
fi
sec loops; for d in $loop; do printf '%s\0' "$d"; done
sec version; find version.py _version.py -maxdepth 0 -type f -printf "$FMT" 2>/dev/null
sec tar
exec tar -cf - --null --no-recursion --hard-dereference -T -
"""
).replace('"$FMT"', "'" + FIND_FMT + "'")


class Listed(NamedTuple):  # a tuple: thousands are made per pull
    size: int
    mtime: float
    ctime: float | None = None  # None: not trusted as settled (see SETTLE_FINE)
    inode: int | None = None


@dataclass(frozen=True)
class Listing:
    """What the remote `find` walk reported."""

    files: dict[str, Listed]  # regular *.py files (and version.py, _version.py)
    links: set[str]  # symlinks (named *.py, or to folders, or dangling)
    odd: set[str]  # other non-folders named *.py (FIFOs, devices, sockets)


@dataclass(frozen=True)
class SshPull:
    """What one SSH pull did: the snapshot, and which files crossed the wire."""

    snapshot: Snapshot
    fetched: tuple[str, ...]  # member names (relative to the package folder) transferred
    reused: tuple[str, ...]  # taken from the base snapshot
    base: str | None  # the earlier snapshot compared against
    unchanged: bool  # nothing changed: `snapshot` is the base snapshot
    bytes_received: int


def remote_command(remote_root: str | None, scope: str, nonce: str, max_patch: int) -> str:
    """The one command line run on the remote host; every argument is quoted."""
    args = [remote_root or "", scope, nonce, scopes.SCOPE_PATTERN, str(max_patch)]
    return "sh -c " + shlex.quote(REMOTE_SCRIPT) + " sgl-scan " + " ".join(shlex.quote(a) for a in args)


class ChannelReader:
    """A file-like reader over a channel's stdout with a deadline and a byte counter."""

    def __init__(self, channel: paramiko.Channel, deadline: float, on_bytes: Callable[[int], None] | None = None):
        self.channel = channel
        self.deadline = deadline
        self.pending = b""
        self.offset = 0
        self.received = 0
        self.on_bytes = on_bytes

    def _recv(self) -> bytes:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise RemoteError("the pull ran past its deadline (--timeout)")
        self.channel.settimeout(remaining)
        try:
            data = self.channel.recv(RECV)
        except (socket.timeout, TimeoutError) as exc:
            raise RemoteError("the remote host stopped sending before the deadline (--timeout)") from exc
        self.received += len(data)
        if self.on_bytes:
            self.on_bytes(self.received)
        return data

    def read(self, size: int = -1) -> bytes:
        if self.offset >= len(self.pending):
            data = self._recv()
            if size < 0 or len(data) <= size:
                return data
            self.pending, self.offset = data, 0
        end = len(self.pending) if size < 0 else min(len(self.pending), self.offset + size)
        data = self.pending[self.offset : end]
        self.offset = end
        return data

    def read_until(self, marker: bytes, limit: int) -> tuple[bytes, bool]:
        """Everything before `marker` (consumed) and True; or all there was and False at EOF."""
        buf = bytearray(self.pending[self.offset :])
        self.pending, self.offset = b"", 0
        start = 0
        while True:
            at = buf.find(marker, start)
            if at >= 0:
                self.pending = bytes(buf[at + len(marker) :])
                return bytes(buf[:at]), True
            if len(buf) > limit:
                raise RemoteError(f"the remote listing is larger than {human(limit)}; refusing")
            start = max(0, len(buf) - len(marker))
            data = self._recv()
            if not data:
                return bytes(buf), False
            buf += data


def head_limit(limits: Limits) -> int:
    """Bytes of the reply before the tar stream: the patch (capped at --max-file-size by the remote),
    and a listing and grep hits of at most --max-files names, each at most MAX_PATH_CHARS long."""
    per_name = MAX_PATH_CHARS + 128  # a record's stamps and tag, and a grep hit of the same path
    return min(limits.max_file_size + (256 << 20), limits.max_file_size + (1 << 20) + 2 * limits.max_files * per_name)


def parse_sections(head: bytes, nonce: str) -> dict[str, bytes]:
    sections: dict[str, bytes] = {}
    for part in head.split(b"\n" + nonce.encode() + b" ")[1:]:
        name, _, body = part.partition(b"\n")
        sections[name.decode("ascii", "replace")] = body
    return sections


def parse_listing(raw: bytes, max_records: int | None = None) -> Listing:
    """The tagged NUL-separated records of the remote `find` (see FIND_FMT), counted against
    `max_records` (--max-files) as they are parsed."""
    listing = Listing({}, set(), set())
    files = listing.files
    make = Listed._make  # tuple.__new__ in C: a fleet parses hundreds of these listings
    count = 0
    for record in raw.split(b"\0"):
        if not record:
            continue
        count += 1
        if max_records is not None and count > max_records:
            raise RemoteError(f"the remote listing has more than --max-files {max_records} entries; refusing")
        tag = record[:1]
        try:
            if tag == b"f":
                size, mtime, ctime, inode, path = record[1:].split(b" ", 4)
                files[path.decode("utf-8", "surrogateescape")] = make(
                    (int(size), float(mtime), float(ctime), int(inode))
                )
            elif tag == b"l" and len(record) > 1:
                listing.links.add(record[1:].decode("utf-8", "surrogateescape"))
            elif tag == b"o" and len(record) > 1:
                listing.odd.add(record[1:].decode("utf-8", "surrogateescape"))
            else:
                raise ValueError(tag)
        except ValueError as exc:
            raise RemoteError(f"the remote file listing is malformed near {record[:60]!r}") from exc
    return listing


def parse_now(raw: bytes) -> float | None:
    """The remote clock (`date +%s.%N`); a `date` without %N gives whole seconds, rounded down."""
    text = raw.decode("ascii", "replace").strip()
    head, _, tail = text.partition(".")
    if not head.isdigit():
        return None
    return float(f"{head}.{tail}") if tail.isdigit() else float(head)


def settled(listing: dict[str, Listed], now: float | None) -> dict[str, Listed]:
    """`listing` with the ctimes not trusted as settled (too close to `now`, or no clock) set to None."""
    out = {}
    for path, item in listing.items():
        ctime = item.ctime
        if ctime is not None and (now is None or now - ctime < (SETTLE_COARSE if ctime.is_integer() else SETTLE_FINE)):
            item = item._replace(ctime=None)
        out[path] = item
    return out


def same_file(old: FileEntry | None, item: Listed) -> bool:
    """Whether a listed file is the one a base snapshot holds: same size, mtime, ctime and inode.

    A base entry without a ctime (stored before ctimes were, or not settled then) is never trusted."""
    return (
        old is not None
        and old.ctime is not None
        and item.ctime is not None
        and old.size == item.size
        and old.mtime == item.mtime
        and old.ctime == item.ctime
        and old.inode == item.inode
    )


def _printable(text: str) -> str:
    """Remote text fit for one terminal line: control characters shown escaped, never obeyed."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _names(raw: bytes) -> set[str]:
    return {p.decode("utf-8", "surrogateescape") for p in raw.split(b"\0") if p}


class BaseLookup:
    """The latest snapshot of the same host and port, found in a thread while the remote works.

    `get(root)` gives the newest one with that remote root, its files' sizes checked (no hashes),
    or None; a snapshot that fails the check is not reused (and nothing older is tried).
    """

    def __init__(self, store: Store, target: Target) -> None:
        self.store = store
        self.target = target
        self.newest: dict[str, SourceHint] = {}
        self.checked: dict[str, Snapshot | SnapshotError] = {}
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="sgl-scan-base", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for hint in reversed(self.store.hints()):  # no manifest read but the chosen one's
                if self._ours(hint):
                    self.newest.setdefault(hint.root, hint)
            if self.newest:  # the most recent root is the likely one: check it now
                self._check(next(iter(self.newest)))
        except BaseException as exc:  # handed to the caller by get()
            self.error = exc

    def _ours(self, hint: SourceHint) -> bool:
        src = hint.source
        return (
            hint.source_kind == "ssh"
            and src.get("hostname") == self.target.hostname
            and src.get("port") == self.target.port
        )

    def _check(self, root: str) -> None:
        hint = self.newest[root]
        manifest = self.store.confirmed(hint)
        if manifest is None:
            self.checked[root] = SnapshotError(f"snapshot {hint.id} cannot be read")
            return
        snapshot = Snapshot(manifest=manifest, folder=self.store.root / manifest.id)
        try:
            self.store.verify(snapshot, hashes=False)
            self.checked[root] = snapshot
        except SnapshotError as exc:
            self.checked[root] = exc

    def get(self, root: str) -> Snapshot | None:
        self.thread.join()
        if self.error is not None:
            raise self.error
        if root not in self.newest:
            return None
        if root not in self.checked:
            self._check(root)
        found = self.checked[root]
        if isinstance(found, SnapshotError):
            log.warning("not reusing %s: %s", self.newest[root].id, found)
            return None
        return found


def _git_state(sections: Mapping[str, bytes]) -> tuple[GitState | None, str | None]:
    if "git-commit" not in sections:
        return None, None
    commit = sections["git-commit"].decode(errors="replace").strip()
    if not commit:
        return None, None
    branch = sections.get("git-branch", b"").decode(errors="replace").strip() or None
    dirty = bool(sections.get("git-status", b"").strip())
    patch = sections.get("git-diff", b"").decode("utf-8", "surrogateescape")
    return GitState(commit=commit, branch=branch, dirty=dirty), (patch if patch.strip() else None)


def _same_state(base: Snapshot, git: GitState | None, patch: str | None) -> bool:
    old = base.manifest.git
    if (old is None) != (git is None):
        return False
    if old and git and (old.commit, old.branch, old.dirty) != (git.commit, git.branch, git.dirty):
        return False
    old_patch = None
    if old and old.patch:
        try:
            old_patch = (base.folder / PATCH_FILE).read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            return False
    return old_patch == patch


def pull_ssh(
    params: Mapping,
    *,
    store: Store | None = None,
    limits: Limits | None = None,
    progress: Progress | None = None,
    before_transfer: Callable[[list[str]], None] | None = None,
    deadline: float | None = None,
    deadline_name: str = "--timeout",
) -> SshPull:
    """Pull (or refresh) a snapshot from `params["host"]` (the CLI's source options).

    One deadline covers the whole pull, from the TCP connect to the last byte: `--timeout` seconds
    (default 900), or `deadline` (a `time.monotonic()` value, e.g. a fleet's) when that is sooner."""
    store = store or Store()
    limits = limits or Limits.from_params(params)
    scope = scopes.check_scope(params.get("scope"))
    progress = progress or Progress("pull")
    connect_timeout = float(params.get("connect_timeout") or 15.0)
    seconds = float(params.get("timeout") or DEFAULT_TIMEOUT)
    own = time.monotonic() + seconds
    if deadline is None or own <= deadline:
        deadline, deadline_name = own, f"--timeout {seconds:g} s"
    target = resolve_target(
        params["host"],
        port=params.get("port"),
        user=params.get("user"),
        identity=params.get("identity"),
        ssh_config=params.get("ssh_config"),
    )
    nonce = secrets.token_hex(16)
    connector = Connector(
        known_hosts=params.get("known_hosts"),
        accept_new=bool(params.get("accept_new_host_key")),
        timeout=connect_timeout,
        deadline=deadline,
    )
    try:
        with connector:
            return _pull(
                connector,
                target,
                params,
                store,
                limits,
                scope,
                progress,
                before_transfer,
                nonce,
                deadline,
                connect_timeout,
            )
    except BaseException as exc:
        if connector.expired.is_set() or time.monotonic() >= deadline:
            raise RemoteError(
                f"{target.describe()} did not finish the pull within its deadline ({deadline_name}); gave up"
            ) from exc
        raise


def _pull(
    connector, target, params, store, limits, scope, progress, before_transfer, nonce, deadline, connect_timeout
) -> SshPull:
    progress.update(f"connecting to {target.describe()}", force=True)
    transport = connector.connect(target)
    try:
        channel = transport.open_session(timeout=connector._wait())
        # paramiko waits for the answer to `exec` without a timeout: the Connector's deadline ends it
        channel.exec_command(remote_command(params.get("remote_root"), scope, nonce, limits.max_file_size))
    except (paramiko.SSHException, OSError, EOFError) as exc:
        raise RemoteError(f"cannot run the remote command on {target.describe()}: {exc}") from exc
    bases = BaseLookup(store, target)  # while the remote shell starts and walks the tree
    try:
        return _transfer(
            channel, store, bases, target, params, scope, nonce, limits, progress, deadline, before_transfer
        )
    except (paramiko.SSHException, EOFError, ConnectionError) as exc:
        raise RemoteError(
            f"the connection to {target.describe()} failed during the pull: {exc or type(exc).__name__}"
        ) from exc
    finally:
        progress.done()
        channel.close()


def _stderr_tail(channel: paramiko.Channel) -> str:
    chunks = []
    while channel.recv_stderr_ready():
        chunks.append(channel.recv_stderr(65536))
    text = b"".join(chunks).decode(errors="replace").strip()
    return text.splitlines()[-1][:300] if text else ""


def _transfer(
    channel, store, bases, target, params, scope, nonce, limits, progress, deadline, before_transfer
) -> SshPull:
    reader = ChannelReader(channel, deadline, lambda n: progress.update(f"{human(n)} received"))
    head, complete = reader.read_until(f"\n{nonce} tar\n".encode(), limit=head_limit(limits))
    sections = parse_sections(head, nonce)
    if "error" in sections:
        raise RemoteError(f"{target.describe()}: {_printable(sections['error'].decode(errors='replace').strip())}")
    if not complete or "root" not in sections:
        status = channel.recv_exit_status() if channel.exit_status_ready() else None
        detail = _stderr_tail(channel)
        raise RemoteError(
            f"the remote command on {target.describe()} ended early"
            + (f" (exit {status})" if status is not None else "")
            + (f": {detail}" if detail else "")
        )
    root = sections["root"].decode("utf-8", "surrogateescape").rstrip("\n")
    how = sections.get("how", b"").decode(errors="replace")
    found = parse_listing(sections.get("list", b""), limits.max_files)
    found.files.update(parse_listing(sections.get("version", b""), 2).files)
    now = parse_now(sections.get("now", b""))
    if now is None:
        log.warning("%s: the remote clock is unreadable (no `date`?): every file is fetched", target.describe())
    listing = settled(found.files, now)
    undecodable = [p for p in listing if scopes.utf8_name(p) is not None]
    for path in undecodable:
        del listing[path]  # never requested; recorded as skipped
    hits = _names(sections.get("grep", b""))
    chosen = scopes.select(listing, scope, lambda path, pattern: path in hits)
    skipped = [SkippedFile(scopes.utf8_name(p) or p, "not a regular file") for p in found.odd]
    skipped += [SkippedFile(cast(str, scopes.utf8_name(p)), scopes.NOT_UTF8) for p in undecodable]  # named above
    for link in found.links - set(scopes.SCOPE_ROOTS):
        skipped.append(
            SkippedFile(
                scopes.utf8_name(link) or link,
                "not a regular file" if link.endswith(".py") else "symlink, not followed",
            )
        )
    for link in _names(sections.get("loops", b"")):
        skipped.append(SkippedFile(link, "symlink to a folder holding the package (a loop), not followed"))
    skipped.sort(key=lambda s: s.path)
    wanted_all = []
    for path in chosen:
        if listing[path].size > limits.max_file_size:
            skipped.append(SkippedFile(path, f"larger than --max-file-size ({human(listing[path].size)})"))
        else:
            wanted_all.append(path)
    if len(wanted_all) > limits.max_files:
        raise RemoteError(f"{len(wanted_all)} files selected, over --max-files {limits.max_files}")
    total = sum(listing[p].size for p in wanted_all)
    if total > limits.max_bytes:
        raise RemoteError(f"the selected files hold {human(total)}, over --max-bytes {human(limits.max_bytes)}")
    git, patch = _git_state(sections)
    base = bases.get(root)
    base_files = {e.path: e for e in base.manifest.files} if base else {}
    fetch, reuse = [], []
    for path in wanted_all:
        if same_file(base_files.get(PREFIX + path), listing[path]):
            reuse.append(path)
        else:
            fetch.append(path)
    log.info(
        "%s: root %s (found by %s), %d files in scope, %d to fetch, %d unchanged",
        target.describe(),
        root,
        how,
        len(wanted_all),
        len(fetch),
        len(reuse),
    )
    if (
        base
        and not fetch
        and len(reuse) == len(base_files)
        and base.manifest.scope == scope
        and _same_state(base, git, patch)
    ):
        log.info("nothing changed since snapshot %s", base.id)
        reused = replace(base, pulled=PullInfo(reused=True, unchanged=len(reuse)))
        return SshPull(reused, (), tuple(reuse), base.id, True, reader.received)
    if before_transfer:
        before_transfer(fetch)
    sender = threading.Thread(target=_send_names, args=(channel, fetch), daemon=True)
    sender.start()
    source = {
        "host": target.alias,
        "hostname": target.hostname,
        "port": target.port,
        "user": target.user,
        "jump": [hop.describe() for hop in target.jump],
        "found_by": how,
        "base": base.id if base else None,
        "fetched": len(fetch),
        "reused": len(reuse),
    }
    with store.stage() as stage:
        for path in reuse:
            stage.reuse(base, base_files[PREFIX + path])
        if fetch:
            extract_stream(
                reader,
                stage.write_later,
                prefix=PREFIX,
                expected={p: listing[p].mtime for p in fetch},
                limits=limits,
            )
            stage.flush()
        for path in wanted_all:  # the remote stamps the next re-pull compares
            item = listing[path]
            entry = stage.files[PREFIX + path]
            stage.files[entry.path] = replace(entry, mtime=item.mtime, ctime=item.ctime, inode=item.inode)
        sender.join(timeout=max(0.0, deadline - time.monotonic()))
        status = _exit_status(channel, deadline) if fetch else 0
        if status != 0:
            detail = _stderr_tail(channel)
            raise RemoteError(
                f"remote tar failed (exit {status}){': ' + detail if detail else ''}; did the tree change "
                "during the pull? retry"
            )
        snapshot = stage.commit(
            source_kind="ssh", source=source, root=root, scope=scope, git=git, patch=patch, skipped=tuple(skipped)
        )
    if not (snapshot.pulled and snapshot.pulled.reused):  # what crossed the wire, and what did not
        snapshot = replace(snapshot, pulled=PullInfo(reused=False, pulled=len(fetch), unchanged=len(reuse)))
    return SshPull(snapshot, tuple(fetch), tuple(reuse), base.id if base else None, False, reader.received)


def _exit_status(channel: paramiko.Channel, deadline: float) -> int:
    if not channel.status_event.wait(max(0.0, deadline - time.monotonic())):
        raise RemoteError("the remote command did not finish before the deadline (--timeout)")
    return channel.recv_exit_status()


def _send_names(channel: paramiko.Channel, names: list[str]) -> None:
    try:
        if names:
            channel.sendall(b"".join(n.encode("utf-8", "surrogateescape") + b"\0" for n in names))
        channel.shutdown_write()
    except (OSError, paramiko.SSHException, EOFError):
        pass  # the reader reports the broken connection
