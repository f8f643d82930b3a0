"""The analyzer's query API: one place to ask the per-file facts about classes, methods and modules.

Rules and codegen read the same answers from here: the file of a module, a class by qualified name,
a method of a class or of its bases (in the snapshot), a function's signature, the class a bare name
in a file refers to (through imports and re-exports), and every method a class offers through its
bases. Modules are mapped from paths (`sglang/srt/x.py` -> `sglang.srt.x`), so asking for one file
unpickles only that file's facts (a warm scan keeps facts lazy).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Container, Iterator, Mapping, Sequence, cast

from sgl_scan.analyzer.builder import module_name
from sgl_scan.analyzer.facts import ClassFact, FileFacts, FunctionFact, Param
from sgl_scan.analyzer.model import Analysis, Location


@dataclass(frozen=True)
class Signature:
    """A function's parameters (without `self`/`cls`) and where it is defined."""

    name: str
    params: tuple[Param, ...]
    location: Location

    @property
    def accepts_any_keyword(self) -> bool:
        return any(p.kind == "varkw" for p in self.params)


class ModuleFiles(Mapping[str, FileFacts]):
    """module name -> FileFacts of an analysis, each file's facts read only when asked for."""

    def __init__(self, files: Mapping[str, FileFacts]) -> None:
        self._files = files
        self._paths = {module_name(path): path for path in files}

    def __getitem__(self, module: str) -> FileFacts:
        return self._files[self._paths[module]]

    def path_of(self, module: str) -> str:
        return self._paths[module]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, module: object) -> bool:
        return module in self._paths


def files_by_module(analysis: Analysis) -> ModuleFiles:
    """The analysis's files by dotted module name (kept on the files mapping when it takes attributes)."""
    files = analysis.files
    cached = getattr(files, "by_module", None)
    if cached is None:
        cached = ModuleFiles(files)
        try:
            files.by_module = cached  # type: ignore[attr-defined]
        except AttributeError:  # a plain dict
            pass
    return cached


def files_mentioning(analysis: Analysis, words: Sequence[str]) -> list[str]:
    """Paths whose facts may mention one of `words` (a superset: every path when that cannot be told
    cheaply). Lets a whole-program check skip unpickling the facts of files that cannot matter."""
    files = analysis.files
    narrow = getattr(files, "paths_mentioning", None)
    return list(narrow(words)) if narrow is not None else list(files)


def files_with_records(analysis: Analysis, kinds: Sequence[str]) -> list[str]:
    """Paths whose facts may hold extractor records of the classes named `kinds` (a superset, as
    `files_mentioning`; files whose facts were left unwalked hold none and are not read)."""
    files = analysis.files
    narrow = getattr(files, "paths_with_records", None) or getattr(files, "paths_mentioning", None)
    return list(narrow(kinds)) if narrow is not None else list(files)


def facts_in_passing(analysis: Analysis, path: str) -> FileFacts:
    """`analysis.files[path]`, not kept in memory when it had to be unpickled (`LazyFiles.peek`): for
    whole-tree passes that read each file's records once."""
    files = analysis.files
    peek = getattr(files, "peek", None)
    return peek(path) if peek is not None else files[path]


def facts_mentioning(analysis: Analysis, words: Sequence[str]) -> Iterator[tuple[str, FileFacts]]:
    """(path, facts) of the files that may mention one of `words` (`files_mentioning`), read in passing;
    files whose facts are still to be walked are walked together first (a pool when they are many)."""
    paths = files_mentioning(analysis, words)
    prefetch = getattr(analysis.files, "prefetch", None)
    if prefetch is not None:
        prefetch(paths)
    for path in paths:
        yield path, facts_in_passing(analysis, path)


def projected(analysis: Analysis, path: str, table: Callable[[FileFacts], Mapping[Any, Any]]) -> Any:
    """`table(facts of path)`, to be read by key (`.get`): a mapping made from a file's facts (function
    -> its callees, class -> its methods). `table` is a module-level function; the keys a rule reads
    are all its findings depend on of that file (`rules/reads.py`), so an edit elsewhere in the file
    keeps them."""
    project = getattr(analysis.files, "project", None)
    if project is not None:
        return project(path, table)
    return table(facts_in_passing(analysis, path))


def projected_mentioning(
    analysis: Analysis, words: Sequence[str], fn: Callable[..., Any], args: tuple = ()
) -> list[tuple[str, Any]]:
    """(path, `fn(facts, *args)`) for the files that may mention one of `words` (`files_mentioning`).
    `fn` is a module-level function whose value is empty (falsy) for facts mentioning none of them."""
    project = getattr(analysis.files, "project_mentioning", None)
    if project is not None:
        return project(words, fn, args)
    return [(path, fn(facts, *args)) for path, facts in facts_mentioning(analysis, words)]


def records_in_passing(analysis: Analysis, path: str) -> Mapping[str, tuple]:
    """The extractor records of `path` (`FileFacts.extras`), read without walking or keeping the rest
    of its facts where the facts allow (`LazyFiles.records`)."""
    records = getattr(analysis.files, "records", None)
    if records is not None:
        return cast("Mapping[str, tuple]", records(path))
    return facts_in_passing(analysis, path).extras or {}


def module_splits(modules: Container[str], dotted: str) -> Iterator[tuple[str, str]]:
    """(module, the rest) for each leading part of a dotted name that is one of `modules`, longest
    first: `a.b.C.f` -> (`a.b`, `C.f`), then (`a`, `b.C.f`)."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        if module in modules:
            yield module, ".".join(parts[cut:])


def find_class(
    analysis: Analysis, qualname: str, modules: Mapping[str, FileFacts] | None = None
) -> tuple[FileFacts, ClassFact] | None:
    """The file and class fact of a fully qualified class name (module prefix + class qualname)."""
    modules = modules if modules is not None else files_by_module(analysis)
    for module, inner in module_splits(modules, qualname):
        facts = modules[module]
        for cls in facts.classes:
            if cls.qualname == inner:
                return facts, cls
    return None


def method(facts: FileFacts, cls: ClassFact, name: str) -> FunctionFact | None:
    """The method `name` defined in the body of `cls` itself."""
    return next((f for f in facts.functions if f.owner == cls.qualname and f.name == name), None)


def signature(facts: FileFacts, fn: FunctionFact) -> Signature:
    params = fn.params
    if fn.owner and params and params[0].name in ("self", "cls") and params[0].kind in ("positional", "posonly"):
        params = params[1:]
    return Signature(fn.name, tuple(params), facts.location(fn))


def find_method(
    analysis: Analysis, facts: FileFacts, cls: ClassFact, name: str, _seen: frozenset = frozenset()
) -> tuple[FileFacts, FunctionFact] | None:
    """A method of `cls` or of the first base in the snapshot that defines it (MRO order, simplified)."""
    found = method(facts, cls, name)
    if found is not None:
        return facts, found
    for base in cls.bases:
        if base in _seen:
            continue
        hit = find_class(analysis, base)
        if hit is not None:
            result = find_method(analysis, hit[0], hit[1], name, _seen | {base})
            if result is not None:
                return result
    return None


def class_table(facts: FileFacts) -> dict[str, tuple[ClassFact, tuple[FunctionFact, ...]]]:
    """class qualname -> (its fact, the methods defined in its body), of one file (`projected`)."""
    methods: dict[str, list[FunctionFact]] = {}
    for fn in facts.functions:
        if fn.owner is not None:
            methods.setdefault(fn.owner, []).append(fn)
    table: dict[str, tuple[ClassFact, tuple[FunctionFact, ...]]] = {}
    for cls in facts.classes:
        table.setdefault(cls.qualname, (cls, tuple(methods.get(cls.qualname, ()))))
    return table


def class_methods(analysis: Analysis, qualname: str) -> tuple[dict[str, tuple[str, FunctionFact]], tuple[str, ...]]:
    """Every method a class offers, its own and its bases' (nearest first), each with the module that
    defines it, and the bases that are not in the snapshot (whose methods are unknown: `object` and
    other builtins are not listed). Reads only those classes of their files (`class_table`)."""
    found: dict[str, tuple[str, FunctionFact]] = {}
    outside: list[str] = []
    modules = files_by_module(analysis)
    queue, seen = [qualname], set()
    while queue:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        hit = _class_entry(analysis, modules, name)
        if hit is None:
            if name not in ("object", "builtins.object") and name != qualname:
                outside.append(name)
            continue
        module, (cls, methods) = hit
        for fn in methods:
            found.setdefault(fn.name, (module, fn))
        queue.extend(cls.bases)
    return found, tuple(outside)


def _class_entry(
    analysis: Analysis, modules: ModuleFiles, qualname: str
) -> tuple[str, tuple[ClassFact, tuple[FunctionFact, ...]]] | None:
    """(module, `class_table` entry) of a fully qualified class name, as `find_class` finds it."""
    for module, inner in module_splits(modules, qualname):
        entry = projected(analysis, modules.path_of(module), class_table).get(inner)
        if entry is not None:
            return module, entry
    return None


def resolve_class(analysis: Analysis, facts: FileFacts, name: str, hops: int = 4) -> tuple[FileFacts, ClassFact] | None:
    """The class a bare name in `facts` refers to: defined there, or imported (following re-exports)."""
    if not name.isidentifier():
        return None
    local = next((c for c in facts.classes if c.qualname == name), None)
    if local is not None:
        return facts, local
    imp = next((i for i in facts.imports if i.bound == name and not i.scope), None)
    if imp is None or hops == 0:
        return None
    hit = find_class(analysis, imp.target)
    if hit is not None:
        return hit
    module, _, attr = imp.target.rpartition(".")
    source = files_by_module(analysis).get(module)
    return resolve_class(analysis, source, attr, hops - 1) if source is not None else None


__all__ = [
    "ModuleFiles",
    "Signature",
    "class_methods",
    "class_table",
    "files_by_module",
    "files_mentioning",
    "find_class",
    "find_method",
    "method",
    "module_splits",
    "projected",
    "projected_mentioning",
    "resolve_class",
    "signature",
]
