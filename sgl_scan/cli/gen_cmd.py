"""`sgl-scan gen ddtree`: emit DDTree reference code, Triton kernels, worker and registration."""

from __future__ import annotations

from pathlib import Path

import click

from sgl_scan.cli.options import latest_meaning, pop_source_params, source_options, source_or_latest

DEFAULT_BUDGET = 32


@click.group("gen")
def command() -> None:
    """Generate code that fits one SGLang snapshot."""


@command.command("ddtree")
@source_options
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write (its name becomes the package name). Required unless --dry-run.",
)
@click.option("--force", is_flag=True, help="Replace --out when it exists and is not empty.")
@click.option(
    "--budget",
    type=click.IntRange(1, 4096),
    default=DEFAULT_BUDGET,
    show_default=True,
    help="Draft-tree node budget B (the verify width is B + 1).",
)
@click.option(
    "--topk",
    type=click.IntRange(1, 4096),
    default=None,
    help=(
        "Cap on candidates per draft position (default: none; at run time min(budget, vocabulary), as in the "
        "DDTree reference)."
    ),
)
@click.option(
    "--mode",
    type=click.Choice(["auto", "plugin", "patch"]),
    default="auto",
    show_default=True,
    help="Registration: plugin where the release has the plugin API, else a patch (auto).",
)
@click.option(
    "--dry-run", is_flag=True, help="Print the plan (base class, registration, dispatch sites) and write nothing."
)
def ddtree(out: Path | None, force: bool, budget: int, topk: int | None, mode: str, dry_run: bool, **kwargs) -> None:
    """DDTree for the scanned SGLang: tree.py, kernels.py, worker.py, register.py or ddtree.patch, README, tests.

    With no source option the latest stored snapshot is used.

    \b
      sgl-scan gen ddtree --pip sglang==0.5.23 --out ./ddtree_sglang
      sgl-scan gen ddtree --snapshot latest --dry-run
    """
    from sgl_scan.analyzer.pipeline import analyze
    from sgl_scan.paths import snapshots_dir
    from sgl_scan.codegen.ddtree.generate import describe_plan, generate_ddtree
    from sgl_scan.codegen.write import check_destination, write_tree
    from sgl_scan.errors import CodegenError
    from sgl_scan.snapshots.resolve import obtain_snapshot
    from sgl_scan.reports.visible import visible
    from sgl_scan.snapshots.summary import tree_line

    if out is None and not dry_run:
        raise click.UsageError("--out DIR is required (or use --dry-run)")
    package = out.name if out is not None else "ddtree_sglang"
    if not package.isidentifier():
        assert out is not None  # the default name is an identifier
        raise click.BadParameter(
            f"{out.name!r} is not a Python identifier; the folder name becomes the package name", param_hint="--out"
        )
    source = source_or_latest(pop_source_params(kwargs))
    snapshot = obtain_snapshot(source)
    protected = [snapshot.folder, snapshots_dir()]
    if snapshot.manifest.source_kind == "local":  # never write over (or around) the scanned checkout
        protected += [Path(p) for p in (snapshot.manifest.source.get("path"), snapshot.manifest.root) if p]
    if out is not None and not dry_run:
        check_destination(out, force=force, protected=protected)
    analysis = analyze(snapshot, walk_all=True)  # the plan reads every file's facts
    cap = f" --topk {topk}" if topk is not None else ""
    regenerate = (
        f"sgl-scan gen ddtree --snapshot {snapshot.id} --budget {budget}{cap} --mode {mode} --out <this folder> --force"
    )
    generated = generate_ddtree(
        analysis,
        snapshot.tree,
        package=package,
        budget=budget,
        topk=topk,
        mode=mode,
        regenerate=regenerate,
        allow_unwired=dry_run,
    )
    tree = visible(tree_line(snapshot.manifest, latest_meaning(source, snapshot)))  # the version is the tree's text
    if dry_run:
        click.echo(f"tree: {tree}")
        click.echo(describe_plan(generated.plan, generated.patch), nl=False)
        if generated.plan.unwired:
            raise CodegenError(generated.plan.unwired)
        return
    assert out is not None  # required unless --dry-run (refused above)
    target = write_tree(generated.files, out, force=force, protected=protected)
    click.echo(
        f"wrote {len(generated.files)} files to {target} ({generated.plan.mode} mode, base "
        f"{generated.plan.base.qualname}) for {tree}"
    )
