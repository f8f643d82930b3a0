"""Per-file facts: frozen, picklable records of what one Python file defines, imports and calls.

Facts depend only on a file's path and bytes (never on which other files are analysed), so they are
cached by content hash. Positions are 1-based lines and 1-based columns counted in characters; every
record carries `line`, `column` and `end_line`. Names are qualified as Python would: `qualname` is
the `__qualname__` inside the module (`Outer.method`, `f.<locals>.inner`); `resolved` fields are fully
qualified dotted names reached through the file's imports and own definitions (`None` when unknown).
Expression texts are the source slice with whitespace runs collapsed to one space, cut at
`TEXT_LIMIT` characters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from sgl_scan.analyzer.model import Location, ParseError

TEXT_LIMIT = 200


@dataclass(frozen=True)
class Span:
    """Where a record sits in its file."""

    line: int
    column: int
    end_line: int

    def location(self, path: str) -> Location:
        return Location(path, self.line, self.column, self.end_line)


@dataclass(frozen=True)
class ImportFact(Span):
    """One name bound by an import statement (`import a.b`, `from .x import y as z`).

    `module` is the absolute module imported from (relative imports resolved against the file's
    package); `name` the imported name (`None` for `import a.b`; `"*"` for a star import); `bound`
    the local name the statement binds (`a` for `import a.b`); `target` the qualified name that
    `bound` refers to. `scope` is the qualname of the enclosing function ("" at module level).
    `reexport` is true for module-level imports listed in `__all__` or written `import y as y`.
    """

    module: str
    name: str | None
    alias: str | None
    bound: str
    target: str
    level: int = 0
    scope: str = ""
    reexport: bool = False


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "posonly" | "positional" | "vararg" | "kwonly" | "varkw"
    annotation: str | None = None  # expression text
    default: str | None = None  # expression text


@dataclass(frozen=True)
class CallFact(Span):
    """A call. `callee` is the callee as written: a dotted name (`self.spec_algorithm.is_eagle`) or,
    for other expressions, their text. `resolved` follows the first name through imports, module
    definitions, builtins and `self`/`cls` (methods of the enclosing class)."""

    callee: str
    resolved: str | None
    args: int = 0  # positional arguments (including *args)
    keywords: tuple[str, ...] = ()  # keyword names in order ("**" for **kwargs)


@dataclass(frozen=True)
class AssignFact(Span):
    """An assignment statement (`x = v`, `x: T = v`, `x += v`), one record per target name.

    `target` is the dotted target as written; `value` the value's text (None for a bare
    annotation); `value_name` the qualified name when the value is a dotted name
    (`add_load_format_choices = LOAD_FORMAT_CHOICES.extend` gives
    `<module>.LOAD_FORMAT_CHOICES.extend`); `kind` is "assign" | "annassign" | "augassign".
    """

    target: str
    value: str | None
    value_name: str | None = None
    annotation: str | None = None
    kind: str = "assign"


@dataclass(frozen=True)
class EnumMember(Span):
    name: str
    value: str  # the value's text, e.g. "auto()" or "1"


@dataclass(frozen=True)
class FunctionFact(Span):
    """A function or method. The span runs from `def` (or `async`) to the end of the body;
    `decorator_line` is the first decorator's line (== `line` without decorators)."""

    qualname: str
    name: str
    params: tuple[Param, ...]
    decorators: tuple[str, ...]  # dotted decorator names, resolved where possible (calls stripped)
    calls: tuple[CallFact, ...]  # calls in this function's own body, not in nested defs/classes
    owner: str | None = None  # qualname of the class when this is a method
    is_async: bool = False
    returns: str | None = None  # return annotation text
    decorator_line: int = 0


@dataclass(frozen=True)
class ClassFact(Span):
    """A class. `bases` are resolved qualified names where possible, else the text as written."""

    qualname: str
    name: str
    bases: tuple[str, ...]
    keywords: Mapping[str, str]  # class keywords, e.g. {"metaclass": "<resolved name>"}
    decorators: tuple[str, ...]
    methods: tuple[str, ...]  # method names in order
    attributes: tuple[AssignFact, ...]  # class-body assignments in order
    enum_members: tuple[EnumMember, ...] = ()  # for classes deriving from enum.* directly
    enum_base: str | None = None  # "enum.IntEnum", ... when the class is such an enum
    decorator_line: int = 0


@dataclass(frozen=True)
class FileFacts:
    """Everything known about one file. A file that does not parse has only `parse_error`; a file
    an extractor failed on has its general facts, no extractor records, and that failure as
    `parse_error`."""

    path: str  # relative to the tree, e.g. "sglang/srt/speculative/spec_info.py"
    module: str  # dotted module name
    sha256: str
    imports: tuple[ImportFact, ...] = ()
    classes: tuple[ClassFact, ...] = ()
    functions: tuple[FunctionFact, ...] = ()
    assignments: tuple[AssignFact, ...] = ()  # module level (also inside module-level if/try/with)
    extras: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)  # extractor name -> records
    parse_error: ParseError | None = None
    module_calls: tuple[CallFact, ...] = ()  # calls outside any function (module and class bodies)
    all_names: tuple[str, ...] | None = None  # literal `__all__`, when the module defines one
    source: str = ""  # which parser produced the facts: "ast" | "cst" ("" when it did not parse)

    def location(self, span: Span) -> Location:
        return span.location(self.path)
