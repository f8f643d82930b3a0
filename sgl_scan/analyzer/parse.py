"""Parse one file into `FileFacts`: decoding, the two walkers (stdlib `ast`, libcst), extractors.

The libcst half lives in `parse_cst.py` and is imported only when a file needs it.

General facts come from the `ast` walk (~10x faster than libcst); libcst parses a file only when an
extractor's trigger matches it (the extractors share one `MetadataWrapper`) or when `ast` cannot
read it (newer syntax), and then the CST walk gives the general facts. The extractors get the CST
of the file reduced to the statements they can read (`reduce.py`: same lines and columns). Both walkers emit the same
events to `Builder`; a test checks on a real SGLang tree that they produce identical facts.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import replace
from typing import Any, Iterable, Sequence, cast

from sgl_scan.analyzer.astnodes import child_nodes
from sgl_scan.analyzer.builder import Builder, char_column, found_records, module_name, slice_text, split_lines
from sgl_scan.analyzer.extraction import ExtractorContext, ExtractorFailed, run_extractor, uses_ast
from sgl_scan.analyzer.facts import FileFacts, Param
from sgl_scan.analyzer.model import Location, ParseError


class SourceError(Exception):
    """The bytes are not Python source this analyzer can read (message, 1-based line, column)."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.line, self.column = max(line or 1, 1), max(column or 1, 1)


def decode_source(data: bytes) -> str:
    """Decode bytes as Python does (BOM, coding cookie, else UTF-8); refuse binary and NULs."""
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise SourceError("source contains null bytes (binary file?)", line)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"cannot decode: {exc}", getattr(exc, "lineno", 1) or 1) from None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        start = getattr(exc, "start", 0)
        line = data[:start].count(b"\n") + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise SourceError(
            f"cannot decode as {encoding}: {exc.reason if hasattr(exc, 'reason') else exc}", line, column
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


# -- stdlib ast ---------------------------------------------------------------------------------
def ast_dotted(node: ast.AST | None) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _str_list(node: ast.AST | None) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        strings = cast("list[ast.Constant]", node.elts)  # all string constants (just tested)
        return cast("list[str]", [e.value for e in strings])
    return None


_AST_FIELDS: dict[type, tuple[str, ...]] = {}
_AST_LEAF_FIELDS = frozenset(
    {
        "ctx",
        "id",
        "value_str",
        "arg",
        "attr",
        "name",
        "names",
        "kind",
        "op",
        "conversion",
        "is_async",
        "level",
        "module",
        "type_comment",
        "kwd_attrs",
        "rest",
        "asname",
        "simple",
    }
)


def _ast_fields(t: type) -> tuple[str, ...]:
    """The fields of an `ast` node type that can hold child nodes (cached per type)."""
    fields = tuple(f for f in getattr(t, "_fields", ()) if f not in _AST_LEAF_FIELDS)
    if not issubclass(t, ast.AST) or t is ast.Constant or t is ast.Name:
        fields = ()
    elif t is ast.MatchSingleton or t is ast.MatchStar:
        fields = ()
    _AST_FIELDS[t] = fields
    return fields


class _AstWalker:
    def __init__(self, builder: Builder, lines: list[str], ascii: bool = False) -> None:
        self.b = builder
        self.lines = lines
        self.ascii = ascii  # the whole text is ASCII: byte columns are character columns

    def _col(self, line: int, byte_col: int) -> int:
        if self.ascii:
            return byte_col
        return char_column(self.lines[line - 1] if line - 1 < len(self.lines) else "", byte_col)

    def pos(self, node: Any) -> tuple[int, int, int]:
        return node.lineno, self._col(node.lineno, node.col_offset) + 1, node.end_lineno

    def text(self, node: Any) -> str:
        return slice_text(
            self.lines,
            node.lineno,
            self._col(node.lineno, node.col_offset),
            node.end_lineno,
            self._col(node.end_lineno, node.end_col_offset),
        )

    def opt_text(self, node: Any) -> str | None:
        return None if node is None else self.text(node)

    def name(self, node: ast.AST) -> tuple[str, bool]:
        dotted = ast_dotted(node)
        return (dotted, True) if dotted is not None else (self.text(node), False)

    def exprs(self, node: ast.expr | ast.stmt | ast.keyword | ast.arguments) -> None:
        """Every call below `node` (an expression, a statement read whole, a class keyword, or a def's
        `arguments`)."""
        line = getattr(node, "lineno", None)
        if line is not None:  # a call's source holds its "(": lines without one hold no call
            end = node.end_lineno  # type: ignore[union-attr]  # not `arguments` (it has no lineno); a cast costs a call here
            if end == line:
                if "(" not in self.lines[line - 1]:
                    return
            elif not any("(" in text for text in self.lines[line - 1 : end]):
                return
        stack: list[Any] = [node]  # nodes of any type, and None (dispatched on `type(n)`)
        pop, push, extend = stack.pop, stack.append, stack.extend
        fields_of = _AST_FIELDS
        Call = ast.Call
        add_call = self.b.add_call
        while stack:
            n = pop()
            if n is None:
                continue
            t = type(n)
            if t is Call:
                callee, dotted = self.name(n.func)
                keywords = tuple(k.arg or "**" for k in n.keywords)
                add_call(callee, dotted, self.pos(n), len(n.args), keywords)
            fields = fields_of.get(t)
            if fields is None:
                fields = _ast_fields(t)
            for f in fields:
                v = getattr(n, f)
                if type(v) is list:
                    extend(v)
                elif v is not None:
                    push(v)

    def stmts(self, body: Iterable[ast.stmt]) -> None:
        for st in body:
            self.stmt(st)

    def _targets(self, node: ast.AST, out: list[str]) -> None:
        if isinstance(node, (ast.Tuple, ast.List)):
            for e in node.elts:
                self._targets(e, out)
        elif isinstance(node, ast.Starred):
            self._targets(node.value, out)
        else:
            dotted = ast_dotted(node)
            if dotted is not None:
                out.append(dotted)

    def _params(self, args: ast.arguments) -> list[Param]:
        positional = [*args.posonlyargs, *args.args]
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        out = []
        for i, (a, d) in enumerate(zip(positional, defaults, strict=True)):
            kind = "posonly" if i < len(args.posonlyargs) else "positional"
            out.append(Param(a.arg, kind, self.opt_text(a.annotation), self.opt_text(d)))
        if args.vararg:
            out.append(Param(args.vararg.arg, "vararg", self.opt_text(args.vararg.annotation)))
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            out.append(Param(a.arg, "kwonly", self.opt_text(a.annotation), self.opt_text(d)))
        if args.kwarg:
            out.append(Param(args.kwarg.arg, "varkw", self.opt_text(args.kwarg.annotation)))
        return out

    def stmt(self, st: ast.stmt) -> None:
        b = self.b
        t = type(st)
        # each branch casts `st` to the type `t` names (mypy does not narrow through `t`)
        if t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            st = cast("ast.FunctionDef | ast.AsyncFunctionDef", st)
            for d in st.decorator_list:
                self.exprs(d)
            self.exprs(st.args)
            if st.returns is not None:
                self.exprs(st.returns)
            decorators = [self.name(d.func if isinstance(d, ast.Call) else d) for d in st.decorator_list]
            dline = st.decorator_list[0].lineno if st.decorator_list else 0
            b.open_function(
                st.name,
                self.pos(st),
                dline,
                decorators,
                self._params(st.args),
                self.opt_text(st.returns),
                t is ast.AsyncFunctionDef,
            )
            self.stmts(st.body)
            b.close()
        elif t is ast.ClassDef:
            st = cast(ast.ClassDef, st)
            for n in cast("tuple[ast.expr | ast.keyword, ...]", (*st.decorator_list, *st.bases, *st.keywords)):
                self.exprs(n)
            decorators = [self.name(d.func if isinstance(d, ast.Call) else d) for d in st.decorator_list]
            dline = st.decorator_list[0].lineno if st.decorator_list else 0
            bases = [self.name(x) for x in st.bases]
            keywords = [(k.arg or "**", *self.name(k.value)) for k in st.keywords]
            b.open_class(st.name, self.pos(st), dline, decorators, bases, keywords)
            self.stmts(st.body)
            b.close()
        elif t is ast.Import:
            for a in cast(ast.Import, st).names:
                b.add_import(a.name, None, a.asname, 0, self.pos(a))
        elif t is ast.ImportFrom:
            st = cast(ast.ImportFrom, st)
            for a in st.names:
                b.add_import(st.module, a.name, a.asname, st.level or 0, self.pos(a))
        elif t is ast.Assign or t is ast.AnnAssign or t is ast.AugAssign:
            st = cast("ast.Assign | ast.AnnAssign | ast.AugAssign", st)
            targets: list[str] = []
            for target in (
                cast(ast.Assign, st).targets if t is ast.Assign else [cast("ast.AnnAssign | ast.AugAssign", st).target]
            ):
                self._targets(target, targets)
            value = st.value
            kind = "assign" if t is ast.Assign else "annassign" if t is ast.AnnAssign else "augassign"
            annotation = self.text(cast(ast.AnnAssign, st).annotation) if t is ast.AnnAssign else None
            b.add_assign(
                targets,
                self.opt_text(value),
                ast_dotted(value) if value is not None else None,
                annotation,
                kind,
                self.pos(st),
                _str_list(value),
            )
            self.exprs(st)
        else:
            self._generic(st)

    def _generic(self, node: ast.AST) -> None:
        """The children of any other node, in `ast.iter_child_nodes` order (less the expression
        contexts and operators, which hold nothing)."""
        fields = _AST_FIELDS.get(type(node))
        if fields is None:
            fields = _ast_fields(type(node))
        for f in fields:
            value = getattr(node, f)
            for child in value if type(value) is list else (value,):
                if child is None:
                    continue
                if isinstance(child, ast.stmt):
                    self.stmt(child)
                elif isinstance(child, ast.expr):
                    self.exprs(child)
                else:
                    self._generic(child)


# -- entry points -------------------------------------------------------------------------------
def _error(path: str, sha256: str, message: str, line: int = 1, column: int = 1) -> FileFacts:
    return FileFacts(
        path=path,
        module=module_name(path),
        sha256=sha256,
        parse_error=ParseError(Location(path, line, column, line), message),
    )


def facts_from_ast(
    path: str,
    sha256: str,
    text: str,
    tree: ast.Module | None = None,
    extras: dict | None = None,
    lines: list[str] | None = None,
) -> FileFacts:
    """General facts through stdlib `ast` (raises SyntaxError/ValueError when it cannot parse);
    `lines`: `split_lines(text)` where the caller has it."""
    if tree is None:
        tree = ast.parse(text)
    builder = Builder(path, sha256, text)
    _AstWalker(builder, split_lines(text) if lines is None else lines, text.isascii()).stmts(tree.body)
    return builder.finish(parser="ast", extras=extras)


def parses_cleanly(data: bytes) -> bool:
    """Whether `parse_file` of these bytes with no extractor gives facts without a parse error: they
    decode, and stdlib `ast` parses them. The walk of a tree `ast` accepted raises nothing: the parser
    bounds statement nesting (100 indentation levels) and bracket nesting (200), so the walkers'
    recursion stays far below Python's limit, and expressions are walked without recursion."""
    try:
        ast.parse(decode_source(data))
    except (SourceError, SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def run_ast_extractors(
    path: str, tree: ast.Module, extractors: Sequence[Any], text: str, lines: list[str] | None = None
) -> dict:
    """Each `parser = "ast"` extractor's records, read from the file's stdlib syntax tree."""
    context = ExtractorContext(path, module_name(path), text, lines=lines)
    return {ex.name: run_extractor(ex, tree, context) for ex in extractors}


def records_only(path: str, data: bytes, extractors: Sequence[Any]) -> dict | None:
    """`parse_file(path, data, sha, extractors).extras` without the general facts, for a file whose
    general facts can be walked later from the same bytes; None where `parse_file` must run now: the
    bytes do not decode or parse with stdlib `ast`, an extractor needs libcst, or one fails (its
    failure is the file's `parse_error`). The walk of a tree `ast` accepted raises nothing
    (`parses_cleanly`), so the facts walked later are the ones `parse_file` would give."""
    if not all(uses_ast(ex) for ex in extractors):
        return None
    try:
        text = decode_source(data)
        tree = ast.parse(text)
        return found_records(run_ast_extractors(path, tree, extractors, text, split_lines(text)))
    except (SourceError, SyntaxError, ValueError, MemoryError, RecursionError, ExtractorFailed):
        return None


def parse_file(
    path: str, data: bytes, sha256: str, extractors: Sequence[Any] = (), *, force_cst: bool = False
) -> FileFacts:
    """Facts for one file; never raises for bad input (the error is recorded in `parse_error`).

    Source nested too deeply for the walkers (libcst and the walkers recurse per nesting level)
    is recorded as a parse error instead of crashing the scan.
    """
    try:
        return _parse_file(path, data, sha256, extractors, force_cst=force_cst)
    except (RecursionError, MemoryError) as exc:
        return _error(path, sha256, f"cannot analyse: nested too deeply ({type(exc).__name__})")
    except ExtractorFailed as exc:  # the general facts without any extractor's records, and why
        facts = parse_file(path, data, sha256, (), force_cst=force_cst)
        if facts.parse_error is not None:
            return facts
        return replace(facts, parse_error=ParseError(Location(path, 1, 1, 1), str(exc)))


MAX_CST_DEPTH = 300  # libcst's native parser slows down super-linearly with nesting and crashes near 2000


def _too_deep_for_cst(text: str, tree: ast.Module | None, ast_error: SyntaxError | None) -> str | None:
    """Why `text` must not reach libcst (nesting that hangs or crashes it), or None."""
    if ast_error is not None:
        if "too many nested" in ast_error.msg or "too many levels of indentation" in ast_error.msg:
            return f"syntax error: {ast_error.msg}"
        return None  # newer syntax than this Python's `ast`: libcst decides
    if tree is None:
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            return _too_deep_for_cst(text, None, exc)
        except (ValueError, MemoryError, RecursionError) as exc:
            return f"cannot analyse: nested too deeply ({type(exc).__name__})"
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_CST_DEPTH:
            return f"cannot analyse: nested more than {MAX_CST_DEPTH} levels deep"
        stack.extend((child, depth + 1) for child in child_nodes(node))
    return None


def _parse_file(
    path: str, data: bytes, sha256: str, extractors: Sequence[Any] = (), *, force_cst: bool = False
) -> FileFacts:
    """Facts for one file; never raises for bad input (the error is recorded in `parse_error`).

    General facts come from stdlib `ast` (identical to libcst's, and several times cheaper);
    libcst parses the file only for `extractors` (those whose trigger matched), when `ast` rejects
    the file (newer syntax), or with `force_cst` (general facts from the CST walk too).
    """
    try:
        text = decode_source(data)
    except SourceError as exc:
        return _error(path, sha256, str(exc), exc.line, exc.column)
    ast_error: SyntaxError | None = None
    tree = None
    if not force_cst:
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            ast_error = exc
        except (ValueError, MemoryError, RecursionError):
            pass
        if tree is not None and not extractors:
            return facts_from_ast(path, sha256, text, tree)
    if tree is not None:
        lines = split_lines(text)
        extras = run_ast_extractors(path, tree, [ex for ex in extractors if uses_ast(ex)], text, lines)
        extractors = [ex for ex in extractors if not uses_ast(ex)]
        if not extractors:
            return facts_from_ast(path, sha256, text, tree, extras, lines)
    refusal = _too_deep_for_cst(text, tree, ast_error)  # only where libcst will read the file
    if refusal:
        return _error(path, sha256, refusal)
    from sgl_scan.analyzer import parse_cst as pc  # libcst is loaded only for the files that need it

    cst = pc.cst
    if tree is not None:
        reduced = pc.reduced_extras(path, text, tree, extractors)
        if reduced is not None:
            return facts_from_ast(path, sha256, text, tree, {**extras, **reduced})
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        if ast_error is None and tree is None:
            try:
                ast.parse(text)
            except SyntaxError as err:
                ast_error = err
            except (ValueError, MemoryError, RecursionError):
                pass
        if ast_error is not None:  # CPython's message and position read better
            return _error(path, sha256, f"syntax error: {ast_error.msg}", ast_error.lineno or 1, ast_error.offset or 1)
        message = " ".join(str(exc.message).split())
        return _error(path, sha256, f"syntax error: {message}", exc.editor_line, exc.editor_column)
    except (RecursionError, MemoryError, ValueError) as exc:
        return _error(path, sha256, f"cannot parse: {type(exc).__name__}")
    if tree is not None:
        extras.update(pc.run_extractors(path, pc.wrap(module, extractors), extractors, text))
        return facts_from_ast(path, sha256, text, tree, extras)
    return pc.facts_from_cst(path, sha256, text, extractors, module)
