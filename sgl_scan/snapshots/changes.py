"""What a git checkout changed since a base revision: the merge base, and the changed lines per file.

`sgl-scan check` reviews only these lines. git runs through `safegit` (no configuration of the
repository's, the system's or the user's is read: no command any of them names can run), with
prefixes, external diffs, textconv and colour switched off. A pure deletion touches the lines on
both sides of it; untracked files count whole; a file git counts as changed but that was not read
from the diff is an error, never a silently passed review.
"""

from __future__ import annotations

import codecs
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from sgl_scan.errors import ConfigError, SnapshotError
from sgl_scan.snapshots.safeio import read_regular

if TYPE_CHECKING:
    from sgl_scan.snapshots.safegit import Quarantine

MAX_UNTRACKED = 64 * 1024**2  # bytes of an untracked file counted for its changed lines
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


@contextmanager
def open_checkout(start: Path) -> Iterator["Quarantine"]:
    """The git checkout containing `start`, seen through a private git folder (`safegit`: nothing
    its config names can run); a usage error when there is none."""
    from sgl_scan.snapshots import safegit

    located = safegit.locate(start)
    if located is None or located.work_tree is None:
        raise ConfigError(f"{start} is not inside a git checkout (check needs one; use scan otherwise)")
    with safegit.quarantined(located) as repo:
        yield repo


def diff_base_commit(repo: "Quarantine", rev: str) -> str:
    """The merge base of `rev` and HEAD (or `rev` itself when HEAD is unborn or unrelated)."""
    from sgl_scan.snapshots.safegit import GitFailed

    root = repo.work_tree
    base = repo.commit_of(rev)
    if base is None:
        named = _named_object(repo, rev)
        if named is None:
            raise ConfigError(f"--diff-base {rev}: no such revision in {root}")
        # named by a commit this (shallow) clone has, but not fetched
        shallow = " shallow" if (repo.private / "shallow").exists() else ""
        raise ConfigError(
            f"--diff-base {rev} is commit {named[:12]}, which this{shallow} clone does not have; "
            "fetch it first (git fetch --deepen=1, or fetch-depth: 0 in actions/checkout)"
        )
    head = repo.commit_of("HEAD")
    if head is None:
        return base
    try:
        bases = repo.text("merge-base", base, head, ok=(0, 1)).split()
    except GitFailed:
        bases = []
    return bases[0] if bases else base


_HEX = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_ANCESTRY = re.compile(r"(.+?)((?:[~^][0-9]*)+)")


def _named_object(repo: "Quarantine", rev: str) -> str | None:
    """The commit id `rev` names even where git cannot reach it: a ref to a commit that was not
    fetched, or `X~N` / `X^N` past a shallow clone's boundary (the parents a fetched commit records)."""
    if not rev or rev.startswith("-"):
        return None
    if _HEX.fullmatch(rev):
        return rev
    try:
        out = repo.text("rev-parse", "--verify", "--quiet", "--end-of-options", rev).strip()
        if _HEX.fullmatch(out):
            return out
    except Exception:  # noqa: BLE001 - any failure: not a plain name
        pass
    match = _ANCESTRY.fullmatch(rev)
    sha = repo.commit_of(match.group(1)) if match else None
    if sha is None:
        return None
    assert match is not None  # sha came from it
    for step in re.findall(r"[~^][0-9]*", match.group(2)):
        count = int(step[1:]) if step[1:] else 1
        hops, which = (count, 1) if step[0] == "~" else (1 if count else 0, count)
        for _ in range(hops):
            try:
                raw = repo.text("cat-file", "commit", sha)
            except Exception:  # noqa: BLE001 - past what this clone has: unknown
                return None
            parents = re.findall(r"^parent ([0-9a-f]+)$", raw.split("\n\n", 1)[0], re.M)
            if len(parents) < which:
                return None
            sha = parents[which - 1]
    return sha


# Run through `safegit` (no configuration of the repository's, the system's or the user's is read),
# with paths without prefixes, plain text, hunks with no context, no textconv, no external diff.
_DIFF = [
    "-c",
    "core.quotePath=false",
    "diff",
    "--no-prefix",
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--find-renames",
    "--unified=0",
]


def _unquote(path: str) -> str:
    """A path as git prints it in a patch header (C-quoted when it holds special characters)."""
    if path.startswith('"') and path.endswith('"'):
        return codecs.escape_decode(path[1:-1].encode("utf-8"))[0].decode("utf-8", "replace")
    return path


def parse_unified_diff(text: str, *, prefix: str = "") -> dict[str, set[int]]:
    """Changed lines per new-side path from `git diff --unified=0` output (paths printed with
    `prefix`, "" for --no-prefix). A hunk that only deletes touches the lines on both sides of the
    gap, so a statement made wrong by removing one of its lines counts as changed."""
    changed: dict[str, set[int]] = {}
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("+++ "):
            raw = line[4:]
            target = _unquote(raw[:-1] if raw.endswith("\t") else raw)  # git ends a name holding a space with a tab
            current = (
                None
                if target == "/dev/null"
                else target[len(prefix) :]
                if prefix and target.startswith(prefix)
                else target
            )
            if current is not None:
                changed.setdefault(current, set())
            continue
        match = _HUNK.match(line)
        if match and current is not None:
            start, count = int(match.group(1)), int(match.group(2) if match.group(2) is not None else 1)
            if count:
                changed[current].update(range(start, start + count))
            else:  # lines removed after new line `start`: the lines around the gap
                changed[current].update(n for n in (start, start + 1) if n >= 1)
    return changed


def _numstat(repo, base: str, pathspecs: list[str]) -> dict[str, int]:
    """Path -> lines added plus removed, as git counts them (binary files left out)."""
    out = repo.text(*_DIFF[:-1], "--numstat", "-z", "--diff-filter=d", base, "--", *pathspecs)
    counts: dict[str, int] = {}
    fields = out.split("\0")
    i = 0
    while i < len(fields):
        head = fields[i]
        if not head:
            i += 1
            continue
        added, removed, path = (head.split("\t", 2) + ["", ""])[:3]
        if path == "":  # a rename: the old and the new path follow
            path = fields[i + 2] if i + 2 < len(fields) else ""
            i += 3
        else:
            i += 1
        if added.isdigit() and removed.isdigit() and path:
            counts[path] = int(added) + int(removed)
    return counts


def changed_lines(repo, base: str, pathspecs: list[str]) -> dict[str, set[int]]:
    """Repo-relative path -> changed line numbers, working tree against `base`, untracked files whole.

    An empty `pathspecs` means the whole repository. Every file git counts as changed must show up;
    otherwise the diff was misread and the review would pass silently, so that is an error."""
    from sgl_scan.snapshots.safegit import GitFailed

    try:
        text = repo.text(*_DIFF, base, "--", *pathspecs)
        counts = _numstat(repo, base, pathspecs)
        untracked = repo.text("ls-files", "--others", "--exclude-standard", "-z", "--", *pathspecs).split("\0")
    except GitFailed as exc:
        raise SnapshotError(f"git diff against {base[:12]} failed: {exc}") from None
    changed = parse_unified_diff(text)
    missed = sorted(path for path, n in counts.items() if n and not changed.get(path))
    if missed:
        raise SnapshotError(
            f"git reports changes in {len(missed)} file(s) that were not read from its diff (first: "
            f"{missed[0]}); refusing to pass the review"
        )
    root = Path(repo.work_tree)
    for path in filter(None, untracked):
        try:  # never a FIFO, a link out of the tree, or more than a source file holds
            body, _ = read_regular(root / path, MAX_UNTRACKED)
        except OSError:
            continue
        count = len(body[:MAX_UNTRACKED].splitlines())
        changed[path] = set(range(1, count + 1))
    return {path: lines for path, lines in changed.items() if lines}


def package_parent(root: Path) -> Path:
    """The folder holding `sglang/srt` in a checkout: the root, `python/`, or one found below."""
    for candidate in (root, root / "python"):
        if (candidate / "sglang" / "srt").is_dir():
            return candidate
    for depth in ("*", "*/*", "*/*/*"):
        for found in sorted(root.glob(f"{depth}/sglang/srt")):
            if ".git" not in found.parts and found.is_dir():
                return found.parent.parent
    raise ConfigError(f"no sglang/srt package found in {root}")


def to_snapshot_paths(changed: dict[str, set[int]], prefix: str) -> dict[str, frozenset[int]]:
    """Repo-relative paths under `prefix` (e.g. "python/") -> snapshot-relative paths."""
    result = {}
    for path, lines in changed.items():
        if prefix and not path.startswith(prefix):
            continue
        result[path[len(prefix) :]] = frozenset(lines)
    return result


@dataclass(frozen=True)
class Changes:
    """A checkout's changes since a base revision, as `check` needs them."""

    root: Path  # the checkout's work tree
    parent: Path  # the folder holding `sglang/srt` (the root, `python/`, or one found below)
    prefix: str  # `parent` relative to `root`, with a trailing "/" ("" when they are the same)
    base: str  # the merge base commit
    changed: dict[str, set[int]]  # repo-relative path -> changed lines
    wanted: dict[str, frozenset[int]]  # the same, for the files under `parent`, snapshot-relative


def changes_since(starts: list[Path], diff_base: str) -> Changes:
    """The changes of the checkout holding the first of `starts` (the current folder when none)
    since the merge base of `diff_base` and HEAD, limited to `starts` (none: the whole repository)."""
    first = starts[0] if starts else Path.cwd()
    with open_checkout(first if first.is_dir() else first.parent) as repo:
        assert repo.work_tree is not None  # open_checkout refuses a folder without one
        root = Path(repo.work_tree).resolve()
        pathspecs = []  # none: the whole repository, wherever check runs from
        for start in starts:
            try:
                relative = start.relative_to(root)
            except ValueError:
                raise ConfigError(f"{start} is outside the checkout {root}") from None
            pathspecs.append(":(top,literal)" + relative.as_posix() if str(relative) != "." else ":/")
        base = diff_base_commit(repo, diff_base)
        changed = changed_lines(repo, base, pathspecs)
    parent = package_parent(root)
    prefix = "" if parent == root else parent.relative_to(root).as_posix() + "/"
    return Changes(root, parent, prefix, base, changed, to_snapshot_paths(changed, prefix))
