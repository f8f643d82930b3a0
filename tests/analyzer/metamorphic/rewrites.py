"""Equivalent rewrites of real SGLang source (stdlib `ast` to find sites, source slicing to edit).

Each rewrite kind takes a file's text and returns `Rewritten` (the new text and, per site, the
old and new line ranges) or None when the file has no site of that kind. Every result parses and
means the same as the original: only the spelling changes.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable

CLASS = "SpeculativeAlgorithm"
MAX_SITES = 4


@dataclass(frozen=True)
class Site:
    old: tuple[int, int]  # 1-based first and last line in the original
    new: tuple[int, int]  # the same region in the rewritten file


@dataclass(frozen=True)
class Rewritten:
    text: str
    sites: tuple[Site, ...]


def _is_member(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == CLASS \
        and node.attr.isupper()


def _is_predicate_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and not node.args and not node.keywords and isinstance(node.func, ast.Attribute) \
        and node.func.attr.startswith(("is_", "supports_")) and ("spec" in ast.unparse(node.func.value).lower()
                                                              or "algo" in ast.unparse(node.func.value).lower())


class _Editor:
    """Replacements of (line, col)-(end_line, end_col) spans of the original text, applied at once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.offsets = [0]
        for line in self.lines:
            self.offsets.append(self.offsets[-1] + len(line.encode("utf-8")))
        self.data = text.encode("utf-8")
        self.edits: list[tuple[int, int, str, int]] = []  # (start, end, new text, first old line)

    def offset(self, line: int, col: int) -> int:
        return self.offsets[line - 1] + col

    def replace(self, node: ast.AST, new: str) -> None:
        start = self.offset(node.lineno, node.col_offset)
        end = self.offset(node.end_lineno, node.end_col_offset)
        self.edits.append((start, end, new, node.lineno))

    def replace_lines(self, first: int, last: int, new: str) -> None:
        """Whole lines first..last (1-based) by `new` (lines with their own newlines)."""
        self.edits.append((self.offsets[first - 1], self.offsets[last], new, first))

    def insert_line(self, after: int, new: str) -> None:
        self.edits.append((self.offsets[after], self.offsets[after], new, after + 1))

    def result(self, regions: list[tuple[int, int]]) -> Rewritten | None:
        if not self.edits:
            return None
        out = self.data
        for start, end, new, _ in sorted(self.edits, key=lambda e: e[0], reverse=True):
            out = out[:start] + new.encode("utf-8") + out[end:]
        text = out.decode("utf-8")
        ast.parse(text)  # every rewrite must still parse
        # line shifts: each edit changes the line count by (new lines - old lines)
        deltas = sorted((self.data[:start].count(b"\n") + 1, new.count("\n") - self.data[start:end].count(b"\n"))
                        for start, end, new, _ in self.edits)

        def moved(line: int, inclusive: bool) -> int:
            return line + sum(d for at, d in deltas if at < line or (inclusive and at == line))

        sites = tuple(Site((a, b), (moved(a, False), moved(b, True))) for a, b in regions)
        return Rewritten(text, sites)


def _functions(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _last_import_line(tree: ast.Module) -> int:
    last = 0
    for statement in tree.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            last = statement.end_lineno
    return last


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


# -- the kinds -------------------------------------------------------------------------------------

def named_constant(text: str) -> Rewritten | None:
    """`x in (A.X, A.Y)` / `x in ("EAGLE", "NGRAM")` inside a function -> a module constant."""
    tree = ast.parse(text)
    ed, regions, consts = _Editor(text), [], []
    for fn in _functions(tree):
        for node in ast.walk(fn):
            if not isinstance(node, ast.Compare) or len(node.ops) != 1 or not isinstance(node.ops[0], (ast.In, ast.NotIn)):
                continue
            right = node.comparators[0]
            if not isinstance(right, (ast.Tuple, ast.Set, ast.List)) or not right.elts:
                continue
            if not (all(_is_member(e) for e in right.elts)
                    or all(isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value.isupper() for e in right.elts)):
                continue
            if len(regions) >= MAX_SITES or right.lineno != right.end_lineno:
                continue
            name = f"_SGLSCAN_CONST_{len(consts)}"
            consts.append(f"{name} = {ast.unparse(right)}\n")
            ed.replace(right, name)
            regions.append((node.lineno, node.end_lineno))
    if not regions:
        return None
    ed.insert_line(_last_import_line(tree), "".join(consts))
    return ed.result(regions)


def import_alias(text: str) -> Rewritten | None:
    """`from m import SpeculativeAlgorithm` -> `... as SA`, every use spelled `SA`."""
    tree = ast.parse(text)
    ed, regions = _Editor(text), []
    imported = False
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and any(a.name == CLASS and a.asname is None for a in statement.names) \
                and len(statement.names) == 1 and statement.lineno == statement.end_lineno:
            ed.replace(statement, f"from {'.' * statement.level}{statement.module or ''} import {CLASS} as SA")
            imported = True
    if not imported:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == CLASS:
            ed.replace(node, "SA")
            regions.append((node.lineno, node.end_lineno))
    return ed.result(regions) if regions else None


def match_statement(text: str) -> Rewritten | None:
    """`if x == A.M: body [else: other]` or `if x == "EAGLE": ...` -> `match x:` / `case A.M:` / body
    [/ `case _:` / other], where `x` is a name or attribute (evaluated once either way)."""
    tree = ast.parse(text)
    ed, regions = _Editor(text), []
    lines = text.splitlines(keepends=True)

    def indented(first: int, last: int) -> str:
        return "".join("    " + line if line.strip() else line for line in lines[first - 1:last])

    for fn in _functions(tree):
        for node in ast.walk(fn):
            if not isinstance(node, ast.If) or len(regions) >= MAX_SITES:
                continue
            test = node.test
            if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                    and isinstance(test.left, (ast.Name, ast.Attribute)) and test.lineno == test.end_lineno):
                continue
            right = test.comparators[0]
            literal = isinstance(right, ast.Constant) and isinstance(right.value, str) and right.value.isupper()
            if not (_is_member(right) or (literal and "algo" in ast.unparse(test.left).lower())):
                continue
            if lines[node.lineno - 1].lstrip().startswith("elif") or any(
                    isinstance(n, ast.If) and lines[n.lineno - 1].lstrip().startswith("elif") for n in node.orelse):
                continue
            if any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.lineno != n.end_lineno
                   for n in ast.walk(node)):
                continue  # indenting the body would change a multi-line string's value
            if any(isinstance(n, (ast.Break, ast.Continue)) for n in ast.walk(node)):
                continue  # `break` inside `match` means the same, but keep the rewrite plain
            indent = _indent(lines[node.lineno - 1])
            new = (f"{indent}match {ast.unparse(test.left)}:\n{indent}    case {ast.unparse(right)}:\n"
                   f"{indented(node.body[0].lineno, node.body[-1].end_lineno)}")
            if node.orelse:
                new += f"{indent}    case _:\n{indented(node.orelse[0].lineno, node.orelse[-1].end_lineno)}"
            if lines[node.lineno - 1].strip().endswith(":") is False or node.body[0].lineno == node.lineno:
                continue  # `if x: y` on one line
            ed.replace_lines(node.lineno, node.end_lineno, new)
            regions.append((node.lineno, node.end_lineno))
    return ed.result(regions)


def is_true(text: str) -> Rewritten | None:
    """`if spec.is_x():` -> `if spec.is_x() is True:` (predicates answer a bool)."""
    tree = ast.parse(text)
    ed, regions = _Editor(text), []
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.While)) and _is_predicate_call(node.test) and len(regions) < MAX_SITES:
            ed.replace(node.test, ast.unparse(node.test) + " is True")
            regions.append((node.test.lineno, node.test.end_lineno))
    return ed.result(regions)


def is_false(text: str) -> Rewritten | None:
    """`if not spec.is_x():` -> `if spec.is_x() is False:`."""
    tree = ast.parse(text)
    ed, regions = _Editor(text), []
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) \
                and _is_predicate_call(test.operand) and len(regions) < MAX_SITES:
            ed.replace(test, ast.unparse(test.operand) + " is False")
            regions.append((test.lineno, test.end_lineno))
    return ed.result(regions)


def two_statement_predicate(text: str) -> Rewritten | None:
    """In the algorithm class, `def is_x(self): return EXPR` -> `result = EXPR` / `return result`."""
    tree = ast.parse(text)
    ed, regions = _Editor(text), []
    lines = text.splitlines(keepends=True)
    for cls in tree.body:
        if not (isinstance(cls, ast.ClassDef) and cls.name == CLASS):
            continue
        for fn in cls.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("is_") and len(fn.args.args) == 1):
                continue
            body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None or len(regions) >= MAX_SITES:
                continue
            ret = body[0]
            indent = _indent(lines[ret.lineno - 1])
            value = "".join(lines[ret.lineno - 1:ret.end_lineno]).strip()[len("return"):].strip()
            ed.replace_lines(ret.lineno, ret.end_lineno, f"{indent}result = {value}\n{indent}return result\n")
            regions.append((fn.lineno, fn.end_lineno))
    return ed.result(regions)


def d2t_two_statements(text: str) -> Rewritten | None:
    """`self.hot_token_id = w + torch.arange(n)` -> `offset = torch.arange(n)` / `... = w + offset`."""
    tree = ast.parse(text)
    ed, regions = _Editor(text), []
    lines = text.splitlines(keepends=True)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add)):
            continue
        right = node.value.right
        if not (isinstance(right, ast.Call) and ast.unparse(right.func).endswith("arange")) or node.lineno != node.end_lineno:
            continue
        if "hot_token_id" not in ast.unparse(node.targets[0]) and "d2t" not in ast.unparse(node.value):
            continue
        indent = _indent(lines[node.lineno - 1])
        target, left = ast.unparse(node.targets[0]), ast.unparse(node.value.left)
        ed.replace_lines(node.lineno, node.end_lineno,
                         f"{indent}offset = {ast.unparse(right)}\n{indent}{target} = {left} + offset\n")
        regions.append((node.lineno, node.end_lineno))
    return ed.result(regions)


def d2t_torch_add(text: str) -> Rewritten | None:
    """`self.hot_token_id = w + torch.arange(n)` -> `torch.add(w, torch.arange(n))`."""
    tree = ast.parse(text)
    ed, regions = _Editor(text), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add) \
                and "hot_token_id" in ast.unparse(node.targets[0]) and isinstance(node.value.right, ast.Call) \
                and ast.unparse(node.value.right.func).endswith("arange"):
            ed.replace(node.value, f"torch.add({ast.unparse(node.value.left)}, {ast.unparse(node.value.right)})")
            regions.append((node.lineno, node.end_lineno))
    return ed.result(regions)


def ternary(text: str) -> Rewritten | None:
    """`if p: return A` + `return B` (or `else: return B`) -> `return A if p else B`."""
    tree = ast.parse(text)
    ed, regions = _Editor(text), []
    lines = text.splitlines(keepends=True)
    for fn in _functions(tree):
        body = fn.body
        for i, statement in enumerate(body):
            if not isinstance(statement, ast.If) or len(statement.body) != 1 or not isinstance(statement.body[0], ast.Return):
                continue
            if lines[statement.lineno - 1].lstrip().startswith("elif") or statement.body[0].value is None:
                continue
            other = None
            last = statement.end_lineno
            if statement.orelse:
                if len(statement.orelse) == 1 and isinstance(statement.orelse[0], ast.Return):
                    other = statement.orelse[0]
            elif i + 1 < len(body) and isinstance(body[i + 1], ast.Return):
                other = body[i + 1]
                last = other.end_lineno
            if other is None or other.value is None or len(regions) >= MAX_SITES:
                continue
            if not any(isinstance(n, (ast.Call, ast.Compare)) and ("algo" in ast.unparse(n).lower() or CLASS in ast.unparse(n))
                       for n in ast.walk(statement.test)):
                continue
            indent = _indent(lines[statement.lineno - 1])
            new = (f"{indent}return ({ast.unparse(statement.body[0].value)}) if ({ast.unparse(statement.test)}) "
                   f"else ({ast.unparse(other.value)})\n")
            ed.replace_lines(statement.lineno, last, new)
            regions.append((statement.lineno, last))
            break
    return ed.result(regions)


def constant_alias(text: str) -> Rewritten | None:
    """`SpeculativeAlgorithm.DFLASH` compared in a function -> module constant `DFLASH = SpeculativeAlgorithm.DFLASH`."""
    tree = ast.parse(text)
    defined = [s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == CLASS]
    if defined:  # the class's own file: the constants follow the class (its methods read them when called)
        after = defined[0].end_lineno
    elif any(isinstance(s, ast.ImportFrom) and any(a.name == CLASS and a.asname is None for a in s.names) for s in tree.body):
        after = _last_import_line(tree)
    else:
        return None
    ed, regions, names = _Editor(text), [], {}
    for fn in _functions(tree):
        for node in ast.walk(fn):
            if isinstance(node, ast.Compare) and len(regions) < MAX_SITES:
                for side in (node.left, *node.comparators):
                    if _is_member(side):
                        names.setdefault(side.attr, f"_SGLSCAN_{side.attr}")
                        ed.replace(side, names[side.attr])
                        regions.append((node.lineno, node.end_lineno))
    if not regions:
        return None
    ed.insert_line(after, "".join(f"{n} = {CLASS}.{m}\n" for m, n in names.items()))
    return ed.result(regions)


KINDS: dict[str, Callable[[str], Rewritten | None]] = {
    "named_constant": named_constant,
    "import_alias": import_alias,
    "match": match_statement,
    "is_true": is_true,
    "is_false": is_false,
    "two_statement_predicate": two_statement_predicate,
    "d2t_two_statements": d2t_two_statements,
    "d2t_torch_add": d2t_torch_add,
    "ternary": ternary,
    "constant_alias": constant_alias,
}
