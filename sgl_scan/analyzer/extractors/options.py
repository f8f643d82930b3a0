"""The `--speculative-algorithm` definition and the `add_*_choices` extension points.

Older SGLang: argparse `parser.add_argument("--speculative-algorithm", choices=[...])`; newer: an
annotated config field `speculative_algorithm: A[Optional[str], "..."] = None` in a class body.
Hooks: `def add_x_choices(choices): X_CHOICES.extend(choices)` or `add_x_choices = X_CHOICES.extend`.
"""

from __future__ import annotations

import re

import libcst as cst
import libcst.metadata as meta

from sgl_scan.analyzer.extractors._cst import (
    Resolver,
    dotted,
    small_statements,
    string_value,
    string_values,
    source_text,
    walk_no_defs,
)
from sgl_scan.analyzer.extractors._scoped import ScopedVisitor, hit_lines
from sgl_scan.analyzer.extractors._text import OPTIONS_TRIGGER
from sgl_scan.analyzer.extractors.records import HookRecord, OptionRecord

OPTION = "--speculative-algorithm"
FIELD = "speculative_algorithm"
HOOK_NAME = re.compile(r"^add_\w+_choices$")
_EXTENDERS = ("extend", "append", "__iadd__")


def _extended_list(node: cst.CSTNode) -> str | None:
    """`X.extend` / `(X.extend)` → "X"."""
    if isinstance(node, cst.Attribute) and node.attr.value in _EXTENDERS:
        return dotted(node.value)
    return None


class _Visitor(ScopedVisitor):
    def __init__(self, resolver: Resolver, hits: list[int] | None = None) -> None:
        super().__init__(resolver, hits)
        self.out: list = []

    def visit_Call(self, node: cst.Call) -> bool | None:
        if not isinstance(node.func, cst.Attribute) or node.func.attr.value != "add_argument":
            return None
        names = [string_value(a.value) for a in node.args if a.keyword is None]
        if OPTION not in names:
            return None
        choices_var: str | None = None
        values: tuple[str, ...] = ()
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "choices":
                literal = string_values(arg.value)
                if literal is not None:
                    values = literal
                else:
                    choices_var = dotted(arg.value) or self.r.text(arg.value)
        self.out.append(
            OptionRecord(
                **vars(self.r.at(node)),
                name=OPTION,
                kind="argument",
                choices=choices_var,
                values=tuple(values),
                function=self.function,
            )
        )
        return None

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool | None:
        if self.current_def is not None or self.class_name is None:
            return None
        if not isinstance(node.target, cst.Name) or node.target.value != FIELD:
            return None
        annotation = node.annotation.annotation
        if not isinstance(annotation, cst.Subscript):
            return None
        base = self.r.resolve(annotation.value) or ""
        if base.rpartition(".")[2] not in ("A", "Annotated"):
            return None
        choices_var: str | None = None
        values: tuple[str, ...] = ()
        for sub in walk_no_defs(annotation):
            if isinstance(sub, cst.Arg) and sub.keyword is not None and sub.keyword.value == "choices":
                literal = string_values(sub.value)
                if literal is not None:
                    values = literal
                else:
                    choices_var = dotted(sub.value) or self.r.text(sub.value)
        self.out.append(
            OptionRecord(
                **vars(self.r.at(node)),
                name=OPTION,
                kind="config_field",
                choices=choices_var,
                values=tuple(values),
                function=self.class_name,
            )
        )
        return None


class OptionsExtractor:
    name = "spec_options"
    version = 1
    trigger = OPTIONS_TRIGGER
    metadata = (meta.PositionProvider,)

    def extract(self, wrapper: meta.MetadataWrapper, context) -> tuple:
        r = Resolver.for_context(wrapper, context)
        visitor = _Visitor(r, hit_lines(source_text(wrapper, context), self.trigger))
        wrapper.visit(visitor)
        return tuple(visitor.out) + tuple(self._hooks(r, wrapper.module))

    def _hooks(self, r: Resolver, module: cst.Module) -> list[HookRecord]:
        hooks = []
        for statement in module.body:
            if isinstance(statement, cst.FunctionDef) and HOOK_NAME.match(statement.name.value):
                extended = None
                for node in walk_no_defs(statement):
                    if isinstance(node, cst.Call):
                        extended = extended or _extended_list(node.func)
                    elif isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign):
                        extended = extended or dotted(node.target)
                hooks.append(
                    HookRecord(**vars(r.at(statement)), name=statement.name.value, kind="function", choices=extended)
                )
                continue
            for small in small_statements(statement):
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    target = small.targets[0].target
                    if isinstance(target, cst.Name) and HOOK_NAME.match(target.value):
                        extended = _extended_list(small.value)
                        if extended is not None:
                            hooks.append(
                                HookRecord(**vars(r.at(statement)), name=target.value, kind="alias", choices=extended)
                            )
        return hooks
