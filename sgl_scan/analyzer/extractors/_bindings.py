"""What a name refers to, for the stdlib-`ast` extractors: one binding table per module.

`Bindings` answers the questions the extractors ask about an expression, by resolution rather than
by spelling:

* `algo_class(node)`: does it name the algorithm class (`SpeculativeAlgorithm`, `SA` after
  `import ... SpeculativeAlgorithm as SA`, `spec_info.SpeculativeAlgorithm`, `cls`/`type(self)`
  inside it)?
* `members(node)`: the members it denotes (`SA.DFLASH`, `DFLASH` after `DFLASH = SA.DFLASH`, a named
  tuple/set/frozenset/list of them, a dict's keys), through module and function-local constants;
* `strings(node)`: the algorithm names it denotes as strings (`"EAGLE"`, `None` as `"None"`, a named
  collection of them, `SA.EAGLE.name`);
* `algo_value(node)`: is it an expression whose value is an algorithm (`SA.from_string(x)`,
  `SA[x]`, `SA(x)`, a member)?

The per-file pass does not know which class the snapshot's algorithm class is (that is picked
across files, `inventory.build_inventory`), so a name is "the algorithm class" when it resolves (through
imports with `as`, module definitions and assignments) to a class whose own name reads like one
(`_text.ALGO_CLASS_NAME`): the one documented fallback on spelling, applied to the *resolved* name
only, never to an alias.
"""

from __future__ import annotations

import ast
from typing import Iterator, Mapping

from sgl_scan.analyzer.extractors._text import ALGO_CLASS_NAME

_COLLECTIONS = (ast.Tuple, ast.List, ast.Set)
_WRAPPERS = ("frozenset", "set", "tuple", "list")
# calls on the algorithm class whose value is one of its members
_VALUE_METHODS = ("from_string", "from_name", "from_str", "parse", "get", "_missing_")
NONE = "None"  # how `None` (no speculative algorithm: the NONE member) reads among algorithm strings
_DEPTH = 8


def _wrapped(node: ast.AST) -> ast.expr | None:
    """`x` of `frozenset(x)`, `set(x)`, `tuple(x)`, `list(x)` (the same members or strings as `x`)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _WRAPPERS
        and len(node.args) == 1
        and not node.keywords
    ):
        return node.args[0]
    return None


def module_constants(tree: ast.Module) -> dict[str, ast.AST]:
    """Module-level `NAME = value` / `NAME: T = value` (also inside module-level if/try), the names
    bound exactly once; a name bound twice is not a constant."""
    seen: dict[str, list[ast.AST]] = {}

    def read(body: list[ast.stmt]) -> None:
        for statement in body:
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        seen.setdefault(target.id, []).append(statement.value)
                    else:
                        for name in ast.walk(target):
                            if isinstance(name, ast.Name):
                                seen.setdefault(name.id, []).extend([statement, statement])
            elif (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and statement.value is not None
            ):
                seen.setdefault(statement.target.id, []).append(statement.value)
            elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
                seen.setdefault(statement.target.id, []).extend([statement, statement])
            elif isinstance(statement, (ast.If, ast.Try)):
                read(statement.body)
                read(statement.orelse)
                for handler in getattr(statement, "handlers", ()):
                    read(handler.body)

    read(tree.body)
    return {name: values[0] for name, values in seen.items() if len(values) == 1}


class LocalConstants(Mapping[str, ast.AST]):
    """`flow.single_assignments(body)`, worked out on first use: most functions a walker enters never
    have a name looked up."""

    def __init__(self, body: list[ast.stmt], walrus: bool = True) -> None:
        self._body: list[ast.stmt] | None = body
        self._walrus = walrus  # whether the source may hold `:=` (else only statements assign)
        self._found: dict[str, ast.AST] = {}

    def _values(self) -> dict[str, ast.AST]:
        if self._body is not None:
            from sgl_scan.analyzer.flow import single_assignments

            self._found, self._body = single_assignments(self._body, self._walrus), None
        return self._found

    def __getitem__(self, name: str) -> ast.AST:
        return self._values()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values())

    def __len__(self) -> int:
        return len(self._values())


class Bindings:
    """The binding table of one module: imports (through `resolve`), module constants, and the
    constants of the function being read (`push`/`pop` a function's single assignments)."""

    def __init__(self, tree: ast.Module, resolve, module_name: str, class_names: tuple[str, ...] = ()) -> None:
        self._resolve = resolve  # node -> absolute dotted name through imports (Resolver.resolve)
        self.module_name = module_name
        self.constants = module_constants(tree)
        self.local_classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
        self._locals: list[Mapping[str, ast.AST]] = []
        self.in_algo_class = False  # `cls` / `type(self)` refer to the algorithm class

    # function-local constants ---------------------------------------------------------------------
    def push(self, constants: Mapping[str, ast.AST]) -> None:
        self._locals.append(constants)

    def pop(self) -> None:
        self._locals.pop()

    def value_of(self, name: str) -> ast.AST | None:
        """The single value a local (innermost function first) or module constant holds."""
        for scope in reversed(self._locals):
            if name in scope:
                return scope[name]
        return self.constants.get(name)

    # the class ------------------------------------------------------------------------------------
    def algo_class(self, node: ast.AST | None, depth: int = 0) -> bool:
        if node is None or depth > _DEPTH:
            return False
        if isinstance(node, ast.Name):
            if node.id == "cls" and self.in_algo_class:
                return True
            value = self.value_of(node.id)
            if value is not None and isinstance(value, (ast.Name, ast.Attribute)):
                return self.algo_class(value, depth + 1)  # `SA = SpeculativeAlgorithm`
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "type"
            and self.in_algo_class
        ):
            return True
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return False
        resolved = self._resolve(node)
        return bool(resolved) and ALGO_CLASS_NAME.search(resolved.rpartition(".")[2]) is not None

    # members --------------------------------------------------------------------------------------
    def member(self, node: ast.AST | None, depth: int = 0) -> str | None:
        """The member `node` denotes (`SA.X`, a constant holding one)."""
        if node is None or depth > _DEPTH:
            return None
        if (
            isinstance(node, ast.Attribute)
            and self.algo_class(node.value)
            and not node.attr.startswith("_")
            and node.attr not in _VALUE_METHODS
        ):
            return node.attr
        if isinstance(node, ast.Subscript) and self.algo_class(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return key.value  # `SA["EAGLE"]`
        if isinstance(node, ast.Name):
            value = self.value_of(node.id)
            if value is not None:
                return self.member(value, depth + 1)
        return None

    def members(self, node: ast.AST | None, depth: int = 0) -> tuple[str, ...] | None:
        """Members a single reference or a (named) collection of references denotes; None if it is neither."""
        if node is None or depth > _DEPTH:
            return None
        single = self.member(node, depth)
        if single is not None:
            return (single,)
        if isinstance(node, ast.Name):
            value = self.value_of(node.id)
            return self.members(value, depth + 1) if value is not None else None
        wrapped = _wrapped(node)
        if wrapped is not None:
            return self.members(wrapped, depth + 1)
        if isinstance(node, ast.Dict) and node.keys and None not in node.keys:
            return self._all(node.keys, depth)  # `x in {SA.EAGLE: ..., ...}` tests the keys
        if isinstance(node, _COLLECTIONS):
            return self._all(node.elts, depth)
        return None

    def _all(self, elements, depth: int) -> tuple[str, ...] | None:
        out: list[str] = []
        for element in elements:
            found = (
                self.members(element, depth + 1)
                if isinstance(element, ast.Name)
                else ((m,) if (m := self.member(element, depth + 1)) is not None else None)
            )
            if found is None:
                return None
            out.extend(found)
        return tuple(out) if out else None

    # strings --------------------------------------------------------------------------------------
    def strings(self, node: ast.AST | None, depth: int = 0) -> tuple[str, ...] | None:
        """Algorithm names as strings: a literal, `None` (as `NONE`'s spelling "None"), a named
        collection of them, a dict's keys, `SA.X.name`; None when `node` is none of these."""
        if node is None or depth > _DEPTH:
            return None
        if isinstance(node, ast.Constant) and (isinstance(node.value, str) or node.value is None):
            return (NONE if node.value is None else node.value,)
        if isinstance(node, ast.Attribute) and node.attr == "name":
            member = self.member(node.value)
            if member is not None:
                return (member,)
        if isinstance(node, ast.Name):
            value = self.value_of(node.id)
            return self.strings(value, depth + 1) if value is not None else None
        wrapped = _wrapped(node)
        if wrapped is not None:
            return self.strings(wrapped, depth + 1)
        if isinstance(node, ast.Dict) and node.keys and None not in node.keys:
            return self._strings_of(node.keys, depth)
        if isinstance(node, _COLLECTIONS):
            return self._strings_of(node.elts, depth)
        return None

    def _strings_of(self, elements, depth: int) -> tuple[str, ...] | None:
        out: list[str] = []
        for element in elements:
            found = self.strings(element, depth + 1)
            if found is None or (len(found) > 1 and not isinstance(element, ast.Name)):
                return None
            out.extend(found)
        return tuple(out) if out and any(v != NONE for v in out) else None

    # values ---------------------------------------------------------------------------------------
    def algo_value(self, node: ast.AST | None, depth: int = 0) -> bool:
        """An expression whose value is an algorithm: `SA.from_string(x)`, `SA(x)`, `SA[x]`, a member,
        or a local constant holding one of these."""
        if node is None or depth > _DEPTH:
            return False
        if self.member(node) is not None:
            return True
        if isinstance(node, ast.Call):
            func = node.func
            if self.algo_class(func):
                return True  # `SpeculativeAlgorithm(value)`
            if isinstance(func, ast.Attribute) and func.attr in _VALUE_METHODS and self.algo_class(func.value):
                return True
        if isinstance(node, ast.Subscript) and self.algo_class(node.value):
            return True  # the enum's `__getitem__`
        if isinstance(node, ast.Name):
            value = self.value_of(node.id)
            return value is not None and self.algo_value(value, depth + 1)
        return False


__all__ = ["Bindings", "NONE", "module_constants"]
