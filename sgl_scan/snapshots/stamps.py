"""File stamps: proving that a file is unchanged without reading it.

A stamp is (size, mtime_ns, ctime_ns, inode, device). Any write, truncation, rename over the file,
`chmod` or `touch` changes the ctime or the inode, and no user call sets the ctime back, so a file
whose stamp equals the one recorded when its sha256 was computed still holds those bytes. One
exception, as in git's index: the kernel's clock ticks coarsely, so a file changed in the same
tick as it was last read can keep its stamp. A stamp is therefore trusted only when it was recorded
more than `RACY_NS` after the file's last change (mtime or ctime); files modified within the last
~2 s are read and hashed again, every time, until they have settled.

`StampFile` keeps {name: (stamp, recorded_ns, value)} for one folder (a local source or a stored
snapshot) in one file, guarded by a sha256 like the facts cache; a damaged file reads as empty.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import time
from pathlib import Path
from typing import Any

RACY_NS = 2_000_000_000
MAGIC = b"SGLSTAMP1\n"
_DIGEST = 32

Stamp = tuple[int, int, int, int, int]


def stamp_of(st: os.stat_result) -> Stamp:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


class StampFile:
    """Recorded stamps (and what was learned from the bytes they stand for) of one folder's files."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.entries: dict[str, tuple[Stamp, int, Any]] = _load(self.path)
        self.changed = False
        self.now = time.time_ns()

    def get(self, name: str, st: os.stat_result) -> Any | None:
        """What was recorded for `name` when its stamp is `st`'s and had settled; else None."""
        known = self.entries.get(name)
        if known is None:
            return None
        recorded_stamp, recorded_ns, value = known
        if recorded_stamp != stamp_of(st) or recorded_ns - max(st.st_mtime_ns, st.st_ctime_ns) <= RACY_NS:
            return None
        return value

    def put(self, name: str, st: os.stat_result, value: Any) -> None:
        """Record `value` (learned from the bytes read after `st` was taken) for this stamp."""
        entry = (stamp_of(st), self.now, value)
        if self.entries.get(name) != entry:
            self.entries[name] = entry
            self.changed = True

    def keep_only(self, names: set[str]) -> None:
        """Forget every name not in `names` (files that are gone)."""
        gone = [name for name in self.entries if name not in names]
        for name in gone:
            del self.entries[name]
        self.changed = self.changed or bool(gone)

    def save(self) -> None:
        """Write the stamps when they changed (atomically; a failure only costs a re-read next time)."""
        if not self.changed:
            return
        payload = pickle.dumps(self.entries, protocol=pickle.HIGHEST_PROTOCOL)
        tmp = self.path.with_name(f".{self.path.name}.{os.urandom(4).hex()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, self.path)
            self.changed = False
        except OSError:
            try:
                tmp.unlink()
            except OSError:
                pass


def _load(path: Path) -> dict:
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    head = len(MAGIC) + _DIGEST
    payload = data[head:]
    if not data.startswith(MAGIC) or hashlib.sha256(payload).digest() != data[len(MAGIC) : head]:
        return {}
    try:
        value = pickle.loads(payload)
    except Exception:
        return {}
    return value if isinstance(value, dict) else {}


def source_stamps(store_root: Path, folder: Path) -> StampFile:
    """The stamps of a local source folder's files, kept beside the store (`.stamps/`)."""
    key = hashlib.sha256(os.fsencode(folder)).hexdigest()[:24]
    return StampFile(Path(store_root) / ".stamps" / f"local-{key}.pkl")
