"""`sgl-scan drafter check|diff`: verify an EAGLE-3 drafter's d2t/t2d mapping (and against an SGLang)."""

from __future__ import annotations

from pathlib import Path

import click

from sgl_scan.cli.options import pop_source_params, source_options
from sgl_scan.exitcodes import exit_code_for

_SEVERITY = {"pass": "info", "warn": "warning", "fail": "error"}  # check status -> finding severity
_FORMAT = click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output format."
)


@click.group("drafter")
def command() -> None:
    """Check EAGLE-3 drafter checkpoints: the d2t/t2d vocabulary mapping, config.json, and how an
    SGLang release would read them.

    \b
      sgl-scan drafter check ./my-eagle3 --target-config ./Kimi-K2.5/config.json --pip sglang==0.5.23
      sgl-scan drafter diff ./eagle3-for-k2 ./eagle3-for-k2.5
    """


def _target(target_config: str | None, target_vocab: int | None):
    from sgl_scan.drafter.target import Target, read_target_config

    if target_config and target_vocab:
        raise click.UsageError("give --target-config or --target-vocab, not both")
    if target_config:
        path = Path(target_config)
        return read_target_config(path / "config.json" if path.is_dir() else path)
    if target_vocab:
        return Target(vocab_size=target_vocab, vocab_source="--target-vocab")
    return Target()


def _engine(report, source: dict, no_snapshot: bool):
    """(EngineVerdict, None, the tree's fields), or (None, why there is none, None)."""
    from sgl_scan.drafter.compat import judge

    if no_snapshot:
        return None, "skipped (--no-snapshot)", None
    if not any(v for k, v in source.items() if k not in ("connect_timeout", "scope")):
        from sgl_scan.snapshots.store import Store

        if not Store().list():
            return (
                None,
                "no snapshot stored and no source given: engine compatibility not checked (add --pip "
                "sglang==X, --path DIR, ...)",
                None,
            )
        source = {**source, "snapshot_ref": "latest"}
    from sgl_scan.analyzer.pipeline import analyze
    from sgl_scan.snapshots.resolve import obtain_snapshot

    from sgl_scan.cli.options import latest_meaning
    from sgl_scan.snapshots.summary import tree_fields

    snapshot = obtain_snapshot(source)
    analysis = analyze(snapshot)
    version = analysis.sglang_version or snapshot.manifest.sglang_version
    return (
        judge(report, analysis.inventory, snapshot.id, version),
        None,
        tree_fields(snapshot.manifest, latest_meaning(source, snapshot)),
    )


@command.command("check")
@click.argument("path", type=click.Path())
@click.option(
    "--target-config",
    type=click.Path(exists=True),
    help="The target model's config.json (or its folder): vocab_size, num_hidden_layers.",
)
@click.option(
    "--target-vocab", type=click.IntRange(min=1), help="The target vocabulary size, when no target config is at hand."
)
@click.option(
    "--no-snapshot", is_flag=True, help="Check the checkpoint alone; do not judge it against an SGLang snapshot."
)
@_FORMAT
@source_options
@click.pass_context
def check(
    ctx: click.Context,
    path: str,
    target_config: str | None,
    target_vocab: int | None,
    no_snapshot: bool,
    fmt: str,
    **kwargs,
) -> None:
    """Check the drafter at PATH (a folder, a .safetensors file or an index file).

    With a source option (or, by default, the latest stored snapshot) it also says how that SGLang
    release reads d2t and whether this drafter works there. Exit 1 when a check fails.
    """
    from sgl_scan.drafter.checkpoint import read_checkpoint
    from sgl_scan.drafter.checks import run_checks
    from sgl_scan.drafter.render import render_check

    source = pop_source_params(kwargs)
    target = _target(target_config, target_vocab)
    report = run_checks(read_checkpoint(path), target)
    engine, note, tree = _engine(report, source, no_snapshot)
    click.echo(render_check(report, engine, note, fmt, tree=tree))
    statuses = [c.status for c in report.checks] + ([engine.status] if engine is not None else [])
    ctx.exit(exit_code_for(_SEVERITY[s] for s in statuses if s in _SEVERITY))


@command.command("diff")
@click.argument("a", type=click.Path())
@click.argument("b", type=click.Path())
@click.option(
    "--limit", type=click.IntRange(min=0), default=10, show_default=True, help="How many differing positions to list."
)
@_FORMAT
def diff(a: str, b: str, limit: int, fmt: str) -> None:
    """Compare the draft->target maps of drafters A and B (e.g. trained for Kimi-K2 vs K2.5)."""
    from sgl_scan.drafter.checkpoint import read_checkpoint
    from sgl_scan.drafter.diff import diff_mappings
    from sgl_scan.drafter.render import render_diff

    click.echo(render_diff(diff_mappings(read_checkpoint(a), read_checkpoint(b), limit), fmt))
