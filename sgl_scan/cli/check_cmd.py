"""`sgl-scan check [PATHS] --diff-base REV`: code review — only findings on lines changed since REV.

Run inside an SGLang git checkout (a fork, or a pull request's head). The whole tree is analysed
(whole-program rules need it); findings are then kept only where they touch a line that differs
between the merge base of REV and HEAD and the working tree (committed, staged, unstaged or
untracked), as `git diff <merge-base>` shows them — read with prefixes, external diffs, textconv and
colour switched off whatever the user's git config says; a pure deletion touches the lines on both
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
from pathlib import Path

import click

from sgl_scan.cli.scan_cmd import FindingOptions, finding_options, prepare, report_findings, require_speculative_files
from sgl_scan.errors import ConfigError, SnapshotError

log = logging.getLogger(__name__)

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def open_repo(start: Path):
    """The git repository containing `start` (a usage error when there is none)."""
    import git

    try:
        return git.Repo(start, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise ConfigError(f"{start} is not inside a git checkout (check needs one; use scan otherwise)") from None


def diff_base_commit(repo, rev: str) -> str:
    """The merge base of `rev` and HEAD (or `rev` itself when HEAD is unborn or unrelated)."""
    import git

    try:
        base = repo.commit(rev)
    except (git.BadName, ValueError, git.GitCommandError):
        raise ConfigError(f"--diff-base {rev}: no such revision in {repo.working_dir}") from None
    try:
        repo.git.cat_file("-e", f"{base.hexsha}^{{commit}}")
    except git.GitCommandError:  # named by a commit this (shallow) clone has, but not fetched
        shallow = " shallow" if (Path(repo.git_dir) / "shallow").exists() else ""
        raise ConfigError(f"--diff-base {rev} is commit {base.hexsha[:12]}, which this{shallow} clone does not have; "
                          "fetch it first (git fetch --deepen=1, or fetch-depth: 0 in actions/checkout)") from None
    try:
        bases = repo.merge_base(base, repo.head.commit)
    except (ValueError, git.GitCommandError):
        bases = []
    return (bases[0] if bases else base).hexsha


# Whatever the user's git config says (diff.mnemonicPrefix, diff.noprefix, diff.external, color,
# textconv, a diff driver): paths without prefixes, plain text, hunks with no context.
_DIFF = ["git", "-c", "core.quotePath=false", "-c", "diff.mnemonicPrefix=false", "-c", "diff.noprefix=false",
         "-c", "color.diff=false", "diff", "--no-prefix", "--no-ext-diff", "--no-textconv", "--no-color",
         "--find-renames", "--unified=0"]


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
            current = None if target == "/dev/null" else target[len(prefix):] if prefix and target.startswith(prefix) else target
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
    out = repo.git.execute(_DIFF[:-1] + ["--numstat", "-z", "--diff-filter=d", base, "--", *pathspecs])
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
    import git

    try:
        text = repo.git.execute(_DIFF + [base, "--", *pathspecs])
        counts = _numstat(repo, base, pathspecs)
        untracked = repo.git.ls_files("--others", "--exclude-standard", "-z", "--", *pathspecs).split("\0")
    except git.GitCommandError as exc:
        detail = [t.strip(" '") for t in (exc.stderr or "").replace("stderr:", "").strip().splitlines() if t.strip(" '")]
        raise SnapshotError(f"git diff against {base[:12]} failed: {detail[-1] if detail else exc}") from None
    changed = parse_unified_diff(text)
    missed = sorted(path for path, n in counts.items() if n and not changed.get(path))
    if missed:
        raise SnapshotError(f"git reports changes in {len(missed)} file(s) that were not read from its diff (first: {missed[0]}); refusing to pass the review")
    root = Path(repo.working_dir)
    for path in filter(None, untracked):
        try:
            count = len((root / path).read_bytes().splitlines())
        except OSError:
            continue
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
        result[path[len(prefix):]] = frozenset(lines)
    return result


@click.command("check")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option("--diff-base", default="HEAD", show_default=True, metavar="REV",
              help="Report only findings on lines changed since the merge base of REV and HEAD.")
@click.option("--include-new", is_flag=True,
              help="Also report findings the change creates on unchanged lines (e.g. SGL205 after adding a member); analyses REV too.")
@click.option("--scope", type=click.Choice(["speculative", "full"]), default=None, help="Which files to analyse (default: speculative).")
@finding_options
@click.pass_context
def command(ctx: click.Context, paths: tuple[str, ...], diff_base: str, include_new: bool, scope: str | None, **kwargs) -> None:
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

    options = FindingOptions.pop(kwargs)
    prepared = prepare(options)
    starts = [Path(p).resolve() for p in paths]
    first = starts[0] if starts else Path.cwd()
    repo = open_repo(first if first.is_dir() else first.parent)
    root = Path(repo.working_dir).resolve()
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
    wanted = to_snapshot_paths(changed, prefix)
    log.info("check: %d changed files since %s (%s)", len(wanted), diff_base, base[:12])
    if changed and not wanted:
        click.echo(f"sgl-scan: {len(changed)} changed file(s) since {diff_base}, none under {prefix or './'}sglang", err=True)

    snapshot = obtain_snapshot({"local_path": str(parent), "scope": scope})
    require_speculative_files(snapshot)
    analysis = analyze(snapshot)
    previous = base_hazards = None
    if wanted or include_new:  # what the diff base already had: new findings are those the change made
        from sgl_scan.cli.scan_cmd import read_sources
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
    ctx.exit(report_findings(snapshot, analysis, options, prepared, changed_lines=wanted, previous=previous,
                             base_hazards=base_hazards, review=True, artifact_root=anchor))
