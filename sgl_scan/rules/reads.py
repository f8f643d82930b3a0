"""What the rules read of an analysis's files, at the grain their findings depend on.

`LoggedFiles` stands in for `analysis.files` while the rules run and writes a `ReadLog`:

* a file's facts read whole (`files[path]`, `peek`): the findings may depend on any of them;
* a *projection* of a file's facts (`project`): a module-level function `table(facts)` returning a
  mapping, and the keys read from it (the callees of one function, the methods of one class);
* a projection over every file that may mention some words (`project_mentioning`): `fn(facts, *args)`
  for each such file, where `fn` must give an empty value for facts that mention none of the words;
* a word search over the facts (`paths_mentioning`) or over the source (`source_mentioning`): the
  paths it found.

Extractor records, the files with records (`records`, `paths_with_records`) and the inventory are
not logged: they are named by the files' records key, which the memo's name holds, as it holds the
set of paths. `holds` tells whether the same rules on another tree with that key and those paths
would read the same values: it reads only the files whose content changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence

Table = Callable[[Any], Mapping[Hashable, Any]]  # facts -> a mapping one key of which is read


@dataclass
class ReadLog:
    """The reads of one rules run (module docstring)."""

    files: set[str] = field(default_factory=set)
    projections: dict[tuple[Table, str, Hashable], Any] = field(default_factory=dict)
    maps: dict[tuple[tuple[str, ...], Callable[..., Any], tuple], dict[str, Any]] = field(default_factory=dict)
    searches: dict[tuple[str, tuple[str, ...]], frozenset[str] | None] = field(default_factory=dict)


class LoggedFiles(Mapping[str, Any]):
    """`files` (a `LazyFiles`), every read written to `log`."""

    def __init__(self, files: Any, log: ReadLog) -> None:
        self._files, self.log = files, log

    def __getitem__(self, path: str) -> Any:
        facts = self._files[path]
        self.log.files.add(path)
        return facts

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def __contains__(self, path: object) -> bool:
        return path in self._files

    def peek(self, path: str) -> Any:
        facts = self._files.peek(path)
        self.log.files.add(path)
        return facts

    def records(self, path: str) -> Mapping[str, tuple]:
        return self._files.records(path)

    def paths_with_records(self, kinds: Sequence[str]) -> list[str]:
        return self._files.paths_with_records(kinds)

    def prefetch(self, paths: Iterable[str]) -> None:
        self._files.prefetch(paths)

    def paths_mentioning(self, words: Sequence[str]) -> list[str]:
        found = self._files.paths_mentioning(words)
        self.log.searches[("facts", tuple(words))] = frozenset(found)
        return found

    def source_mentioning(self, words: Sequence[str]) -> list[str] | None:
        found = self._files.source_mentioning(words)
        self.log.searches[("source", tuple(words))] = None if found is None else frozenset(found)
        return found

    def project(self, path: str, table: Table) -> "_LoggedTable":
        """`table(facts of path)`, each key read from it logged (`ReadLog.projections`)."""
        made = table(self._files.peek(path))
        return _LoggedTable(made, table, path, self.log)

    def project_mentioning(
        self, words: Sequence[str], fn: Callable[..., Any], args: tuple = ()
    ) -> list[tuple[str, Any]]:
        """(path, `fn(facts, *args)`) of each file that may mention one of `words`."""
        paths = self._files.paths_mentioning(words)
        self._files.prefetch(paths)
        found = [(path, fn(self._files.peek(path), *args)) for path in paths]
        self.log.maps[(tuple(words), fn, args)] = {path: value for path, value in found if value}
        return found


class _LoggedTable:
    """A projection's mapping, read by key only; each key read is logged with its value."""

    def __init__(self, made: Mapping[Hashable, Any], table: Table, path: str, log: ReadLog) -> None:
        self._made, self._table, self._path, self._log = made, table, path, log

    def get(self, key: Hashable, default: Any = None) -> Any:
        value = self._made.get(key)
        self._log.projections[(self._table, self._path, key)] = value
        return default if value is None else value


def holds(log: ReadLog, files: Any, changed: Collection[str]) -> bool:
    """Whether the reads in `log` give the same values on `files` (a `LazyFiles` with the same paths
    and records key as the run that wrote it), whose files differ from that run's only in `changed`."""
    if not changed:
        return True
    if not log.files.isdisjoint(changed):
        return False
    tables: dict[tuple[Table, str], Mapping[Hashable, Any]] = {}
    for (table, path, key), value in log.projections.items():
        if path in changed:
            made = tables.get((table, path))
            if made is None:
                made = tables[(table, path)] = table(files.peek(path))
            if made.get(key) != value:
                return False
    for (words, fn, args), values in log.maps.items():
        for path in changed:
            now = fn(files.peek(path), *args) if files.mentions(path, words) else None
            if (now or None) != values.get(path):
                return False
    for (kind, words), found in log.searches.items():
        if found is None:
            return False  # could not be told then; may be now
        if kind == "facts":
            now = {path for path in changed if files.mentions(path, words)}
        else:
            seen = files.source_mentioning(words, sorted(changed))
            if seen is None:
                return False
            now = set(seen)
        if now != found.intersection(changed):
            return False
    return True


__all__ = ["LoggedFiles", "ReadLog", "holds"]
