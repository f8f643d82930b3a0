"""`ddtree.patch`: a unified diff against the snapshot that teaches SGLang the DDTREE algorithm.

Used where the release has no plugin API. Every edit is placed from the analyzer's facts (the enum
member, predicate, option and dispatch-site locations) and checked against the source's syntax tree
at that spot; the snapshot files are read only to copy the lines around each edit.
"""

from __future__ import annotations

import ast
import difflib
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

from sgl_scan.analyzer.kinds import Via
from sgl_scan.analyzer.facts import FileFacts, FunctionFact
from sgl_scan.analyzer.model import Analysis, Location
from sgl_scan.analyzer.query import find_class
from sgl_scan.codegen.ddtree.plan import BASE_ALGORITHM, DDTreePlan
from sgl_scan.errors import CodegenError

BUDGET_OPTION = "--speculative-ddtree-budget"
BUDGET_FIELD = "speculative_ddtree_budget"


@dataclass(frozen=True)
class PatchEdit:
    location: Location  # the snapshot line the edit is anchored to
    what: str


@dataclass(frozen=True)
class PatchResult:
    text: str
    edits: tuple[PatchEdit, ...]
    skipped: tuple[PatchEdit, ...]  # sites that select DFLASH but need a hand edit
    files: tuple[str, ...]  # snapshot paths the patch touches
    server_args_hook: bool = False  # the patched ServerArgs routes/refuses the attention backend (ddtree_server_args)


@dataclass
class _Insert:
    line: int  # 1-based; the text goes before this line
    text: str


@dataclass
class _Replace:
    line: int
    start: int  # 0-based columns
    end: int
    text: str


class _FileEdits:
    def __init__(self, path: str, text: str):
        self.path = path
        self.lines = text.splitlines(keepends=True)
        self.inserts: list[_Insert] = []
        self.replaces: list[_Replace] = []

    def indent(self, line: int) -> str:
        raw = self.lines[line - 1]
        return raw[: len(raw) - len(raw.lstrip())]

    def apply(self) -> list[str]:
        lines = list(self.lines)
        for rep in sorted(self.replaces, key=lambda r: (r.line, -r.start)):
            raw = lines[rep.line - 1]
            lines[rep.line - 1] = raw[: rep.start] + rep.text + raw[rep.end :]
        for ins in sorted(self.inserts, key=lambda i: -i.line):
            lines[ins.line - 1 : ins.line - 1] = ins.text.splitlines(keepends=True)
        return lines


def _self_attribute(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def build_patch(plan: DDTreePlan, analysis: Analysis, tree: Path, package: str) -> PatchResult:
    """The unified diff (paths `a/sglang/...`, `b/sglang/...`) plus what it does and what it leaves."""
    if plan.enum_form == "registry":
        raise CodegenError(f"{plan.enum_qualname} is a registry ({plan.enum_location}); patch mode needs an enum")
    builder = _PatchBuilder(plan, analysis, tree, package)
    builder.enum_member()
    builder.predicates()
    builder.option()
    builder.dispatch()
    return builder.result()


class _PatchBuilder:
    def __init__(self, plan: DDTreePlan, analysis: Analysis, tree: Path, package: str):
        self.plan, self.analysis, self.tree, self.package = plan, analysis, tree, package
        self.files: dict[str, _FileEdits] = {}
        self.edits: list[PatchEdit] = []
        self.skipped: list[PatchEdit] = []
        self.new_member = f"{plan.enum_name}.{plan.algorithm_name}"
        self.hooked = False  # the server-args check (attention backend per model kind) is placed once

    def file(self, path: str) -> _FileEdits:
        if path not in self.files:  # the bytes the facts were made from, never a later edit of the file
            data = self.analysis.sources.data(path) if self.analysis.sources is not None else None
            if data is None:
                raise CodegenError(
                    f"cannot read {path} from the snapshot as it was analysed (changed since, or unreadable)"
                )
            try:
                self.files[path] = _FileEdits(path, data.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise CodegenError(
                    f"{path} is not UTF-8 ({exc.reason} at byte {exc.start}): it cannot be patched"
                ) from None
        return self.files[path]

    # -- the enum member
    def enum_member(self) -> None:
        hit = find_class(self.analysis, self.plan.enum_qualname)
        if hit is None:
            raise CodegenError(f"{self.plan.enum_qualname} is not in the snapshot's facts")
        facts, cls = hit
        member = next((m for m in cls.enum_members if m.name == BASE_ALGORITHM), None)
        if member is None:
            raise CodegenError(
                f"{self.plan.enum_qualname} ({self.plan.enum_location}) has no {BASE_ALGORITHM} member to "
                f"place {self.plan.algorithm_name} beside"
            )
        if member.value.replace(" ", "") == "auto()":
            value = "auto()"
        else:
            try:
                value = str(max(int(m.value, 0) for m in cls.enum_members) + 1)
            except ValueError:
                raise CodegenError(
                    f"cannot choose a value for {self.plan.algorithm_name}: {BASE_ALGORITHM} = "
                    f"{member.value} at {facts.path}:{member.line}"
                ) from None
        edits = self.file(facts.path)
        edits.inserts.append(
            _Insert(member.end_line + 1, f"{edits.indent(member.line)}{self.plan.algorithm_name} = {value}\n")
        )
        self.edits.append(
            PatchEdit(facts.location(member), f"add {self.plan.algorithm_name} = {value} to {self.plan.enum_name}")
        )

    # -- predicates that name DFLASH directly
    def predicates(self) -> None:
        hit = find_class(self.analysis, self.plan.enum_qualname)
        assert hit is not None  # enum_member() ran first and found it
        facts, cls = hit
        for choice in self.plan.predicates:
            if not choice.value:
                continue
            fn = next((f for f in facts.functions if f.owner == cls.qualname and f.name == choice.name), None)
            if fn is None:
                continue
            node, first = _parse_function(self.file(facts.path), fn)
            if node is None or not _names_member(node, self.plan.enum_name, BASE_ALGORITHM):
                continue  # true for DDTREE already (through another predicate, or a != test)
            assert first is not None  # parsed with node
            body_line = fn.line + first.lineno - 1
            edits = self.file(facts.path)
            ind = edits.indent(body_line)
            edits.inserts.append(_Insert(body_line, f"{ind}if self is {self.new_member}:\n{ind}    return True\n"))
            self.edits.append(
                PatchEdit(
                    choice.location,
                    f"{choice.name}() answers True for {self.plan.algorithm_name}, as for {BASE_ALGORITHM}",
                )
            )

    # -- the --speculative-algorithm choice and the budget option
    def option(self) -> None:
        hook = self.analysis.inventory.algorithm_option
        if hook is None:
            self.skipped.append(
                PatchEdit(
                    self.plan.enum_location, "no --speculative-algorithm definition found; add the choice by hand"
                )
            )
            return
        loc = hook.location
        edits = self.file(loc.path)
        found = self._option_call(loc, hook.name) if hook.kind == "argument" else None
        if found is None:
            self.skipped.append(
                PatchEdit(
                    loc,
                    f"{hook.name} is a {hook.kind}; no choices list to extend (the worker reads "
                    f"{BUDGET_FIELD} if present, else $SGLANG_DDTREE_BUDGET)",
                )
            )
            self._budget_field(loc.path)
            return
        stmt, offset, end, dedent = found
        first_line = stmt.lineno + offset
        choice = next(
            (
                n
                for kw in _keywords(stmt, "choices")
                for n in ast.walk(kw.value)
                if isinstance(n, ast.Constant) and n.value == BASE_ALGORITHM
            ),
            None,
        )
        if choice is not None:
            line = offset + _end_line(choice)
            col = _end_col(choice) + dedent
            edits.replaces.append(_Replace(line, col, col, f', "{self.plan.algorithm_name}"'))
            self.edits.append(
                PatchEdit(Location(loc.path, line), f'add "{self.plan.algorithm_name}" to the {hook.name} choices')
            )
        elif hook.values:
            self.skipped.append(
                PatchEdit(
                    loc, f"{hook.name} lists choices without {BASE_ALGORITHM}; add {self.plan.algorithm_name} by hand"
                )
            )
        receiver = ast.unparse(stmt.func)
        if receiver:
            ind = edits.indent(first_line)
            text = (
                f"{ind}{receiver}(\n"
                f'{ind}    "{BUDGET_OPTION}",\n'
                f"{ind}    type=int,\n"
                f"{ind}    default={self.plan.budget},\n"
                f'{ind}    help="{self.plan.algorithm_name} only. Node budget of the draft tree (the verify '
                'width is budget + 1).",\n'
                f"{ind})\n"
            )
            edits.inserts.append(_Insert(end + 1, text))
            self.edits.append(PatchEdit(loc, f"add the {BUDGET_OPTION} option (default {self.plan.budget})"))
        self._budget_field(loc.path)

    def _option_call(self, loc: Location, option: str) -> tuple[ast.Call, int, int, int] | None:
        """The `add_argument(...)` call defining `option`: (call, line offset of its function, end line, dedent)."""
        hit = self._enclosing(loc)
        if hit is None:
            return None
        edits = self.file(loc.path)
        node, _ = _parse_function(edits, hit[1])
        if node is None:
            return None
        offset = hit[1].line - 1
        for stmt in ast.walk(node):
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
                continue
            call = stmt.value
            if not (stmt.lineno + offset <= loc.line <= _end_line(stmt) + offset):
                continue
            if any(isinstance(a, ast.Constant) and a.value == option for a in call.args):
                return call, offset, _end_line(stmt) + offset, _dedent_width(edits, hit[1])
        return None

    def _budget_field(self, path: str) -> None:
        facts = self.analysis.files.get(path)
        for cls in getattr(facts, "classes", ()):
            field = next(
                (a for a in cls.attributes if a.target == "speculative_algorithm" and a.kind == "annassign"), None
            )
            if field is None:
                continue
            assert facts is not None  # cls is one of its classes
            edits = self.file(path)
            edits.inserts.append(
                _Insert(field.end_line + 1, f"{edits.indent(field.line)}{BUDGET_FIELD}: int = {self.plan.budget}\n")
            )
            self.edits.append(PatchEdit(facts.location(field), f"add the {cls.name}.{BUDGET_FIELD} field"))
            return
        self.skipped.append(
            PatchEdit(Location(path, 1), f"no speculative_algorithm field found; {BUDGET_FIELD} not added")
        )

    # -- dispatch: the worker branch and sites comparing against DFLASH itself
    def dispatch(self) -> None:
        base = self.plan.base
        for joined in self.plan.sites:
            site = joined.site
            if site.worker == self.plan.dflash.worker:
                self._worker_branch(site.location, base.name)
            elif site.via in (Via.STRING, Via.MEMBER):
                self._widen_compare(site.location, site.via, site.detail)

    def _enclosing(self, loc: Location) -> tuple[FileFacts, FunctionFact] | None:
        facts = self.analysis.files.get(loc.path)
        if facts is None:
            return None
        inside = [f for f in facts.functions if f.line <= loc.line <= f.end_line]
        return (facts, max(inside, key=lambda f: f.line)) if inside else None

    def _worker_branch(self, loc: Location, worker_name: str) -> None:
        hit = self._enclosing(loc)
        edits = self.file(loc.path)
        target_line, ind = loc.line, edits.indent(loc.line)
        if hit is not None:
            node, _ = _parse_function(edits, hit[1])
            branch = _node_at(node, ast.If, loc.line - hit[1].line + 1) if node else None
            ret = _return_of(branch, worker_name) if branch else None
            if ret is not None:
                target_line = hit[1].line + ret.lineno - 1
                ind = edits.indent(target_line)
        text = (
            f"{ind}if self is {self.new_member}:\n"
            f"{ind}    from {self.package}.worker import DDTreeWorker\n"
            f"\n"
            f"{ind}    return DDTreeWorker\n"
        )
        edits.inserts.append(_Insert(target_line, text))
        self.edits.append(
            PatchEdit(
                Location(loc.path, target_line),
                f"create DDTreeWorker for {self.plan.algorithm_name} (the {BASE_ALGORITHM} branch at {loc})",
            )
        )

    def _widen_compare(self, loc: Location, via: str, detail: str) -> None:
        edits = self.file(loc.path)
        hit = self._enclosing(loc)
        node = _parse_function(edits, hit[1])[0] if hit else None
        offset = hit[1].line - 1 if hit else 0
        dedent = _dedent_width(edits, hit[1]) if hit else 0
        compare = None
        if node is not None:
            compare = next(
                (
                    n
                    for n in ast.walk(node)
                    if isinstance(n, ast.Compare)
                    and n.lineno + offset == loc.line
                    and n.end_lineno == n.lineno
                    and len(n.ops) == 1
                    and _mentions(n.comparators[0], BASE_ALGORITHM)
                ),
                None,
            )
        if compare is None:
            self.skipped.append(
                PatchEdit(loc, f"compares against {detail}; add {self.plan.algorithm_name} there by hand")
            )
            return
        right = compare.comparators[0]
        new = f'"{self.plan.algorithm_name}"' if via == "string" else _member_text(right, self.plan.algorithm_name)
        op = compare.ops[0]
        if isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)) and not isinstance(
            right, (ast.Tuple, ast.List, ast.Set)
        ):
            word = "in" if isinstance(op, (ast.Eq, ast.Is)) else "not in"
            start = _end_col(compare.left) + dedent
            written = edits.lines[loc.line - 1][right.col_offset + dedent : _end_col(right) + dedent]
            text = f" {word} ({written}, {new})"
            edits.replaces.append(_Replace(loc.line, start, _end_col(right) + dedent, text))
        elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            last = right.elts[-1]
            edits.replaces.append(_Replace(loc.line, _end_col(last) + dedent, _end_col(last) + dedent, f", {new}"))
        else:
            self.skipped.append(
                PatchEdit(
                    loc,
                    f"compares against {detail} in a form the patch does not rewrite; add "
                    f"{self.plan.algorithm_name} by hand",
                )
            )
            return
        self.edits.append(PatchEdit(loc, f"let {self.plan.algorithm_name} through the {detail} test"))
        self._server_args_hook(node, compare, offset, hit, loc)

    def _server_args_hook(self, node, compare: ast.Compare, offset: int, hit, loc: Location) -> None:
        """Inside the server arguments' own DFLASH branch (`if self.<algorithm> == "DFLASH":` in a method of the
        class holding the speculative_algorithm field), run the worker's attention check for DDTREE: it routes or
        refuses the attention backend per model kind at server-args time, before any weights load."""
        if self.hooked or node is None or hit is None or not _self_attribute(compare.left):
            return
        facts, fn = hit
        owner = next((c for c in facts.classes if c.qualname == fn.owner), None)
        if owner is None or not any(
            a.target == "speculative_algorithm" and a.kind == "annassign" for a in owner.attributes
        ):
            return
        branch = next((n for n in ast.walk(node) if isinstance(n, ast.If) and n.test is compare), None)
        if branch is None or not branch.body:
            return
        edits = self.file(loc.path)
        first = branch.body[0].lineno + offset
        ind = edits.indent(first)
        left = ast.unparse(compare.left)
        text = (
            f'{ind}if {left} == "{self.plan.algorithm_name}":  # the attention backend the tree verify '
            "needs, per model kind\n"
            f"{ind}    from {self.package}.worker import ddtree_server_args\n"
            f"\n"
            f"{ind}    ddtree_server_args(self)\n"
        )
        edits.inserts.append(_Insert(first, text))
        self.edits.append(
            PatchEdit(
                Location(loc.path, first),
                f"route or refuse the attention backend for {self.plan.algorithm_name} at server-args time "
                f"(the {BASE_ALGORITHM} branch at {loc})",
            )
        )
        self.hooked = True

    def result(self) -> PatchResult:
        chunks: list[str] = []
        for path in sorted(self.files):
            edits = self.files[path]
            if not edits.inserts and not edits.replaces:
                continue
            after = edits.apply()
            chunks.extend(difflib.unified_diff(edits.lines, after, f"a/{path}", f"b/{path}", n=3))
        if not chunks:
            raise CodegenError("the patch would change nothing")
        touched = tuple(sorted(p for p, e in self.files.items() if e.inserts or e.replaces))
        return PatchResult("".join(chunks), tuple(self.edits), tuple(self.skipped), touched, self.hooked)


# --- syntax helpers ----------------------------------------------------------------------------


def _dedent_width(edits: _FileEdits, fn: FunctionFact) -> int:
    return len(edits.indent(fn.line))


def _parse_function(
    edits: _FileEdits, fn: FunctionFact
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | None, ast.stmt | None]:
    """The function's syntax tree (lines numbered from its `def`) and its first non-docstring statement."""
    text = textwrap.dedent("".join(edits.lines[fn.line - 1 : fn.end_line]))
    try:
        module = ast.parse(text)
    except SyntaxError:
        return None, None
    node = module.body[0] if module.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None, None
    body = node.body
    first = (
        body[1]
        if len(body) > 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
        else body[0]
    )
    return node, first


def _end_line(node: ast.stmt | ast.expr) -> int:
    """`end_lineno`: always set on a parsed node (None only on hand-built ones)."""
    return cast(int, node.end_lineno)


def _end_col(node: ast.stmt | ast.expr) -> int:
    """`end_col_offset`: always set on a parsed node (None only on hand-built ones)."""
    return cast(int, node.end_col_offset)


def _keywords(call: ast.Call, name: str) -> list[ast.keyword]:
    return [kw for kw in call.keywords if kw.arg == name]


def _names_member(node: ast.AST, enum_name: str, member: str) -> bool:
    return any(
        isinstance(n, ast.Attribute) and n.attr == member and isinstance(n.value, ast.Name) and n.value.id == enum_name
        for n in ast.walk(node)
    )


def _mentions(node: ast.AST, member: str) -> bool:
    return any(
        (isinstance(n, ast.Constant) and n.value == member) or (isinstance(n, ast.Attribute) and n.attr == member)
        for n in ast.walk(node)
    )


def _member_text(node: ast.AST, new: str) -> str:
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr == BASE_ALGORITHM:
            return f"{ast.unparse(n.value)}.{new}"
    return f'"{new}"'


_Stmt = TypeVar("_Stmt", bound=ast.stmt)


def _node_at(root: ast.AST, kind: type[_Stmt], line: int) -> _Stmt | None:
    return next((n for n in ast.walk(root) if isinstance(n, kind) and n.lineno == line), None)


def _return_of(branch: ast.If, name: str) -> ast.Return | None:
    for stmt in branch.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id == name:
                return n
    return None
