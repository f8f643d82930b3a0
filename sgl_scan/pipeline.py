"""The one place that runs the stages after a snapshot is obtained: rules, then the one filter step.

Every command that reports findings (`scan`, `check`, `diff`, `fleet`) goes through here, so
selection, suppression comments, baselines and changed lines are applied the same way everywhere.
Nothing here knows about click: what the command line decides (where `--select` came from, where
the report goes) is passed in by the cli.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, NamedTuple, Sequence

if TYPE_CHECKING:  # imported where used: loading the rules is not free
    from sgl_scan.analyzer.sources import SourceText
    from sgl_scan.rules.base import RuleSet
    from sgl_scan.rules.baseline import Baseline, KnownFindings
    from sgl_scan.rules.filtering import Filtered
    from sgl_scan.rules.hazard import BaseHazards
    from sgl_scan.rules.selection import Selection

log = logging.getLogger(__name__)


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr)


class FindingOptions(NamedTuple):  # (a NamedTuple: made at import in a fraction of a dataclass's time)
    """Which findings to report and how: selection, threshold, baseline, format and output."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: str = "error"
    baseline: str | None = None
    write_baseline: str | None = None
    fmt: str | None = None
    output: str | None = None


class Prepared(NamedTuple):
    """What can be checked before any expensive work: rules load, selectors and baseline are valid."""

    rules: RuleSet
    selection: Selection
    baseline: Baseline | None

    def rule_docs(self) -> tuple:
        """The documentation of the rules the selection keeps (what a report lists)."""
        selected = set(self.selection.rule_ids(self.rules))
        return tuple(doc for doc in self.rules.docs() if doc.id in selected)


DEFAULT_ORIGINS = {"select": "--select", "ignore": "--ignore"}


def prepare(
    options: FindingOptions, *, origins: Mapping[str, str] = DEFAULT_ORIGINS, say: Callable[[str], None] = _to_stderr
) -> Prepared:
    """Load the rules, build the selection and read the baseline. `origins`: where --select and
    --ignore came from ("" when not given, `<settings file>: <key>` for the settings file); a rule
    both selected and ignored is settled here and `say` tells the user how."""
    from sgl_scan.rules.baseline import read_baseline
    from sgl_scan.rules.registry import load_rules
    from sgl_scan.rules.selection import Selection

    rules = load_rules()
    selection = Selection.build(
        rules, options.select, options.ignore, select_from=origins["select"], ignore_from=origins["ignore"]
    )
    both = selection.overlap() if origins["select"] else ()
    if both:
        shown = ", ".join(both)
        if origins["ignore"] != "--ignore" and origins["select"] == "--select":  # the command line wins
            selection = selection.without_ignored(both)
            say(f"sgl-scan: --select {shown} wins over {origins['ignore']} (command-line options win)")
        else:
            say(f"sgl-scan: {shown} is both selected and ignored; ignore wins ({origins['ignore']})")
    baseline = read_baseline(options.baseline) if options.baseline else None
    return Prepared(rules, selection, baseline)


def require_speculative_files(snapshot) -> None:
    """A snapshot without a single `sglang/srt/speculative/` file cannot answer anything: say so
    (with what was skipped) instead of reporting "Algorithms (0)" and passing."""
    from sgl_scan.errors import SnapshotError

    m = snapshot.manifest
    if any(f.path.startswith("sglang/srt/speculative/") for f in m.files):
        return
    links = [s.path for s in m.skipped if "symlink" in s.reason]
    why = f"; skipped symlinks: {', '.join(links[:3])}{' ...' if len(links) > 3 else ''}" if links else ""
    raise SnapshotError(
        f"snapshot {m.id} ({m.scope} scope, {len(m.files)} files, {len(m.skipped)} skipped) holds no "
        f"sglang/srt/speculative files{why}; see: sgl-scan snapshot show {m.id}"
    )


def source_text(analysis) -> "SourceText":
    """The analysed text of the snapshot's files (an analysis made without one has none)."""
    from sgl_scan.analyzer.sources import SourceText

    return analysis.sources if analysis.sources is not None else SourceText(Path("."), lambda path: None)


def suppressions_of(text: "SourceText", paths) -> dict:
    """path -> its suppression comments (`rules/suppression.py`), for each of `paths` that has text."""
    from sgl_scan.rules.suppression import suppressions_in

    out = {}
    for path in sorted(set(paths)):
        lines = text.lines(path)
        if lines is not None:
            out[path] = suppressions_in(lines)
    return out


def fingerprinted_findings(analysis, rules) -> tuple:
    """The rules' findings with fingerprints that include each statement's neighbour lines."""
    from sgl_scan.rules.engine import run_rules

    findings = run_rules(analysis, rules, source_lines=source_text(analysis).lines)
    _store_walked(analysis)
    return findings


def _store_walked(analysis) -> None:
    """Keep the facts the rules walked in the facts cache (`LazyFiles.store_walked`): the next analysis
    of an edited tree or the next release reads them from there. The rules are done with the tree's
    files, so the processes kept to walk them (`release_pool`) stop here."""
    from sgl_scan.analyzer.pipeline import release_pool

    store = getattr(analysis.files, "store_walked", None)
    if store is not None:
        store()
    release_pool()


def kept_findings(snapshot, analysis, prepared: Prepared) -> list:
    """The rules' findings on a snapshot after --select/--ignore and suppression comments, for
    comparing two snapshots (`diff`, `fleet`): fingerprints without the neighbour lines, so a line
    added beside an unchanged finding does not make it "resolved" and "new"."""
    from sgl_scan.rules.engine import run_rules
    from sgl_scan.rules.filtering import FilterOptions, apply_filters

    findings = run_rules(analysis, prepared.rules)
    _store_walked(analysis)
    suppressions = suppressions_of(source_text(analysis), (f.path for f in findings))
    return list(apply_filters(findings, FilterOptions(selection=prepared.selection, suppressions=suppressions)).kept)


def compared_side(ref: str, params: dict, prepared: Prepared, *, progress, say: Callable[[str], None]) -> tuple:
    """(snapshot, analysis, kept findings) of one side of `diff`: obtained (never made the store's
    `latest`), analysed, and checked as `kept_findings` does. `progress` (`snapshots.progress.Progress`)
    is told each step; `say` gets the line saying what the pull did."""
    from sgl_scan.analyzer.pipeline import analyze
    from sgl_scan.snapshots.resolve import obtain_snapshot

    progress.update(f"obtaining {ref}", force=True)
    snapshot = obtain_snapshot(params, mark_latest=False, say=say)
    progress.update(f"parsing snapshot {snapshot.id}", force=True)
    analysis = analyze(snapshot, progress=lambda done, total: progress.update(f"parsing {done}/{total} files"))
    progress.update("running the rules", force=True)
    return snapshot, analysis, kept_findings(snapshot, analysis, prepared)


class AtBase(NamedTuple):
    """What a review's diff base already had (`check`): its findings' hazards and the findings."""

    hazards: BaseHazards
    known: KnownFindings


def findings_at_base(repo: str, rev: str, scope: str | None, prepared: Prepared, *, required: bool) -> AtBase | None:
    """The findings of commit `rev` of the git checkout `repo`, or None when that commit holds no
    SGLang package and they are not `required` (changed lines then decide alone)."""
    from sgl_scan.analyzer.pipeline import analyze
    from sgl_scan.errors import SnapshotError
    from sgl_scan.rules.baseline import KnownFindings
    from sgl_scan.rules.hazard import BaseHazards
    from sgl_scan.snapshots.resolve import obtain_snapshot

    try:
        before = obtain_snapshot({"git_repo": repo, "rev": rev, "scope": scope}, mark_latest=False)
    except SnapshotError:
        if required:
            raise
        return None
    findings = fingerprinted_findings(analyze(before), prepared.rules)
    return AtBase(BaseHazards.of(findings), KnownFindings.of(findings))


class Checked(NamedTuple):
    """A snapshot's findings after the one filter step, and the analysed lines of the files they are in."""

    filtered: Filtered
    sources: Mapping[str, Sequence[str]]


def check_snapshot(
    snapshot,
    analysis,
    prepared: Prepared,
    *,
    changed_lines: Mapping[str, frozenset[int]] | None = None,
    previous=None,  # KnownFindings at the diff base (check --include-new)
    base_hazards=None,  # frozenset of the diff base's hazards (check: rules/hazard.py)
) -> Checked:
    """Run the rules and filter once: selection, suppression comments, baseline, changed lines."""
    from sgl_scan.rules.filtering import FilterOptions, apply_filters

    text = source_text(analysis)
    findings = fingerprinted_findings(analysis, prepared.rules)
    paths = {f.path for f in findings}
    suppressions = suppressions_of(text, paths)
    sources = {path: lines for path in paths if (lines := text.lines(path)) is not None}
    filtered = apply_filters(
        findings,
        FilterOptions(
            selection=prepared.selection,
            suppressions=suppressions,
            baseline=prepared.baseline,
            changed_lines=changed_lines,
            previous=previous,
            base_hazards=base_hazards,
        ),
    )
    log.info("findings: %s", ", ".join(f"{k} {v}" for k, v in filtered.counts().items()))
    return Checked(filtered, sources)


def record_baseline(path: str, filtered) -> str:
    """Write the reported and already-baselined findings to a baseline file; the line saying so."""
    from sgl_scan.rules.baseline import write_baseline
    from sgl_scan.rules.finding import SEVERITIES_DESC

    recorded = filtered.kept + filtered.baselined
    write_baseline(path, recorded)
    counts = filtered.counts()
    by = ", ".join(f"{sev} {sum(1 for f in recorded if f.severity == sev)}" for sev in SEVERITIES_DESC)
    return (
        f"sgl-scan: wrote {len(recorded)} findings to baseline {path} ({by}; "
        f"{counts['suppressed']} suppressed and {counts['deselected']} deselected not recorded)"
    )


def findings_report(
    snapshot,
    analysis,
    checked: Checked,
    prepared: Prepared,
    *,
    config: str | None = None,  # the settings file used, for the report's header
    review: bool = False,
    artifact_root=None,  # reports.model.ArtifactRoot: SARIF uris relative to the repository or --sarif-root
    latest: str | None = None,  # what an implicit `latest` was (the report's header says it)
):
    """The `Report` every reporter renders, from the kept findings and the lines they point at."""
    from sgl_scan import __version__
    from sgl_scan.reports.model import Report

    filtered, sources = checked.filtered, checked.sources
    return Report(
        manifest=snapshot.manifest,
        inventory=analysis.inventory,
        findings=filtered.kept,
        parse_errors=analysis.parse_errors,
        rules=prepared.rule_docs(),
        tool_version=__version__,
        sources={path: sources[path] for path in {f.path for f in filtered.kept} if path in sources},
        config=config,
        review=review,
        artifact_root=artifact_root,
        latest=latest,
        hidden={"suppressed": len(filtered.suppressed), "baselined": len(filtered.baselined)},
    )
