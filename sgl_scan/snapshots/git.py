"""Snapshot a git repository at a revision (`--git URL|PATH --rev REV`), never touching a work tree.

A local path is opened as it is (work tree or bare); a URL is cloned bare into
`$SGLSCAN_HOME/git/<hash>.git` once and fetched on later pulls. Files are read from the commit's
tree objects (gitpython), so the user's checkout, index and stash are left alone. The package is
found at `python/sglang`, `sglang` or the top of the tree.

Credentials in URLs are never stored: the clone's `origin` is the URL without them, and for each
clone or fetch an `http.extraHeader` (Basic authorization) is handed to git through the
environment (`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_0`/`GIT_CONFIG_VALUE_0`, not the command line),
with `GIT_TERMINAL_PROMPT=0`. `$SGLSCAN_HOME/git/` is private to the user (0700). A clone made
by an older version with a credential in its `origin` is rewritten on its next fetch.
A revision pulled again at the same commit gives back the stored snapshot, not a copy.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
from contextlib import nullcontext
from pathlib import Path
from typing import Mapping
from urllib.parse import unquote, urlsplit, urlunsplit

from sgl_scan.errors import SnapshotError
from sgl_scan.paths import sgl_scan_home
from sgl_scan.snapshots import scope as scopes
from sgl_scan.snapshots.manifest import GitState, Snapshot, SkippedFile
from sgl_scan.snapshots.progress import Progress
from sgl_scan.snapshots.store import Store
from sgl_scan.snapshots.tarstream import Limits, human
from sgl_scan.snapshots.wheel import _locked

log = logging.getLogger(__name__)

LAYOUTS = ("python/sglang", "sglang", "")
REGULAR_MODES = (0o100644, 0o100755)


def redact_url(url: str) -> str:
    """`url` without passwords or tokens (`https://user:tok@host/x` -> `https://***@host/x`)."""
    parts = urlsplit(url)
    if parts.scheme and "@" in parts.netloc:
        userinfo, _, host = parts.netloc.rpartition("@")
        if ":" in userinfo or parts.scheme in ("http", "https"):
            return urlunsplit(parts._replace(netloc=f"***@{host}"))
    return url


def split_credentials(url: str) -> tuple[str, dict[str, str]]:
    """(`url` without user and password, the git environment that authenticates it at run time).

    Only http(s) URLs carry credentials git would send; for others the URL is returned unchanged
    (an `ssh://user@host` user name is no secret) and the environment is empty.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or "@" not in parts.netloc:
        return url, {}
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
    env = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {token}",
    }
    return urlunsplit(parts._replace(netloc=host)), env


def _private_folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


def open_repo(spec: str):
    """A gitpython Repo for a local path, or a cached bare clone of a URL (fetched again)."""
    import git

    local = Path(spec).expanduser()
    if local.exists():
        try:
            return git.Repo(local), str(local.absolute())
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
            raise SnapshotError(f"{local} is not a git repository") from exc
    clean, auth = split_credentials(spec)
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **auth}
    folder = _private_folder(sgl_scan_home() / "git")
    cache = folder / (hashlib.sha256(clean.encode()).hexdigest()[:20] + ".git")
    with _locked(cache.with_suffix(".lock")):
        try:
            if cache.exists():
                repo = git.Repo(cache)
                repo.git.remote("set-url", "origin", clean)  # drops a credential an older clone stored
                repo.git.fetch("--prune", "--tags", "origin", "+refs/heads/*:refs/heads/*", env=env)
            else:
                log.info("cloning %s", redact_url(spec))
                repo = git.Repo.clone_from(clean, cache, bare=True, env=env)
        except git.GitCommandError as exc:
            message = (exc.stderr or str(exc)).strip().splitlines()
            detail = redact_url(message[-1]) if message else "git failed"
            raise SnapshotError(f"cannot fetch {redact_url(spec)}: {detail.replace(spec, redact_url(spec))}") from exc
    return repo, redact_url(spec)


def pull_git(params: Mapping, *, store: Store | None = None, progress: Progress | None = None) -> Snapshot:
    import git

    store = store or Store()
    scope = scopes.check_scope(params.get("scope"))
    limits = Limits.from_params(params)
    progress = progress or Progress("git")
    rev = params.get("rev") or "HEAD"
    repo, shown = open_repo(params["git_repo"])
    try:
        commit = repo.commit(rev)
    except (git.BadName, ValueError, git.GitCommandError) as exc:
        raise SnapshotError(f"unknown revision {rev!r} in {shown}") from exc
    tree = commit.tree
    package = None
    for layout in LAYOUTS:
        try:
            candidate = tree / layout if layout else tree
            candidate / "srt"
        except KeyError:
            continue
        package, prefix = candidate, layout
        break
    if package is None:
        raise SnapshotError(f"no SGLang package (srt/) at python/sglang, sglang or the top of {shown} @ {rev}")
    blobs, skipped = {}, []
    for name in scopes.VERSION_FILES:
        try:
            blobs[name] = package / name
        except KeyError:
            pass
    for item in (package / "srt").traverse():
        if item.type != "blob" or not item.path.endswith(".py"):
            continue
        rel = item.path[len(prefix) + 1:] if prefix else item.path
        if item.mode not in REGULAR_MODES:
            skipped.append(SkippedFile(rel, "not a regular file"))
            continue
        blobs[rel] = item
    # Sizes come from the object headers; a search streams at most --max-file-size bytes of a blob and
    # nothing read is kept: a file is read again (whole, within the limit) only when it is stored.
    chosen, oversized = scopes.select_streamed(
        blobs, scope, lambda rel: blobs[rel].size, lambda rel: nullcontext(blobs[rel].data_stream), limits.max_file_size
    )
    skipped += [SkippedFile(rel, f"larger than --max-file-size ({human(size)}); not searched") for rel, size in oversized]
    kept = [rel for rel in chosen if blobs[rel].size <= limits.max_file_size]
    limits.check_totals(len(kept), sum(blobs[rel].size for rel in kept))

    def read(rel: str) -> bytes:
        return blobs[rel].data_stream.read()

    branch = rev if rev != "HEAD" and rev in [h.name for h in getattr(repo, "heads", [])] else None
    if branch is None and rev == "HEAD" and not repo.bare:
        branch = None if repo.head.is_detached else repo.active_branch.name
    with store.stage() as stage:
        for number, rel in enumerate(chosen, 1):
            if blobs[rel].size > limits.max_file_size:
                skipped.append(SkippedFile(rel, f"larger than --max-file-size ({human(blobs[rel].size)})"))
                continue
            stage.write("sglang/" + rel, read(rel))
            progress.update(f"{number}/{len(chosen)} files")
        progress.done()
        return stage.commit(
            source_kind="git", source={"repo": shown, "rev": rev, "package": prefix or "."},
            root=shown, scope=scope, git=GitState(commit=commit.hexsha, branch=branch, dirty=False),
            skipped=tuple(skipped),
        )
