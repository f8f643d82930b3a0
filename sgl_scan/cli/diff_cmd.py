"""`sgl-scan diff A B`: what changed between two snapshots (inventory and findings), in any format.

A and B are source references:

  pip:SPEC               a release from the package index: pip:sglang==0.5.20, or just pip:0.5.20
  snapshot:ID            a stored snapshot, by id or `latest` (snapshot:latest)
  path:DIR               a local folder (checkout, installed package, snapshot copy)
  git:REPO[@REV]         a git repository (URL or path) at REV (default HEAD); a tail after the last
                         `@` that contains `:` is part of the URL (git@host:org/repo.git)
  ssh:[USER@]HOST[:PORT][:REMOTE_ROOT]
                         a remote host over SSH: ssh:root@gpu-box:/root/sglang/python/sglang
  anything else          an existing folder is path:, otherwise a snapshot id

Store references of both sides are resolved before either side is pulled, and neither side becomes
the store's `latest`.
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

from sgl_scan.cli.options import SOURCE_PARAM_NAMES
from sgl_scan.cli.output import emit, wants_color
from sgl_scan.exitcodes import exit_code_for
from sgl_scan.rules.finding import SEVERITIES

log = logging.getLogger(__name__)

FORMAT_CHOICES = ("text", "json", "sarif", "markdown", "html")
_SHARED = ("identity", "ssh_config", "known_hosts", "accept_new_host_key", "connect_timeout", "scope")


def parse_ref(ref: str) -> dict:
    """The source parameters (as `obtain_snapshot` takes them) that a diff reference names."""
    params: dict[str, str | int | None] = {name: None for name in SOURCE_PARAM_NAMES}
    kind, sep, value = ref.partition(":")
    if not sep or kind not in ("pip", "snapshot", "path", "git", "ssh"):
        kind, value = ("path", ref) if Path(ref).expanduser().is_dir() else ("snapshot", ref)
    if not value:
        raise click.BadParameter(f"{ref!r}: nothing after {kind}:")
    if kind == "pip":
        params["pip_spec"] = value if any(c.isalpha() for c in value.split("=")[0]) else f"sglang=={value}"
    elif kind == "snapshot":
        params["snapshot_ref"] = value
    elif kind == "path":
        params["local_path"] = value
    elif kind == "git":
        repo, at, rev = value.rpartition("@")
        if at and repo and rev and ":" not in rev:
            params["git_repo"], params["rev"] = repo, rev
        else:
            params["git_repo"] = value
    else:  # ssh
        user, at, rest = value.rpartition("@")
        host, _, tail = rest.partition(":")
        if not host:
            raise click.BadParameter(f"{ref!r}: no host")
        params["host"], params["user"] = host, (user if at else None)
        port, _, root = tail.partition(":") if tail and not tail.startswith("/") else ("", "", tail)
        if port:
            if not port.isdigit():
                raise click.BadParameter(f"{ref!r}: port {port!r} is not a number")
            params["port"] = int(port)
        params["remote_root"] = root or None
    return params


def side_params(refs: tuple[str, ...], shared: dict) -> list[dict]:
    """The source parameters of each side, every store reference (`latest`, an id prefix) pinned to
    the id it names now: all are resolved before any side is pulled, so pulling A cannot change what B names."""
    from sgl_scan.snapshots.resolve import pin_ref
    from sgl_scan.snapshots.store import Store

    store = Store()
    sides = []
    for ref in refs:
        params = parse_ref(ref)
        params.update({k: v for k, v in shared.items() if v is not None})
        sides.append(pin_ref(params, store=store))
    return sides


def _scan(ref: str, params: dict, prepared, name: str):
    """One side, obtained, analysed and checked (`pipeline.compared_side`); on a terminal one
    progress line on stderr tells what is happening, piped only one line per side saying what its
    pull did."""
    from sgl_scan.pipeline import compared_side
    from sgl_scan.snapshots.progress import Progress

    progress = Progress(f"sgl-scan diff: {name}")
    try:
        return compared_side(ref, params, prepared, progress=progress, say=lambda line: _say_done(progress, name, line))
    finally:
        progress.done()


def _say_done(progress, name: str, line: str) -> None:
    """What a side's pull did, on its own stderr line (the progress line is cleared first)."""
    progress.done()
    click.echo(f"sgl-scan: {name}: {line}", err=True)


@click.command("diff")
@click.argument("a")
@click.argument("b")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMAT_CHOICES),
    default=None,
    help="Report format (default: from --output's extension, else text).",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the diff to this file instead of stdout.")
@click.option(
    "--select", multiple=True, metavar="IDS", help="Compare only findings of these rules (ids, prefixes or names)."
)
@click.option("--ignore", multiple=True, metavar="IDS", help="Leave these rules' findings out of the comparison.")
@click.option(
    "--fail-on",
    type=click.Choice(["never", *SEVERITIES]),
    default="never",
    show_default=True,
    help="Exit 1 when a finding new in B has at least this severity.",
)
@click.option("--identity", type=click.Path(dir_okay=False), help="SSH private key file (ssh: references).")
@click.option("--ssh-config", type=click.Path(dir_okay=False), help="SSH config file (default ~/.ssh/config).")
@click.option("--known-hosts", type=click.Path(dir_okay=False), help="Extra known_hosts file to trust.")
@click.option("--accept-new-host-key", is_flag=True, default=None, help="Trust and record an unknown host key.")
@click.option("--connect-timeout", type=float, default=None, help="Seconds to wait for an SSH connection (default 15).")
@click.option(
    "--scope",
    type=click.Choice(["speculative", "full"]),
    default=None,
    help="Which files to take (default: speculative).",
)
@click.pass_context
def command(ctx: click.Context, a: str, b: str, fmt, output, select, ignore, fail_on, **shared) -> None:
    """Compare two snapshots or sources: algorithms, predicates, choice hooks, dispatch and d2t sites, findings.

    A is the before, B the after. Items are matched by meaning (name, kind, enclosing function,
    expression), so code that only moved is reported as moved, not removed and added. References:
    pip:SPEC (pip:0.5.20), snapshot:ID|latest, path:DIR, git:REPO[@REV],
    ssh:[USER@]HOST[:PORT][:REMOTE_ROOT]; a bare existing folder is a path, else a snapshot id.

    \b
    Examples:
      sgl-scan diff pip:0.5.20 pip:0.5.23
      sgl-scan diff pip:sglang==0.5.23 ssh:root@gpu-box:/root/sglang/python/sglang --format html -o diff.html
      sgl-scan diff snapshot:20261129T120000Z-ssh-3f2a snapshot:latest --fail-on warning
    """
    from sgl_scan.cli.options import prepare_findings
    from sgl_scan.compare import compute_diff
    from sgl_scan.pipeline import FindingOptions
    from sgl_scan.reports import format_for_path, render_diff

    parse_ref(a), parse_ref(b)  # usage errors before any work
    fmt = fmt or (format_for_path(output) if output else None) or "text"
    prepared = prepare_findings(FindingOptions(select=tuple(select), ignore=tuple(ignore)))
    a_params, b_params = side_params((a, b), shared)
    a_snap, a_analysis, a_findings = _scan(a, a_params, prepared, "A")
    b_snap, b_analysis, b_findings = _scan(b, b_params, prepared, "B")
    diff = compute_diff(
        a_analysis,
        a_findings,
        b_analysis,
        b_findings,
        a_manifest=a_snap.manifest,
        b_manifest=b_snap.manifest,
        a_label=a,
        b_label=b,
        rules=prepared.rule_docs(),
    )
    color = wants_color(fmt, output)
    document = render_diff(diff, fmt, color=color)
    emit(document, output)
    if fail_on != "never":
        ctx.exit(exit_code_for((f.severity for f in diff.new_findings), fail_on))
