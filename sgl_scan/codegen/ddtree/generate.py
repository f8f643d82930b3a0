"""One entry point for `gen ddtree`: plan -> (patch) -> render -> validate, nothing written."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from sgl_scan.analyzer.model import Analysis
from sgl_scan.codegen.ddtree.patch import PatchResult, build_patch
from sgl_scan.codegen.ddtree.plan import DDTreePlan, plan_ddtree
from sgl_scan.codegen.ddtree.render import environment, render_ddtree
from sgl_scan.codegen.ddtree.runtime import read_runtime_facts
from sgl_scan.codegen.ddtree.validate import validate_output
from sgl_scan.errors import CodegenError


@dataclass(frozen=True)
class Generated:
    plan: DDTreePlan
    patch: PatchResult | None
    files: Mapping[str, str]  # relative path -> text


def generate_ddtree(
    analysis: Analysis,
    tree: Path,
    *,
    package: str,
    budget: int,
    topk: int | None,
    mode: str = "auto",
    regenerate: str = "sgl-scan gen ddtree",
    allow_unwired: bool = False,
) -> Generated:
    """Plan, render and validate the DDTree integration for the snapshot whose files are under `tree`.

    Refuses (`CodegenError`, one line) a release the plan cannot wire, unless `allow_unwired`
    (`--dry-run` shows such a plan, then fails).
    """
    plan = plan_ddtree(analysis, budget=budget, topk=topk, mode=mode)
    if plan.unwired and not allow_unwired:
        raise CodegenError(plan.unwired)
    patch = build_patch(plan, analysis, tree, package) if plan.mode == "patch" else None
    files = render_ddtree(plan, package, patch, regenerate, read_runtime_facts(tree, plan.base.module))
    validate_output(files, plan, analysis, tree, patch)
    return Generated(plan, patch, files)


def describe_plan(plan: DDTreePlan, patch: PatchResult | None = None) -> str:
    """The `--dry-run` text: base class, registration mode, dispatch sites DDTree joins (file:line)."""
    return environment().get_template("plan.txt.j2").render(plan=plan, patch=patch)
