"""What runs before the `--speculative-algorithm` value is normalised (upper-cased, aliases resolved).

Read from the code of each release, in whatever form it has:

* the *normaliser* is a function that resolves aliases: it calls an alias resolver (a function that
  maps `NEXTN`/`EAGLE` and returns every other name unchanged, `extractors/aliases.py`) or holds an
  alias assignment (`if algo == "NEXTN": algo = "EAGLE"`);
* a *pipeline* is a function that runs the normaliser as one of its steps, by calling it
  (`handle_speculative_decoding(self)`, 0.5.16) or by handing it to a runner
  (`run_hook(handle_speculative_decoding, server_args)`, 0.5.17+): its steps before that one run on
  the raw value;
* what those steps run is followed through calls, functions handed as arguments
  (`run_post_process_pass(server_args, fn)`), and registries (a decorator that appends the function
  to a module-level container that a function reached here loops over: the model-override
  providers of `_MODEL_OVERRIDE_FNS`).

`raw_before_normalisation(analysis)` maps each string dispatch site in that code to a one-line reason.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import chain
from operator import itemgetter
from typing import Any, Iterable

from sgl_scan.analyzer.extractors.sequence import FunctionRefs
from sgl_scan.analyzer.model import Analysis, Location
from sgl_scan.analyzer.query import (
    files_by_module,
    files_with_records,
    module_splits,
    projected,
    projected_mentioning,
    records_in_passing,
)
from sgl_scan.analyzer.kinds import Via

SEQUENCE = "spec_call_sequence"
MAX_DEPTH = 8


def _short(name: str) -> str:
    return name.rpartition(".")[2]


def _records(analysis: Analysis) -> list[tuple[str, FunctionRefs]]:
    out: list[tuple[str, FunctionRefs]] = []
    for path in files_with_records(analysis, ["FunctionRefs"]):
        extras = records_in_passing(analysis, path)
        out.extend((path, r) for r in extras.get(SEQUENCE, ()) if isinstance(r, FunctionRefs))
    return out


def _resolver_functions(analysis: Analysis) -> set[str]:
    from sgl_scan.analyzer.extractors.records import AliasResolver

    found: set[str] = set()
    for path in files_with_records(analysis, ["AliasResolver"]):
        for records in records_in_passing(analysis, path).values():
            found.update(r.function for r in records if isinstance(r, AliasResolver))
    return found


_NAME = itemgetter(1)  # a ref's name


def _named(records: Iterable[tuple[str, FunctionRefs]], targets: set[str]) -> set[str]:
    """The names the records' refs hold that are one of `targets` or end with one's last part."""
    shorts = {_short(t) for t in targets}
    ends = tuple(f".{short}" for short in shorts)
    names = set(chain.from_iterable(map(_NAME, record.refs) for _path, record in records))
    return {name for name in names if name in targets or name in shorts or name.endswith(ends)}


def normalisers(analysis: Analysis, records: Iterable[tuple[str, FunctionRefs]]) -> set[str]:
    """Functions that resolve the algorithm's aliases (qualified names)."""
    records = list(records)
    resolvers = _resolver_functions(analysis)
    calling = _named(records, resolvers)
    out = {site.function for site in analysis.inventory.dispatch_sites if site.resolves_alias}
    for _path, record in records:
        if record.function not in resolvers and not calling.isdisjoint(map(_NAME, record.refs)):
            out.add(record.function)
    return out


def raw_before_normalisation(analysis: Analysis) -> dict[Location, str]:
    """String dispatch sites in code that runs before the normaliser, with the reason in words."""
    strings = [s for s in analysis.inventory.dispatch_sites if s.via == Via.STRING and not s.resolves_alias]
    if not strings:
        return {}
    records = _records(analysis)
    by_function = {r.function: (p, r) for p, r in records}
    normal = normalisers(analysis, records)
    if not normal:
        return {}
    calling = _named(records, normal)
    early: dict[str, str] = {}  # function -> why it runs before
    for path, record in records:
        if record.function in normal or calling.isdisjoint(map(_NAME, record.refs)):
            continue
        at, step_n = next((line, name) for line, name in record.refs if name in calling)
        for line, name in record.refs:
            if line < at:
                early.setdefault(name, f"`{_short(name)}` runs at {path}:{line}, before `{_short(step_n)}` at :{at}")
    if not early:
        return {}
    registries = _registries(analysis, records)
    reached: dict[str, str] = {}
    calls, prefetch = _calls(analysis)
    level = list(early.items())
    for _depth in range(MAX_DEPTH + 1):  # breadth first, one level at a time: its files are read together
        level = [(name, why) for name, why in level if name not in reached and name not in normal]
        prefetch(name for name, _why in level if name not in by_function)
        following: list[tuple[str, str]] = []
        for name, why in level:
            if name in reached:
                continue
            reached[name] = why
            found = by_function.get(name)
            nexts = [n for _l, n in found[1].refs] if found else list(calls(name))
            if found:
                for container in found[1].iterates:
                    nexts.extend(registries.get(container, ()))
            following.extend((other, why) for other in nexts)
        level = following
    out = {}
    for site in strings:
        reason = reached.get(site.function)
        if reason is not None:
            out[site.location] = reason
    return out


def _calls(analysis: Analysis):
    """(name -> the resolved callees of that function, from the general facts read on demand;
    names -> read the files defining them now, together)."""
    modules = files_by_module(analysis)

    def split(name: str) -> tuple[str, str] | None:
        return next(module_splits(modules, name), None)

    tables: dict[str, Any] = {}  # module -> its `callee_table`, read by key (its facts are not kept)

    def callees(name: str) -> list[str]:
        found = split(name)
        if found is None:
            return []
        module, qualname = found
        if module not in tables:
            tables[module] = projected(analysis, modules.path_of(module), callee_table)
        return list(tables[module].get(qualname, ()))

    def prefetch(names: Iterable[str]) -> None:
        read = getattr(analysis.files, "prefetch", None)
        if read is not None:
            read({modules.path_of(found[0]) for found in map(split, names) if found is not None})

    return callees, prefetch


def callee_table(facts) -> dict[str, tuple[str, ...]]:
    """function qualname -> its resolved callees, of one file (the first of a repeated name)."""
    table: dict[str, tuple[str, ...]] = {}
    for function in facts.functions:
        table.setdefault(function.qualname, tuple(c.resolved for c in function.calls if c.resolved))
    return table


def registered(facts, registrars: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(registrar, function) for each function of `facts` decorated with one of `registrars` (by its
    qualified name, else its last part). Empty for facts that mention none of their last parts."""
    shorts = {_short(n): n for n in registrars}
    names = set(registrars)
    found = []
    for function in facts.functions:
        for decorator in function.decorators:
            registrar = decorator if decorator in names else shorts.get(_short(decorator))
            if registrar is not None:
                found.append((registrar, f"{facts.module}.{function.qualname}"))
    return tuple(found)


def _registries(analysis: Analysis, records: list[tuple[str, FunctionRefs]]) -> dict[str, list[str]]:
    """container -> the functions decorated with a registrar that appends to it, for the containers
    some function loops over (only those are followed; a registrar of any other container, such as a
    `forward` that stashes buffers, would only cost the reading of every file that names it)."""
    iterated = {container for _path, record in records for container in record.iterates}
    appends: dict[str, set[str]] = defaultdict(set)
    refs: dict[str, list[str]] = {}
    for _path, record in records:
        appends[record.function].update(c for c in record.appends if c in iterated)
        refs[record.function] = [name for _l, name in record.refs]
    inner: dict[str, list[str]] = defaultdict(list)
    for name in list(refs):
        head, sep, _tail = name.partition(".<locals>.")
        if sep:
            inner[head].append(name)

    def registers(name: str, seen: set[str]) -> set[str]:
        if name in seen:
            return set()
        seen.add(name)
        out = set(appends.get(name, ()))
        for part in (name, *inner.get(name, ())):
            out |= appends.get(part, set())
            for callee in refs.get(part, ()):
                if callee in refs:
                    out |= registers(callee, seen)
        return out

    outer = {name for name in refs if ".<locals>." not in name} | set(inner)
    registrars = {name: registers(name, set()) for name in outer}
    registrars = {name: found for name, found in registrars.items() if found}
    out: dict[str, list[str]] = defaultdict(list)
    if not registrars:
        return out
    shorts = sorted({_short(n) for n in registrars})
    for _path, found in projected_mentioning(analysis, shorts, registered, (tuple(sorted(registrars)),)):
        for registrar, function in found:
            for container in registrars[registrar]:
                out[container].append(function)
    return out


__all__ = ["normalisers", "raw_before_normalisation"]
