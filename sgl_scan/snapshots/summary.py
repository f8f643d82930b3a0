"""A short, stable plain-text summary of a snapshot (what `scan` prints until the analyzer lands)."""

from __future__ import annotations

from sgl_scan.snapshots.manifest import Manifest, Snapshot
from sgl_scan.snapshots.tarstream import human


def describe_source(manifest: Manifest) -> str:
    src = manifest.source
    if manifest.source_kind == "ssh":
        text = f"ssh {src.get('user')}@{src.get('hostname')}:{src.get('port')}"
        if src.get("jump"):
            text += f" via {', '.join(src['jump'])}"
        return text
    if manifest.source_kind == "git":
        return f"git {src.get('repo')} @ {src.get('rev')}"
    if manifest.source_kind == "pip":
        return f"pip {src.get('spec')} ({src.get('archive')})"
    return f"{manifest.source_kind} {src.get('path', manifest.root)}"


def format_summary(snapshot: Snapshot) -> str:
    m = snapshot.manifest
    lines = [
        f"snapshot   {m.id}",
        f"source     {describe_source(m)}",
        f"root       {m.root}",
        f"version    {m.sglang_version or 'unknown'}",
    ]
    if m.git:
        state = "dirty" if m.git.dirty else "clean"
        branch = f" ({m.git.branch})" if m.git.branch else ""
        patch = f", local patches in {m.git.patch}" if m.git.patch else ""
        lines.append(f"git        {m.git.commit or 'unknown'}{branch}, {state}{patch}")
    total = sum(f.size for f in m.files)
    lines.append(f"scope      {m.scope}: {len(m.files)} files, {human(total)}")
    if m.skipped:
        lines.append(f"skipped    {len(m.skipped)} files (see: sgl-scan snapshot show {m.id})")
    lines.append(f"created    {m.created}")
    lines.append(f"folder     {snapshot.folder}")
    return "\n".join(lines)
