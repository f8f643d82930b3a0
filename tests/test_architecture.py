"""The package's import graph has no circles, between subpackages or between files.

Every import of an `sgl_scan` module counts, wherever it is written: a function-level import is
still a dependency, only a later one. Data flows one way (snapshots → analyzer → rules → reports,
with the cli wiring them), and a circle is a stage reaching back.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterable, Mapping

import networkx as nx
import pytest

import sgl_scan

PACKAGE_ROOT = Path(sgl_scan.__file__).resolve().parent
PACKAGE = "sgl_scan"


def module_files(root: Path = PACKAGE_ROOT) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, not `__init__`)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = (PACKAGE, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module an `from ... import` names, with a relative import resolved against `module`."""
    if not node.level:
        return node.module or ""
    here = module.split(".") if is_package else module.split(".")[:-1]
    base = here[: len(here) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_modules(module: str, path: Path, known: Iterable[str]) -> set[str]:
    """The package modules `module` imports anywhere in its file, lazy imports included; `from a
    import b` counts `a.b` when that is a module, else `a`."""
    known = set(known)
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, is_package)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:  # `import sgl_scan.a.b.c` of an object: its module
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def import_map(root: Path = PACKAGE_ROOT) -> dict[str, set[str]]:
    """Module → the package modules it imports."""
    files = module_files(root)
    return {module: imported_modules(module, path, files) for module, path in files.items()}


SUBPACKAGES = ("analyzer", "rules", "reports", "fleet", "cli", "snapshots", "codegen", "drafter")


def component(module: str) -> str:
    """The node a module belongs to in the subpackage graph: its subpackage, or itself when it is a
    top-level module."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in SUBPACKAGES:
        return f"{PACKAGE}.{parts[1]}"
    return module


def circles(imports: Mapping[str, Iterable[str]], node=lambda module: module) -> list[list[str]]:
    """Every import circle in the graph whose nodes are `node(module)`, each as a sorted list of the
    nodes that depend on each other (a strongly connected component of more than one node)."""
    graph = nx.DiGraph()
    for module, targets in imports.items():
        graph.add_node(node(module))
        for target in targets:
            if node(module) != node(target):
                graph.add_edge(node(module), node(target))
    return sorted(sorted(scc) for scc in nx.strongly_connected_components(graph) if len(scc) > 1)


def describe(imports: Mapping[str, Iterable[str]], circle: list[str], node=lambda module: module) -> str:
    """One circle with the imports that make it: `a -> b (a.x imports b.y)`."""
    members = set(circle)
    lines = []
    for module in sorted(imports):
        for target in sorted(imports[module]):
            if node(module) in members and node(target) in members and node(module) != node(target):
                lines.append(f"  {node(module)} -> {node(target)}   ({module} imports {target})")
    return " <-> ".join(circle) + "\n" + "\n".join(lines)


@pytest.fixture(scope="module")
def imports() -> dict[str, set[str]]:
    return import_map()


def test_the_checker_reads_the_package(imports):
    # a checker that saw no imports would pass every circle test; these are lazy, relative-free and
    # `from package import module` imports the package really has
    assert "sgl_scan.rules.engine" in imports["sgl_scan.pipeline"]  # inside a function
    assert "sgl_scan.analyzer.parse_cst" in imports["sgl_scan.analyzer.parse"]  # `from sgl_scan.analyzer import parse_cst`
    assert "sgl_scan.cli.options" in imports["sgl_scan.cli.scan_cmd"]
    assert len(imports) > 100 and sum(map(len, imports.values())) > 300


def test_the_checker_finds_a_circle():
    synthetic = {
        "sgl_scan.rules.base": {"sgl_scan.reports.model"},
        "sgl_scan.reports.model": set(),
        "sgl_scan.reports.text": {"sgl_scan.rules.engine"},
        "sgl_scan.rules.engine": {"sgl_scan.rules.base"},
        "sgl_scan.cli.scan_cmd": {"sgl_scan.rules.engine", "sgl_scan.reports.text"},
    }
    assert circles(synthetic) == []
    assert circles(synthetic, component) == [["sgl_scan.reports", "sgl_scan.rules"]]
    message = describe(synthetic, ["sgl_scan.reports", "sgl_scan.rules"], component)
    assert "sgl_scan.rules.base imports sgl_scan.reports.model" in message

    synthetic["sgl_scan.reports.model"] = {"sgl_scan.rules.engine"}
    assert circles(synthetic) == [["sgl_scan.reports.model", "sgl_scan.rules.base", "sgl_scan.rules.engine"]]


def test_lazy_and_relative_imports_count(tmp_path):
    package = tmp_path / "sgl_scan"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "top.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from . import b\n")
    (package / "sub" / "a.py").write_text("def f():\n    from ..top import thing\n    from sgl_scan.sub import b\n")
    (package / "sub" / "b.py").write_text("import sgl_scan.sub.a as a\n")
    assert import_map(package) == {
        "sgl_scan": set(),
        "sgl_scan.top": set(),
        "sgl_scan.sub": {"sgl_scan.sub.b"},
        "sgl_scan.sub.a": {"sgl_scan.top", "sgl_scan.sub.b"},
        "sgl_scan.sub.b": {"sgl_scan.sub.a"},
    }


def test_no_circle_between_subpackages(imports):
    found = circles(imports, component)
    assert not found, "import circles between subpackages:\n" + "\n".join(
        describe(imports, circle, component) for circle in found)


def test_no_circle_between_files(imports):
    found = circles(imports)
    assert not found, "import circles between files:\n" + "\n".join(describe(imports, circle) for circle in found)


def test_no_command_imports_another_command(imports):
    def is_command(module: str) -> bool:
        return module.startswith("sgl_scan.cli.") and module.endswith("_cmd")

    crossing = sorted((module, target) for module, targets in imports.items() if is_command(module)
                      for target in targets if is_command(target))
    assert not crossing, "commands importing commands (shared code belongs in sgl_scan.pipeline or sgl_scan.cli.options):\n" + \
        "\n".join(f"  {module} imports {target}" for module, target in crossing)
