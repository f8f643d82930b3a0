"""Where a rendered report goes: a file (`-o`), else stdout; colour only for text on a terminal.

`report_findings` is the end of `scan` and `check`: the pipeline's findings rendered, sent there, and
turned into the exit code.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

import click

from sgl_scan.errors import ConfigError
from sgl_scan.exitcodes import exit_code_for

if TYPE_CHECKING:
    from sgl_scan.pipeline import FindingOptions, Prepared


def wants_color(fmt: str, output: str | None) -> bool:
    return output is None and fmt == "text" and sys.stdout.isatty()


def emit(document: str, output: str | None) -> None:
    """Write `document` to `output` (a one-line ConfigError when it cannot be written) or stdout."""
    if output:
        try:
            write_file(Path(output), document.encode("utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot write {output}: {exc.strerror or exc}") from None
    else:
        click.echo(document, nl=not document.endswith("\n"))


def write_file(path: Path, data: bytes) -> None:
    """Write `data` as the file `path`, atomically: a temporary file beside it is renamed over it, so
    a reader never sees half a report and a symlink planted at `path` is replaced, never followed
    (nothing is written where it points). A terminal, `/dev/null` or a FIFO the user named (not
    through a link) is written to directly."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        with open(path, "wb") as handle:
            handle.write(data)
        return
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "is a folder")
    import tempfile  # only when a file is written (tempfile imports shutil, bz2, lzma, random)

    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def report_findings(
    snapshot,
    analysis,
    options: "FindingOptions",
    prepared: "Prepared",
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
    from sgl_scan.pipeline import check_snapshot, findings_report, record_baseline
    from sgl_scan.reports import format_for_path, render

    checked = check_snapshot(
        snapshot, analysis, prepared, changed_lines=changed_lines, previous=previous, base_hazards=base_hazards
    )
    if options.write_baseline:
        click.echo(record_baseline(options.write_baseline, checked.filtered), err=True)
        if not options.output:
            return 0  # the one line is the answer; with -o the report is written too, never dropped

    report = findings_report(
        snapshot,
        analysis,
        checked,
        prepared,
        config=_config_used(),
        review=review,
        artifact_root=artifact_root,
        latest=latest,
    )
    fmt = options.fmt or (format_for_path(options.output) if options.output else None) or "text"
    color = wants_color(fmt, options.output)
    document = render(report, fmt, color=color)
    emit(document, options.output)
    if options.write_baseline:
        return 0
    return exit_code_for((f.severity for f in checked.filtered.kept), options.fail_on)


def _config_used() -> str | None:
    """The settings file `config_callback` installed for this run, if any."""
    ctx = click.get_current_context(silent=True)
    while ctx is not None:
        if "sgl_scan.config" in ctx.meta:
            return ctx.meta["sgl_scan.config"]
        ctx = ctx.parent
    return None
