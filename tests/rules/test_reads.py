"""`rules/reads.py`: every kind of read is logged, and `holds` rejects a log any of whose reads gives
another value on the changed files (each check on its own, so removing one fails its test)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sgl_scan.rules.reads import LoggedFiles, ReadLog, holds


def table(facts) -> dict:
    return dict(facts.table)


def calls_of(facts, names: tuple[str, ...]) -> tuple:
    return tuple(call for call in facts.calls if call in names)


class Files(dict):
    """path -> facts (a `SimpleNamespace`), with the `LazyFiles` calls `LoggedFiles` and `holds` make;
    facts and source mention a word when their `words` hold it."""

    def peek(self, path):
        return self[path]

    def records(self, path):
        return {}

    def paths_with_records(self, kinds):
        return list(self)

    def prefetch(self, paths):
        pass

    def mentions(self, path, words):
        return any(word in self[path].words for word in words)

    def paths_mentioning(self, words):
        return [path for path in self if self.mentions(path, words)]

    def source_mentioning(self, words, paths=None):
        return [path for path in (self if paths is None else paths) if self.mentions(path, words)]


def _facts(table=None, calls=(), words=()):
    return SimpleNamespace(table=table or {}, calls=tuple(calls), words=set(words) | set(calls))


def _tree(**changes) -> Files:
    base = {
        "a.py": _facts(table={"f": ("g",), "h": ("i",)}, words={"flag"}),
        "b.py": _facts(calls=("need_topk",)),
        "c.py": _facts(),
        "d.py": _facts(),
    }
    base.update(changes)
    return Files(base)


def _log(files: Files) -> ReadLog:
    """Every kind of read, of the tree `files`."""
    log = ReadLog()
    logged = LoggedFiles(files, log)
    assert logged.project("a.py", table).get("f") == ("g",)
    assert logged.project_mentioning(["need_topk"], calls_of, (("need_topk",),)) == [("b.py", ("need_topk",))]
    assert logged.source_mentioning(["flag"]) == ["a.py"]
    assert logged.paths_mentioning(["other"]) == []
    logged.peek("c.py")
    return log


def test_every_kind_of_read_is_logged():
    log = _log(_tree())
    assert log.files == {"c.py"}
    assert log.projections == {(table, "a.py", "f"): ("g",)}
    assert log.maps == {(("need_topk",), calls_of, (("need_topk",),)): {"b.py": ("need_topk",)}}
    assert log.searches == {("source", ("flag",)): frozenset({"a.py"}), ("facts", ("other",)): frozenset()}


def test_getitem_is_a_whole_file_read():
    log = ReadLog()
    LoggedFiles(_tree(), log)["a.py"]
    assert log.files == {"a.py"}


# (the changed file's new facts, whether the log still holds)
CASES = {
    "nothing read changed": ("a.py", _facts(table={"f": ("g",), "h": ("other",)}, words={"flag"}), True),
    "a key read changed": ("a.py", _facts(table={"f": ("x",)}, words={"flag"}), False),
    "a mapped value changed": ("b.py", _facts(calls=("need_topk", "need_topk")), False),
    "a mapped file gained a value": ("d.py", _facts(calls=("need_topk",)), False),
    "a source search found another file": ("b.py", _facts(calls=("need_topk",), words={"flag"}), False),
    "a facts search found another file": ("b.py", _facts(calls=("need_topk",), words={"other"}), False),
    "a file read whole changed": ("c.py", _facts(words={"unrelated"}), False),
    "a file not read changed": ("d.py", _facts(words={"unrelated"}), True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_holds_only_when_every_read_gives_the_same_value(case):
    path, facts, expected = CASES[case]
    log = _log(_tree())
    assert holds(log, _tree(**{path: facts}), {path}) is expected


def test_nothing_changed_always_holds():
    assert holds(_log(_tree()), _tree(), set())


def test_a_search_that_could_not_be_told_never_holds():
    log = _log(_tree())
    log.searches[("source", ("x",))] = None
    assert not holds(log, _tree(), {"c.py"})
