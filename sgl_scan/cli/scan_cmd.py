"""`sgl-scan scan`: obtain a snapshot, analyse it, run the rules, filter, report, exit code.

The finding options and `report_findings` are shared with `sgl-scan check`, which only adds the
changed-lines filter.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import click

from sgl_scan.cli.options import latest_meaning, pop_source_params, source_options, source_or_latest
from sgl_scan.cli.output import emit, wants_color
from sgl_scan.errors import ConfigError
from sgl_scan.exitcodes import exit_code_for

log = logging.getLogger(__name__)

FORMAT_CHOICES = ("text", "json", "sarif", "markdown", "html")

FINDING_OPTIONS = (
    click.option("--select", multiple=True, metavar="IDS", help="Report only these rules: ids, prefixes or names, comma-separated (default: all)."),
    click.option("--ignore", multiple=True, metavar="IDS", help="Do not report these rules (ids, prefixes or names)."),
    click.option("--fail-on", type=click.Choice(["info", "warning", "error"]), default="error", show_default=True,
                 help="Exit 1 when a reported finding has at least this severity."),
    click.option("--baseline", type=click.Path(dir_okay=False), help="Hide findings recorded in this baseline file."),
    click.option("--write-baseline", type=click.Path(dir_okay=False), help="Record the current findings as a baseline (exit 0)."),
    click.option("--format", "fmt", type=click.Choice(FORMAT_CHOICES), default=None,
                 help="Report format (default: from --output's extension, else text)."),
    click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the report to this file instead of stdout."),
)

FINDING_PARAM_NAMES = ("select", "ignore", "fail_on", "baseline", "write_baseline", "fmt", "output")


def finding_options(func: Callable) -> Callable:
    """Stack the selection, threshold, baseline and output options on a command."""
    for option in reversed(FINDING_OPTIONS):
        func = option(func)
    return func


@dataclass(frozen=True)
class FindingOptions:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: str = "error"
    baseline: str | None = None
    write_baseline: str | None = None
    fmt: str | None = None
    output: str | None = None

    @classmethod
    def pop(cls, kwargs: dict) -> "FindingOptions":
        values = {name: kwargs.pop(name, None) for name in FINDING_PARAM_NAMES}
        values["select"] = tuple(values["select"] or ())
        values["ignore"] = tuple(values["ignore"] or ())
        values["fail_on"] = values["fail_on"] or "error"
        return cls(**values)


@dataclass(frozen=True)
class Prepared:
    """What can be checked before any expensive work: rules load, selectors and baseline are valid."""

    rules: object  # RuleSet
    selection: object  # Selection
    baseline: object | None  # Baseline

    def rule_docs(self) -> tuple:
        """The documentation of the rules the selection keeps (what a report lists)."""
        selected = set(self.selection.rule_ids(self.rules))
        return tuple(doc for doc in self.rules.docs() if doc.id in selected)


def prepare(options: FindingOptions) -> Prepared:
    from sgl_scan.rules.baseline import read_baseline
    from sgl_scan.rules.registry import load_rules
    from sgl_scan.rules.selection import Selection

    rules = load_rules()
    origin = _origins()
    selection = Selection.build(rules, options.select, options.ignore, select_from=origin["select"],
                                ignore_from=origin["ignore"])
    both = selection.overlap() if origin["select"] else ()
    if both:
        shown = ", ".join(both)
        if origin["ignore"] != "--ignore" and origin["select"] == "--select":  # the command line wins
            selection = selection.without_ignored(both)
            click.echo(f"sgl-scan: --select {shown} wins over {origin['ignore']} (command-line options win)", err=True)
        else:
            click.echo(f"sgl-scan: {shown} is both selected and ignored; ignore wins ({origin['ignore']})", err=True)
    baseline = read_baseline(options.baseline) if options.baseline else None
    return Prepared(rules, selection, baseline)


def _origins() -> dict[str, str]:
    """Where --select/--ignore came from: the option, or `<settings file>: <key>` when the settings
    file gave them (click's default map)."""
    out = {"select": "--select", "ignore": "--ignore"}
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return out
    config = ctx.meta.get("sgl_scan.config") or (ctx.parent.meta.get("sgl_scan.config") if ctx.parent else None)
    for name in out:
        try:
            source = ctx.get_parameter_source(name)
        except Exception:  # not a parameter of this command
            continue
        if source is not None and source.name == "DEFAULT_MAP":
            out[name] = f"{config or 'the settings file'}: {name}"
        elif source is not None and source.name == "DEFAULT":
            out[name] = ""  # not given: every rule is selected, and an ignore anywhere simply applies
    return out


def read_sources(tree: Path, paths) -> dict[str, list[str]]:
    """Source lines of `paths` inside the snapshot tree (files that cannot be read are left out)."""
    sources = {}
    for path in sorted(set(paths)):
        try:
            text = (tree / path).read_bytes().decode("utf-8", errors="replace")
        except OSError:
            continue
        sources[path] = text.splitlines()
    return sources


def source_reader(snapshot) -> tuple[dict[str, list[str]], Callable[[str], list[str] | None]]:
    """(the lines read so far by path, a reader of one file's lines): the rules' fingerprints read the
    statements' neighbours, and the suppression comments are looked up in the same lines."""
    sources: dict[str, list[str]] = {}

    def source_lines(path: str) -> list[str] | None:
        if path not in sources:
            sources.update(read_sources(snapshot.tree, [path]))
        return sources.get(path)

    return sources, source_lines


def kept_findings(snapshot, analysis, prepared: Prepared) -> list:
    """The rules' findings on a snapshot after --select/--ignore and suppression comments, for
    comparing two snapshots (`diff`, `fleet`): fingerprints without the neighbour lines, so a line
    added beside an unchanged finding does not make it "resolved" and "new"."""
    from sgl_scan.rules.engine import run_rules
    from sgl_scan.rules.filtering import FilterOptions, apply_filters
    from sgl_scan.rules.suppression import suppressions_in

    findings = run_rules(analysis, prepared.rules)
    sources = read_sources(snapshot.tree, (f.path for f in findings))
    suppressions = {path: suppressions_in(lines) for path, lines in sources.items()}
    return list(apply_filters(findings, FilterOptions(selection=prepared.selection, suppressions=suppressions)).kept)


def _config_used() -> str | None:
    """The settings file `config_callback` installed for this run, if any."""
    ctx = click.get_current_context(silent=True)
    while ctx is not None:
        if "sgl_scan.config" in ctx.meta:
            return ctx.meta["sgl_scan.config"]
        ctx = ctx.parent
    return None


def require_speculative_files(snapshot) -> None:
    """A snapshot without a single `sglang/srt/speculative/` file cannot answer anything: say so
    (with what was skipped) instead of reporting "Algorithms (0)" and passing."""
    from sgl_scan.errors import SnapshotError

    m = snapshot.manifest
    if any(f.path.startswith("sglang/srt/speculative/") for f in m.files):
        return
    links = [s.path for s in m.skipped if "symlink" in s.reason]
    why = f"; skipped symlinks: {', '.join(links[:3])}{' ...' if len(links) > 3 else ''}" if links else ""
    raise SnapshotError(f"snapshot {m.id} ({m.scope} scope, {len(m.files)} files, {len(m.skipped)} skipped) holds no "
                        f"sglang/srt/speculative files{why}; see: sgl-scan snapshot show {m.id}")


def report_findings(
    snapshot,
    analysis,
    options: FindingOptions,
    prepared: Prepared,
    *,
    changed_lines: Mapping[str, frozenset[int]] | None = None,
    previous=None,  # KnownFindings at the diff base (check --include-new)
    base_hazards=None,  # frozenset of the diff base's hazards (check: rules/hazard.py)
    artifact_root=None,  # reports.model.ArtifactRoot: SARIF uris relative to the repository or --sarif-root
    review: bool = False,
    latest: str | None = None,  # what an implicit `latest` was (the report's header says it)
) -> int:
    """Run the rules, filter once, render, write; return the exit code. `review`: a `check` run
    (the text report puts the findings first and the inventory in one line)."""
    from sgl_scan import __version__
    from sgl_scan.reports import format_for_path, render
    from sgl_scan.reports.model import Report
    from sgl_scan.rules.baseline import write_baseline
    from sgl_scan.rules.engine import run_rules
    from sgl_scan.rules.filtering import FilterOptions, apply_filters
    from sgl_scan.rules.suppression import suppressions_in

    sources, source_lines = source_reader(snapshot)
    findings = run_rules(analysis, prepared.rules, source_lines=source_lines)
    suppressions = {path: suppressions_in(lines) for path, lines in sources.items()}
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

    if options.write_baseline:
        recorded = filtered.kept + filtered.baselined
        write_baseline(options.write_baseline, recorded)
        counts = filtered.counts()
        by = ", ".join(f"{sev} {sum(1 for f in recorded if f.severity == sev)}" for sev in ("error", "warning", "info"))
        click.echo(f"sgl-scan: wrote {len(recorded)} findings to baseline {options.write_baseline} ({by}; "
                   f"{counts['suppressed']} suppressed and {counts['deselected']} deselected not recorded)", err=True)
        if not options.output:
            return 0  # the one line is the answer; with -o the report is written too, never dropped

    report = Report(
        manifest=snapshot.manifest,
        inventory=analysis.inventory,
        findings=filtered.kept,
        parse_errors=analysis.parse_errors,
        rules=prepared.rule_docs(),
        tool_version=__version__,
        sources={path: sources[path] for path in {f.path for f in filtered.kept} if path in sources},
        config=_config_used(),
        review=review,
        artifact_root=artifact_root,
        latest=latest,
        hidden={"suppressed": len(filtered.suppressed), "baselined": len(filtered.baselined)},
    )
    fmt = options.fmt or (format_for_path(options.output) if options.output else None) or "text"
    color = wants_color(fmt, options.output)
    document = render(report, fmt, color=color)
    emit(document, options.output)
    if options.write_baseline:
        return 0
    return exit_code_for((f.severity for f in filtered.kept), options.fail_on)


def artifact_root_for(snapshot, base: Path):
    """SARIF locations relative to `base` (a folder holding the scanned local package)."""
    from sgl_scan.reports.model import ArtifactRoot

    m = snapshot.manifest
    if m.source_kind != "local":
        raise ConfigError(f"--sarif-root needs a local source (--path); snapshot {m.id} was read from {m.source_kind}")
    package = Path(m.root).resolve()
    folder = base.expanduser().resolve()
    try:
        relative = package.relative_to(folder)
    except ValueError:
        raise ConfigError(f"--sarif-root {base}: the scanned package {package} is not inside it") from None
    return ArtifactRoot(folder.as_uri().rstrip("/") + "/", relative.as_posix() if str(relative) != "." else "")


@click.command("scan")
@source_options
@finding_options
@click.option("--sarif-root", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="SARIF: make locations relative to this folder (your repository root) so code scanning can place them.")
@click.pass_context
def command(ctx: click.Context, sarif_root: Path | None = None, **kwargs) -> None:
    """Scan an SGLang tree: inventory (SGL1xx) and checks (SGL2xx dispatch, SGL3xx d2t).

    Exit status: 0 clean, 1 findings at or above --fail-on, 2 usage or configuration error,
    3 snapshot or analysis failure. Examples:

    \b
      sgl-scan scan --pip sglang==0.5.23
      sgl-scan scan --path ~/sglang/python --select SGL3 --fail-on warning
      sgl-scan scan --snapshot latest --format sarif -o sgl-scan.sarif
    """
    from sgl_scan.analyzer.pipeline import analyze
    from sgl_scan.snapshots.progress import Progress
    from sgl_scan.snapshots.resolve import obtain_snapshot

    options = FindingOptions.pop(kwargs)
    prepared = prepare(options)  # usage errors before any download or parse
    source = source_or_latest(pop_source_params(kwargs))
    snapshot = obtain_snapshot(source)
    require_speculative_files(snapshot)
    anchor = artifact_root_for(snapshot, sarif_root) if sarif_root is not None else None
    bar = Progress("analysing")  # a cold full-scope scan reads thousands of files: say so on a TTY
    try:
        analysis = analyze(snapshot, progress=lambda done, total: bar.update(f"{done}/{total} files", force=done == total))
    finally:
        bar.done()
    code = report_findings(snapshot, analysis, options, prepared, artifact_root=anchor, latest=latest_meaning(source, snapshot))
    settle(snapshot)
    ctx.exit(code)


def settle(snapshot) -> None:
    """After a pull that stored new files, and the analysis (seconds later, so they have settled):
    verify them once more and record their stamps, so the next scan trusts them without reading."""
    from sgl_scan.errors import SnapshotError
    from sgl_scan.snapshots.store import Store

    if snapshot.pulled is None or snapshot.pulled.reused:
        return
    try:
        Store(snapshot.folder.parent).verify(snapshot)
    except (SnapshotError, OSError) as exc:  # the next run that opens it says so
        log.debug("not settling %s: %s", snapshot.id, exc)
