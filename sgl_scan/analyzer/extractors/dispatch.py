"""Places whose behaviour depends on the active speculative algorithm.

Three kinds of test (`DispatchTerm`): predicate calls on something named like an algorithm
(`self.spec_algorithm.is_eagle()`, `spec_algo.supports_x()`, `self.is_dflash()` inside the algorithm
class); comparisons of anything named `*speculative_algorithm*`/`*spec_algorithm*` (directly, after
`.upper()`, or through a local alias) with string literals; comparisons with `SpeculativeAlgorithm.X`.
An `if`/`elif` whose test holds such terms and whose body creates or returns a `…Worker` class is a
`Branch`; `if x == "NEXTN": x = "EAGLE"` is an `AliasAssign`.

This extractor reads the stdlib `ast` the per-file pass already has (`parser = "ast"`): it triggers
on a hundred files of a recent release, and a libcst parse of them would cost most of a cold scan.
Statements whose lines mention no algorithm are skipped, as are their bodies; inside the algorithm
class every statement is read.
"""

from __future__ import annotations

import ast
import re

from sgl_scan.analyzer.extractors._ast import (
    Resolver,
    ScopedWalker,
    Source,
    last_name,
    statement_lines,
    string_value,
    string_values,
    suite_workers,
)
from sgl_scan.analyzer.extractors._cst import ALGO_CLASS_NAME, Trigger
from sgl_scan.analyzer.extractors._scoped import hit_lines
from sgl_scan.analyzer.extractors.records import AliasAssign, Branch, DispatchTerm

PREDICATE_NAME = re.compile(r"^(is|supports|has|need|carries)_\w+$")
_RECEIVER = re.compile(r"(?i)spec|algo")
_SPEC_NAME = re.compile(r"(?i)speculative_algorithm|spec_algorithm")
_HITS = Trigger("spec", "Spec", "SPEC", "algo", "Algo", "ALGO")
_CALL = r"\w*(?:\(\))?\.(?:is|supports|has|need|carries)_\w+\(\)"  # a predicate call on the receiver
_ALIAS_DEF = re.compile(r"(?im)^[ \t]*(\w+)[ \t]*=[ \t]*[\w.]*(?:speculative_algorithm|spec_algorithm)\w*(?:\.(?:upper|lower)\(\))?[ \t]*$")
_EQUALITY = (ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot)
_NEGATIVE = (ast.NotEq, ast.IsNot, ast.NotIn)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _Walker(ScopedWalker):
    def __init__(self, resolver: Resolver, hits: list[int] | None) -> None:
        super().__init__(resolver, hits)
        self.terms: list[DispatchTerm] = []
        self.out: list = []
        self.negated: set[int] = set()
        self.term_of: dict[int, DispatchTerm] = {}
        self.aliases: list[set[str]] = [set()]
        self.predicate_defs: list[bool] = []

    def _in_algo_class(self) -> str | None:
        name = self.class_name
        return name if name and ALGO_CLASS_NAME.search(name.rpartition(".")[2]) else None

    def enter(self, node: ast.AST) -> None:
        t = type(node)
        if t in _FUNCTIONS:
            self.aliases.append(set())
            lines = statement_lines(_strip_docstring(node.body))
            single_return = len(lines) == 1 and any(isinstance(s, ast.Return) for s in lines[0])
            self.predicate_defs.append(bool(self._in_algo_class()) and len(node.args.args) == 1 and single_return)
        elif t is ast.Assign:
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and self._spec_subject(node.value):
                self.aliases[-1].add(node.targets[0].id)
        elif t is ast.UnaryOp:
            if isinstance(node.op, ast.Not):
                self.negated.add(id(node.operand))
        elif t is ast.Call:
            self._call(node)
        elif t is ast.Compare:
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                self._comparison(node, left, right, op)
                left = right

    def leave(self, node: ast.AST) -> None:
        t = type(node)
        if t in _FUNCTIONS:
            self.aliases.pop()
            self.predicate_defs.pop()
        elif t is ast.If:
            self._branch(node)

    # -- what counts as "the algorithm" ---------------------------------------------------------
    def _spec_subject(self, node: ast.AST) -> bool:
        """Something named *speculative_algorithm*/*spec_algorithm*, its `.upper()`, or a local alias."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("upper", "lower"):
            node = node.func.value
        name = last_name(node)
        if name is None:
            return False
        if _SPEC_NAME.search(name):
            return True
        return isinstance(node, ast.Name) and node.id in self.aliases[-1]

    @staticmethod
    def _member_ref(node: ast.AST) -> str | None:
        if isinstance(node, ast.Attribute) and ALGO_CLASS_NAME.search(last_name(node.value) or ""):
            return node.attr
        return None

    def _members(self, node: ast.AST) -> tuple[str, ...] | None:
        single = self._member_ref(node)
        if single:
            return (single,)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            names = [self._member_ref(e) for e in node.elts]
            if names and None not in names:
                return tuple(names)  # type: ignore[arg-type]
        return None

    # -- terms --------------------------------------------------------------------------------------
    def _call(self, node: ast.Call) -> None:
        func = node.func
        if node.args or node.keywords or not isinstance(func, ast.Attribute) or not PREDICATE_NAME.match(func.attr):
            return
        receiver = func.value
        owner = None
        if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
            owner = self._in_algo_class()
            if owner is None or (self.predicate_defs and self.predicate_defs[-1]):
                return
        else:
            target = receiver.func if isinstance(receiver, ast.Call) else receiver
            if not _RECEIVER.search(last_name(target) or ""):
                return
        self._term(node, "predicate", func.attr, (func.attr,), id(node) in self.negated, receiver, owner)

    def _comparison(self, node: ast.Compare, left: ast.AST, right: ast.AST, op: ast.cmpop) -> None:
        if not isinstance(op, _EQUALITY):
            return
        negated = isinstance(op, _NEGATIVE) or id(node) in self.negated
        for subject, other in ((left, right), (right, left)):
            if isinstance(op, (ast.In, ast.NotIn)) and subject is right:
                continue  # `"EAGLE" in spec_algorithm` is a substring test, not dispatch
            members = self._members(other)
            if members is not None and not self._is_predicate_self(subject):
                self._term(node, "member", ", ".join(members), members, negated, subject, self._in_algo_class())
                return
            if self._spec_subject(subject):
                literals = string_values(other)
                if literals:
                    self._term(node, "string", ", ".join(literals), literals, negated, subject, None)
                    return

    def _is_predicate_self(self, subject: ast.AST) -> bool:
        return isinstance(subject, ast.Name) and subject.id == "self" and bool(self.predicate_defs and self.predicate_defs[-1])

    def _term(self, node, via, detail, values, negated, subject, owner) -> None:
        term = DispatchTerm(**vars(self.r.at(node)), function=self.function, via=via, detail=detail, values=tuple(values),
                            negated=negated, subject=self.r.text(subject), owner_class=owner)
        self.terms.append(term)
        self.term_of[id(node)] = term

    # -- branches -----------------------------------------------------------------------------------
    def _branch(self, node: ast.If) -> None:
        terms, pure = self._test_terms(node.test)
        if not terms:
            return
        alias = self._alias_assign(node)
        if alias is not None:
            self.out.append(alias)
        workers, fallthrough = suite_workers(self.r, node.body)
        if workers:
            self.out.append(Branch(**vars(self.r.at(node)), function=self.function, terms=tuple(terms), pure=pure,
                                   workers=tuple(workers), fallthrough=fallthrough, owner_class=self._in_algo_class()))

    def _test_terms(self, test: ast.AST) -> tuple[list[DispatchTerm], bool]:
        """Terms of a condition and whether it is only an `or` of positive terms."""
        term = self.term_of.get(id(test))
        if term is not None:
            return [term], not term.negated
        if isinstance(test, ast.BoolOp):
            parts = [self._test_terms(value) for value in test.values]
            terms = [t for found, _ in parts for t in found]
            if isinstance(test.op, ast.Or):
                return terms, all(found and pure for found, pure in parts)
            return terms, False
        if isinstance(test, ast.UnaryOp):
            inner, _ = self._test_terms(test.operand)
            return inner, False
        return [], False

    def _alias_assign(self, node: ast.If) -> AliasAssign | None:
        test = node.test
        if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
            return None
        literal = string_value(test.comparators[0])
        if literal is None or not self._spec_subject(test.left):
            return None
        subject = self.r.text(test.left)
        for statement in node.body:
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and self.r.text(statement.targets[0]) == subject:
                target = string_value(statement.value)
                if target is not None:
                    return AliasAssign(**vars(self.r.at(node)), alias=literal.upper(), target=target.upper())
        return None


def _strip_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    lines = statement_lines(body)
    if lines and len(lines[0]) == 1 and isinstance(lines[0][0], ast.Expr) and string_value(lines[0][0].value) is not None:
        return body[1:]
    return body


class DispatchExtractor:
    name = "spec_dispatch"
    version = 2  # 2: read from the stdlib ast
    parser = "ast"
    trigger = Trigger(
        *(prefix + _CALL for prefix in ("spec", "Spec", "SPEC", "algo", "Algo")),
        r"spec(?:ulative)?_algorithm\w*(?:\.(?:upper|lower)\(\))?\s*(?:[=!]=|in\b|not\s+in\b)",
        r"==\s*[\w.]*spec(?:ulative)?_algorithm", r"!=\s*[\w.]*spec(?:ulative)?_algorithm",
        r"(?m:=[ \t]*[\w.]*spec(?:ulative)?_algorithm\w*(?:\.(?:upper|lower)\(\))?[ \t]*$)",
        r"Spec\w*Algo\w*\.[A-Z]", r"spec\w*algo\w*\.[A-Z]", r"class\s+\w*[Ss]pec\w*[Aa]lgo",
    )
    metadata = ()

    def extract(self, tree: ast.Module, context) -> tuple:
        source = Source(context.text)
        aliases = sorted(set(_ALIAS_DEF.findall(context.text)))
        pattern = _HITS if not aliases else Trigger(*(p.pattern for p in _HITS.parts),
                                                    *(rf"\b{re.escape(alias)}\b" for alias in aliases))
        walker = _Walker(Resolver(tree, source, context.module), hit_lines(context.text, pattern))
        for statement in tree.body:
            walker.walk(statement)
        return tuple(walker.terms) + tuple(sorted(walker.out, key=lambda r: (r.line, r.column, type(r).__name__)))
