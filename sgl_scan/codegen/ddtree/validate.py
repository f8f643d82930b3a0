"""Checks run on the generated files before anything is written.

1. Every emitted Python file parses.
2. The patch applies cleanly (`git apply --check` in a throw-away repository holding the snapshot's
   files) and the patched files still parse.
3. Every SGLang name the generated code imports exists in the snapshot's facts (a module outside
   the scanned scope counts when a scanned file imports the same name from it); every call it makes
   into SGLang (`super().m(...)` on the base worker, `X.m(...)` on an imported class, `X(...)` of an
   imported dataclass, `v.m(...)` on a `v = X(...)` instance, `self.<target>.m(...)` on the target
   worker) passes arguments that the facts' signature takes; the plugin class answers every
   `is_*`/`supports_*` predicate of the enum.
"""

from __future__ import annotations

import ast
import shutil
import tempfile
from pathlib import Path
from typing import Mapping

import git

from sgl_scan.analyzer.model import Analysis
from sgl_scan.codegen.ddtree.patch import PatchResult
from sgl_scan.analyzer.query import Signature, files_by_module, find_class, find_method, signature
from sgl_scan.codegen.ddtree.plan import DDTreePlan, algorithm_methods, is_instance_method
from sgl_scan.errors import CodegenError


def validate_output(
    files: Mapping[str, str], plan: DDTreePlan, analysis: Analysis, tree: Path, patch: PatchResult | None
) -> None:
    """Raise `CodegenError` (one line) on the first problem."""
    trees = parse_all(files)
    if patch is not None:
        check_patch(patch, tree)
    for path, module in trees.items():
        check_sglang_names(path, module, analysis)
    if "worker.py" in trees:
        check_target_calls(trees["worker.py"], plan)
    if "register.py" in trees:
        check_plugin_predicates(trees["register.py"], plan, analysis)


def parse_all(files: Mapping[str, str]) -> dict[str, ast.Module]:
    parsed = {}
    for path, text in files.items():
        if not path.endswith(".py"):
            continue
        try:
            parsed[path] = ast.parse(text, filename=path)
        except SyntaxError as exc:
            raise CodegenError(f"generated {path} does not parse: line {exc.lineno}: {exc.msg}") from exc
    return parsed


def check_patch(patch: PatchResult, tree: Path) -> None:
    """`git apply --check` against the snapshot's own files in a temporary repository, then apply and parse."""
    work = Path(tempfile.mkdtemp(prefix="sgl-scan-patch-"))
    try:
        repo = git.Repo.init(work)
        with repo.config_writer() as config:
            config.set_value("user", "name", "sgl-scan")
            config.set_value("user", "email", "sgl-scan@localhost")
        for rel in patch.files:
            target = work / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(tree / rel, target)
        repo.index.add(list(patch.files))
        repo.index.commit("snapshot files")
        patch_file = work / "ddtree.patch"
        patch_file.write_text(patch.text, encoding="utf-8")
        try:
            repo.git.apply("--check", str(patch_file))
            repo.git.apply(str(patch_file))
        except git.GitCommandError as exc:
            detail = (exc.stderr or str(exc)).strip().splitlines()
            raise CodegenError(f"ddtree.patch does not apply to the snapshot: {detail[-1] if detail else exc}") from exc
        for rel in patch.files:
            if rel.endswith(".py"):
                try:
                    ast.parse((work / rel).read_text(encoding="utf-8"))
                except SyntaxError as exc:
                    raise CodegenError(
                        f"{rel} does not parse after ddtree.patch: line {exc.lineno}: {exc.msg}"
                    ) from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _module_defines(facts, name: str) -> bool:
    if any(c.qualname == name for c in facts.classes):
        return True
    if any(f.qualname == name for f in facts.functions):
        return True
    if any(a.target == name for a in facts.assignments):
        return True
    return any(i.bound == name and not i.scope for i in facts.imports)


def check_sglang_names(path: str, module: ast.Module, analysis: Analysis) -> None:
    modules = files_by_module(analysis)
    imported: dict[str, str] = {}  # local name -> qualified name
    for node in ast.walk(module):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module.split(".")[0] == "sglang"
        ):
            facts = modules.get(node.module)
            if facts is None:
                for alias in node.names:
                    if not _imported_elsewhere(analysis, node.module, alias.name):
                        raise CodegenError(
                            f"generated {path} imports {alias.name} from {node.module}, which is not in the snapshot"
                        )
                continue
            for alias in node.names:
                if not _module_defines(facts, alias.name):
                    raise CodegenError(
                        f"generated {path} imports {alias.name} from {node.module}, which the snapshot does not define"
                    )
                imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for cls in (n for n in ast.walk(module) if isinstance(n, ast.ClassDef)):
        bases = [imported.get(b.id) for b in cls.bases if isinstance(b, ast.Name)]
        for base in filter(None, bases):
            hit = find_class(analysis, base)
            if hit is None:
                raise CodegenError(f"generated {path} subclasses {base}, which is not a class in the snapshot")
            for call in (n for n in ast.walk(cls) if isinstance(n, ast.Call)):
                name = _super_method(call)
                if name is None:
                    continue
                found = find_method(analysis, hit[0], hit[1], name)
                if found is None:
                    if name == "__init__":
                        continue  # object.__init__
                    raise CodegenError(
                        f"generated {path}: {cls.name} calls super().{name}(), which {base} does not define"
                    )
                _check_call(path, call, signature(*found), f"{base}.{name}")
    for call in (n for n in ast.walk(module) if isinstance(n, ast.Call)):
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in imported:
            hit = find_class(analysis, imported[func.value.id])
            if hit is None:
                continue
            found = find_method(analysis, hit[0], hit[1], func.attr)
            if found is None:
                raise CodegenError(
                    f"generated {path} calls {func.value.id}.{func.attr}(), which the snapshot does not define"
                )
            if is_instance_method(found[1]):
                if not call.args:
                    raise CodegenError(
                        f"generated {path} calls the instance method {func.value.id}.{func.attr}() on the "
                        "class without an object"
                    )
                call = ast.Call(
                    func=call.func, args=call.args[1:], keywords=call.keywords
                )  # Class.method(obj, ...): obj is self
            _check_call(path, call, signature(*found), f"{imported[func.value.id]}.{func.attr}")

    instances = _instances(module, imported)
    for call in (n for n in ast.walk(module) if isinstance(n, ast.Call)):
        func = call.func
        if isinstance(func, ast.Name) and func.id in imported:
            hit = find_class(analysis, imported[func.id])
            if hit is not None and any(d.rsplit(".", 1)[-1] == "dataclass" for d in hit[1].decorators):
                _check_fields(path, call, hit[0], hit[1], imported[func.id])
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in instances:
            qualname = instances[func.value.id]
            hit = find_class(analysis, qualname)
            found = find_method(analysis, hit[0], hit[1], func.attr) if hit else None
            if found is None:
                raise CodegenError(
                    f"generated {path} calls {func.value.id}.{func.attr}() on a {qualname}, which does not define it"
                )
            _check_call(path, call, signature(*found), f"{qualname}.{func.attr}")


def _imported_elsewhere(analysis: Analysis, module: str, name: str) -> bool:
    """Some scanned file imports `name` from `module` (the module itself is outside the scope): at module
    level, or inside a function (the release's server-argument code loads its config helpers there)."""
    return any(i.module == module and i.name == name for facts in analysis.files.values() for i in facts.imports)


def _instances(module: ast.Module, imported: Mapping[str, str]) -> dict[str, str]:
    """Local names bound to `X(...)` of an imported SGLang class: name -> the class's qualified name."""
    found = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
            qualname = imported.get(node.value.func.id)
            if qualname:
                found.update({t.id: qualname for t in node.targets if isinstance(t, ast.Name)})
    return found


def _check_fields(path: str, call: ast.Call, facts, cls, qualname: str) -> None:
    """A dataclass-style constructor: keywords must be annotated fields; fields without a default must be passed."""
    fields = [a for a in cls.attributes if a.annotation is not None]
    if not fields:
        return
    names = {a.target for a in fields}
    explicit = {kw.arg for kw in call.keywords if kw.arg is not None}
    if call.args:
        raise CodegenError(
            f"generated {path} passes {qualname} ({facts.location(cls)}) positional arguments; use its field names"
        )
    unknown = explicit - names
    if unknown:
        raise CodegenError(
            f"generated {path} passes {sorted(unknown)} to {qualname} ({facts.location(cls)}), whose fields "
            f"are {sorted(names)}"
        )
    missing = [a.target for a in fields if a.value is None and a.target not in explicit]
    if missing and not any(kw.arg is None for kw in call.keywords):
        raise CodegenError(f"generated {path} builds {qualname} ({facts.location(cls)}) without {missing}")


def check_target_calls(module: ast.Module, plan: DDTreePlan) -> None:
    """`self.<target>.<forward>(...)` calls match the target worker's signature in the facts."""
    glue = plan.verify
    if glue is None or glue.target_forward is None or glue.target_attr is None:
        return
    for call in (n for n in ast.walk(module) if isinstance(n, ast.Call)):
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Attribute)
            and isinstance(func.value.value, ast.Name)
            and func.value.value.id == "self"
            and func.value.attr == glue.target_attr
        ):
            if func.attr != glue.target_forward.name:
                raise CodegenError(
                    f"generated worker.py calls self.{glue.target_attr}.{func.attr}(), which the plan did not check"
                )
            _check_call("worker.py", call, glue.target_forward, f"self.{glue.target_attr}.{func.attr}")


def _super_method(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
        inner = func.value.func
        if isinstance(inner, ast.Name) and inner.id == "super":
            return func.attr
    return None


def _check_call(path: str, call: ast.Call, sig: Signature, what: str) -> None:
    """Explicit keywords must be parameters; required parameters must be passed (by name, or via `_given`)."""
    explicit = {kw.arg for kw in call.keywords if kw.arg is not None}
    spread = [kw.value for kw in call.keywords if kw.arg is None]
    given = set()
    opaque = False
    for value in spread:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "_given":
            given |= {kw.arg for kw in value.keywords if kw.arg}
        else:
            opaque = True  # **kwargs forwarded from the caller: names unknown here
    names = {p.name for p in sig.params if p.kind in ("positional", "kwonly")}
    unknown = (explicit | given) - names
    if unknown and not sig.accepts_any_keyword:
        raise CodegenError(
            f"generated {path} passes {sorted(unknown)} to {what} ({sig.location}), which takes {sorted(names)}"
        )
    positional = len(call.args)
    ordered = [p for p in sig.params if p.kind in ("posonly", "positional")]
    starred = any(isinstance(a, ast.Starred) for a in call.args)
    if positional > len(ordered) and not starred and not any(p.kind == "vararg" for p in sig.params):
        raise CodegenError(
            f"generated {path} passes {positional} positional arguments to {what} ({sig.location}), which "
            f"takes {len(ordered)}"
        )
    doubled = {p.name for p in ordered[:positional]} & explicit
    if doubled and not starred:
        raise CodegenError(
            f"generated {path} passes {sorted(doubled)} to {what} ({sig.location}) both by position and by name"
        )
    covered = {p.name for p in ordered[:positional]} | explicit | given
    missing = [
        p.name
        for p in sig.params
        if p.kind in ("posonly", "positional", "kwonly") and p.default is None and p.name not in covered
    ]
    if missing and not opaque and not any(isinstance(a, ast.Starred) for a in call.args):
        raise CodegenError(f"generated {path} calls {what} ({sig.location}) without {missing}")


def check_plugin_predicates(module: ast.Module, plan: DDTreePlan, analysis: Analysis) -> None:
    """The plugin class answers every predicate of the enum, and with its base has every method of an
    algorithm object."""
    required = {p.name for p in analysis.inventory.predicates if p.owner == plan.enum_qualname}
    base = find_class(analysis, plan.plugin.base_qualname) if plan.plugin else None
    for name in algorithm_methods(analysis):
        if base is None or find_method(analysis, base[0], base[1], name) is None:
            required.add(name)
    for cls in (n for n in module.body if isinstance(n, ast.ClassDef)):
        defined = {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}
        missing = sorted(required - defined)
        if missing:
            raise CodegenError(
                f"generated register.py: {cls.name} lacks methods of {plan.enum_name} objects: {missing}"
            )
        return
    raise CodegenError("generated register.py defines no plugin class")
