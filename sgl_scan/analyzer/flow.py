"""Facts that depend on control flow: which algorithms reach which side of a test, under which flags.

This is the one place that reasons about control flow (STYLE.md, "Facts that depend on control
flow"). It has two halves, one per stage:

* **Per file** (`FunctionFlow`, run by the dispatch extractor on the stdlib `ast` it already has):
  for each function that tests the active algorithm, the *path condition* of every statement
  (the conjunction of the tests that must hold to get there: enclosing `if`/`elif`/`else` arms,
  earlier `if C: return/raise/continue/break` exits, `assert C`), the *decision* every dispatch
  term sits in (the whole boolean test around it: `not (a or b)` is one decision), whether that
  decision refuses loudly on one side (`raise`, `assert`, a problem collected into a table or list
  that is raised below), and the worker classes the function creates with their path conditions
  (including `W = A if flag else B; W(...)`), its calls that ask the algorithm object for its
  worker (`spec_algorithm.create_worker(...)`: a *delegate*), and the worker expressions it cannot
  read (a lookup, `getattr`, a call result it cannot follow, returned or assigned to
  `draft_worker`): said out loud, never guessed.
* **Across files** (`conditions.py`: `evaluate`, `side`, `flags_text`, used by `build_inventory`): the same
  conditions evaluated for one algorithm, once every dispatch term's truth for it is known. What is
  left after the algorithm's terms are replaced is a condition on flags (`enable_overlap`); an
  algorithm reaches a statement unless its condition is false.

Conditions are the frozen values of `conditions.py` (`Term`, `Flag`, `Const`, `Not`, `And`, `Or`),
so they travel in the per-file facts cache.

Not a general abstract interpreter: only the shapes SGLang writes (docs/sglang-forms.md), each
with a test taken from a real release (tests/analyzer/test_flow.py).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Mapping, Optional, cast

from sgl_scan.analyzer.astnodes import child_nodes, inner_nodes
from sgl_scan.analyzer.conditions import FALSE, TRUE, Cond, Const, Flag, conjoin, disjoin, negate
from sgl_scan.analyzer.extractors._text import any_hit
from sgl_scan.analyzer.kinds import DecisionKind, Refusal

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
# `try` and (3.11+) `try ... except*`, whose node has the same fields
_TRIES: tuple[type[ast.Try], ...] = (ast.Try, getattr(ast, "TryStar", ast.Try))


def bool_compare(node: ast.AST | None) -> tuple[ast.AST, bool] | None:
    """`x is True` / `x == True` / `x is not False` -> (x, True); `x is False` / `x == False` / `x != True`
    -> (x, False): a comparison with a bool literal is its operand's test (either side); else None."""
    if (
        not isinstance(node, ast.Compare)
        or len(node.ops) != 1
        or not isinstance(node.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq))
    ):
        return None
    left, right = node.left, node.comparators[0]
    if isinstance(left, ast.Constant) and isinstance(left.value, bool):
        left, right = right, left
    if not isinstance(right, ast.Constant) or not isinstance(right.value, bool):
        return None
    positive = isinstance(node.ops[0], (ast.Is, ast.Eq))
    return left, positive == right.value


# -- per file: one function's flow ---------------------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    """The boolean test a dispatch term sits in."""

    kind: DecisionKind
    line: int
    column: int  # 1-based, in characters, of the whole test
    test: Cond
    context: Cond  # path condition of the statement holding the test
    refuses: Refusal | None  # when one side of the test refuses loudly


@dataclass(frozen=True)
class WorkerUse:
    """A worker a function creates or returns, and the path condition that gets there."""

    node: ast.AST  # the class reference, the delegate call, or the expression not read (its position)
    context: Cond
    kind: str = "class"  # "class" | "delegate" (the algorithm object's own worker) | "unread"
    reason: str | None = None  # for "unread": what the expression is, in words


class FunctionFlow:
    """Path conditions, decisions and worker uses of one function body (or a module body).

    `term_key(node)` gives the `Term` for an `ast` node that is a dispatch term, else
    None; `text(node)` its normalised source; `worker(node)` is truthy for a reference to a
    `…Worker` class (a name, attribute or call of one); `delegate(node)` for a call that asks the
    algorithm object for its worker (`self.spec_algorithm.create_draft_worker(...)`). `term_lines`,
    when given, are the sorted lines of every term node (`node.lineno`): expressions on other lines
    hold no term, and their decisions are not looked for.
    """

    def __init__(
        self,
        body: list[ast.stmt],
        term_key: Callable[[ast.AST], Optional[Cond]],
        text: Callable[[ast.AST], str],
        column: Callable[[ast.AST], int],
        worker: Callable[[ast.AST], bool],
        delegate: Callable[[ast.AST], bool] = lambda node: False,
        term_lines: list[int] | None = None,
        local_values: Mapping[str, ast.AST] | None = None,
    ) -> None:
        self.term_key, self.text, self.column, self.is_worker, self.is_delegate = (
            term_key,
            text,
            column,
            worker,
            delegate,
        )
        self._term_lines = term_lines
        self.decisions: dict[int, Decision] = {}  # id(term node) -> its decision
        self.workers: list[WorkerUse] = []
        self._locals = local_values if local_values is not None else _single_assignments(body)
        self._classes: dict[str, list[tuple[ast.AST, Cond]]] = {}
        self._delegated: set[str] = set()  # locals holding the algorithm object's worker class
        self._substituting: set[str] = set()
        self._returns: list[tuple[ast.Return, Cond]] = []
        self._tables = _raised_tables(body)
        self._problem_lists = _raised_lists(body)
        self._catching: list[list[ast.ExceptHandler]] = []  # handlers (that go on) of the enclosing try bodies
        self._walk(body, TRUE)
        self._unread_returns()

    # conditions ------------------------------------------------------------------------------
    def condition(self, node: ast.AST) -> Cond:
        key = self.term_key(node)
        if key is not None:
            return key
        if isinstance(node, ast.BoolOp):
            parts = [self.condition(v) for v in node.values]
            return conjoin(parts) if isinstance(node.op, ast.And) else disjoin(parts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return negate(self.condition(node.operand))
        flipped = bool_compare(node)
        if flipped is not None:
            inner = self.condition(flipped[0])
            if not isinstance(inner, Flag):
                return inner if flipped[1] else negate(inner)
        if isinstance(node, ast.NamedExpr):
            return self.condition(node.value)
        if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, type(None))):
            return Const(bool(node.value))
        if isinstance(node, ast.Name) and node.id in self._locals and node.id not in self._substituting:
            value = self._locals[node.id]
            if self._has_term(value):  # `is_eagle = algo.is_eagle()`; a flag-only local stays as written
                self._substituting.add(node.id)
                try:
                    return self.condition(value)
                finally:
                    self._substituting.discard(node.id)
        return Flag(self.text(node))

    def _has_term(self, node: ast.AST) -> bool:
        return any(self.term_key(n) is not None for n in _walk_expr(node))

    # statements ------------------------------------------------------------------------------
    def _walk(self, body: list[ast.stmt], context: Cond) -> Cond:
        """Walk a suite under `context`; return the condition that holds after it (FALSE: never)."""
        for statement in body:
            if context == FALSE:
                break
            context = self._statement(statement, context)
        return context

    def _statement(self, statement: ast.stmt, context: Cond) -> Cond:
        if isinstance(statement, _SCOPES):
            return context
        if isinstance(statement, ast.If):
            test = self.condition(statement.test)
            refuses = (
                _refusal(statement.body)
                or _refusal(statement.orelse)
                or (Refusal.RAISE if _only_collects(statement.body, self._problem_lists) else None)
            )
            if refuses is Refusal.RAISE and any(
                self._caught(arm[-1])
                for arm in (statement.body, statement.orelse)
                if arm and isinstance(arm[-1], ast.Raise)
            ):
                refuses = None  # caught by an enclosing `try`/`except` that goes on: no loud refusal
            kind = DecisionKind.EXIT if not statement.orelse and _bare_exit(statement.body) else DecisionKind.IF
            self._decide(statement.test, kind, context, refuses)
            after_body = self._walk(statement.body, conjoin((context, test)))
            after_else = self._walk(statement.orelse, conjoin((context, negate(test))))
            if after_body == FALSE:
                return after_else
            if after_else == FALSE:
                return after_body
            return context  # both arms go on: nothing learned
        if isinstance(statement, ast.Assert):
            self._decide(statement.test, DecisionKind.ASSERT, context, Refusal.ASSERT)
            self._uses(statement, context)
            return conjoin((context, self.condition(statement.test)))
        if isinstance(statement, ast.While):
            self._decide(statement.test, DecisionKind.WHILE, context, None)
            self._walk(statement.body, conjoin((context, self.condition(statement.test))))
            self._walk(statement.orelse, context)
            return context
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            self._expressions((statement.target, statement.iter), context)
            self._walk(statement.body, context)
            self._walk(statement.orelse, context)
            return context
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            self._expressions([item.context_expr for item in statement.items], context)
            return self._walk(statement.body, context)
        if isinstance(statement, _TRIES):
            going_on = [h for h in statement.handlers if not _exits(h.body)]
            self._catching.append(going_on)
            after = self._walk(statement.body, context)
            self._catching.pop()
            caught = any(
                _catches(h, r) for h in going_on for r in _statements(statement.body) if isinstance(r, ast.Raise)
            )
            for handler in statement.handlers:
                self._walk(handler.body, context)
            self._walk(statement.orelse, after)
            self._walk(statement.finalbody, context)
            if caught:  # a handler that goes on catches a raise of the body: its guard does not hold after the try
                return context
            return context if after == FALSE and statement.handlers else after
        if isinstance(statement, getattr(ast, "Match", ())):
            return self._match(cast(ast.Match, statement), context)
        if hasattr(statement, "body"):  # anything newer: read its parts under the same context
            for part in child_nodes(statement):
                if isinstance(part, ast.stmt):
                    self._statement(part, context)
            return context
        self._expressions([statement], context)
        self._uses(statement, context)
        if isinstance(statement, ast.Assign):
            self._class_variable(statement, context)
            self._draft_worker_slot(statement, context)
        if isinstance(statement, ast.Return) and statement.value is not None:
            self._returns.append((statement, context))
        if isinstance(statement, ast.Raise) and self._caught(statement):
            return FALSE  # the rest of the try body is skipped; after the try, `caught` says nothing is learned
        if isinstance(statement, _EXITS):
            return FALSE
        return context

    def _caught(self, statement: ast.Raise) -> bool:
        return any(_catches(handler, statement) for handlers in self._catching for handler in handlers)

    def _match(self, statement: ast.Match, context: Cond) -> Cond:
        """`match x: case P: ...`: each case under the earlier cases' failure and its own pattern (a
        dispatch term, `case _:` always true, anything else a flag); after it, what holds after the
        arms that go on (and after no arm matching, without a catch-all)."""
        self._expressions([statement.subject], context)
        rest, afters, catch_all = context, [], False
        for case in statement.cases:
            pattern = case.pattern
            if isinstance(pattern, ast.MatchAs) and pattern.pattern is None:
                test = TRUE
                catch_all = case.guard is None
            else:
                test = self.condition(pattern)
                self._record_pattern(pattern, rest, case.body)
            if case.guard is not None:
                self._decide(case.guard, DecisionKind.IF, conjoin((rest, test)), _refusal(case.body))
                test = conjoin((test, self.condition(case.guard)))
            afters.append(self._walk(case.body, conjoin((rest, test))))
            rest = conjoin((rest, negate(test)))
            if catch_all:
                break
        if not catch_all:
            afters.append(rest)
        going = [after for after in afters if after != FALSE]
        if not going:
            return FALSE
        return going[0] if len(going) == 1 else context

    def _record_pattern(self, pattern: ast.pattern, context: Cond, body: list[ast.stmt]) -> None:
        if self.term_key(pattern) is not None:
            refuses = _refusal(body)
            kind = DecisionKind.EXIT if _bare_exit(body) else DecisionKind.IF
            self.decisions[id(pattern)] = Decision(
                kind, pattern.lineno, self.column(pattern), self.condition(pattern), context, refuses
            )

    # decisions ----------------------------------------------------------------------------------
    def _decide(self, test: ast.expr, kind: DecisionKind, context: Cond, refuses: Refusal | None) -> None:
        self._record(test, kind, context, refuses)
        self._expressions([test], context, skip_root=test)

    def _record(self, root: ast.expr, kind: DecisionKind, context: Cond, refuses: Refusal | None) -> None:
        keys = list(_boolean_leaves(root))
        found = [leaf for leaf in keys if self.term_key(leaf) is not None]
        if not found and not isinstance(root, ast.Name):
            return
        decision = Decision(kind, root.lineno, self.column(root), self.condition(root), context, refuses)
        for leaf in found:
            self.decisions[id(leaf)] = decision
        if isinstance(root, ast.Name):  # `if is_eagle:` after `is_eagle = algo.is_eagle()`
            value = self._locals.get(root.id)
            for leaf in _walk_expr(value) if value is not None else ():
                if self.term_key(leaf) is not None and id(leaf) not in self.decisions:
                    self.decisions[id(leaf)] = decision

    def _expressions(
        self, nodes: Iterable[ast.expr | ast.stmt], context: Cond, skip_root: ast.AST | None = None
    ) -> None:
        """Record the decision of every term inside expressions not yet decided: the whole boolean
        expression around it (climbing `and`/`or`/`not`), a `x if c else y` test or a filter."""
        lines = self._term_lines
        for node in nodes:
            if lines is not None:  # skip an expression whose lines hold no term
                first = getattr(node, "lineno", None)
                if first is not None and not any_hit(lines, first, node.end_lineno or first):
                    continue
            parents: dict[int, ast.AST] = {}
            for current in _walk_expr(node):
                for child in inner_nodes(current):
                    parents[id(child)] = current
                if id(current) in self.decisions or self.term_key(current) is None:
                    continue
                root = current
                while (
                    isinstance(parents.get(id(root)), ast.BoolOp)
                    or (
                        isinstance(parents.get(id(root)), ast.UnaryOp)
                        and isinstance(cast(ast.UnaryOp, parents[id(root)]).op, ast.Not)
                    )
                    or (bool_compare(parents.get(id(root))) is not None)
                    or isinstance(parents.get(id(root)), ast.NamedExpr)
                ):
                    root = parents[id(root)]
                owner = parents.get(id(root))
                kind = (
                    (DecisionKind.MESSAGE if _message(owner) else DecisionKind.IFEXP)
                    if isinstance(owner, ast.IfExp) and owner.test is root
                    else DecisionKind.FILTER
                    if isinstance(owner, ast.comprehension) and root in owner.ifs
                    else DecisionKind.VALUE
                )
                refuses = Refusal.RAISE if kind is DecisionKind.VALUE and self._raised_entry(root, parents) else None
                self._record(cast(ast.expr, root), kind, context, refuses)  # a term, or a test around one

    def _raised_entry(self, root: ast.AST, parents: dict[int, ast.AST]) -> bool:
        """`problems = [(<root>, "why"), ...]` iterated below by `for bad, why in problems: if bad: raise`."""
        row = parents.get(id(root))
        table = parents.get(id(row)) if isinstance(row, ast.Tuple) else None
        assign = parents.get(id(table)) if isinstance(table, (ast.List, ast.Tuple)) else None
        if (
            not isinstance(assign, ast.Assign)
            or len(assign.targets) != 1
            or not isinstance(assign.targets[0], ast.Name)
        ):
            return False
        index = next(i for i, element in enumerate(cast(ast.Tuple, row).elts) if element is root)
        return index in self._tables.get(assign.targets[0].id, ())

    # workers ------------------------------------------------------------------------------------
    def _uses(self, statement: ast.stmt, context: Cond) -> None:
        arms: dict[int, Cond] = {}  # a node inside an arm of `A if c else B`: the condition of that arm
        outer = context
        returned: set[int] = set()  # `return A if c else B`: its arms are returned
        if isinstance(statement, ast.Return) and statement.value is not None:
            returned.add(id(statement.value))
        for node in _own_nodes(statement):
            context = arms.get(id(node), outer)
            if isinstance(node, ast.IfExp):
                test = self.condition(node.test)
                for arm, cond in ((node.body, test), (node.orelse, negate(test))):
                    for inner in _walk_expr(arm):
                        arms[id(inner)] = conjoin((context, cond))
                    if id(node) in returned:
                        returned.add(id(arm))
                        if not isinstance(arm, (ast.Call, ast.IfExp)):
                            self._use(arm, conjoin((context, cond)))
                continue
            if (
                isinstance(node, ast.Return)
                and node.value is not None
                and not isinstance(node.value, (ast.Call, ast.IfExp))
            ):
                self._use(node.value, context)
            elif isinstance(node, ast.Call):
                if isinstance(node.func, ast.Name) and node.func.id in self._classes:
                    for ref, cond in self._classes[node.func.id]:
                        self.workers.append(WorkerUse(ref, conjoin((context, cond))))
                elif self.is_delegate(node):
                    self.workers.append(WorkerUse(node, context, "delegate"))
                else:
                    self._use(node, context)

    def _use(self, node: ast.AST, context: Cond) -> None:
        if isinstance(node, ast.Name) and node.id in self._classes:
            for ref, cond in self._classes[node.id]:
                self.workers.append(WorkerUse(ref, conjoin((context, cond))))
        elif self.is_worker(node):
            self.workers.append(WorkerUse(node, context))

    def _class_variable(self, statement: ast.Assign, context: Cond) -> None:
        """`W = A if flag else B` / `W = A`: a variable holding a worker class, called later; `W =
        self.spec_algorithm.create_worker(...)`: one holding the algorithm object's worker class."""
        if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
            return
        name = statement.targets[0].id
        arms = list(_class_arms(statement.value, TRUE, self.condition))
        if arms and all(self.is_worker(ref) and not isinstance(ref, ast.Call) for ref, _ in arms):
            self._classes[name] = arms
        elif self.is_delegate(statement.value):
            self._delegated.add(name)
        elif isinstance(statement.value, ast.Name) and statement.value.id in self._delegated:
            self._delegated.add(name)

    # worker expressions it cannot read ----------------------------------------------------------------
    def unreadable(self, node: ast.AST) -> str | None:
        """Why `node`, where a worker (class or instance) is expected, cannot be read; None when it can
        (a worker class or a call of one, a local holding them, a delegate, None)."""
        if isinstance(node, ast.Constant) and node.value is None:
            return None
        if self.is_worker(node) or self.is_delegate(node):
            return None
        if isinstance(node, ast.IfExp):
            return self.unreadable(node.body) or self.unreadable(node.orelse)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and (func.id in self._classes or func.id in self._delegated):
                return None
            if isinstance(func, ast.Name) and func.id in self._locals and func.id not in self._substituting:
                return self._through_local(func.id)
            return _opaque(func, self.text, call=True)
        if isinstance(node, ast.Name):
            if node.id in self._classes or node.id in self._delegated:
                return None
            if node.id in self._locals and node.id not in self._substituting:
                return self._through_local(node.id)
        return _opaque(node, self.text, call=False)

    def _through_local(self, name: str) -> str | None:
        self._substituting.add(name)
        try:
            inner = self.unreadable(self._locals[name])
        finally:
            self._substituting.discard(name)
        return None if inner is None else f"`{name}`, which holds {inner}"

    def _draft_worker_slot(self, statement: ast.Assign, context: Cond) -> None:
        """`self.draft_worker = E(...)`: the worker the caller runs is made here; E must be readable
        (reading an existing one, `w = self.draft_worker`, makes nothing)."""
        if (
            len(statement.targets) != 1
            or _last_name(statement.targets[0]) != "draft_worker"
            or not isinstance(statement.value, ast.Call)
        ):
            return
        reason = self.unreadable(statement.value)
        if reason is not None:
            self.workers.append(WorkerUse(statement.value, context, "unread", reason))

    def _unread_returns(self) -> None:
        """In a function that returns workers, every other return must give one too (or None)."""
        readable = [
            (node, context)
            for node, context in self._returns
            if self.unreadable(cast(ast.expr, node.value)) is None  # `_returns` holds returns of a value
            and not (isinstance(node.value, ast.Constant) and node.value.value is None)
        ]
        if not readable:
            return
        for node, context in self._returns:
            value = cast(ast.expr, node.value)
            reason = self.unreadable(value)
            if reason is not None:
                self.workers.append(WorkerUse(value, context, "unread", reason))


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _opaque(node: ast.AST, text: Callable[[ast.AST], str], *, call: bool) -> str:
    """In words, a worker expression the flow layer does not follow (`node` is the callee when `call`)."""
    shown = text(node)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    if call and isinstance(node, ast.Name) and node.id == "getattr":
        return "a `getattr(...)` lookup"
    if isinstance(node, ast.Subscript):
        return f"a lookup (`{shown}`)" + (", called" if call else "")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
        return "a `getattr(...)` lookup" + (", called" if call else "")
    if call or isinstance(node, ast.Call):
        callee = node if call else cast(ast.Call, node).func
        name = _last_name(callee) or text(callee)
        return f"the result of `{name}(...)`, a call the analyzer does not follow"
    if isinstance(node, ast.Name):
        return f"`{shown}`, a parameter or variable the analyzer does not follow"
    return f"`{shown}`, not a worker class the analyzer can name"


def _class_arms(node: ast.AST, cond: Cond, condition) -> Iterator[tuple[ast.AST, Cond]]:
    if isinstance(node, ast.IfExp):
        test = condition(node.test)
        yield from _class_arms(node.body, conjoin((cond, test)), condition)
        yield from _class_arms(node.orelse, conjoin((cond, negate(test))), condition)
    else:
        yield node, cond


def single_assignments(body: list[ast.stmt], walrus: bool = True) -> dict[str, ast.AST]:
    """Local names assigned exactly once in a function body (not counting nested definitions): the
    function's constants, for the binding table (`extractors/_bindings.py`). `walrus` False: the
    source holds no `:=`, so no expression assigns and only statements are read."""
    return _single_assignments(body, walrus)


def _single_assignments(body: list[ast.stmt], walrus: bool = True) -> dict[str, ast.AST]:
    """Local names assigned exactly once in a function (not counting nested definitions)."""
    seen: dict[str, list[ast.AST]] = {}
    stack: list[ast.AST] = list(body) if walrus else list(_every_statement(body))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in _names_in(target):
                    seen.setdefault(name.id, []).append(node.value if target is name else node)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
            for name in _names_in(node.target):
                seen.setdefault(name.id, []).extend([node, node])
        if walrus:
            stack.extend(inner_nodes(node))
    return {name: values[0] for name, values in seen.items() if len(values) == 1 and isinstance(values[0], ast.expr)}


def _names_in(target: ast.AST) -> list[ast.Name]:
    """The names an assignment target binds or reads (`x`; `a, b`; `x[i].y`: `x` and `i`)."""
    if type(target) is ast.Name:  # most targets: no walk
        return [cast(ast.Name, target)]
    return [node for node in ast.walk(target) if isinstance(node, ast.Name)]


# -- problems collected, then raised ------------------------------------------------------------------------
def _every_statement(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a suite and of every suite inside it, `match` cases included (not entering
    nested definitions)."""
    stack = list(reversed(body))
    while stack:
        statement = stack.pop()
        if isinstance(statement, _SCOPES):
            continue
        yield statement
        for field in ("body", "orelse", "finalbody"):
            part = getattr(statement, field, None)
            if isinstance(part, list):
                stack.extend(reversed(part))
        for inner in (*getattr(statement, "handlers", ()), *getattr(statement, "cases", ())):
            stack.extend(reversed(inner.body))


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a suite and of the suites inside it (not entering nested definitions)."""
    for statement in body:
        if isinstance(statement, _SCOPES):
            continue
        yield statement
        for field in ("body", "orelse", "finalbody"):
            part = getattr(statement, field, None)
            if isinstance(part, list):
                yield from _statements(part)
        for handler in getattr(statement, "handlers", ()):
            yield from _statements(handler.body)


def _raised_tables(body: list[ast.stmt]) -> dict[str, set[int]]:
    """`for bad, why in TABLE: if bad: raise ...` (0.5.19-0.5.23 arg_groups/lora_hook.py): TABLE's
    name -> the positions in each row whose truth makes the loop refuse."""
    out: dict[str, set[int]] = {}
    for loop in _statements(body):
        if (
            not isinstance(loop, ast.For)
            or not isinstance(loop.iter, ast.Name)
            or not isinstance(loop.target, ast.Tuple)
        ):
            continue
        for index, element in enumerate(loop.target.elts):
            if isinstance(element, ast.Name) and any(
                isinstance(inner, ast.If)
                and isinstance(inner.test, ast.Name)
                and inner.test.id == element.id
                and _refusal(inner.body) in (Refusal.RAISE, Refusal.ASSERT)
                for inner in _statements(loop.body)
            ):
                out.setdefault(loop.iter.id, set()).add(index)
    return out


def _raised_lists(body: list[ast.stmt]) -> set[str]:
    """Local lists of problems that are raised when not empty: `problems = []` ... `if problems: raise`
    (or `assert not problems`)."""
    empty, raised = set(), set()
    for statement in _statements(body):
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and isinstance(statement.value, ast.List)
            and not statement.value.elts
        ):
            empty.add(statement.targets[0].id)
        elif isinstance(statement, ast.If) and _refusal(statement.body) in (Refusal.RAISE, Refusal.ASSERT):
            test = statement.test
            if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "len" and test.args:
                test = test.args[0]
            if isinstance(test, ast.Name):
                raised.add(test.id)
        elif (
            isinstance(statement, ast.Assert)
            and isinstance(statement.test, ast.UnaryOp)
            and isinstance(statement.test.op, ast.Not)
            and isinstance(statement.test.operand, ast.Name)
        ):
            raised.add(statement.test.operand.id)
    return empty & raised


def _only_collects(body: list[ast.stmt], lists: set[str]) -> bool:
    """A suite that only records a problem in such a list (`problems.append("why")`)."""

    def collects(statement: ast.stmt) -> bool:
        call = statement.value if isinstance(statement, ast.Expr) else None
        return (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in ("append", "extend")
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id in lists
        )

    return bool(lists) and bool(body) and all(collects(statement) for statement in body)


def _exits(body: list[ast.stmt]) -> bool:
    """A handler suite that leaves (raises again, returns, continues, breaks) at its end."""
    return bool(body) and isinstance(body[-1], _EXITS)


def _catches(handler: ast.ExceptHandler, statement: ast.Raise) -> bool:
    """Whether `except <type>:` catches what `statement` raises (by name: a bare `except`,
    `Exception`/`BaseException`, or the raised class's own name among the handler's)."""
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = {_last_name(kind) for kind in kinds}
    if names & {"Exception", "BaseException"}:
        return True
    raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
    return raised is not None and _last_name(raised) in names


def _bare_exit(body: list[ast.stmt]) -> bool:
    """A suite that only leaves: `return`, `return None`, `continue`, `break` (an exemption: the rest of
    the function or loop body is for everything else)."""
    if len(body) != 1:
        return False
    last = body[0]
    if isinstance(last, ast.Return):
        return last.value is None or (isinstance(last.value, ast.Constant) and last.value.value is None)
    return isinstance(last, (ast.Continue, ast.Break))


def _message(node: ast.IfExp) -> bool:
    """`" (hint)" if x == "A" else ""`: a conditional expression that only picks message text."""
    return all(
        isinstance(arm, ast.JoinedStr) or (isinstance(arm, ast.Constant) and isinstance(arm.value, str))
        for arm in (node.body, node.orelse)
    )


def _refusal(body: list[ast.stmt]) -> Refusal | None:
    """How a suite refuses loudly: RAISE when it ends by raising (possibly after logging), ASSERT when
    it ends with an assert, RETURN when it returns a rejection (`return False, reason`)."""
    if not body:
        return None
    last = body[-1]
    if isinstance(last, ast.Raise):
        return Refusal.RAISE
    if isinstance(last, ast.Assert):
        return Refusal.ASSERT
    value = last.value if isinstance(last, ast.Return) else None
    if (
        isinstance(value, ast.Tuple)
        and len(value.elts) >= 2
        and isinstance(value.elts[0], ast.Constant)
        and value.elts[0].value is False
    ):  # `return False, reason` (a bare `return False` is an answer)
        return Refusal.RETURN
    return None


def _boolean_leaves(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from _boolean_leaves(value)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield from _boolean_leaves(node.operand)
    elif isinstance(node, ast.NamedExpr):
        yield from _boolean_leaves(node.value)
    elif (flipped := bool_compare(node)) is not None:
        yield node
        yield from _boolean_leaves(flipped[0])
    else:
        yield node


def _walk_expr(node: ast.AST) -> Iterator[ast.AST]:
    """`node` and the nodes below it (not entering nested definitions), less expression contexts
    and operators (no term, worker or assignment is one)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if not isinstance(current, _SCOPES):
            stack.extend(inner_nodes(current))


def _own_nodes(statement: ast.stmt) -> Iterator[ast.AST]:
    """A simple statement and every node below it, not entering nested definitions."""
    yield from _walk_expr(statement)


__all__ = ["Decision", "FunctionFlow", "WorkerUse", "bool_compare", "single_assignments"]
