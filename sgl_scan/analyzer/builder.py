"""Turns the raw events of one file's walk into `FileFacts`, resolving names in one place.

Both parsers (stdlib `ast` for speed, libcst for the full CST) feed the same events, so the facts they
give can only differ where the walks themselves differ; all name resolution lives here.
Resolution is lexical and per file: the first name of a dotted expression is looked up in the
imports of the enclosing functions (innermost first), then the module's imports, then its own
top-level definitions, then `builtins`; `self.m`/`cls.m` resolve to methods of the enclosing class.
Local variables that shadow those names are not tracked.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from sgl_scan.analyzer.facts import (
    TEXT_LIMIT,
    AssignFact,
    CallFact,
    ClassFact,
    EnumMember,
    FileFacts,
    FunctionFact,
    ImportFact,
    Param,
)

ENUM_BASES = frozenset({"enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag", "enum.IntFlag", "enum.ReprEnum"})
_BUILTINS = frozenset(dir(builtins))

# (line, column, end_line), 1-based
Pos = tuple[int, int, int]


def module_name(path: str) -> str:
    """`sglang/srt/x/__init__.py` -> `sglang.srt.x`; `sglang/srt/y.py` -> `sglang.srt.y`."""
    parts = path[:-3].split("/") if path.endswith(".py") else path.split("/")
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(p for p in parts if p)


def normalize_text(text: str) -> str:
    text = " ".join(text.split())
    return text[:TEXT_LIMIT]


def slice_text(lines: Sequence[str], line: int, col0: int, end_line: int, end_col0: int) -> str:
    """Source between two positions (1-based lines, 0-based character columns), normalised."""
    if line == end_line:
        return normalize_text(lines[line - 1][col0:end_col0])
    parts = [lines[line - 1][col0:]]
    parts.extend(lines[line : end_line - 1])
    parts.append(lines[end_line - 1][:end_col0])
    return normalize_text("".join(parts))


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_OTHER_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")  # str.splitlines ends lines at these too


def split_lines(text: str) -> list[str]:
    """Lines as Python's tokenizer counts them (only \\n, \\r\\n and \\r end a line)."""
    if text.isascii():
        plain = not ("\v" in text or "\f" in text or "\x1c" in text or "\x1d" in text or "\x1e" in text)
    else:
        plain = _OTHER_BREAKS.search(text) is None
    return text.splitlines(True) if plain else _LINE.findall(text)  # the same lines when no other break occurs


def char_column(line: str, byte_col: int) -> int:
    """The 0-based character column of `ast`'s UTF-8 byte offset `byte_col` on `line`."""
    if line.isascii():
        return byte_col
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


@dataclass
class _Scope:
    kind: str  # "module" | "class" | "function"
    qualname: str
    pos: Pos = (0, 0, 0)
    name: str = ""
    owner: str | None = None  # class qualname for methods
    calls: list = field(default_factory=list)
    imports: dict = field(default_factory=dict)  # bound -> target (function scopes)
    methods: list = field(default_factory=list)
    attributes: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)


class Builder:
    """Collects one file's events; `finish()` returns the resolved `FileFacts`."""

    def __init__(self, path: str, sha256: str, source: str) -> None:
        self.path = path
        self.module = module_name(path)
        self.package = self.module if path.endswith("__init__.py") else self.module.rpartition(".")[0]
        self.sha256 = sha256
        self.source = source
        self._stack: list[_Scope] = [_Scope("module", "")]
        self._raw_imports: list[tuple] = []
        self._module_imports: dict[str, str] = {}
        self._module_defs: set[str] = set()
        self._classes: list[tuple[_Scope, dict]] = []
        self._functions: list[tuple[_Scope, dict]] = []
        self._assignments: list[tuple] = []
        self._class_methods: dict[str, set[str]] = {}
        self._all_names: list[str] | None = None
        self._where: tuple | None = None  # (function chain, context) of the current stack; None: not known yet

    # -- events --------------------------------------------------------------------------------
    @property
    def scope(self) -> _Scope:
        return self._stack[-1]

    def _function_chain(self) -> list[_Scope]:
        return self._whereabouts()[0]

    def _context(self) -> tuple:
        """A frozen view of where we are, for resolving names later."""
        return self._whereabouts()[1]

    def _whereabouts(self) -> tuple:
        """(enclosing functions innermost first, context): made once per scope change (open/close)."""
        if self._where is None:
            funcs = [s for s in reversed(self._stack) if s.kind == "function"]
            owner = None
            for s in funcs:
                if s.owner is not None:
                    owner = s.owner
                    break
            self._where = (funcs, (tuple(funcs), owner))
        return self._where

    def add_import(self, module: str | None, name: str | None, alias: str | None, level: int, pos: Pos) -> None:
        if level:
            base = self.package.split(".") if self.package else []
            up = level - 1
            if up > len(base):
                absolute = "." * (up - len(base) + 1) + (module or "")
            else:
                head = ".".join(base[: len(base) - up] if up else base)
                absolute = ".".join(p for p in (head, module) if p)
        else:
            absolute = module or ""
        if name is None:  # import a.b [as c]
            bound = alias or absolute.split(".")[0]
            target = absolute if alias else bound
        elif name == "*":
            bound, target = "*", f"{absolute}.*"
        else:
            bound = alias or name
            target = f"{absolute}.{name}" if absolute else name
        scope = self._function_chain()
        scope_name = scope[0].qualname if scope else ""
        if scope:
            scope[0].imports.setdefault(bound, target)
        elif bound != "*":
            self._module_imports.setdefault(bound, target)
        self._raw_imports.append((pos, absolute, name, alias, bound, target, level, scope_name))

    def open_function(
        self,
        name: str,
        pos: Pos,
        decorator_line: int,
        decorators: Sequence[tuple[str, bool]],
        params: Sequence[Param],
        returns: str | None,
        is_async: bool,
    ) -> None:
        parent = self.scope
        qualname = self._child_qualname(name)
        owner = parent.qualname if parent.kind == "class" else None
        if parent.kind == "class":
            parent.methods.append(name)
        if parent.kind == "module":
            self._module_defs.add(name)
        scope = _Scope("function", qualname, pos, name, owner)
        info = dict(
            decorator_line=decorator_line or pos[0],
            decorators=(tuple(decorators), self._context()),
            params=tuple(params),
            returns=returns,
            is_async=is_async,
        )
        self._functions.append((scope, info))
        self._stack.append(scope)
        self._where = None

    def open_class(
        self,
        name: str,
        pos: Pos,
        decorator_line: int,
        decorators: Sequence[tuple[str, bool]],
        bases: Sequence[tuple[str, bool]],
        keywords: Sequence[tuple[str, str, bool]],
    ) -> None:
        parent = self.scope
        qualname = self._child_qualname(name)
        if parent.kind == "module":
            self._module_defs.add(name)
        scope = _Scope("class", qualname, pos, name)
        context = self._context()
        info = dict(
            decorator_line=decorator_line or pos[0],
            decorators=(tuple(decorators), context),
            bases=(tuple(bases), context),
            keywords=(tuple(keywords), context),
        )
        self._classes.append((scope, info))
        self._stack.append(scope)
        self._where = None

    def close(self) -> None:
        scope = self._stack.pop()
        self._where = None
        if scope.kind == "class":
            self._class_methods[scope.qualname] = set(scope.methods)

    def _child_qualname(self, name: str) -> str:
        parent = self.scope
        if parent.kind == "module":
            return name
        if parent.kind == "class":
            return f"{parent.qualname}.{name}"
        return f"{parent.qualname}.<locals>.{name}"

    def add_call(self, callee: str, dotted: bool, pos: Pos, args: int, keywords: tuple[str, ...]) -> None:
        funcs = self._function_chain()
        target = funcs[0].calls if funcs else self._stack[0].calls
        target.append((pos, callee, dotted, args, keywords, self._context()))

    def add_assign(
        self,
        targets: Sequence[str],
        value: str | None,
        value_dotted: str | None,
        annotation: str | None,
        kind: str,
        pos: Pos,
        all_names: list[str] | None = None,
    ) -> None:
        scope = self.scope
        if scope.kind == "function":
            return
        record = (pos, tuple(targets), value, value_dotted, annotation, kind, self._context())
        if scope.kind == "module":
            self._assignments.append(record)
            for t in targets:
                if "." not in t:
                    self._module_defs.add(t)
            if all_names is not None and "__all__" in targets:
                if kind == "augassign" and self._all_names is not None:
                    self._all_names.extend(all_names)
                elif kind != "augassign":
                    self._all_names = list(all_names)
        else:
            scope.attributes.append(record)

    # -- resolution ----------------------------------------------------------------------------
    def resolve(self, dotted: str, context: tuple) -> str | None:
        func_chain, owner = context
        head, _, rest = dotted.partition(".")
        if head in ("self", "cls"):
            if owner is None or not rest:
                return None
            member = rest.split(".")[0]
            if member in self._class_methods.get(owner, ()):
                return f"{self.module}.{owner}.{rest}"
            return None
        target = None
        for scope in func_chain:
            found = scope.imports.get(head)
            if found is not None:
                target = found
                break
        if target is None:
            target = self._module_imports.get(head)
        if target is None and head in self._module_defs:
            target = f"{self.module}.{head}" if self.module else head
        if target is None and head in _BUILTINS:
            target = f"builtins.{head}"
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    def _names(self, items: tuple) -> tuple[str, ...]:
        written, context = items
        return tuple((self.resolve(text, context) or text) if dotted else text for text, dotted in written)

    def _calls(self, raw: list) -> tuple[CallFact, ...]:
        out = [
            CallFact(
                line=p[0],
                column=p[1],
                end_line=p[2],
                callee=callee,
                resolved=self.resolve(callee, ctx) if dotted else None,
                args=args,
                keywords=kws,
            )
            for p, callee, dotted, args, kws, ctx in raw
        ]
        out.sort(key=lambda c: (c.line, c.column, c.end_line, c.callee))
        return tuple(out)

    def _assigns(self, raw: list) -> list[AssignFact]:
        out = []
        for pos, targets, value, value_dotted, annotation, kind, ctx in raw:
            value_name = self.resolve(value_dotted, ctx) if value_dotted else None
            for t in targets:
                out.append(
                    AssignFact(
                        line=pos[0],
                        column=pos[1],
                        end_line=pos[2],
                        target=t,
                        value=value,
                        value_name=value_name,
                        annotation=annotation,
                        kind=kind,
                    )
                )
        return out

    def finish(self, *, parser: str, extras: dict | None = None) -> FileFacts:
        while len(self._stack) > 1:
            self.close()
        all_names = tuple(self._all_names) if self._all_names is not None else None
        exported = set(all_names or ())
        imports = tuple(
            ImportFact(
                line=pos[0],
                column=pos[1],
                end_line=pos[2],
                module=absolute,
                name=name,
                alias=alias,
                bound=bound,
                target=target,
                level=level,
                scope=scope,
                reexport=not scope and (bound in exported or (alias is not None and alias == (name or absolute))),
            )
            for pos, absolute, name, alias, bound, target, level, scope in self._raw_imports
        )
        functions = tuple(
            FunctionFact(
                line=s.pos[0],
                column=s.pos[1],
                end_line=s.pos[2],
                qualname=s.qualname,
                name=s.name,
                params=info["params"],
                decorators=self._names(info["decorators"]),
                calls=self._calls(s.calls),
                owner=s.owner,
                is_async=info["is_async"],
                returns=info["returns"],
                decorator_line=info["decorator_line"],
            )
            for s, info in self._functions
        )
        classes = []
        for s, info in self._classes:
            bases = self._names(info["bases"])
            kw_written, ctx = info["keywords"]
            keywords = {k: ((self.resolve(v, ctx) or v) if dotted else v) for k, v, dotted in kw_written}
            attributes = tuple(self._assigns(s.attributes))
            enum_base = next((b for b in bases if b in ENUM_BASES), None)
            members: tuple[EnumMember, ...] = ()
            if enum_base:
                members = tuple(
                    EnumMember(line=a.line, column=a.column, end_line=a.end_line, name=a.target, value=a.value)
                    for a in attributes
                    if a.value is not None
                    and a.kind != "augassign"
                    and "." not in a.target
                    and not (a.target.startswith("_") and a.target.endswith("_"))
                )
            classes.append(
                ClassFact(
                    line=s.pos[0],
                    column=s.pos[1],
                    end_line=s.pos[2],
                    qualname=s.qualname,
                    name=s.name,
                    bases=bases,
                    keywords=keywords,
                    decorators=self._names(info["decorators"]),
                    methods=tuple(s.methods),
                    attributes=attributes,
                    enum_members=members,
                    enum_base=enum_base,
                    decorator_line=info["decorator_line"],
                )
            )
        return FileFacts(
            path=self.path,
            module=self.module,
            sha256=self.sha256,
            imports=imports,
            classes=tuple(classes),
            functions=functions,
            assignments=tuple(self._assigns(self._assignments)),
            extras=found_records(extras),
            module_calls=self._calls(self._stack[0].calls),
            all_names=all_names,
            source=parser,
        )


def found_records(extras: Mapping[str, tuple] | None) -> dict[str, tuple]:
    """Extractor name -> records, without the extractors that found none: a file whose words set an
    extractor's trigger off and one whose words did not hold the same records (`FileFacts.extras`)."""
    return {name: records for name, records in (extras or {}).items() if records}
