"""Small helpers every reporter shares: ordering, counts, the snapshot header, source excerpts."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Iterable, Mapping, NamedTuple, Sequence

from sgl_scan.analyzer.model import SpecInventory, loc_key, short_name, worker_choice  # noqa: F401  (shared by every reporter)
from sgl_scan.rules.finding import (  # noqa: F401  (shared by every reporter)
    SEVERITIES,
    SEVERITIES_DESC,
    SEVERITY_RANK,
    Finding,
    finding_sort_key,
    sorted_findings,
)
from sgl_scan.reports.visible import visible, visible_lines  # noqa: F401  (shared by every reporter)
from sgl_scan.snapshots.summary import describe_source, git_label, tree_fields, tree_line  # noqa: F401  (one implementation)


_JSON_INVISIBLE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


MAX_VALUE_CHARS = 8000  # of one string value in a JSON or SARIF document (rule docs are shorter)


def json_document(value: object) -> str:
    """Indented JSON, UTF-8 kept readable, but DEL, C1 controls and bidi overrides written as `\\uXXXX`.

    `json.dumps` escapes C0 controls itself; the others would reach a terminal that `cat`s the file.
    They can only stand inside JSON strings, where `\\uXXXX` means the same character.
    """
    try:
        text = _indented(value)
    except _Unusual:  # a key that is not a string, a NaN: json's own rules, at its own speed
        text = json.dumps(value, indent=2, ensure_ascii=False)
    return _JSON_INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


class _Unusual(Exception):
    pass


def _indented(value: object) -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False)`, byte for byte, about twice as fast (json's
    indenting encoder is pure Python and generator-heavy; a report holds tens of thousands of values).
    Raises `_Unusual` for what it leaves to `json.dumps`: non-string keys, non-finite floats, other types.
    The common values (strings, ints, None, bools inside containers) are written without a call each."""
    parts: list[str] = []
    put = parts.append
    quote = json.encoder.encode_basestring  # the C function where available, as json.dumps uses
    limit = MAX_VALUE_CHARS

    def string(o: str) -> str:  # one value of tree text (a 1 MB literal) must not fill the document
        return quote(o if len(o) <= limit else clip(o, limit))

    def scalar(o: object) -> str | None:
        """The text of a value that is no container; None for a list, tuple or dict."""
        if isinstance(o, str):
            return string(o)
        if o is None:
            return "null"
        if o is True:
            return "true"
        if o is False:
            return "false"
        if isinstance(o, int):
            return int.__repr__(o)
        if isinstance(o, float):
            if o != o or o in (float("inf"), float("-inf")):
                raise _Unusual
            return float.__repr__(o)
        if isinstance(o, (list, tuple, dict)):
            return None
        raise _Unusual

    def encode(o: object, indent: str) -> None:
        if isinstance(o, (list, tuple)):
            if not o:
                put("[]")
                return
            inner = indent + "  "
            separator = ",\n" + inner
            lead = "[\n" + inner
            for item in o:
                kind = type(item)  # (the dict branch below repeats this dispatch: a shared helper is a call per value)
                if kind is str:
                    put(lead + (quote(item) if len(item) <= limit else string(item)))  # most values
                elif kind is int:
                    put(lead + int.__repr__(item))
                else:
                    text = scalar(item)
                    if text is None:
                        put(lead)
                        encode(item, inner)
                    else:
                        put(lead + text)
                lead = separator
            put("\n" + indent + "]")
        elif isinstance(o, dict):
            if not o:
                put("{}")
                return
            inner = indent + "  "
            separator = ",\n" + inner
            lead = "{\n" + inner
            for key, item in o.items():
                if not isinstance(key, str):
                    raise _Unusual
                head = lead + (quote(key) if len(key) <= limit else string(key)) + ": "
                kind = type(item)
                if kind is str:
                    put(head + (quote(item) if len(item) <= limit else string(item)))
                elif kind is int:
                    put(head + int.__repr__(item))
                elif item is None:
                    put(head + "null")
                else:
                    text = scalar(item)
                    if text is None:
                        put(head)
                        encode(item, inner)
                    else:
                        put(head + text)
                lead = separator
            put("\n" + indent + "}")
        else:
            text = scalar(o)
            if text is None:  # (a list, tuple or dict subclass the tests above did not take)
                raise _Unusual
            put(text)

    encode(value, "")
    return "".join(parts)


def census_line(inventory) -> str | None:
    """ "N references: M read, K could not be read" (analyzer/census.py); None when no census ran."""
    census = getattr(inventory, "census", None)
    if census is None:
        return None
    return f"{plural(census.references, 'reference')}: {census.read} read, {census.unread} could not be read"


def severity_counts(findings: Iterable[Finding]) -> dict[str, int]:
    """Count per severity, highest first, every severity present (zero included)."""
    counts = Counter(f.severity for f in findings)
    ordered = {name: counts.pop(name, 0) for name in SEVERITIES_DESC}
    ordered.update(sorted(counts.items()))  # unknown severities are shown, never dropped
    return ordered


def findings_by_file(findings: Iterable[Finding]) -> list[tuple[str, list[Finding]]]:
    """Findings grouped by path, paths sorted, findings in line order."""
    groups: dict[str, list[Finding]] = {}
    for finding in sorted_findings(findings):
        groups.setdefault(finding.path, []).append(finding)
    return list(groups.items())


class ExcerptLine(NamedTuple):
    number: int
    text: str
    focus: bool


MAX_LINE_CHARS = 400  # of one source line shown with a finding (a report repeats it per finding)


def clip(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """`text` cut to `limit` characters, saying how many were left out: one 1 MB line must not make
    every finding on it (and every report format) a megabyte long."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … ({len(text) - limit} more characters)"


def excerpt(
    sources: Mapping[str, Sequence[str]] | None, path: str, line: int, end_line: int | None = None, context: int = 2
) -> tuple[ExcerptLine, ...]:
    """Source lines around `line` (focus lines marked); empty when the source is not available."""
    if not sources or path not in sources:
        return ()
    lines = sources[path]
    last_focus = max(line, end_line or line)
    first = max(1, line - context)
    last = min(len(lines), last_focus + context)
    return tuple(
        ExcerptLine(n, clip(lines[n - 1].rstrip("\r\n")), line <= n <= last_focus) for n in range(first, last + 1)
    )


def source_line(sources: Mapping[str, Sequence[str]] | None, path: str, line: int) -> str | None:
    """The one source line a finding points at, without its newline; None when unavailable."""
    if not sources or path not in sources:
        return None
    lines = sources[path]
    if not 1 <= line <= len(lines):
        return None
    return clip(lines[line - 1].rstrip("\r\n"))


def plural(count: int, noun: str) -> str:
    """`1 finding`, `2 findings`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def algorithm_matrix(inventory: SpecInventory) -> list[tuple[str, list[bool]]]:
    """Rows `(predicate, [true for algorithm i])` with columns in the inventory's algorithm order.

    A predicate's member set is the authority; an algorithm's own `predicates` tuple fills in
    predicates the inventory lists only on the algorithm side.
    """
    names = [a.name for a in inventory.algorithms]
    rows: dict[str, set[str]] = {p.name: set(p.members) for p in inventory.predicates}
    for algorithm in inventory.algorithms:
        for predicate in algorithm.predicates:
            rows.setdefault(predicate, set()).add(algorithm.name)
    return [(pred, [name in members for name in names]) for pred, members in rows.items()]


def d2t_by_kind(inventory: SpecInventory) -> list[tuple[str, list]]:
    """d2t sites grouped by kind, kinds in the analyzer's documented order, sites by location."""
    from sgl_scan.analyzer.model import D2T_KINDS

    order = {kind: i for i, kind in enumerate(D2T_KINDS)}
    groups: dict[str, list] = {}
    for site in sorted(inventory.d2t_sites, key=lambda s: loc_key(s.location)):
        groups.setdefault(site.kind, []).append(site)
    return sorted(groups.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))


def conditional_workers(algorithm) -> tuple[str, ...]:
    """Every worker an algorithm may get with its flags, when flags choose between several."""
    if not any(w.condition for w in algorithm.workers):
        return ()
    return tuple(worker_choice(w) for w in algorithm.workers)


def function_label(function: str) -> str:
    """`pkg.module.Class.method` -> `Class.method`; module-level code keeps its module name."""
    parts = function.split(".")
    return ".".join(parts[-2:]) if len(parts) > 1 else function
