"""A libcst visitor that knows the qualified name of the enclosing function and class, and skips
statements whose lines hold nothing it looks for (walking every node of a large file through
libcst's visitor costs seconds; most statements of a triggered file are irrelevant)."""

from __future__ import annotations

from typing import cast

import libcst as cst

from sgl_scan.analyzer.extractors._cst import ALGO_CLASS_NAME, Resolver
from sgl_scan.analyzer.extractors._text import any_hit, hit_lines  # noqa: F401  (hit_lines re-exported)


class ScopedVisitor(cst.CSTVisitor):
    """Tracks `__qualname__`-style scopes (`C.m`, `f.<locals>.g`) while walking a module."""

    def __init__(self, resolver: Resolver, hits: list[int] | None = None) -> None:
        super().__init__()
        self.r = resolver
        self._scopes: list[tuple[str, str]] = []  # (kind, name)
        self._hits = hits  # None: visit everything
        self._pruned: set[int] = set()
        self._unpruned_depth = 0  # inside an algorithm class every statement matters

    def _relevant(self, node: cst.CSTNode) -> bool:
        rng = self.r.positions[node]
        start = rng.start.line
        decorators = getattr(node, "decorators", None)
        if decorators:  # a def's or class's position starts at its keyword, after the decorators
            start = min(start, self.r.positions[decorators[0]].start.line)
        return any_hit(cast("list[int]", self._hits), start, rng.end.line)  # `on_visit` asks only with hits

    def on_visit(self, node: cst.CSTNode) -> bool:
        if (
            self._hits is not None
            and not self._unpruned_depth
            and isinstance(node, (cst.BaseStatement, cst.BaseSmallStatement))
            and not self._relevant(node)
        ):
            self._pruned.add(id(node))
            return False
        if isinstance(node, cst.ClassDef) and ALGO_CLASS_NAME.search(node.name.value):
            self._unpruned_depth += 1
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if id(original_node) in self._pruned:
            self._pruned.discard(id(original_node))
            return
        if isinstance(original_node, cst.ClassDef) and ALGO_CLASS_NAME.search(original_node.name.value):
            self._unpruned_depth -= 1
        super().on_leave(original_node)

    def _qual(self) -> str:
        parts: list[str] = []
        for kind, name in self._scopes:
            parts.append(name)
            if kind == "def":
                parts.append("<locals>")
        if parts and parts[-1] == "<locals>":
            parts.pop()
        return ".".join(parts)

    def _qual_upto(self, index: int) -> str:
        saved, self._scopes = self._scopes, self._scopes[: index + 1]
        try:
            return f"{self.r.module_name}.{self._qual()}"
        finally:
            self._scopes = saved

    @property
    def function(self) -> str:
        """Qualified enclosing function, or "<module>"."""
        defs = [i for i, (kind, _) in enumerate(self._scopes) if kind == "def"]
        return self._qual_upto(defs[-1]) if defs else "<module>"

    @property
    def class_name(self) -> str | None:
        """The innermost class whose body (or method) we are in, qualified."""
        classes = [i for i, (kind, _) in enumerate(self._scopes) if kind == "class"]
        return self._qual_upto(classes[-1]) if classes else None

    @property
    def current_def(self) -> str | None:
        return self._scopes[-1][1] if self._scopes and self._scopes[-1][0] == "def" else None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool | None:
        self._scopes.append(("def", node.name.value))
        return None

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> bool | None:
        self._scopes.append(("class", node.name.value))
        return None

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._scopes.pop()
