"""A short, stable plain-text summary of a snapshot (what `scan` prints until the analyzer lands)."""

from __future__ import annotations

from sgl_scan.snapshots.manifest import Manifest, Snapshot
from sgl_scan.snapshots.tarstream import human


def describe_source(manifest: Manifest) -> str:
    """One line naming where a snapshot came from: `ssh root@gpu-box:/root/sglang/python/sglang`
    (the ssh-config alias, the remote root; the address, port and jump hosts when they add
    something), `pip sglang==0.5.23`, `git REPO@REV`, `path /home/me/sglang/python/sglang`."""
    source = dict(manifest.source)
    kind = manifest.source_kind
    if kind == "ssh":
        host = source.get("host") or source.get("hostname") or "?"
        user = source.get("user")
        where = f"{user}@{host}" if user else str(host)
        notes = [str(source["hostname"])] if source.get("hostname") and source.get("hostname") != host else []
        if source.get("port") and str(source.get("port")) != "22":
            notes.append(f"port {source['port']}")
        if source.get("jump"):
            notes.append(f"via {', '.join(map(str, source['jump']))}")
        return f"ssh {where}:{manifest.root}" + (f" ({', '.join(notes)})" if notes else "")
    if kind == "pip":
        spec = source.get("spec") or source.get("requirement") or manifest.root
        return f"pip {spec}"
    if kind == "git":
        repo = source.get("repo") or source.get("url") or manifest.root
        rev = source.get("rev")
        return f"git {repo}@{rev}" if rev else f"git {repo}"
    if kind == "local":
        return f"path {source.get('path') or manifest.root}"
    details = " ".join(f"{k}={source[k]}" for k in sorted(source))
    return f"{kind} {details}".strip()


def git_label(manifest: Manifest) -> str | None:
    """`1a2b3c4d5e6f (main, dirty)`, or None when the snapshot has no git state."""
    git = manifest.git
    if git is None:
        return None
    notes = [n for n in (git.branch, "dirty" if git.dirty else "clean") if n]
    return f"{git.commit[:12] or 'no commit'} ({', '.join(notes)})"


def is_release(manifest: Manifest) -> bool:
    """Whether the tree is a release as published (a package-index archive), not a checkout that
    may carry edits: only then may an answer call it "SGLang X" without saying where it came from."""
    return manifest.source_kind == "pip"


def tree_line(manifest: Manifest, latest: str | None = None) -> str:
    """The one line that names the tree an answer is about: version, snapshot, source, git state,
    and (`latest`) how an implicit `latest` was chosen.

        SGLang 0.5.23, snapshot 20261202T140200-local-sglang-1a2b3c,
        from path /home/me/sglang/python/sglang at git 1a2b3c4d5e6f (main, dirty)

    (shown here on two lines; the answer is one)
    """
    text = (
        f"SGLang {manifest.sglang_version or 'unknown version'}, snapshot {manifest.id}, from "
        f"{describe_source(manifest)}"
    )
    git = git_label(manifest)
    if git:
        text += f" at git {git}"
    return f"{text} ({latest})" if latest else text


def tree_fields(manifest: Manifest, latest: str | None = None) -> dict:
    """The same as JSON: {"line", "snapshot_id", "sglang_version", "source", "git", "latest"}."""
    git = manifest.git
    return {
        "line": tree_line(manifest, latest),
        "snapshot_id": manifest.id,
        "sglang_version": manifest.sglang_version,
        "source_kind": manifest.source_kind,
        "source": describe_source(manifest),
        "git": None if git is None else {"commit": git.commit, "branch": git.branch, "dirty": git.dirty},
        "latest": latest,
    }


def latest_note(manifest: Manifest, marked: float | None, *, implicit: bool = True) -> str:
    """What `latest` was: `latest: no source was named; this is the tree last pulled or scanned,
    latest since 2026-12-02 14:02 UTC` (without the first clause for an explicit `--snapshot latest`);
    the tree line beside it says what that tree is."""
    from datetime import datetime, timezone

    when = (
        f"latest since {datetime.fromtimestamp(marked, timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}"
        if marked is not None
        else f"pulled {manifest.created[:16].replace('T', ' ')} UTC"
    )
    why = "no source was named; this is" if implicit else "--snapshot latest is"
    return f"latest: {why} the tree last pulled or scanned, {when}"


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
