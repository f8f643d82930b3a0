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
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Iterator, Mapping
from urllib.parse import unquote, urlsplit, urlunsplit

from sgl_scan.errors import ConfigError, SnapshotError
from sgl_scan.paths import sgl_scan_home
from sgl_scan.snapshots import safegit
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


@contextmanager
def open_repo(spec: str, params: Mapping | None = None) -> Iterator[tuple[safegit.Quarantine, str]]:
    """A local repository (work tree or bare), or a cached bare clone of a URL (fetched again),
    seen through a private git folder (`safegit`: nothing a repository's config names can run),
    and how to name it in reports."""
    local = Path(spec).expanduser()
    if local.exists():
        located = safegit.locate(local, search_parents=False, allow_bare=True)
        if located is None:
            raise SnapshotError(f"{local} is not a git repository")
        shown = str(local.absolute())
    else:
        params = params or {}
        limit = Limits.from_params(params).max_bytes
        cache, shown = _fetched(spec, limit=limit, timeout=float(params.get("timeout") or TRANSFER_TIMEOUT))
        located = safegit.Located(None, cache, cache)
    with safegit.quarantined(located) as repo:
        yield repo, shown


TRANSFER_TIMEOUT = 900.0  # seconds for one clone or fetch (--timeout)
ALLOWED_SCHEMES = ("https", "http", "ssh", "git", "file")


def _check_transport(spec: str) -> None:
    """Only plain transports: `https://`, `http://`, `ssh://`, `git://`, `file://` and `host:path`.
    `ext::CMD` runs a command, `fd::` reads a descriptor, and an argument starting with `-` is an
    option to git; all are usage errors."""
    scheme = urlsplit(spec).scheme if "://" in spec else ""
    if spec.startswith("-") or "::" in spec.split("/", 1)[0] or (scheme and scheme.lower() not in ALLOWED_SCHEMES):
        shown = redact_url(spec).split("::", 1)[0] + ("::..." if "::" in spec else "")
        raise ConfigError(
            f"--git {shown}: not a repository path or a URL sgl-scan fetches (https, http, ssh, git, file or HOST:PATH)"
        )


def _folder_size(folder: Path) -> int:
    total = 0
    for where, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(where, name)).st_size
            except OSError:
                pass
    return total


def _transfer(args: list[str], *, env: dict, into: Path, limit: int, timeout: float, spec: str) -> None:
    """Run `git ARGS` (a clone or fetch) that writes into `into`, stopped (whole process group) when
    it has written more than `limit` bytes there or runs past `timeout` seconds: a server that
    accepts and never answers, or sends without end, cannot hang or fill the pull."""
    import signal
    import subprocess
    import tempfile
    import time

    before = _folder_size(into) if into.exists() else 0
    ended = time.monotonic() + timeout
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            ["git", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
        )
        problem = None
        try:
            while True:
                try:
                    proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if time.monotonic() > ended:
                    problem = f"no complete answer within {timeout:.0f} s (--timeout)"
                elif into.exists() and _folder_size(into) - before > limit:
                    problem = f"it sends more than --max-bytes {human(limit)}"
                if problem:
                    break
        finally:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        if problem is None and into.exists() and _folder_size(into) - before > limit:
            problem = f"it sent more than --max-bytes {human(limit)}"
        if problem is None and proc.returncode != 0:
            errors.seek(0)
            lines = [
                t.strip(" '") for t in errors.read()[-65536:].decode("utf-8", "replace").splitlines() if t.strip(" '")
            ]
            problem = lines[-1] if lines else f"git exited with status {proc.returncode}"
    if problem is not None:
        raise SnapshotError(f"cannot fetch {redact_url(spec)}: {redact_url(problem).replace(spec, redact_url(spec))}")


def _fetched(spec: str, *, limit: int, timeout: float) -> tuple[Path, str]:
    """The cached bare clone (ours) of the URL `spec`, cloned or fetched now within `limit` bytes and
    `timeout` seconds."""
    _check_transport(spec)
    clean, auth = split_credentials(spec)
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **auth}
    folder = _private_folder(sgl_scan_home() / "git")
    cache = folder / (hashlib.sha256(clean.encode()).hexdigest()[:20] + ".git")
    with _locked(cache.with_suffix(".lock")):
        if cache.exists():
            try:
                # drops a credential an older clone stored; forced updates: a branch rewound or a tag
                # moved upstream (git tag -f) is followed
                _transfer(
                    ["--git-dir", str(cache), "remote", "set-url", "origin", "--", clean],
                    env=env,
                    into=cache,
                    limit=limit,
                    timeout=timeout,
                    spec=spec,
                )
                _transfer(
                    ["--git-dir", str(cache), "fetch", "--prune", "--force", "origin", *FETCH_REFSPECS],
                    env=env,
                    into=cache,
                    limit=limit,
                    timeout=timeout,
                    spec=spec,
                )
            except SnapshotError as exc:
                if "--max-bytes" in str(exc) or "--timeout" in str(exc):
                    raise
                log.warning("the cached clone of %s could not be updated (%s); cloning it again", redact_url(spec), exc)
                _reclone(clean, cache, env, limit=limit, timeout=timeout, spec=spec)
        else:
            log.info("cloning %s", redact_url(spec))
            _reclone(clean, cache, env, limit=limit, timeout=timeout, spec=spec)
    return cache, redact_url(spec)


FETCH_REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")


def _reclone(url: str, cache: Path, env: dict, *, limit: int, timeout: float, spec: str) -> None:
    """Make (or replace) the cached bare clone (ours, under the store) with a fresh one; an old one
    stays until the new clone is complete."""
    import shutil
    import tempfile

    fresh = Path(tempfile.mkdtemp(prefix=cache.name + ".new-", dir=cache.parent))
    try:
        # `url` holds no credential
        _transfer(
            ["clone", "--bare", "--quiet", "--", url, str(fresh / "repo.git")],
            env=env,
            into=fresh,
            limit=limit,
            timeout=timeout,
            spec=spec,
        )
        retired = cache.with_name(cache.name + ".old")
        shutil.rmtree(retired, ignore_errors=True)
        if cache.exists():
            cache.rename(retired)
        (fresh / "repo.git").rename(cache)
        shutil.rmtree(retired, ignore_errors=True)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


def branch_of(repo, rev: str) -> str | None:
    """The branch `rev` names, as git resolves it: a name that is both a tag and a branch is the
    tag (git's order: refs/tags before refs/heads), so no branch is recorded next to the tag's
    commit; `refs/heads/NAME` asks for the branch."""
    heads = {h.name for h in getattr(repo, "heads", [])}
    if rev.startswith("refs/heads/") and rev[len("refs/heads/") :] in heads:
        return rev[len("refs/heads/") :]
    if rev == "HEAD" or rev not in heads:
        return None
    if rev in {t.name for t in repo.tags}:
        log.warning("--rev %s is both a tag and a branch; using the tag (pass refs/heads/%s for the branch)", rev, rev)
        return None
    return rev


def pull_git(params: Mapping, *, store: Store | None = None, progress: Progress | None = None) -> Snapshot:
    store = store or Store()
    scope = scopes.check_scope(params.get("scope"))
    progress = progress or Progress("git")
    rev = params.get("rev") or "HEAD"
    with open_repo(params["git_repo"], params) as (safe, shown):
        sha = safe.commit_of(rev)  # as git resolves it; never an option, never a Python error
        if sha is None:
            raise SnapshotError(f"unknown revision {rev!r} in {shown}")
        try:
            return _pull_commit(safe, shown, sha, rev, params, scope, store, progress)
        except ValueError as exc:  # gitpython: an object the commit names is not in the repository
            raise SnapshotError(
                f"cannot read {shown} @ {rev}: an object it names is missing "
                "(a partial or damaged clone; sgl-scan never fetches missing objects)"
            ) from exc


def _pull_commit(
    safe: safegit.Quarantine,
    shown: str,
    sha: str,
    rev: str,
    params: Mapping,
    scope: str,
    store: Store,
    progress: Progress,
) -> Snapshot:
    limits = Limits.from_params(params)
    repo = safe.repo
    commit = repo.commit(sha)
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
            raise ConfigError(
                f"{submodules[0]}/ in {shown} @ {rev} is a git submodule (its files are in another "
                "repository); pull that repository with --git"
            )
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
        rel = item.path[len(prefix) + 1 :] if prefix else item.path
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
    skipped += [
        SkippedFile(rel, f"larger than --max-file-size ({human(size)}); not searched") for rel, size in oversized
    ]
    kept = [rel for rel in chosen if blobs[rel].size <= limits.max_file_size]
    limits.check_totals(len(kept), sum(blobs[rel].size for rel in kept))

    def read(rel: str) -> bytes:
        return blobs[rel].data_stream.read()

    branch = branch_of(repo, rev)
    if branch is None and rev == "HEAD" and safe.work_tree is not None:
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
            source_kind="git",
            source={"repo": shown, "rev": rev, "package": prefix or "."},
            root=shown,
            scope=scope,
            git=GitState(commit=commit.hexsha, branch=branch, dirty=False),
            skipped=tuple(skipped),
        )
