"""Places whose behaviour depends on the active speculative algorithm.

Three kinds of test (`DispatchTerm`): predicate calls on something named like an algorithm
(`self.spec_algorithm.is_eagle()`, `spec_algo.supports_x()`, `self.is_dflash()` inside the algorithm
class); comparisons of anything named `*speculative_algorithm*`/`*spec_algorithm*` (directly, after
`.upper()`, or through a local alias) with string literals; comparisons with `SpeculativeAlgorithm.X`.
An `if`/`elif` whose test holds such terms and whose body creates or returns a `…Worker` class is a
`Branch`; `if x == "NEXTN": x = "EAGLE"` is an `AliasAssign`.
"""

from __future__ import annotations

import re

import libcst as cst
import libcst.metadata as meta

from sgl_scan.analyzer.extractors._cst import (
    ALGO_CLASS_NAME,
    Resolver,
    Trigger,
    body_statements,
    last_name,
    small_statements,
    string_value,
    string_values,
    strip_docstring,
    source_text,
    suite_workers,
)
from sgl_scan.analyzer.extractors._scoped import ScopedVisitor, hit_lines
from sgl_scan.analyzer.extractors.records import AliasAssign, Branch, DispatchTerm

PREDICATE_NAME = re.compile(r"^(is|supports|has|need|carries)_\w+$")
_RECEIVER = re.compile(r"(?i)spec|algo")
_SPEC_NAME = re.compile(r"(?i)speculative_algorithm|spec_algorithm")
_HITS = Trigger("spec", "Spec", "SPEC", "algo", "Algo", "ALGO")
_CALL = r"\w*(?:\(\))?\.(?:is|supports|has|need|carries)_\w+\(\)"  # a predicate call on the receiver
_ALIAS_DEF = re.compile(r"(?im)^[ \t]*(\w+)[ \t]*=[ \t]*[\w.]*(?:speculative_algorithm|spec_algorithm)\w*(?:\.(?:upper|lower)\(\))?[ \t]*$")


class _Visitor(ScopedVisitor):
    def __init__(self, resolver: Resolver, hits: list[int] | None = None) -> None:
        super().__init__(resolver, hits)
        self.terms: list[DispatchTerm] = []
        self.out: list = []
        self._negated: set[int] = set()
        self._term_of: dict[int, DispatchTerm] = {}
        self._aliases: list[set[str]] = [set()]
        self._predicate_defs: list[bool] = []

    # -- scopes -----------------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool | None:
        super().visit_FunctionDef(node)
        self._aliases.append(set())
        params = node.params.params
        body = strip_docstring(body_statements(node.body))
        single_return = len(body) == 1 and any(isinstance(s, cst.Return) for s in small_statements(body[0]))
        self._predicate_defs.append(bool(self._in_algo_class()) and len(params) == 1 and single_return)
        return None

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._aliases.pop()
        self._predicate_defs.pop()
        super().leave_FunctionDef(original_node)

    def _in_algo_class(self) -> str | None:
        name = self.class_name
        if name and ALGO_CLASS_NAME.search(name.rpartition(".")[2]):
            return name
        return None

    # -- what counts as "the algorithm" ---------------------------------------------------------
    def _spec_subject(self, node: cst.CSTNode) -> bool:
        """Something named *speculative_algorithm*/*spec_algorithm*, its `.upper()`, or a local alias."""
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("upper", "lower"):
            node = node.func.value
        name = last_name(node)
        if name is None:
            return False
        if _SPEC_NAME.search(name):
            return True
        return isinstance(node, cst.Name) and node.value in self._aliases[-1]

    def _member_ref(self, node: cst.CSTNode) -> str | None:
        if isinstance(node, cst.Attribute) and ALGO_CLASS_NAME.search(last_name(node.value) or ""):
            return node.attr.value
        return None

    def _members(self, node: cst.CSTNode) -> tuple[str, ...] | None:
        single = self._member_ref(node)
        if single:
            return (single,)
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            names = [self._member_ref(e.value) if isinstance(e, cst.Element) else None for e in node.elements]
            if names and None not in names:
                return tuple(names)  # type: ignore[arg-type]
        return None

    # -- terms --------------------------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> bool | None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and self._spec_subject(node.value):
            self._aliases[-1].add(node.targets[0].target.value)
        return None

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> bool | None:
        if isinstance(node.operator, cst.Not):
            self._negated.add(id(node.expression))
        return None

    def visit_Call(self, node: cst.Call) -> bool | None:
        func = node.func
        if node.args or not isinstance(func, cst.Attribute) or not PREDICATE_NAME.match(func.attr.value):
            return None
        receiver = func.value
        owner = None
        if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
            owner = self._in_algo_class()
            if owner is None or (self._predicate_defs and self._predicate_defs[-1]):
                return None
        else:
            target = receiver.func if isinstance(receiver, cst.Call) else receiver
            if not _RECEIVER.search(last_name(target) or ""):
                return None
        name = func.attr.value
        self._term(node, "predicate", name, (name,), id(node) in self._negated, receiver, owner)
        return None

    def visit_Comparison(self, node: cst.Comparison) -> bool | None:
        left = node.left
        for target in node.comparisons:
            right, op = target.comparator, target.operator
            self._comparison(node, left, right, op)
            left = right
        return None

    def _comparison(self, node: cst.Comparison, left: cst.CSTNode, right: cst.CSTNode, op: cst.CSTNode) -> None:
        negated = isinstance(op, (cst.NotEqual, cst.IsNot, cst.NotIn)) or id(node) in self._negated
        if not isinstance(op, (cst.Equal, cst.NotEqual, cst.In, cst.NotIn, cst.Is, cst.IsNot)):
            return
        for subject, other in ((left, right), (right, left)):
            if isinstance(op, (cst.In, cst.NotIn)) and subject is right:
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

    def _is_predicate_self(self, subject: cst.CSTNode) -> bool:
        return isinstance(subject, cst.Name) and subject.value == "self" and bool(self._predicate_defs and self._predicate_defs[-1])

    def _term(self, node, via, detail, values, negated, subject, owner) -> None:
        term = DispatchTerm(**vars(self.r.at(node)), function=self.function, via=via, detail=detail, values=tuple(values),
                            negated=negated, subject=self.r.text(subject), owner_class=owner)
        self.terms.append(term)
        self._term_of[id(node)] = term

    # -- branches -----------------------------------------------------------------------------------
    def leave_If(self, original_node: cst.If) -> None:
        test = original_node.test
        terms, pure = self._test_terms(test)
        if not terms:
            return
        alias = self._alias_assign(original_node, test)
        if alias is not None:
            self.out.append(alias)
        workers, fallthrough = suite_workers(self.r, original_node.body)
        if workers:
            self.out.append(Branch(**vars(self.r.at(original_node)), function=self.function, terms=tuple(terms), pure=pure,
                                   workers=tuple(workers), fallthrough=fallthrough, owner_class=self._in_algo_class()))

    def _test_terms(self, test: cst.CSTNode) -> tuple[list[DispatchTerm], bool]:
        """Terms of a condition and whether it is only an `or` of positive terms."""
        term = self._term_of.get(id(test))
        if term is not None:
            return [term], not term.negated
        if isinstance(test, cst.BooleanOperation):
            left, left_pure = self._test_terms(test.left)
            right, right_pure = self._test_terms(test.right)
            if isinstance(test.operator, cst.Or):
                return left + right, left_pure and right_pure and bool(left) and bool(right)
            return left + right, False
        if isinstance(test, cst.UnaryOperation):
            inner, _ = self._test_terms(test.expression)
            return inner, False
        return [], False

    def _alias_assign(self, node: cst.If, test: cst.CSTNode) -> AliasAssign | None:
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return None
        if not isinstance(test.comparisons[0].operator, cst.Equal):
            return None
        literal = string_value(test.comparisons[0].comparator)
        subject = self.r.text(test.left)
        if literal is None or not self._spec_subject(test.left):
            return None
        for statement in body_statements(node.body):
            for small in small_statements(statement):
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and self.r.text(small.targets[0].target) == subject:
                    target = string_value(small.value)
                    if target is not None:
                        return AliasAssign(**vars(self.r.at(node)), alias=literal.upper(), target=target.upper())
        return None


class DispatchExtractor:
    name = "spec_dispatch"
    version = 1
    trigger = Trigger(
        *(prefix + _CALL for prefix in ("spec", "Spec", "SPEC", "algo", "Algo")),
        r"spec(?:ulative)?_algorithm\w*(?:\.(?:upper|lower)\(\))?\s*(?:[=!]=|in\b|not\s+in\b)",
        r"==\s*[\w.]*spec(?:ulative)?_algorithm", r"!=\s*[\w.]*spec(?:ulative)?_algorithm",
        r"(?m:=[ \t]*[\w.]*spec(?:ulative)?_algorithm\w*(?:\.(?:upper|lower)\(\))?[ \t]*$)",
        r"Spec\w*Algo\w*\.[A-Z]", r"spec\w*algo\w*\.[A-Z]", r"class\s+\w*[Ss]pec\w*[Aa]lgo",
    )

    metadata = (meta.PositionProvider,)

    def extract(self, wrapper: meta.MetadataWrapper, context) -> tuple:
        text = source_text(wrapper, context)
        aliases = sorted(set(_ALIAS_DEF.findall(text)))
        pattern = _HITS if not aliases else Trigger(*(p.pattern for p in _HITS.parts),
                                                    *(rf"\b{re.escape(alias)}\b" for alias in aliases))
        visitor = _Visitor(Resolver.for_context(wrapper, context), hit_lines(text, pattern))
        wrapper.visit(visitor)
        return tuple(visitor.terms) + tuple(sorted(visitor.out, key=lambda r: (r.line, r.column, type(r).__name__)))
