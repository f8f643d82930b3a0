"""Sites that handle the drafter vocabulary mapping: d2t/t2d name tests, the offset conversion
`hot_token_id = d2t + torch.arange(n)`, maps taken straight from d2t, `load_token_map(...)`, and uses
of `hot_token_id`. Matching is on the syntax tree, so `Dropout2d`, `hist2d`, `rpd2tracing`, comments
and docstrings never count.
"""

from __future__ import annotations

import re

import libcst as cst
import libcst.metadata as meta

from sgl_scan.analyzer.extractors._cst import Resolver, Trigger, last_name, source_text, string_value, string_values
from sgl_scan.analyzer.extractors._scoped import ScopedVisitor, hit_lines
from sgl_scan.analyzer.extractors.records import D2tRecord

MAP_NAMES = ("d2t", "t2d")
HOT = "hot_token_id"
_MAP_TARGET = re.compile(r"(?:^|\.)(hot_token_id|draft_to_target\w*|d2t_map\w*)$")
_D2T_WORD = re.compile(r"\bd2t\b")


def _is_map_literal(value: str | None) -> bool:
    return value is not None and value.lstrip(".") in MAP_NAMES


def _is_d2t(value: str | None) -> bool:
    return value is not None and value.lstrip(".") == "d2t"


def _hot(node: cst.CSTNode | None) -> bool:
    return last_name(node) == HOT and isinstance(node, (cst.Name, cst.Attribute))


def _arange_call(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and last_name(node.func) == "arange"


class _Visitor(ScopedVisitor):
    def __init__(self, resolver: Resolver, hits: list[int] | None = None) -> None:
        super().__init__(resolver, hits)
        self.out: list[D2tRecord] = []
        self._d2t_branch = 0  # depth of `if <d2t name test>:` bodies we are in

    def _add(self, kind: str, node: cst.CSTNode) -> None:
        self.out.append(D2tRecord(**vars(self.r.at(node)), kind=kind, function=self.function, detail=self.r.text(node)))

    # name tests -----------------------------------------------------------------------------------
    def _name_tests(self, node: cst.CSTNode) -> list[tuple[str, cst.CSTNode]]:
        found = []
        if isinstance(node, cst.Comparison):
            left = node.left
            for target in node.comparisons:
                right, op = target.comparator, target.operator
                if isinstance(op, (cst.In, cst.NotIn)) and _is_map_literal(string_value(left)):
                    found.append(("name_test_in", node))
                elif isinstance(op, (cst.Equal, cst.NotEqual)) and (
                        _is_map_literal(string_value(right)) or _is_map_literal(string_value(left))):
                    found.append(("name_test_eq", node))
                left = right
        elif isinstance(node, cst.Call) and last_name(node.func) == "endswith" and isinstance(node.func, cst.Attribute):
            if node.args and any(_is_map_literal(v) for v in string_values(node.args[0].value) or ()):
                found.append(("name_test_endswith", node))
        return found

    def visit_Comparison(self, node: cst.Comparison) -> bool | None:
        for kind, site in self._name_tests(node):
            self._add(kind, site)
        return None

    def visit_If(self, node: cst.If) -> bool | None:
        if self._test_is_d2t(node.test):
            self._d2t_branch += 1
        return None

    def leave_If(self, original_node: cst.If) -> None:
        if self._test_is_d2t(original_node.test):
            self._d2t_branch -= 1

    def _test_is_d2t(self, test: cst.CSTNode) -> bool:
        """A positive test that `name` is the d2t tensor (`"d2t" in name`, `== "d2t"`, `.endswith(".d2t")`)."""
        if isinstance(test, cst.BooleanOperation):
            return isinstance(test.operator, cst.Or) and self._test_is_d2t(test.left) and self._test_is_d2t(test.right)
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            op, right = test.comparisons[0].operator, test.comparisons[0].comparator
            if isinstance(op, cst.In):
                return _is_d2t(string_value(test.left))
            if isinstance(op, cst.Equal):
                return _is_d2t(string_value(test.left)) or _is_d2t(string_value(right))
            return False
        if isinstance(test, cst.Call) and last_name(test.func) == "endswith" and test.args:
            return any(_is_d2t(v) for v in string_values(test.args[0].value) or ())
        return False

    # calls: endswith tests, load_token_map, .to(...), len(...) -------------------------------------
    def visit_Call(self, node: cst.Call) -> bool | None:
        for kind, site in self._name_tests(node):
            self._add(kind, site)
        name = last_name(node.func)
        if name == "load_token_map":
            self._add("load_token_map", node)
        elif name == "to" and isinstance(node.func, cst.Attribute) and _hot(node.func.value):
            self._add("hot_token_use", node)
        elif isinstance(node.func, cst.Name) and name == "len" and len(node.args) == 1 and _hot(node.args[0].value):
            self._add("hot_token_use", node)
        return None

    def visit_Subscript(self, node: cst.Subscript) -> bool | None:
        index_hot = any(isinstance(e.slice, cst.Index) and _hot(e.slice.value) for e in node.slice)
        if _hot(node.value) or index_hot:
            self._add("hot_token_use", node)
        return None

    # assignments: offset conversion / direct map ----------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> bool | None:
        if len(node.targets) != 1:
            return None
        target = self.r.text(node.targets[0].target)
        value = node.value
        to_map = bool(_MAP_TARGET.search(target))
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) and (
                _arange_call(value.left) or _arange_call(value.right)):
            other = value.right if _arange_call(value.left) else value.left
            if to_map or self._d2t_branch or _D2T_WORD.search(self.r.text(other)):
                self._add("offset_conversion", node)
            return None
        if not to_map or (isinstance(value, cst.Name) and value.value == "None"):
            return None
        text = self.r.text(value)
        if "arange" in text or "load_token_map" in text:
            return None
        if self._d2t_branch or _D2T_WORD.search(text):
            self._add("direct_map", node)
        return None


class D2tExtractor:
    name = "spec_d2t"
    version = 1
    trigger = Trigger(*(rf"{word}\b(?<!\w{word})" for word in ("d2t", "t2d", "hot_token_id", "load_token_map")))
    metadata = (meta.PositionProvider,)

    def extract(self, wrapper: meta.MetadataWrapper, context) -> tuple:
        visitor = _Visitor(Resolver.for_context(wrapper, context), hit_lines(source_text(wrapper, context), self.trigger))
        wrapper.visit(visitor)
        return tuple(visitor.out)
