"""The manifest: what a snapshot holds and exactly where it came from (frozen values, JSON on disk).

A snapshot folder is `<store>/<id>/` with `manifest.json` and `tree/`; `tree/` mirrors the package
layout, so every path in a manifest (and in every later stage) reads like
`sglang/srt/speculative/spec_info.py` whatever the source was.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

MANIFEST_VERSION = 1
TREE_PREFIX = "sglang/"  # every tree path starts here


@dataclass(frozen=True)
class FileEntry:
    path: str  # POSIX, relative to the tree root, e.g. "sglang/srt/server_args.py"
    size: int
    sha256: str
    mtime: float | None = None  # remote mtime where known (incremental re-pull)
    ctime: float | None = None  # remote ctime (SSH pulls), None when unknown or not yet settled
    inode: int | None = None  # remote inode number (SSH pulls)


@dataclass(frozen=True)
class GitState:
    commit: str
    branch: str | None = None
    dirty: bool = False
    patch: str | None = None  # file name inside the snapshot folder holding `git diff` of local patches


@dataclass(frozen=True)
class SkippedFile:
    path: str  # like FileEntry.path; sources may give it relative to the package (`srt/...`)
    reason: str

    def __post_init__(self) -> None:
        if not self.path.startswith(TREE_PREFIX):
            object.__setattr__(self, "path", TREE_PREFIX + self.path.lstrip("/"))


@dataclass(frozen=True)
class Manifest:
    id: str
    source_kind: str  # "ssh" | "git" | "pip" | "local"
    source: Mapping[str, Any]  # host/port/user, repo/rev, spec, or path; never credentials
    root: str  # where the tree was read from (remote path, repo path, wheel file, folder)
    sglang_version: str | None
    scope: str  # "speculative" | "full"
    created: str  # ISO 8601 UTC
    files: tuple[FileEntry, ...]
    git: GitState | None = None
    skipped: tuple[SkippedFile, ...] = ()
    manifest_version: int = MANIFEST_VERSION

    def to_json(self) -> str:
        """Indented JSON with one line per file (fast for thousands of files; `from_dict` reads it)."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "files"}
        data["source"] = dict(self.source)
        data["git"] = asdict(self.git) if self.git else None
        data["skipped"] = [asdict(s) for s in self.skipped]
        data["files"] = []
        head = json.dumps(data, indent=2, sort_keys=True)
        rows = ",\n".join("    " + json.dumps(_file_row(f)) for f in self.files)
        if not rows:
            return head
        return head.replace('\n  "files": []', '\n  "files": [\n' + rows + "\n  ]", 1)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Manifest":
        git = data.get("git")
        return cls(
            id=data["id"],
            source_kind=data["source_kind"],
            source=dict(data.get("source") or {}),
            root=data["root"],
            sglang_version=data.get("sglang_version"),
            scope=data.get("scope", "speculative"),
            created=data["created"],
            files=tuple(FileEntry(**f) for f in data.get("files", ())),
            git=GitState(**git) if git else None,
            skipped=tuple(SkippedFile(**s) for s in data.get("skipped", ())),
            manifest_version=data.get("manifest_version", MANIFEST_VERSION),
        )


def _file_row(f: FileEntry) -> dict[str, Any]:
    """One file's JSON object; the remote stamps `ctime` and `inode` only where known."""
    row: dict[str, Any] = {"mtime": f.mtime, "path": f.path, "sha256": f.sha256, "size": f.size}
    if f.ctime is not None:
        row["ctime"] = f.ctime
    if f.inode is not None:
        row["inode"] = f.inode
    return row


@dataclass(frozen=True)
class PullInfo:
    """What the pull that gave a snapshot did (said on stderr; never stored)."""

    reused: bool  # an identical snapshot was stored already and is given back; nothing new was stored
    pulled: int = 0  # files whose bytes were read from the source into the store
    unchanged: int = 0  # files the store already held with the same content (not read, or shared)

    def describe(self, snap_id: str) -> str:
        if self.reused:
            return f"reused snapshot {snap_id} (same source, same content)"
        return f"pulled {self.pulled} files ({self.unchanged} unchanged) into snapshot {snap_id}"


@dataclass(frozen=True)
class Snapshot:
    """A stored snapshot: its manifest and the folder whose `tree/` holds the files.

    `pulled` says how a pull just produced it (None when it was opened from the store).
    """

    manifest: Manifest
    folder: Path
    pulled: PullInfo | None = field(default=None, compare=False)

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def tree(self) -> Path:
        return self.folder / "tree"
