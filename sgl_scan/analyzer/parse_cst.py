"""The libcst half of `parse.py`: the CST walker for general facts and the libcst extractors' run.

Imported only by the process that parses a file some libcst extractor needs (or that `ast` cannot
read): most files, and every warm scan, never load libcst.
"""

from __future__ import annotations

import ast
from typing import Any, Iterable, Sequence, cast

import libcst as cst
import libcst.metadata as meta

from sgl_scan.analyzer.builder import Builder, module_name, slice_text, split_lines
from sgl_scan.analyzer.extraction import ExtractorContext, run_extractor, uses_ast
from sgl_scan.analyzer.facts import FileFacts, Param
from sgl_scan.analyzer.reduce import compact, reduce_source


# -- libcst --------------------------------------------------------------------------------------
_PAREN_OWNED = (cst.Tuple, cst.GeneratorExp)
_CONSTANT_NAMES = frozenset({"True", "False", "None"})


def _cst_dotted(node: cst.CSTNode) -> str | None:
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name) and not (not parts and node.value in _CONSTANT_NAMES):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _cst_str_list(node: cst.CSTNode | None) -> list[str] | None:
    if isinstance(node, (cst.List, cst.Tuple)):
        out = []
        for e in node.elements:
            value = e.value
            if not isinstance(value, cst.SimpleString) or isinstance(e, cst.StarredElement):
                return None
            evaluated = value.evaluated_value
            if not isinstance(evaluated, str):
                return None
            out.append(evaluated)
        return out
    return None


_SMALL_OR_COMPOUND = (cst.BaseCompoundStatement, cst.SimpleStatementLine, cst.BaseSmallStatement)


class _CstWalker:
    def __init__(self, builder: Builder, lines: list[str], positions: Any) -> None:
        self.b = builder
        self.lines = lines
        self.positions = positions

    def _range(self, node: cst.CSTNode) -> tuple[Any, Any]:
        r = self.positions[node]
        if type(node) in _PAREN_OWNED and (owned := cast("cst.Tuple | cst.GeneratorExp", node)).lpar:
            # `ast` counts the innermost parentheses of a tuple or generator as part of it
            return self.positions[owned.lpar[-1]].start, self.positions[owned.rpar[0]].end
        return r.start, r.end

    def pos(self, node: cst.CSTNode) -> tuple[int, int, int]:
        start, end = self._range(node)
        return start.line, start.column + 1, end.line

    def text(self, node: cst.CSTNode) -> str:
        start, end = self._range(node)
        return slice_text(self.lines, start.line, start.column, end.line, end.column)

    def opt_text(self, node: cst.CSTNode | None) -> str | None:
        return None if node is None else self.text(node)

    def name(self, node: cst.CSTNode) -> tuple[str, bool]:
        dotted = _cst_dotted(node)
        return (dotted, True) if dotted is not None else (self.text(node), False)

    def exprs(self, node: cst.CSTNode) -> None:
        stack = [node]
        while stack:
            n = stack.pop()
            if type(n) is cst.Call:
                callee, dotted = self.name(n.func)
                positional = sum(1 for a in n.args if a.keyword is None and a.star != "**")
                keywords = tuple(
                    a.keyword.value if a.keyword is not None else "**"
                    for a in n.args
                    if a.keyword is not None or a.star == "**"
                )
                self.b.add_call(callee, dotted, self.pos(n), positional, keywords)
            stack.extend(n.children)

    def stmts(self, body: Iterable[cst.CSTNode]) -> None:
        for st in body:
            self.stmt(st)

    def suite(self, suite: cst.BaseSuite) -> None:
        self.stmts(suite.body)

    def _targets(self, node: cst.CSTNode, out: list[str]) -> None:
        if isinstance(node, (cst.Tuple, cst.List)):
            for e in node.elements:
                self._targets(e.value, out)
        else:
            dotted = _cst_dotted(node)
            if dotted is not None:
                out.append(dotted)

    def _params(self, params: cst.Parameters) -> list[Param]:
        def ann(p: cst.Param) -> str | None:
            return self.text(p.annotation.annotation) if p.annotation is not None else None

        out = [Param(p.name.value, "posonly", ann(p), self.opt_text(p.default)) for p in params.posonly_params]
        out += [Param(p.name.value, "positional", ann(p), self.opt_text(p.default)) for p in params.params]
        if isinstance(params.star_arg, cst.Param):
            out.append(Param(params.star_arg.name.value, "vararg", ann(params.star_arg)))
        out += [Param(p.name.value, "kwonly", ann(p), self.opt_text(p.default)) for p in params.kwonly_params]
        if isinstance(params.star_kwarg, cst.Param):
            out.append(Param(params.star_kwarg.name.value, "varkw", ann(params.star_kwarg)))
        return out

    def _decorators(self, decorators: Sequence[cst.Decorator]) -> tuple[list, int]:
        for d in decorators:
            self.exprs(d.decorator)
        names = [self.name(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) for d in decorators]
        line = self.positions[decorators[0].decorator].start.line if decorators else 0
        return names, line

    def stmt(self, st: cst.CSTNode) -> None:
        b = self.b
        t = type(st)
        # each branch casts `st` to the type `t` names (mypy does not narrow through `t`)
        if t is cst.SimpleStatementLine:
            self.stmts(cast(cst.SimpleStatementLine, st).body)
        elif t is cst.FunctionDef:
            st = cast(cst.FunctionDef, st)
            decorators, dline = self._decorators(st.decorators)
            self.exprs(st.params)
            if st.returns is not None:
                self.exprs(st.returns)
            b.open_function(
                st.name.value,
                self.pos(st),
                dline,
                decorators,
                self._params(st.params),
                self.text(st.returns.annotation) if st.returns is not None else None,
                st.asynchronous is not None,
            )
            self.suite(st.body)
            b.close()
        elif t is cst.ClassDef:
            st = cast(cst.ClassDef, st)
            decorators, dline = self._decorators(st.decorators)
            for arg in (*st.bases, *st.keywords):
                self.exprs(arg)
            bases = [self.name(a.value) for a in st.bases]
            keywords = [(a.keyword.value if a.keyword is not None else "**", *self.name(a.value)) for a in st.keywords]
            b.open_class(st.name.value, self.pos(st), dline, decorators, bases, keywords)
            self.suite(st.body)
            b.close()
        elif t is cst.Import:
            for a in cast(cst.Import, st).names:  # an import's `as` name is a Name
                asname = cast(cst.Name, a.asname.name).value if a.asname is not None else None
                b.add_import(_cst_dotted(a.name), None, asname, 0, self.pos(a))
        elif t is cst.ImportFrom:
            st = cast(cst.ImportFrom, st)
            module = _cst_dotted(st.module) if st.module is not None else None
            level = len(st.relative)
            if isinstance(st.names, cst.ImportStar):
                b.add_import(module, "*", None, level, self.pos(st.names))
            else:
                for a in st.names:  # an import's `as` name is a Name
                    asname = cast(cst.Name, a.asname.name).value if a.asname is not None else None
                    b.add_import(module, _cst_dotted(a.name), asname, level, self.pos(a))
        elif t is cst.Assign or t is cst.AnnAssign or t is cst.AugAssign:
            st = cast("cst.Assign | cst.AnnAssign | cst.AugAssign", st)
            targets: list[str] = []
            for target in (
                [x.target for x in cast(cst.Assign, st).targets]
                if t is cst.Assign
                else [cast("cst.AnnAssign | cst.AugAssign", st).target]
            ):
                self._targets(target, targets)
            value = st.value
            kind = "assign" if t is cst.Assign else "annassign" if t is cst.AnnAssign else "augassign"
            annotation = self.text(cast(cst.AnnAssign, st).annotation.annotation) if t is cst.AnnAssign else None
            b.add_assign(
                targets,
                self.opt_text(value),
                _cst_dotted(value) if value is not None else None,
                annotation,
                kind,
                self.pos(st),
                _cst_str_list(value),
            )
            self.exprs(st)
        else:
            self._generic(st)

    def _generic(self, node: cst.CSTNode) -> None:
        for child in node.children:
            if isinstance(child, cst.BaseSuite):
                self.suite(child)
            elif isinstance(child, _SMALL_OR_COMPOUND):
                self.stmt(child)
            elif isinstance(child, cst.BaseExpression):
                self.exprs(child)
            else:
                self._generic(child)


def wrap(module: cst.Module, extractors: Sequence[Any]) -> meta.MetadataWrapper:
    """The module wrapped once, with every metadata provider any of `extractors` reads resolved."""
    wrapper = meta.MetadataWrapper(module, unsafe_skip_copy=True)
    providers = {meta.PositionProvider}
    for ex in extractors:
        providers.update(ex.metadata)
    wrapper.resolve_many(providers)  # every provider any extractor needs, resolved once
    return wrapper


def run_extractors(
    path: str,
    wrapper: meta.MetadataWrapper,
    extractors: Sequence[Any],
    text: str | None = None,
    line_map: tuple[int, ...] | None = None,
) -> dict:
    """Each extractor's records; `text` is the module's source when known (saves regenerating it);
    `line_map` the file's line number of each line when the module is a compacted source."""
    context = ExtractorContext(path, module_name(path), text, line_map)
    return {ex.name: run_extractor(ex, wrapper, context) for ex in extractors}


def facts_from_cst(
    path: str, sha256: str, text: str, extractors: Sequence[Any] = (), module: cst.Module | None = None
) -> FileFacts:
    """General facts through libcst, plus the records of `extractors` (raises libcst.ParserSyntaxError).

    For source this Python's `ast` cannot read: `parser = "ast"` extractors give no records here.
    """
    if module is None:
        module = cst.parse_module(text)
    extractors = [ex for ex in extractors if not uses_ast(ex)]
    wrapper = wrap(module, extractors)
    builder = Builder(path, sha256, text)
    _CstWalker(builder, split_lines(text), wrapper.resolve(meta.PositionProvider)).stmts(wrapper.module.body)
    return builder.finish(parser="cst", extras=run_extractors(path, wrapper, extractors, text))


def reduced_extras(path: str, text: str, tree: ast.Module, extractors: Sequence[Any]) -> dict | None:
    """The extractors' records from libcst over the reduced source (`reduce.py`); None where that
    source does not parse (the caller then parses the whole file)."""
    reduced, line_map = compact(reduce_source(split_lines(text), tree, [ex.name for ex in extractors]))
    try:
        module = cst.parse_module(reduced)
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
        return None
    return run_extractors(path, wrap(module, extractors), extractors, reduced, line_map)
