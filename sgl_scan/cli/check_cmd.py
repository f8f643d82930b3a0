"""`sgl-scan check [PATHS] --diff-base REV`: code review — only findings on lines changed since REV.

Run inside an SGLang git checkout (a fork, or a pull request's head). The whole tree is analysed
(whole-program rules need it); findings are then kept only where they touch a line that differs
between the merge base of REV and HEAD and the working tree (committed, staged, unstaged or
untracked), as `git diff <merge-base>` shows them — git runs through `snapshots/safegit.py`, so it
reads no configuration (the checkout's, the system's or the user's: no command any of them names can
run), with prefixes, external diffs, textconv and colour switched off; a pure deletion touches the lines on both
sides of it; without PATHS the whole repository counts, wherever check runs from; a file git counts
as changed but that was not read from the diff is an error. The merge base is analysed too: a finding
on a changed line whose hazard (its site and the algorithms reaching it, `rules/hazard.py`) the base
already had is not the change's and is left out. With `--include-new`, findings the base did not
have are kept wherever they are (a member added to the enum makes the
unchanged `--speculative-algorithm` choices line wrong: SGL205).
"""

from __future__ import annotations

import codecs
import logging
import re
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import click

from sgl_scan.cli.options import finding_options, pop_finding_options, prepare_findings
from sgl_scan.cli.output import report_findings
from sgl_scan.errors import ConfigError, SnapshotError
from sgl_scan.pipeline import read_sources, require_speculative_files
from sgl_scan.snapshots.safeio import read_regular

if TYPE_CHECKING:
    from sgl_scan.snapshots.safegit import Quarantine

log = logging.getLogger(__name__)

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
            f"git reports changes in {len(missed)} file(s) that were not read from its diff (first: {missed[0]}); refusing to pass the review"
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


def _changes(repo: "Quarantine", root: Path, starts: list[Path], diff_base: str):
    pathspecs = []  # none: the whole repository, wherever check runs from
    for start in starts:
        try:
            relative = start.relative_to(root)
        except ValueError:
            raise ConfigError(f"{start} is outside the checkout {root}") from None
        pathspecs.append(":(top,literal)" + relative.as_posix() if str(relative) != "." else ":/")
    base = diff_base_commit(repo, diff_base)
    return base, changed_lines(repo, base, pathspecs), pathspecs


@click.command("check")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option(
    "--diff-base",
    default="HEAD",
    show_default=True,
    metavar="REV",
    help="Report only findings on lines changed since the merge base of REV and HEAD.",
)
@click.option(
    "--include-new",
    is_flag=True,
    help="Also report findings the change creates on unchanged lines (e.g. SGL205 after adding a member); analyses REV too.",
)
@click.option(
    "--scope",
    type=click.Choice(["speculative", "full"]),
    default=None,
    help="Which files to analyse (default: speculative).",
)
@finding_options
@click.pass_context
def command(
    ctx: click.Context, paths: tuple[str, ...], diff_base: str, include_new: bool, scope: str | None, **kwargs
) -> None:
    """Review a change in an SGLang git checkout: findings on changed lines only.

    PATHS (default: the whole repository, wherever check runs from) limit which changed files count.
    SARIF locations are relative to the repository root. Exit status as for scan.
    Examples:

    \b
      sgl-scan check --diff-base origin/main
      sgl-scan check python/sglang/srt/models --diff-base HEAD~3 --format sarif -o review.sarif
    """
    from sgl_scan.analyzer.pipeline import analyze
    from sgl_scan.snapshots.resolve import obtain_snapshot

    options = pop_finding_options(kwargs)
    prepared = prepare_findings(options)
    starts = [Path(p).resolve() for p in paths]
    first = starts[0] if starts else Path.cwd()
    with open_checkout(first if first.is_dir() else first.parent) as repo:
        assert repo.work_tree is not None  # open_checkout refuses a folder without one
        root = Path(repo.work_tree).resolve()
        base, changed, pathspecs = _changes(repo, root, starts, diff_base)
    parent = package_parent(root)
    prefix = "" if parent == root else parent.relative_to(root).as_posix() + "/"
    wanted = to_snapshot_paths(changed, prefix)
    log.info("check: %d changed files since %s (%s)", len(wanted), diff_base, base[:12])
    if changed and not wanted:
        click.echo(
            f"sgl-scan: {len(changed)} changed file(s) since {diff_base}, none under {prefix or './'}sglang", err=True
        )

    # a symlinked scope root is followed anywhere inside the checkout, never out of it
    snapshot = obtain_snapshot({"local_path": str(parent), "scope": scope, "link_boundary": str(root)})
    require_speculative_files(snapshot)
    analysis = analyze(snapshot)
    previous = base_hazards = None
    if wanted or include_new:  # what the diff base already had: new findings are those the change made
        from sgl_scan.rules.baseline import KnownFindings
        from sgl_scan.rules.engine import run_rules
        from sgl_scan.rules.hazard import BaseHazards

        try:
            before = obtain_snapshot({"git_repo": str(root), "rev": base, "scope": scope}, mark_latest=False)
        except SnapshotError:
            if include_new:
                raise
            before = None  # the base has no SGLang package: changed lines decide alone
        if before is not None:
            lines_before = lambda path: read_sources(before.tree, [path]).get(path)  # noqa: E731
            at_base = run_rules(analyze(before), prepared.rules, source_lines=lines_before)
            base_hazards = BaseHazards.of(at_base)
            previous = KnownFindings.of(at_base) if include_new else None
    from sgl_scan.reports.model import ArtifactRoot

    # SARIF: uris as the repository has them (`python/sglang/srt/...`)
    anchor = ArtifactRoot(root.as_uri().rstrip("/") + "/", prefix + "sglang")
    ctx.exit(
        report_findings(
            snapshot,
            analysis,
            options,
            prepared,
            changed_lines=wanted,
            previous=previous,
            base_hazards=base_hazards,
            review=True,
            artifact_root=anchor,
        )
    )
