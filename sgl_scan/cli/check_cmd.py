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

import logging
from pathlib import Path

import click

from sgl_scan.cli.options import finding_options, pop_finding_options, prepare_findings
from sgl_scan.cli.output import report_findings
from sgl_scan.pipeline import findings_at_base, require_speculative_files

log = logging.getLogger(__name__)


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
    help=(
        "Also report findings the change creates on unchanged lines (e.g. SGL205 after adding a member); "
        "analyses REV too."
    ),
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
    from sgl_scan.reports.model import ArtifactRoot
    from sgl_scan.snapshots.changes import changes_since
    from sgl_scan.snapshots.resolve import obtain_snapshot

    options = pop_finding_options(kwargs)
    prepared = prepare_findings(options)
    changes = changes_since([Path(p).resolve() for p in paths], diff_base)
    log.info("check: %d changed files since %s (%s)", len(changes.wanted), diff_base, changes.base[:12])
    if changes.changed and not changes.wanted:
        click.echo(
            f"sgl-scan: {len(changes.changed)} changed file(s) since {diff_base}, none under "
            f"{changes.prefix or './'}sglang",
            err=True,
        )
    # a symlinked scope root is followed anywhere inside the checkout, never out of it
    source = {"local_path": str(changes.parent), "scope": scope, "link_boundary": str(changes.root)}
    snapshot = obtain_snapshot(source)
    require_speculative_files(snapshot)
    analysis = analyze(snapshot)
    at_base = None
    if changes.wanted or include_new:  # what the diff base already had: new findings are those the change made
        at_base = findings_at_base(str(changes.root), changes.base, scope, prepared, required=include_new)
    # SARIF: uris as the repository has them (`python/sglang/srt/...`)
    anchor = ArtifactRoot(changes.root.as_uri().rstrip("/") + "/", changes.prefix + "sglang")
    ctx.exit(
        report_findings(
            snapshot,
            analysis,
            options,
            prepared,
            changed_lines=changes.wanted,
            previous=at_base.known if at_base is not None and include_new else None,
            base_hazards=at_base.hazards if at_base is not None else None,
            review=True,
            artifact_root=anchor,
        )
    )
