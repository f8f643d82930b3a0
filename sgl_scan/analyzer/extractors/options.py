"""The `--speculative-algorithm` definition and the `add_*_choices` extension points.

Older SGLang: argparse `parser.add_argument("--speculative-algorithm", choices=[...])`; newer: an
annotated config field `speculative_algorithm: A[Optional[str], "..."] = None` in a class body.
Hooks: `def add_x_choices(choices): X_CHOICES.extend(choices)` or `add_x_choices = X_CHOICES.extend`.
It reads the stdlib `ast` of the whole file (`parser = "ast"`), skipping statements whose lines hold
none of the trigger's words.
"""

from __future__ import annotations

import ast
import re

from sgl_scan.analyzer.extractors._ast import (
    Resolver,
    ScopedWalker,
    Source,
    dotted,
    statement_lines,
    string_value,
    string_values,
    walk_no_defs,
    written_text,
)
from sgl_scan.analyzer.extractors._text import OPTIONS_TRIGGER, any_hit, hit_lines
from sgl_scan.analyzer.extractors.records import At, HookRecord, OptionRecord

OPTION = "--speculative-algorithm"
FIELD = "speculative_algorithm"
HOOK_NAME = re.compile(r"^add_\w+_choices$")
_EXTENDERS = ("extend", "append", "__iadd__")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _extended_list(node: ast.AST) -> str | None:
    """`X.extend` / `(X.extend)` → "X"."""
    if isinstance(node, ast.Attribute) and node.attr in _EXTENDERS:
        return dotted(node.value)
    return None


class _Walker(ScopedWalker):
    def __init__(self, resolver: Resolver, hits: list[int] | None) -> None:
        super().__init__(resolver, hits)
        self.out: list[OptionRecord] = []

    def enter(self, node: ast.AST) -> None:
        t = type(node)
        if t is ast.Call:
            self._argument(node)  # type: ignore[arg-type]
        elif t is ast.AnnAssign:
            self._field(node)  # type: ignore[arg-type]

    def _choices(self, keywords: list[ast.keyword]) -> tuple[str | None, tuple[str, ...]]:
        """(the expression a `choices=` names, the literal strings a `choices=` lists); the last of each wins."""
        choices_var: str | None = None
        values: tuple[str, ...] = ()
        for keyword in keywords:
            if keyword.arg == "choices":
                literal = string_values(keyword.value)
                if literal is not None:
                    values = literal
                else:
                    choices_var = dotted(keyword.value) or written_text(self.r, keyword.value, keyword)
        return choices_var, values

    def _argument(self, node: ast.Call) -> None:
        if not isinstance(node.func, ast.Attribute) or node.func.attr != "add_argument":
            return
        positional = [a.value if isinstance(a, ast.Starred) else a for a in node.args]
        positional += [k.value for k in node.keywords if k.arg is None]
        if OPTION not in [string_value(value) for value in positional]:
            return
        choices_var, values = self._choices(node.keywords)
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

    def _field(self, node: ast.AnnAssign) -> None:
        class_name = self.class_name
        if class_name is None or self.scopes[-1][0] != "class":  # directly in a class body
            return
        if not isinstance(node.target, ast.Name) or node.target.id != FIELD:
            return
        annotation = node.annotation
        if not isinstance(annotation, ast.Subscript):
            return
        base = self.r.resolve(annotation.value) or ""
        if base.rpartition(".")[2] not in ("A", "Annotated"):
            return
        keywords = [sub for sub in walk_no_defs(annotation) if isinstance(sub, ast.keyword)]
        choices_var, values = self._choices(keywords)
        self.out.append(
            OptionRecord(
                **vars(self.r.at(node)),
                name=OPTION,
                kind="config_field",
                choices=choices_var,
                values=tuple(values),
                function=class_name,
            )
        )

    def _relevant(self, node: ast.stmt) -> bool:
        decorators = getattr(node, "decorator_list", None)
        if self.hits is None or not decorators:
            return super()._relevant(node)
        return any_hit(self.hits, decorators[0].lineno, node.end_lineno or node.lineno)  # from the first `@`


def _hooks(r: Resolver, tree: ast.Module) -> list[HookRecord]:
    hooks = []
    for line in statement_lines(tree.body):
        first = line[0]
        if isinstance(first, _FUNCTIONS):
            if HOOK_NAME.match(first.name):
                extended = None
                for node in walk_no_defs(first):
                    if isinstance(node, ast.Call):
                        extended = extended or _extended_list(node.func)
                    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
                        extended = extended or dotted(node.target)
                hooks.append(HookRecord(**vars(r.at(first)), name=first.name, kind="function", choices=extended))
            continue
        if hasattr(first, "body"):  # another compound statement
            continue
        at = At(r.at(first).line, r.at(first).column, line[-1].end_lineno or line[-1].lineno)
        for small in line:
            if isinstance(small, ast.Assign) and len(small.targets) == 1:
                target = small.targets[0]
                if isinstance(target, ast.Name) and HOOK_NAME.match(target.id):
                    extended = _extended_list(small.value)
                    if extended is not None:
                        hooks.append(HookRecord(**vars(at), name=target.id, kind="alias", choices=extended))
    return hooks


class OptionsExtractor:
    name = "spec_options"
    version = 2
    parser = "ast"
    trigger = OPTIONS_TRIGGER
    metadata = ()

    def extract(self, tree: ast.Module, context) -> tuple:
        r = Resolver(tree, Source.of(context), context.module)
        walker = _Walker(r, hit_lines(context.text, self.trigger))
        for statement in tree.body:
            walker.walk(statement)
        return tuple(walker.out) + tuple(_hooks(r, tree))
