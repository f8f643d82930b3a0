"""Small libcst helpers shared by the speculative-decoding extractors."""

from __future__ import annotations

import re
from typing import Any, Iterator, cast

import libcst as cst
import libcst.metadata as meta

from sgl_scan.analyzer.extractors._names import NameResolution
from sgl_scan.analyzer.extractors._text import ALGO_CLASS_NAME, Trigger  # noqa: F401  (re-exported)
from sgl_scan.analyzer.extractors.records import At

_SPACE = re.compile(r"\s+")
TEXT_LIMIT = 200


def dotted(node: cst.CSTNode | None) -> str | None:
    """`a.b.c` for Name/Attribute chains, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def last_name(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def string_value(node: cst.CSTNode | None) -> str | None:
    """The value of a plain (non f-) string literal."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def string_values(node: cst.CSTNode | None) -> tuple[str, ...] | None:
    """Literal strings of a string, or of a tuple/list/set (or `frozenset({...})`) of strings."""
    single = string_value(node)
    if single is not None:
        return (single,)
    if (
        isinstance(node, cst.Call)
        and dotted(node.func) in ("frozenset", "set", "tuple", "list")
        and len(node.args) == 1
    ):
        return string_values(node.args[0].value)
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        out = []
        for element in node.elements:
            value = string_value(element.value) if isinstance(element, cst.Element) else None
            if value is None:
                return None
            out.append(value)
        return tuple(out)
    return None


def body_statements(suite: cst.BaseSuite) -> list[cst.CSTNode]:
    """Statements of a suite (for a one-line suite, its small statements)."""
    return list(suite.body)


def small_statements(statement: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(statement, cst.SimpleStatementLine):
        return list(statement.body)
    if isinstance(statement, cst.BaseSmallStatement):
        return [statement]
    return []


def strip_docstring(statements: list[cst.CSTNode]) -> list[cst.CSTNode]:
    if statements:
        smalls = small_statements(statements[0])
        if len(smalls) == 1 and isinstance(smalls[0], cst.Expr) and string_value(smalls[0].value) is not None:
            return statements[1:]
    return statements


def _statements(owner: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every statement below a module or compound statement (expressions are not entered)."""
    body = getattr(owner, "body", None)
    if isinstance(body, cst.BaseSuite):
        body = body.body
    for statement in body if isinstance(body, (list, tuple)) else ():
        yield statement
        if isinstance(statement, cst.BaseCompoundStatement):
            yield from _compound_parts(statement)


def _compound_parts(statement: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield from _statements(statement)
    for handler in getattr(statement, "handlers", ()):
        yield from _statements(handler)
    for extra in ("orelse", "finalbody"):
        part = getattr(statement, extra, None)
        if isinstance(part, cst.If):  # elif
            yield part
            yield from _compound_parts(part)
        elif isinstance(part, cst.CSTNode):
            yield from _statements(part)


class Resolver(NameResolution):
    """Positions, names resolved through the file's imports and definitions, and source text.

    Name resolution reads the import statements anywhere in the file (function-local ones included,
    as SGLang imports workers inside branches) and the module's own definitions; it is much cheaper
    than libcst's scope analysis and enough for the names the extractors resolve.
    """

    def __init__(
        self, wrapper: meta.MetadataWrapper, module_name: str, line_map: tuple[int, ...] | None = None
    ) -> None:
        super().__init__(module_name)
        self.module = wrapper.module
        self.positions = wrapper.resolve(meta.PositionProvider)
        self.line_map = line_map  # the file's line number of each line of a compacted source

    @classmethod
    def for_context(cls, wrapper: meta.MetadataWrapper, context: Any) -> "Resolver":
        """A resolver for the module the per-file pass hands an extractor (`context.module`, and
        `context.line_map` when the module is a compacted source)."""
        return cls(wrapper, context.module, getattr(context, "line_map", None))

    def at(self, node: cst.CSTNode) -> At:
        """Where `node` is in the file (1-based line and column, end line)."""
        rng = self.positions[node]
        if self.line_map is None:
            return At(rng.start.line, rng.start.column + 1, rng.end.line)
        return At(self.line_map[rng.start.line - 1], rng.start.column + 1, self.line_map[rng.end.line - 1])

    def text(self, node: cst.CSTNode) -> str:
        text = _SPACE.sub(" ", self.module.code_for_node(node)).strip()
        return text[:TEXT_LIMIT]

    def dotted(self, node: cst.CSTNode | None) -> str | None:
        return dotted(node)

    def last_name(self, node: cst.CSTNode | None) -> str | None:
        return last_name(node)

    def callee(self, node: cst.CSTNode) -> cst.CSTNode:
        return node.func if isinstance(node, cst.Call) else node

    def names(self) -> dict[str, str]:
        if self._names is None:
            names: dict[str, str] = {}
            top = {id(statement) for statement in self.module.body}
            for statement in _statements(self.module):
                if isinstance(statement, (cst.ClassDef, cst.FunctionDef)) and id(statement) in top:
                    names.setdefault(statement.name.value, f"{self.module_name}.{statement.name.value}")
                for small in small_statements(statement):
                    if isinstance(small, cst.Import):
                        for alias in small.names:
                            full = dotted(alias.name) or ""
                            if alias.asname is not None:
                                names[dotted(alias.asname.name) or full] = full
                            else:
                                names[full.split(".")[0]] = full.split(".")[0]
                    elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                        module = self.absolute(dotted(small.module) or "", len(small.relative))
                        for alias in small.names:
                            name = dotted(alias.name) or ""
                            # a `from` import's `as` name is a plain name
                            bound = cast(str, dotted(alias.asname.name)) if alias.asname is not None else name
                            names[bound] = f"{module}.{name}" if module else name
                    elif isinstance(small, (cst.Assign, cst.AnnAssign)) and id(statement) in top:
                        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                        for target in targets:
                            if isinstance(target, cst.Name):
                                names.setdefault(target.value, f"{self.module_name}.{target.value}")
            self._names = names
        return self._names


_TEXT_CACHE: dict[int, tuple[cst.Module, str]] = {}


def source_text(wrapper: meta.MetadataWrapper, context: object) -> str:
    """The file's text: from the context when the pass provides it, else regenerated (once per module)."""
    text = getattr(context, "text", None)
    if isinstance(text, str):
        return text
    cached = _TEXT_CACHE.get(id(wrapper.module))
    if cached is None or cached[0] is not wrapper.module:
        _TEXT_CACHE.clear()
        cached = _TEXT_CACHE[id(wrapper.module)] = (wrapper.module, wrapper.module.code)
    return cached[1]


def walk_no_defs(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """All nodes below `node` (pre-order), not descending into nested functions or classes."""
    stack = list(reversed(node.children))
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(reversed(current.children))


def statement_workers(resolver: Resolver, statement: cst.CSTNode) -> list[Any]:
    """Workers a statement returns, assigns or instantiates (not inside nested definitions)."""
    found = []
    nodes = [statement, *walk_no_defs(statement)]
    for node in nodes:
        if isinstance(node, cst.Return) and node.value is not None and not isinstance(node.value, cst.Call):
            ref = resolver.worker_ref(node.value)
            if ref:
                found.append(ref)
        elif isinstance(node, cst.Call):
            ref = resolver.worker_ref(node)
            if ref:
                found.append(ref)
    return found
