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

from sgl_scan.errors import ConfigError, SnapshotError
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
                try:
                    repo = git.Repo(cache)
                    repo.git.remote("set-url", "origin", clean)  # drops a credential an older clone stored
                    # forced updates: a branch rewound or a tag moved upstream (git tag -f) is followed
                    repo.git.fetch("--prune", "--force", "origin", *FETCH_REFSPECS, env=env)
                except (git.GitCommandError, git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
                    log.warning("the cached clone of %s could not be updated (%s); cloning it again",
                                redact_url(spec), _last_line(exc, spec))
                    repo = _reclone(clean, cache, env)
            else:
                log.info("cloning %s", redact_url(spec))
                repo = git.Repo.clone_from(clean, cache, bare=True, env=env)
        except git.GitCommandError as exc:
            raise SnapshotError(f"cannot fetch {redact_url(spec)}: {_last_line(exc, spec)}") from exc
    return repo, redact_url(spec)


FETCH_REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")


def _last_line(exc: Exception, spec: str) -> str:
    message = (getattr(exc, "stderr", None) or str(exc)).strip().splitlines()
    detail = redact_url(message[-1].strip(" '")) if message else "git failed"
    return detail.replace(spec, redact_url(spec))


def _reclone(url: str, cache: Path, env: dict):
    """Replace the cached bare clone (ours, under the store) with a fresh one; the old one stays
    until the new clone is complete."""
    import shutil
    import tempfile

    import git

    fresh = Path(tempfile.mkdtemp(prefix=cache.name + ".new-", dir=cache.parent))
    try:
        git.Repo.clone_from(url, fresh / "repo.git", bare=True, env=env)  # `url` holds no credential
        retired = cache.with_name(cache.name + ".old")
        shutil.rmtree(retired, ignore_errors=True)
        cache.rename(retired)
        (fresh / "repo.git").rename(cache)
        shutil.rmtree(retired, ignore_errors=True)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    return git.Repo(cache)


def branch_of(repo, rev: str) -> str | None:
    """The branch `rev` names, as git resolves it: a name that is both a tag and a branch is the
    tag (git's order: refs/tags before refs/heads), so no branch is recorded next to the tag's
    commit; `refs/heads/NAME` asks for the branch."""
    heads = {h.name for h in getattr(repo, "heads", [])}
    if rev.startswith("refs/heads/") and rev[len("refs/heads/"):] in heads:
        return rev[len("refs/heads/"):]
    if rev == "HEAD" or rev not in heads:
        return None
    if rev in {t.name for t in repo.tags}:
        log.warning("--rev %s is both a tag and a branch; using the tag (pass refs/heads/%s for the branch)", rev, rev)
        return None
    return rev


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
    submodules = []
    for layout in LAYOUTS:
        try:
            candidate = tree / layout if layout else tree
            if candidate.type != "tree":
                submodules.append(layout)
                continue
            srt = candidate / "srt"
        except KeyError:
            continue
        if srt.type != "tree":
            submodules.append(f"{layout}/srt" if layout else "srt")
            continue
        package, prefix = candidate, layout
        break
    if package is None:
        if submodules:
            # the argument names the wrong repository: a usage error, fixed by naming the submodule's
            raise ConfigError(f"{submodules[0]}/ in {shown} @ {rev} is a git submodule (its files are in another "
                              "repository); pull that repository with --git")
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
        readable = scopes.utf8_name(rel)
        if readable is not None:  # not UTF-8: recorded under a readable stand-in
            skipped.append(SkippedFile(readable, scopes.NOT_UTF8))
            continue
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

    branch = branch_of(repo, rev)
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
