"""`sgl-scan fleet`: scan many hosts at once and show which SGLang build, patches and algorithms run where."""

from __future__ import annotations

from pathlib import Path

import click

from sgl_scan.cli.options import some_source_options
from sgl_scan.cli.output import emit, wants_color
from sgl_scan.errors import ConfigError, SnapshotError
from sgl_scan.exitcodes import CLEAN, FINDINGS, exit_code_for
from sgl_scan.rules.finding import SEVERITIES

FORMATS = ("text", "json", "markdown", "html")
# every option `--host` takes, with the same definitions (one connection code path)
SSH_PARAM_NAMES = (
    "port",
    "user",
    "identity",
    "ssh_config",
    "known_hosts",
    "accept_new_host_key",
    "remote_root",
    "connect_timeout",
    "scope",
    "timeout",
    "max_bytes",
    "max_files",
    "max_file_size",
)


@click.command("fleet")
@click.argument("hosts", nargs=-1)
@click.option(
    "--hosts-file", type=click.Path(dir_okay=False), help="File with one 'HOST [REMOTE_ROOT]' per line (# comments)."
)
@click.option(
    "--ssh-config-hosts",
    metavar="PATTERN",
    help="Every concrete Host of the ssh config matching this glob, e.g. 'gpu-*'.",
)
@click.option("--jobs", type=click.IntRange(min=1, max=256), default=None, help="Hosts pulled at once (default 16).")
@click.option(
    "--fleet-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=3600.0,
    show_default=True,
    help="Seconds for the whole fleet's pulls; a host not done by then is that host's error row.",
)
@click.option(
    "--baseline-host", metavar="HOST", help="Compare every other group with this host's (default: the largest group)."
)
@click.option("--select", multiple=True, metavar="IDS", help="Report only these rules: ids, prefixes or names.")
@click.option("--ignore", multiple=True, metavar="IDS", help="Do not report these rules.")
@click.option(
    "--fail-on",
    type=click.Choice(SEVERITIES),
    default="error",
    show_default=True,
    help="Exit 1 when a host has a finding of at least this severity.",
)
@click.option("--fail-on-drift", is_flag=True, help="Exit 1 when a group differs from the baseline.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="Report format (default: from --output's extension, else text).",
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="Write the report to this file instead of stdout."
)
@some_source_options(*SSH_PARAM_NAMES)
@click.pass_context
def command(
    ctx: click.Context,
    hosts,
    hosts_file,
    ssh_config_hosts,
    jobs,
    fleet_timeout,
    baseline_host,
    select,
    ignore,
    fail_on,
    fail_on_drift,
    fmt,
    output,
    **ssh,
) -> None:
    """Scan every host of a fleet over SSH, group identical builds, diff each group with the baseline.

    Hosts come from arguments (HOST or HOST:REMOTE_ROOT is not parsed: use --remote-root or a hosts
    file for per-host roots), --hosts-file and --ssh-config-hosts. Every host is pulled like --host
    (same keys, host-key policy and incremental re-pull). One host's failure is its row in the report;
    so is a host still pulling when --fleet-timeout runs out (each pull also keeps its own --timeout).

    Exit status: 0 clean, 1 findings at or above --fail-on (or drift with --fail-on-drift),
    2 usage error, 3 no host could be scanned. Examples:

    \b
      sgl-scan fleet gpu-1 gpu-2 gpu-3
      sgl-scan fleet --ssh-config-hosts 'gpu-*' --format html -o fleet.html
      sgl-scan fleet --hosts-file hosts.txt --baseline-host gpu-1 --fail-on-drift
    """
    from sgl_scan import __version__
    from sgl_scan.cli.options import prepare_findings
    from sgl_scan.fleet.hosts import collect_hosts
    from sgl_scan.fleet.run import DEFAULT_JOBS, build_report, pull_hosts
    from sgl_scan.pipeline import FindingOptions, kept_findings
    from sgl_scan.reports import format_for_path
    from sgl_scan.reports.fleet import render_fleet
    from sgl_scan.snapshots import scope as scopes
    from sgl_scan.snapshots.progress import Progress

    fmt = fmt or (format_for_path(output) if output else None) or "text"
    if fmt not in FORMATS:
        raise click.BadParameter(f"fleet reports are {', '.join(FORMATS)}, not {fmt}", param_hint="--format/--output")
    prepared = prepare_findings(FindingOptions(select=tuple(select), ignore=tuple(ignore)))
    if ssh.get("ssh_config") and not Path(ssh["ssh_config"]).expanduser().is_file():
        raise ConfigError(f"ssh config file not found: {ssh['ssh_config']}")
    entries = collect_hosts(hosts, hosts_file, ssh_config_hosts, ssh.get("ssh_config"), ssh.get("remote_root"))
    params = {name: ssh.get(name) for name in SSH_PARAM_NAMES}
    progress = Progress("sgl-scan fleet")
    try:
        pulled = pull_hosts(
            entries, params, jobs=jobs or DEFAULT_JOBS, show=progress.update, fleet_timeout=fleet_timeout
        )
        report = build_report(
            pulled,
            prepared.rule_docs(),
            lambda snapshot, analysis: kept_findings(snapshot, analysis, prepared),
            scope=scopes.check_scope(ssh.get("scope")),
            baseline_host=baseline_host,
            tool_version=__version__,
            show=lambda text: progress.update(text, force=True),
        )
    finally:
        progress.done()
    color = wants_color(fmt, output)
    document = render_fleet(report, fmt, color=color)
    emit(document, output)
    if not report.groups:
        raise SnapshotError(f"no host could be scanned ({len(report.hosts)} failed; see the report)")
    rc = exit_code_for((f.severity for g in report.groups for f in g.findings), fail_on)
    if fail_on_drift and report.drift:
        rc = FINDINGS
    ctx.exit(rc if rc else CLEAN)
