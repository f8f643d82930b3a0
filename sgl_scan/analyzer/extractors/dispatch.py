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
from dataclasses import replace
from typing import Callable, cast

from sgl_scan.analyzer.extractors._ast import (
    Located,
    Resolver,
    ScopedWalker,
    Source,
    last_name,
    statement_lines,
    string_value,
    suite_workers,
)
from sgl_scan.analyzer.extractors._bindings import NONE, Bindings, LocalConstants
from sgl_scan.analyzer.extractors._text import ALGO_CLASS_NAME, Trigger, hit_lines, lines_holding
from sgl_scan.analyzer.extractors.records import (
    AliasAssign,
    Branch,
    DispatchTerm,
    UnreadRecord,
    WorkerDelegate,
    WorkerSite,
)
from sgl_scan.analyzer.conditions import TRUE, Term, flags_text, under_not
from sgl_scan.analyzer.flow import FunctionFlow, bool_compare
from sgl_scan.analyzer.kinds import Via

PREDICATE_NAME = re.compile(r"^(is|supports|has|need|carries)_\w+$")
_RECEIVER = re.compile(r"(?i)spec|algo")
_SPEC_NAME = re.compile(r"(?i)speculative_algorithm|spec_algorithm")
_HITS = Trigger("spec", "Spec", "SPEC", "algo", "Algo", "ALGO")
_CALL = r"\w*(?:\(\))?\.(?:is|supports|has|need|carries)_\w+\(\)"  # a predicate call on the receiver
_ALIAS_DEF = re.compile(
    r"(?im)^[ \t]*(\w+)[ \t]*=[ \t]*\(?[\w.()]*(?:speculative_algorithm|spec_algorithm)\w*"
    r"(?:[ \t]+or[ \t]+(?:\"\"|'')\))?(?:\.(?:upper|lower)\(\))?[ \t]*$"
)  # `x = (y.speculative_algorithm or "").upper()`
_WALRUS_DEF = re.compile(
    r"(?i)\((\w+)[ \t]*:=[ \t]*[\w.]*(?:speculative_algorithm|spec_algorithm)"
)  # `(algo := x.spec_algorithm)`


def alias_names(text: str) -> set[str]:
    """The local names `_ALIAS_DEF` finds in `text`. A match lies on one line that holds
    "_algorithm" in any case, so in ASCII text (where `lower` keeps positions) only those lines are
    read: the regex tried at every line start was a twentieth of the extractor's time."""
    if ":=" in text:
        return set(_ALIAS_DEF.findall(text)) | set(_WALRUS_DEF.findall(text))
    if not text.isascii():
        return set(_ALIAS_DEF.findall(text))
    lower, found, start = text.lower(), set(), 0
    while (at := lower.find("_algorithm", start)) >= 0:
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        found.update(_ALIAS_DEF.findall(text[text.rfind("\n", 0, at) + 1 : end]))
        start = end + 1
    return found


_EQUALITY = (ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot)
_NEGATIVE = (ast.NotEq, ast.IsNot, ast.NotIn)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _Walker(ScopedWalker):
    def __init__(self, resolver: Resolver, hits: list[int] | None, bindings: Bindings | None = None) -> None:
        super().__init__(resolver, hits)
        self.b = bindings or Bindings(resolver.tree, resolver.resolve, resolver.module_name)
        self.unread: list[UnreadRecord] = []
        self.terms: list[DispatchTerm] = []
        self.out: list = []
        self.negated: set[int] = set()
        self.term_of: dict[int, DispatchTerm] = {}
        self.aliases: list[set[str]] = [set()]
        self.option_aliases: list[set[str]] = [set()]  # locals holding the option string, which is None when unset
        self.predicate_defs: list[bool] = []
        self.defs: list[ast.FunctionDef | ast.AsyncFunctionDef] = []  # enclosing function nodes
        self.local_values: dict[int, LocalConstants] = {}  # id(function) -> its constants, read once
        self.walrus = True  # whether the source may hold `:=`
        # functions holding terms (None: the module)
        self.flows: dict[int, tuple[ast.FunctionDef | ast.AsyncFunctionDef | None, str, str | None]] = {}
        self.term_nodes: dict[int, ast.expr | ast.pattern] = {}

    def _in_algo_class(self) -> str | None:
        name = self.class_name
        return name if name and ALGO_CLASS_NAME.search(name.rpartition(".")[2]) else None

    def enter(self, node: ast.AST) -> None:
        t = type(node)
        # the branches read the fields of the type `t` names (mypy does not narrow through `t`)
        if t in _FUNCTIONS:
            fn = cast("ast.FunctionDef | ast.AsyncFunctionDef", node)
            self.defs.append(fn)
            self.aliases.append(set())
            self.option_aliases.append(set())
            walrus = self.walrus and any(":=" in line for line in self.r.source.lines[fn.lineno - 1 : fn.end_lineno])
            local_values = self.local_values[id(fn)] = LocalConstants(fn.body, walrus)
            self.b.push(local_values)
            self.b.in_algo_class = bool(self._in_algo_class())
            lines = statement_lines(_strip_docstring(fn.body))
            single_return = len(lines) == 1 and any(isinstance(s, ast.Return) for s in lines[0])
            # a predicate's own body (read by the algorithm-class extractor), however many statements
            self.predicate_defs.append(
                bool(self._in_algo_class())
                and len(fn.args.args) == 1
                and (single_return or bool(PREDICATE_NAME.match(fn.name)))
            )
        elif t is ast.Assign:
            assign = cast(ast.Assign, node)
            value = assign.value
            if isinstance(value, ast.IfExp) and (self._spec_subject(value.body) or self._spec_subject(value.orelse)):
                value = value.body if self._spec_subject(value.body) else value.orelse  # `x.upper() if x else None`
            if len(assign.targets) == 1 and isinstance(assign.targets[0], ast.Name) and self._spec_subject(value):
                self.aliases[-1].add(assign.targets[0].id)
                if self._option_string(value):
                    self.option_aliases[-1].add(assign.targets[0].id)
        elif t is ast.NamedExpr:
            named = cast(ast.NamedExpr, node)
            if isinstance(named.target, ast.Name) and self._spec_subject(named.value):
                self.aliases[-1].add(named.target.id)  # `(algo := server_args.speculative_algorithm) == "X"`
                if self._option_string(named.value):
                    self.option_aliases[-1].add(named.target.id)
        elif t is ast.UnaryOp:
            unary = cast(ast.UnaryOp, node)
            if isinstance(unary.op, ast.Not):
                self.negated.add(id(unary.operand))
        elif t is ast.Call:
            self._call(cast(ast.Call, node))
        elif t is ast.Compare:
            compare = cast(ast.Compare, node)
            flipped = bool_compare(compare)
            if flipped is not None:  # `x.is_y() is False`, `== True`: the operand's test, maybe negated
                operand, positive = flipped
                if (id(compare) in self.negated) != (not positive):
                    self.negated.add(id(operand))
                return
            left = compare.left
            for op, right in zip(compare.ops, compare.comparators, strict=True):
                self._comparison(compare, left, right, op)
                left = right
        elif t is ast.Match:
            self._match(cast(ast.Match, node))

    def leave(self, node: ast.AST) -> None:
        t = type(node)
        # the branches read the fields of the type `t` names (mypy does not narrow through `t`)
        if t in _FUNCTIONS:
            self.defs.pop()
            self.aliases.pop()
            self.option_aliases.pop()
            self.predicate_defs.pop()
            self.b.pop()
            self.b.in_algo_class = bool(self._in_algo_class())
        elif t is ast.If:
            self._branch(cast(ast.If, node))
        elif t is ast.Match:
            self._case_branches(cast(ast.Match, node))

    # -- what counts as "the algorithm" ---------------------------------------------------------
    def _spec_subject(self, node: ast.AST) -> bool:
        """The active algorithm: a value the binding table says is one (`SA.from_string(x)`, `SA[x]`),
        a local alias of one (assigned or bound by `:=`), its `.upper()`/`str(...)`/`.name` spelling,
        or -- the fallback where no binding says what a variable holds -- something named
        *speculative_algorithm*/*spec_algorithm*."""
        node = _unwrap_spelling(node)
        if self.b.algo_value(node) and self.b.member(node) is None:
            return True
        key = _keyed(node)
        if key is not None:
            return bool(_SPEC_NAME.search(key))
        name = last_name(node)
        if name is None:
            return False
        if _SPEC_NAME.search(name):
            return True
        return isinstance(node, ast.Name) and node.id in self.aliases[-1]

    def _option_string(self, node: ast.AST) -> bool:
        """The option's string itself (`server_args.speculative_algorithm`, `args["speculative_algorithm"]`,
        a local holding it), which is None exactly when no algorithm is set -- unlike an algorithm object
        (`SA.from_string(x)`, `model_runner.spec_algorithm`), which is NONE then, never None."""
        node = node.value if isinstance(node, ast.NamedExpr) else node
        if self.b.algo_value(node):
            return False
        if isinstance(node, ast.Name) and node.id in self.option_aliases[-1]:
            return True
        key = _keyed(node)
        return (key if key is not None else last_name(node) or "").lower() == "speculative_algorithm"

    def _member_ref(self, node: ast.AST) -> str | None:
        return self.b.member(node)

    def _members(self, node: ast.AST) -> tuple[str, ...] | None:
        return self.b.members(node)

    # -- terms --------------------------------------------------------------------------------------
    def _call(self, node: ast.Call) -> None:
        func = node.func
        if node.args or node.keywords or not isinstance(func, ast.Attribute) or not PREDICATE_NAME.match(func.attr):
            return
        receiver = func.value
        while isinstance(receiver, ast.NamedExpr):  # `(algo := get_spec().speculative_algorithm).is_eagle()`
            receiver = receiver.value
        owner = None
        if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
            owner = self._in_algo_class()
            if owner is None or (self.predicate_defs and self.predicate_defs[-1]):
                return
        elif not (self.b.algo_value(receiver) and self.b.member(receiver) is None) and not self._aliased(receiver):
            target = receiver.func if isinstance(receiver, ast.Call) else receiver
            if not _RECEIVER.search(last_name(target) or ""):
                return
        self._term(node, Via.PREDICATE, func.attr, (func.attr,), id(node) in self.negated, receiver, owner)

    def _aliased(self, node: ast.AST) -> bool:
        node = node.value if isinstance(node, ast.NamedExpr) else node
        return isinstance(node, ast.Name) and node.id in self.aliases[-1]

    def _comparison(self, node: ast.Compare, left: ast.AST, right: ast.AST, op: ast.cmpop) -> None:
        if not isinstance(op, _EQUALITY):
            return
        negated = isinstance(op, _NEGATIVE) or id(node) in self.negated
        for subject, other in ((left, right), (right, left)):
            if isinstance(op, (ast.In, ast.NotIn)) and subject is right:
                continue  # `"EAGLE" in spec_algorithm` is a substring test, not dispatch
            members = self._members(other)
            if members is not None and not self._is_predicate_self(subject):
                self._term(
                    node,
                    Via.MEMBER,
                    ", ".join(members),
                    members,
                    negated,
                    subject,
                    self._in_algo_class(),
                    isinstance(op, _NEGATIVE),
                )
                return
            if self._own_name(subject):  # `self.name == "UNO"` inside the algorithm class: a member test
                names = self.b.strings(other)
                if names and not (self.predicate_defs and self.predicate_defs[-1]):
                    names = tuple(n for n in names if n != NONE)
                    self._term(
                        node,
                        Via.MEMBER,
                        ", ".join(names),
                        names,
                        negated,
                        subject,
                        self._in_algo_class(),
                        isinstance(op, _NEGATIVE),
                    )
                    return
            if self._spec_subject(subject):
                literals = self.b.strings(other)
                if literals and isinstance(op, (ast.Is, ast.IsNot)) and literals != (NONE,):
                    literals = None  # `x is "EAGLE"` is an identity test of a string: not read
                if literals == (NONE,) and not self._option_string(subject):
                    return  # `spec_algorithm is None` on an algorithm object: a null check, not the member NONE
                if literals:
                    self._term(
                        node,
                        Via.STRING,
                        ", ".join(literals),
                        literals,
                        negated,
                        subject,
                        None,
                        isinstance(op, _NEGATIVE),
                    )
                    return
                reason = self._unresolved_constant(other)
                if reason is not None:
                    self.unread.append(
                        UnreadRecord(
                            **vars(self.r.at(node)), what="dispatch", name=_short(self.r.text(node)), reason=reason
                        )
                    )
                    return

    def _unresolved_constant(self, other: ast.AST) -> str | None:
        """Why the algorithm compared with `other` cannot be read, when `other` is a constant-like name
        (UPPER_CASE) the binding table cannot resolve: imported from another module, or a module constant
        of another form (built by a call, a comprehension). None for anything else (a variable)."""
        if not isinstance(other, ast.Name) or not other.id.lstrip("_")[:1].isupper() or other.id != other.id.upper():
            return None
        if other.id in self.b.constants:
            return f"compared with `{other.id}`, a module constant whose value is not read as algorithms"
        target = self.r.names().get(other.id)
        if target is not None and not target.startswith(self.r.module_name + "."):
            return f"compared with `{other.id}`, imported from {target.rpartition('.')[0]}: its value is not read here"
        return None

    def _own_name(self, subject: ast.AST) -> bool:
        """`self.name` / `self.value` inside the algorithm class (`self` is the member)."""
        return (
            isinstance(subject, ast.Attribute)
            and subject.attr in ("name", "value")
            and isinstance(subject.value, ast.Name)
            and subject.value.id == "self"
            and self._in_algo_class() is not None
        )

    # -- match ---------------------------------------------------------------------------------------
    def _match(self, node: ast.Match) -> None:
        """`match <algorithm>: case SA.X | SA.Y: ...`: each case's value pattern is a test on the algorithm."""
        subject = node.subject
        own = (
            isinstance(subject, ast.Name)
            and subject.id == "self"
            and self._in_algo_class() is not None
            and not (self.predicate_defs and self.predicate_defs[-1])
        )
        if not own and not self._spec_subject(subject):
            return
        for case in node.cases:
            pattern = case.pattern
            if isinstance(pattern, ast.MatchAs) and pattern.pattern is None:
                continue  # `case _:` / `case other:` matches everything left
            found = self._pattern(pattern)
            if found is None:
                self.unread.append(
                    UnreadRecord(
                        **vars(self.r.at(pattern)),
                        what="dispatch",
                        name=_short(self.r.text(pattern)),
                        reason="a `case` pattern on the algorithm that is not a member, a string or `None`",
                    )
                )
                continue
            via, values = found
            if own and via is Via.STRING:
                via = Via.MEMBER
            self._term(pattern, via, ", ".join(values), values, False, subject, self._in_algo_class())

    def _pattern(self, pattern: ast.AST) -> tuple[Via, tuple[str, ...]] | None:
        if isinstance(pattern, ast.MatchValue):
            members = self._members(pattern.value)
            if members is not None:
                return Via.MEMBER, members
            strings = self.b.strings(pattern.value)
            return (Via.STRING, strings) if strings else None
        if isinstance(pattern, ast.MatchSingleton) and pattern.value is None:
            return Via.STRING, (NONE,)
        if isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
            return self._pattern(pattern.pattern)
        if isinstance(pattern, ast.MatchOr):
            parts = [self._pattern(p) for p in pattern.patterns]
            read = cast("list[tuple[Via, tuple[str, ...]]]", parts)  # used past `None in parts`: no None
            if not parts or None in parts or len({via for via, _ in read}) != 1:
                return None
            return read[0][0], tuple(v for _, values in read for v in values)
        return None

    def _is_predicate_self(self, subject: ast.AST) -> bool:
        return (
            isinstance(subject, ast.Name)
            and subject.id == "self"
            and bool(self.predicate_defs and self.predicate_defs[-1])
        )

    def _term(self, node, via, detail, values, negated, subject, owner, inverted=False) -> None:
        term = DispatchTerm(
            **vars(self.r.at(node)),
            function=self.function,
            via=via,
            detail=detail,
            values=tuple(values),
            negated=negated,
            subject=self.r.text(subject),
            owner_class=owner,
            inverted=inverted,
        )
        self.terms.append(term)
        self.term_of[id(node)] = term
        self.term_nodes[id(node)] = node
        owner_node = self.defs[-1] if self.defs else None
        self.flows.setdefault(id(owner_node), (owner_node, self.function, self._in_algo_class()))

    # -- branches -----------------------------------------------------------------------------------
    def _branch(self, node: ast.If) -> None:
        terms, pure = self._test_terms(node.test)
        if not terms:
            return
        self._branch_of(node, terms, pure, node.body)

    def _case_branches(self, node: ast.Match) -> None:
        for case in node.cases:
            term = self.term_of.get(id(case.pattern))
            if term is not None:
                self._branch_of(case, [term], case.guard is None, case.body)

    def _branch_of(self, node, terms, pure, body) -> None:
        alias = self._alias_assign(node) if isinstance(node, ast.If) else None
        if alias is not None:
            self.out.append(alias)
        workers, fallthrough = suite_workers(self.r, body)
        if workers:
            at = self.r.at(node.pattern) if isinstance(node, ast.match_case) else self.r.at(node)
            self.out.append(
                Branch(
                    **vars(at),
                    function=self.function,
                    terms=tuple(terms),
                    pure=pure,
                    workers=tuple(workers),
                    fallthrough=fallthrough,
                    owner_class=self._in_algo_class(),
                )
            )

    def _test_terms(self, test: ast.AST) -> tuple[list[DispatchTerm], bool]:
        """Terms of a condition and whether it is only an `or` of positive terms."""
        term = self.term_of.get(id(test))
        if term is not None:
            return [term], not term.negated
        flipped = bool_compare(test)
        if flipped is not None:
            inner, _ = self._test_terms(flipped[0])
            return inner, False
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
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and self.r.text(statement.targets[0]) == subject
            ):
                target = string_value(statement.value)
                if target is not None:
                    return AliasAssign(**vars(self.r.at(node)), alias=literal.upper(), target=target.upper())
        return None


def _keyed(node: ast.AST) -> str | None:
    """The key of `args["speculative_algorithm"]` / `args.get("speculative_algorithm", None)`: the
    attribute of that name, looked up in a dict."""
    if isinstance(node, ast.Subscript):
        return string_value(node.slice)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        return string_value(node.args[0])
    return None


def _unwrap_spelling(node: ast.AST) -> ast.AST:
    """The algorithm string behind `x.upper()`, `str(x).upper()`, `(x or "").upper()`, `str(x)`, `x.name`,
    `(y := x)`."""
    for _ in range(6):
        if isinstance(node, ast.NamedExpr):
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr == "name" and _SPEC_NAME.search(last_name(node.value) or ""):
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("upper", "lower")
            and not node.args
        ):
            node = node.func.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "str"
            and len(node.args) == 1
        ):
            node = node.args[0]
        elif (
            isinstance(node, ast.BoolOp)
            and isinstance(node.op, ast.Or)
            and len(node.values) == 2
            and string_value(node.values[1]) is not None
        ):
            node = node.values[0]
        else:
            break
    return node


def _strip_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    lines = statement_lines(body)
    if (
        lines
        and len(lines[0]) == 1
        and isinstance(lines[0][0], ast.Expr)
        and string_value(lines[0][0].value) is not None
    ):
        return body[1:]
    return body


class DispatchExtractor:
    name = "spec_dispatch"
    # 10: `is None` is the member NONE only on the option string, never on an algorithm object; files whose
    #     only reference is `x.speculative_algorithm is None` or `(x or "").upper()` trigger;
    #     `args.get("speculative_algorithm")` is the option; `match x.speculative_algorithm:` triggers;
    # 9: resolution through the module's bindings (aliases, constants, named collections, from_string), None,
    #    `is None`, `is False`, match/case, `self.name`, walrus;
    # 8: problems collected into a table or list that is raised refuse;
    # 7: worker delegates and unread worker expressions; 6: only `return False, reason` rejects;
    # 5: exits, messages, asserting branches; 2: read from the stdlib ast;
    # 3: control flow (decisions, path conditions, worker sites); 4: refusing returns
    version = 10
    parser = "ast"
    trigger = Trigger(
        *(prefix + _CALL for prefix in ("spec", "Spec", "SPEC", "algo", "Algo")),
        r"spec(?:ulative)?_algorithm\w*[\"']?\]?(?:,[ \t]*None)?\)?(?:\.(?:upper|lower)\(\))?"
        r"\s*(?:[=!]=|in\b|not\s+in\b|is\b)",
        r"==\s*[\w.]*spec(?:ulative)?_algorithm",
        r"!=\s*[\w.]*spec(?:ulative)?_algorithm",
        r"(?m:=[ \t]*\(?[\w.()]*spec(?:ulative)?_algorithm\w*(?:[ \t]+or[ \t]+(?:\"\"|'')\))?"
        r"(?:\.(?:upper|lower)\(\))?[ \t]*$)",
        r"Spec\w*Algo\w*\.[A-Z]",
        r"spec\w*algo\w*\.[A-Z]",
        r"class\s+\w*[Ss]pec\w*[Aa]lgo",
        r"Spec\w*Algo\w*\.\w+\([^()\n]*\)\.(?:is|supports|has|need|carries)_",  # `SA.from_string(x).is_y()`
        r"Spec\w*Algo\w*\s+as\s+\w+",  # the class imported under another name
        r"(?:spec|algo)\w*\s*:=",  # walrus
        r"(?m:^[ \t]*match[ \t]+\(?[\w.()]*spec(?:ulative)?_algorithm)",  # `match cfg.speculative_algorithm:`
    )
    metadata = ()

    def extract(self, tree: ast.Module, context) -> tuple:
        source = Source.of(context)
        aliases = sorted(alias_names(context.text))
        pattern = (
            _HITS
            if not aliases
            else Trigger(*(p.pattern for p in _HITS.parts), *(rf"\b{re.escape(alias)}\b" for alias in aliases))
        )
        resolver = Resolver(tree, source, context.module)
        bindings = Bindings(tree, resolver.resolve, context.module)
        bound = _bound_names(resolver, bindings)  # `SA` for the class, `DFLASH = SA.DFLASH`, `FAMILY = (...)`
        bound |= _value_locals(context.text, bound)  # `mode = SA.from_string(x)`: lines using `mode` are read
        if bound:
            pattern = Trigger(
                *(p.pattern for p in pattern.parts), *(rf"\b{re.escape(name)}\b" for name in sorted(bound))
            )
        walker = _Walker(resolver, hit_lines(context.text, pattern), bindings)
        walker.walrus = ":=" in context.text
        for statement in tree.body:
            walker.walk(statement)
        terms, sites = _with_flow(walker, resolver, tree)
        return tuple(terms) + tuple(
            sorted([*walker.out, *sites, *walker.unread], key=lambda r: (r.line, r.column, type(r).__name__))
        )


def _value_locals(text: str, bound: set[str]) -> set[str]:
    """Names assigned an algorithm value by the class (`mode = SpeculativeAlgorithm.from_string(x)`,
    `algo = SA[name]`), found in the text so the lines that use them are read."""
    classes = r"[\w.]*Spec\w*Algo\w*" + "".join(f"|{re.escape(name)}" for name in sorted(bound))
    pattern = re.compile(rf"(?m)^[ \t]*(\w+)[ \t]*(?::[^=\n]*)?=[ \t]*(?:{classes})[ \t]*(?:\.[ \t]*\w+[ \t]*)?[(\[]")
    if not ("lgo" in text or bound):
        return set()
    # every match lies on one line that holds "Algo" (the class pattern) or a bound name
    return set(pattern.findall("\n".join(lines_holding(text, ("Algo", *sorted(bound))))))


def _bound_names(resolver: Resolver, bindings: Bindings) -> set[str]:
    """Names of this module that refer to the algorithm class under another spelling (`import ... as
    SA`), or to members or algorithm strings (module constants): lines that use them are read."""
    out = set()
    for local, target in resolver.names().items():
        if local != target.rpartition(".")[2] and ALGO_CLASS_NAME.search(target.rpartition(".")[2]):
            out.add(local)
    for name, value in bindings.constants.items():
        if ALGO_CLASS_NAME.search(name):
            continue
        if bindings.members(value) is not None or bindings.algo_class(value):
            out.add(name)
    return out


_FACTORY_NAME = re.compile(r"(?i)worker|factory")
_DELEGATE = re.compile(r"^(?:create|make|build|get)_(?:\w+_)?worker(?:_cls|_class)?$")


def _is_delegate(node: ast.AST) -> bool:
    """`<algorithm>.create_worker(...)` / `.create_draft_worker(...)`: the algorithm object's own worker."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and bool(_DELEGATE.match(node.func.attr))
        and bool(_RECEIVER.search(last_name(node.func.value) or ""))
    )


def _with_flow(walker: _Walker, resolver: Resolver, tree: ast.Module) -> tuple[list[DispatchTerm], list]:
    """The terms with their decisions and path conditions, and the workers each function with terms
    (or each module-level worker factory) creates, with theirs (analyzer/flow.py): worker sites,
    delegates, and the worker expressions it could not read."""
    owners = dict(walker.flows)
    prefix = f"{resolver.module_name}."
    for statement in tree.body:
        if isinstance(statement, _FUNCTIONS) and _FACTORY_NAME.search(statement.name) and id(statement) not in owners:
            owners[id(statement)] = (statement, prefix + statement.name, None)
    keys = {key: Term(term.line, term.column) for key, term in walker.term_of.items()}
    term_text = {Term(t.line, t.column): resolver.text(walker.term_nodes[key]) for key, t in walker.term_of.items()}
    term_lines = sorted({term.line for term in walker.term_of.values()})
    decisions = {}
    sites: list = []
    for node, function, owner_class in owners.values():
        body = node.body if node is not None else tree.body
        flow = FunctionFlow(
            body,
            lambda n: keys.get(id(n)),
            cast("Callable[[ast.AST], str]", resolver.text),  # FunctionFlow hands it located nodes
            lambda n: resolver.at(cast(Located, n)).column,
            lambda n: resolver.worker_ref(n) is not None,
            _is_delegate,
            term_lines,
            walker.local_values.get(id(node)) if node is not None else None,
        )
        decisions.update(flow.decisions)
        for use in flow.workers:
            used = cast(ast.expr, use.node)  # a worker use is an expression (FunctionFlow types it ast.AST)
            if use.kind == "delegate":
                call = cast(ast.Call, used)  # `_is_delegate`: a call of an attribute
                sites.append(
                    WorkerDelegate(
                        **vars(resolver.at(call)),
                        function=function,
                        context=use.context,
                        method=cast(ast.Attribute, call.func).attr,
                    )
                )
            elif use.kind == "unread":
                when = flags_text(use.context, lambda c: term_text.get(c, "?")) if use.context != TRUE else None
                sites.append(
                    UnreadRecord(
                        **vars(resolver.at(used)),
                        what="worker",
                        name=_short(resolver.text(used)),
                        reason=f"the worker chosen here is {use.reason}" + (f" (when {when})" if when else ""),
                    )
                )
            else:
                ref = resolver.worker_ref(used)
                assert ref is not None  # a "class" use is a node the `worker` callback accepted
                sites.append(
                    WorkerSite(
                        **vars(ref.at),
                        qualname=ref.qualname,
                        function=function,
                        context=use.context,
                        owner_class=owner_class,
                    )
                )
    node_of = {id(term): key for key, term in walker.term_of.items()}
    terms = []
    for term in walker.terms:
        decision = decisions.get(node_of.get(id(term)))  # type: ignore[arg-type]  # get(None) is None: a term `term_of` no longer holds
        if decision is None:
            terms.append(term)
            continue
        negated = term.inverted != under_not(decision.test, Term(term.line, term.column))
        terms.append(
            replace(
                term,
                negated=negated,
                decision=decision.kind,
                decision_at=(decision.line, decision.column),
                test=decision.test,
                context=decision.context,
                refuses=decision.refuses,
            )
        )
    renamed = {id(old): new for old, new in zip(walker.terms, terms, strict=True)}
    walker.out = [
        replace(r, terms=tuple(renamed.get(id(t), t) for t in r.terms)) if isinstance(r, Branch) else r
        for r in walker.out
    ]
    return terms, sites


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."
