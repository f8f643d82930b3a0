"""Attention-backend facts: the release's default backend per GPU architecture, which backends'
verify code reads the speculative custom mask, and which class each backend name builds.

- The default: an if/elif chain under `if not <...>use_mla_backend:` (its body: MHA models such as
  Llama and Qwen; its else: MLA) whose arms test an architecture predicate (`is_sm100_supported()`,
  `get_platform().is_hopper_with_cuda_12_3`, `_is_hip`) and return or assign `attention_backend`
  string literals (0.5.4 `ModelRunner`, 0.5.11 `ServerArgs._get_default_attn_backend`, 0.5.20+
  `arg_groups/model_override_base.get_default_attn_backend`). One record per arm, in order.
- A mask read: `<x>.custom_mask` read inside a function, with the `if` tests that guard it (the else
  side written `not (test)`), so a read only for `topk > 1` (fa3) is told from an unconditional one.
- A registration: `@register_attention_backend("name")` and the classes its body returns.
- A verify graph capture: `capture_forward_mode = ForwardMode.TARGET_VERIFY` in a CUDA-graph runner.
- Where a mask read goes (`MaskRead.use`): handed on (a call argument, a stored field, a local name
  that is read again), only tested (`is None`, a condition), or dropped (bound to a name never read:
  0.5.23 `flashinfer_mla_backend.py:1111` computes the mask and plans a causal verify).
- Per branch of the default chain, the inner tests under which each backend is picked
  (`DefaultArm.choices`: the else arm's `has_flashinfer and not model_config.has_attention_sinks`).
- A default-chain call (`DefaultCall`): what the release passes for each parameter (the callables
  that tell MLA models and fetch the model config).
- A per-model override provider (`ModelOverride`): `@_register_for("Arch", ...)` functions assigning
  `overrides["attention_backend"] = ...` (0.5.20+ `arg_groups/model_overrides/*.py`).
Nothing is evaluated; predicates are recorded by qualified name for the generated code to call.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import cast

from sgl_scan.analyzer.astnodes import child_nodes, inner_nodes
from sgl_scan.analyzer.extractors._ast import Resolver, Source
from sgl_scan.analyzer.extractors._text import Trigger, any_hit, hit_lines
from sgl_scan.analyzer.extractors.records import At

_MLA = re.compile(r"use_mla_backend\b")
_PREDICATE = re.compile(r"^_?is_\w+$")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_Function = ast.FunctionDef | ast.AsyncFunctionDef
# Every record starts from a node whose own source lines hold one of these words: a statement whose
# lines (decorators included) hold none of them is not walked.
_WORDS = re.compile(
    "custom_mask|generate_attn_arg_prefill|capture_forward_mode|register_attention_backend|use_mla_backend"
    "|default_attn_backend|attention_backend"
)
_SETTINGS = ("attention_backend", "prefill_attention_backend", "decode_attention_backend")


@dataclass(frozen=True)
class DefaultArm(At):
    """One arm of the default-backend chain (`line`: its `if`/`elif` test, or the else body)."""

    function: str  # qualname of the enclosing function
    family: str  # "mha" | "mla"
    arch: str  # the predicate: "call:<qualified>" | "platform:<getter>:<attr>" | "else" | "unread:<text>"
    conditions: tuple[str, ...]  # the test's other conjuncts, as written
    backends: tuple[str, ...]  # literals the arm returns or assigns, in order
    choices: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (literal, the inner if-tests it is picked under)
    mla_test: str = ""  # the operand of the chain's `if not <...>:` (the MLA flag, as written)


@dataclass(frozen=True)
class MaskRead(At):
    """`<x>.custom_mask` read in `function` of `owner` (a class qualname, "" at module level)."""

    owner: str
    function: str
    guards: tuple[str, ...]  # enclosing if-tests, innermost last ("not (t)" on the else side)
    how: str = "attribute"  # "attribute" (x.custom_mask) | "getattr" | "generate_attn_arg_prefill" (the input hands it)
    use: str = "passed"  # "passed" (handed on) | "tested" (only compared or tested) | "dropped" (bound, never read)
    bound: str = ""  # the local name(s) the read is bound to, when "dropped"


@dataclass(frozen=True)
class DefaultCall(At):
    """A call of a function whose name ends in `default_attn_backend`: per argument, what produces it."""

    function: str  # the enclosing function's qualname
    callee: str  # resolved
    args: tuple[
        tuple[str, str], ...
    ]  # (position "0".. or keyword, producer): "call:<qualified>" | "method:<name>" | "unread:<text>"


@dataclass(frozen=True)
class ModelOverride(At):
    """`overrides["attention_backend"] = ...` inside a provider registered for `architectures`."""

    function: str
    architectures: tuple[str, ...]
    setting: str  # attention_backend | prefill_attention_backend | decode_attention_backend
    backends: tuple[str, ...]  # the literals assigned; () when the value is not a literal
    guards: tuple[str, ...]


@dataclass(frozen=True)
class BackendRegistration(At):
    name: str  # the backend name users pass to --attention-backend
    classes: tuple[tuple[str, tuple[str, ...]], ...]  # (qualified class, guards) per returned class


@dataclass(frozen=True)
class VerifyGraphCapture(At):
    """`<x>.capture_forward_mode = ForwardMode.TARGET_VERIFY`: a CUDA-graph runner capturing verify."""

    owner: str
    function: str


class _Walker:
    def __init__(self, r: Resolver, module_vars: dict[str, str], hits: list[int] | None = None) -> None:
        self.r, self.vars = r, module_vars
        self.out: list = []
        self.hits = hits  # sorted 1-based numbers of the lines naming one of _WORDS (None: walk everything)
        self.function_node: _Function | None = None  # the function being walked (mask uses, argument producers)
        self.provider: tuple[str, ...] = ()  # architectures of the override provider being walked
        self._parents: dict[int, dict[int, ast.AST]] = {}

    def may_hold(self, node: ast.AST) -> bool:
        """Whether `node`'s lines (a definition's decorators included) name one of `_WORDS`."""
        if self.hits is None or not isinstance(node, ast.stmt):
            return True
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        return any_hit(self.hits, start, node.end_lineno or node.lineno)

    # default chains ---------------------------------------------------------------------------
    def predicate(self, node: ast.AST) -> str | None:
        """The architecture predicate a conjunct tests, qualified, or None when it tests something else."""
        if (
            isinstance(node, ast.Call)
            and not node.args
            and not node.keywords
            and isinstance(node.func, (ast.Name, ast.Attribute))
        ):
            name = self.r.last_name(node.func)
            if name and _PREDICATE.match(name):
                return f"call:{self.r.resolve(node.func)}"
        if (
            isinstance(node, ast.Attribute)
            and _PREDICATE.match(node.attr)
            and isinstance(node.value, ast.Call)
            and not node.value.args
        ):
            return f"platform:{self.r.resolve(node.value.func)}:{node.attr}"
        if isinstance(node, ast.Name) and node.id in self.vars:
            return self.vars[node.id]
        return None

    def arm(self, test: ast.expr) -> tuple[str, tuple[str, ...]]:
        parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        arch, rest = None, []
        for part in parts:
            found = self.predicate(part) if arch is None else None
            if found is not None:
                arch = found
            else:
                rest.append(self.r.text(part))
        return arch or f"unread:{self.r.text(test)}", tuple(rest)

    def backends(self, body: list[ast.stmt]) -> tuple[str, ...]:
        found = []
        for statement in body:
            for node in _walk(statement):
                value = None
                if isinstance(node, ast.Return):
                    value = node.value
                elif isinstance(node, ast.Assign) and any(
                    self.r.last_name(t) == "attention_backend" for t in node.targets
                ):
                    value = node.value
                for lit in _literals(value):
                    if lit not in found:
                        found.append(lit)
        return tuple(found)

    def choices(self, body: list[ast.stmt], guards: tuple[str, ...] = ()) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Each literal the arm returns or assigns, with the inner if-tests it sits under."""
        found: list[tuple[str, tuple[str, ...]]] = []
        for statement in body:
            if isinstance(statement, ast.If):
                test = self.r.text(statement.test)
                found += self.choices(statement.body, guards + (test,))
                found += self.choices(statement.orelse, guards + (f"not ({test})",))
                continue
            for lit in self.backends([statement]):
                found.append((lit, guards))
        return tuple(found)

    def chain(self, function: str, family: str, body: list[ast.stmt], mla_test: str = "") -> None:
        head = next((s for s in body if isinstance(s, ast.If)), None)
        node = head
        while node is not None:
            arch, conditions = self.arm(node.test)
            backends = self.backends(node.body)
            if backends:
                self.out.append(
                    DefaultArm(
                        **vars(self.r.at(node.test)),
                        function=function,
                        family=family,
                        arch=arch,
                        conditions=conditions,
                        backends=backends,
                        choices=self.choices(node.body),
                        mla_test=mla_test,
                    )
                )
            if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
                node = node.orelse[0]
                continue
            if node.orelse:
                backends = self.backends(node.orelse)
                if backends:
                    self.out.append(
                        DefaultArm(
                            **vars(self.r.at(node.orelse[0])),
                            function=function,
                            family=family,
                            arch="else",
                            conditions=(),
                            backends=backends,
                            choices=self.choices(node.orelse),
                            mla_test=mla_test,
                        )
                    )
            node = None

    # the walk ---------------------------------------------------------------------------------
    def walk(self, node: ast.AST, owner: str, function: str, guards: tuple[str, ...]) -> None:
        child: ast.AST  # a body's statement, or (at the end) any child node
        if not self.may_hold(node):
            return
        if isinstance(node, ast.ClassDef):
            for child in node.body:
                self.walk(child, f"{owner}.{node.name}" if owner else node.name, "", ())
            return
        if isinstance(node, _FUNCTIONS):
            self.registration(node)
            saved = self.function_node, self.provider
            self.function_node = node
            self.provider = self.architectures(node) or (self.provider if function else ())
            for child in node.body:
                self.walk(child, owner, node.name if not function else f"{function}.<locals>.{node.name}", ())
            self.function_node, self.provider = saved
            return
        if isinstance(node, ast.If):
            test = self.r.text(node.test)
            negated = isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
            if function and negated and _MLA.search(test) and node.orelse:
                qualname = f"{owner}.{function}" if owner else function
                operand = self.r.text(cast(ast.UnaryOp, node.test).operand)
                self.chain(qualname, "mha", node.body, operand)
                self.chain(qualname, "mla", node.orelse, operand)
            self.walk(node.test, owner, function, guards)
            for child in node.body:
                self.walk(child, owner, function, guards + (test,))
            for child in node.orelse:
                self.walk(child, owner, function, guards + (f"not ({test})",))
            return
        if (
            isinstance(node, ast.Assign)
            and function
            and any(self.r.last_name(t) == "capture_forward_mode" for t in node.targets)
            and self.r.last_name(node.value) == "TARGET_VERIFY"
        ):
            self.out.append(VerifyGraphCapture(**vars(self.r.at(node)), owner=owner, function=function))
        how = _mask_read(node)
        if how is not None and function:
            use, bound = self.use(node)
            self.out.append(
                MaskRead(
                    **vars(self.r.at(cast("ast.Attribute | ast.Call", node))),  # what `_mask_read` reads
                    owner=owner,
                    function=function,
                    guards=guards,
                    how=how,
                    use=use,
                    bound=bound,
                )
            )
        if (
            isinstance(node, ast.Call)
            and function
            and (self.r.last_name(node.func) or "").endswith("default_attn_backend")
        ):
            self.default_call(node, f"{owner}.{function}" if owner else function)
        if self.provider and isinstance(node, ast.Assign):
            self.override(node, f"{owner}.{function}" if owner else function, guards)
        for child in child_nodes(node):
            self.walk(child, owner, function, guards)

    # where a mask read goes -------------------------------------------------------------------
    def parents(self) -> dict[int, ast.AST]:
        fn = self.function_node
        assert fn is not None  # mask reads are looked for inside functions only
        if id(fn) not in self._parents:
            table: dict[int, ast.AST] = {}
            stack: list[ast.AST] = [fn]
            while stack:  # every node's parent (not the shared `Load()` and operator nodes')
                parent = stack.pop()
                for child in inner_nodes(parent):
                    table[id(child)] = parent
                    stack.append(child)
            self._parents[id(fn)] = table
        return self._parents[id(fn)]

    def use(self, node: ast.AST, depth: int = 0, seen: frozenset = frozenset()) -> tuple[str, str]:
        """("passed" | "tested" | "dropped", bound names) for a value read at `node` inside the current function."""
        parents = self.parents()
        child, parent = node, parents.get(id(node))
        while parent is not None and not isinstance(parent, ast.stmt):
            if isinstance(parent, ast.Compare):
                others = [n for n in (parent.left, *parent.comparators) if n is not child]
                if all(isinstance(n, ast.Constant) and n.value is None for n in others):
                    return "tested", ""
                return "passed", ""
            if isinstance(parent, ast.Call) and child is not parent.func or isinstance(parent, ast.keyword):
                return "passed", ""
            if isinstance(parent, (ast.BoolOp, ast.UnaryOp)) and isinstance(
                parents.get(id(parent)), (ast.If, ast.While, ast.Assert)
            ):
                return "tested", ""
            child, parent = parent, parents.get(id(parent))
        if isinstance(parent, (ast.If, ast.While, ast.Assert)) and child is parent.test:
            return "tested", ""
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and child is parent.value:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            names = []
            for target in targets:
                if isinstance(target, ast.Tuple):
                    elements = [e for e in target.elts if isinstance(e, ast.Name)]
                    masks = [e for e in elements if "mask" in e.id]
                    names += [e.id for e in (masks or elements)]
                elif isinstance(target, ast.Name):
                    names.append(target.id)
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    names.append(target.value.id)  # copied into a local buffer: the buffer carries it
                else:
                    return "passed", ""  # stored on an object (metadata a kernel reads)
            names = [n for n in names if n not in seen]
            if not names:
                return "passed", ""
            if depth >= 3:
                return "passed", ""  # followed far enough: treated as handed on
            assert self.function_node is not None  # mask reads are looked for inside functions only
            for load in ast.walk(self.function_node):
                if isinstance(load, ast.Name) and load.id in names and isinstance(load.ctx, ast.Load):
                    if self.use(load, depth + 1, seen | set(names))[0] == "passed":
                        return "passed", ""
            return "dropped", ", ".join(names)
        if (
            isinstance(parent, (ast.Expr, ast.Pass))
            and child is getattr(parent, "value", None)
            and not isinstance(child, ast.Call)
        ):
            return "dropped", ""
        return "passed", ""

    # default-chain calls and per-model overrides ------------------------------------------------
    def producer(self, node: ast.expr) -> str:
        value = node
        if isinstance(node, ast.Name) and self.function_node is not None:
            bound = [
                s.value
                for s in ast.walk(self.function_node)
                if isinstance(s, ast.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)
                and s.targets[0].id == node.id
            ]
            if len(bound) == 1:
                value = bound[0]
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id == "self"
            and not value.args
        ):
            return f"method:{value.func.attr}"
        if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
            resolved = self.r.resolve(value.func)
            if resolved and "." in resolved:
                return f"call:{resolved}"
        return f"unread:{self.r.text(node)}"

    def default_call(self, node: ast.Call, function: str) -> None:
        callee = self.r.resolve(node.func) or self.r.text(node.func)
        args = tuple((str(i), self.producer(a)) for i, a in enumerate(node.args)) + tuple(
            (k.arg, self.producer(k.value)) for k in node.keywords if k.arg
        )
        self.out.append(DefaultCall(**vars(self.r.at(node)), function=function, callee=callee, args=args))

    def architectures(self, node: _Function) -> tuple[str, ...]:
        """The string literals of a decorator call registering `node` for model architectures."""
        found: list[str] = []
        for decorator in node.decorator_list:
            if (
                isinstance(decorator, ast.Call)
                and "register" in (self.r.last_name(decorator.func) or "")
                and decorator.args
                and all(_literals(a) for a in decorator.args)
            ):
                found += [_literals(a)[0] for a in decorator.args]
        return tuple(found)

    def override(self, node: ast.Assign, function: str, guards: tuple[str, ...]) -> None:
        for target in node.targets:
            if isinstance(target, ast.Subscript) and len(key := _literals(target.slice)) == 1 and key[0] in _SETTINGS:
                self.out.append(
                    ModelOverride(
                        **vars(self.r.at(node)),
                        function=function,
                        architectures=self.provider,
                        setting=key[0],
                        backends=_literals(node.value),
                        guards=guards,
                    )
                )

    def registration(self, node: _Function) -> None:
        for decorator in node.decorator_list:
            if not (
                isinstance(decorator, ast.Call) and self.r.last_name(decorator.func) == "register_attention_backend"
            ):
                continue
            name = _literals(decorator.args[0]) if decorator.args else ()
            if len(name) != 1:
                continue
            classes: list[tuple[str, tuple[str, ...]]] = []
            self.returns(node.body, (), classes)
            self.out.append(BackendRegistration(**vars(self.r.at(node)), name=name[0], classes=tuple(classes)))

    def returns(self, body: list[ast.stmt], guards: tuple[str, ...], out: list) -> None:
        for statement in body:
            if isinstance(statement, ast.If):
                test = self.r.text(statement.test)
                self.returns(statement.body, guards + (test,), out)
                self.returns(statement.orelse, guards + (f"not ({test})",), out)
            elif isinstance(statement, ast.Return) and isinstance(statement.value, ast.Call):
                cls = self.r.resolve(statement.value.func)
                if cls:
                    out.append((cls, guards))
            elif not isinstance(statement, (*_FUNCTIONS, ast.ClassDef)):
                for field in ("body", "orelse", "finalbody"):
                    inner = getattr(statement, field, None)
                    if isinstance(inner, list):
                        self.returns(inner, guards, out)


def _mask_read(node: ast.AST) -> str | None:
    """How `node` reads the verify input's custom mask, or None."""
    if isinstance(node, ast.Attribute) and node.attr == "custom_mask" and isinstance(node.ctx, ast.Load):
        return "attribute"
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and _literals(node.args[1]) == ("custom_mask",)
    ):
        return "getattr"
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "generate_attn_arg_prefill"
    ):
        return "generate_attn_arg_prefill"
    return None


def _walk(node: ast.AST):
    yield node
    for child in child_nodes(node):
        if not isinstance(child, (*_FUNCTIONS, ast.ClassDef, ast.Lambda)):
            yield from _walk(child)


def _literals(node: ast.AST | None) -> tuple[str, ...]:
    """String constants an expression can evaluate to (`"a"`, `"a" if c else "b"`, `("a", p)` first)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, ast.IfExp):
        return _literals(node.body) + _literals(node.orelse)
    if isinstance(node, ast.Tuple) and node.elts:
        return _literals(node.elts[0])
    return ()


def _module_predicates(tree: ast.Module, r: Resolver, walker: _Walker) -> dict[str, str]:
    """`_is_hip = is_hip()` at module level: the name stands for the predicate call."""
    out = {}
    for statement in tree.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            found = walker.predicate(statement.value)
            if found is not None and found.startswith("call:"):
                out[statement.targets[0].id] = found
    return out


class AttentionExtractor:
    name = "spec_attention"
    version = 2
    parser = "ast"
    trigger = Trigger(
        r"use_mla_backend\b",
        r"custom_mask\b",
        r"generate_attn_arg_prefill\(",
        r"register_attention_backend\(",
        r"capture_forward_mode\b",
        r"default_attn_backend\(",
        r"attention_backend[\"']\]",
    )
    metadata = ()

    def extract(self, tree: ast.Module, context) -> tuple:
        r = Resolver(tree, Source.of(context), context.module)
        walker = _Walker(r, {}, hit_lines(context.text, _WORDS))
        walker.vars = _module_predicates(tree, r, walker)
        for statement in tree.body:
            walker.walk(statement, "", "", ())
        return tuple(walker.out)
