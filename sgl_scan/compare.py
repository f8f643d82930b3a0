"""What changed between two snapshots: inventory items and findings, matched by meaning.

Items are matched on what they are (an algorithm's name, a predicate's name, a hook's kind and
name, a site's enclosing function, kind and expression), never on line numbers, so code that
merely moved is not reported as removed and re-added. Duplicates with the same key pair up in
line order; dispatch sites sharing a key are aligned by meaning too (the algorithms they select,
so polarity counts), an inserted site being "added" without disturbing its neighbours.

The stage between the rules and the reporters for `diff` and `fleet`: `compute_diff` returns a
frozen `InventoryDiff`, and every reporter only renders it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence, TypeVar

from sgl_scan.analyzer.model import Analysis, Location, SpecInventory, loc_key, short_name, worker_choice
from sgl_scan.rules.doc import RuleDoc
from sgl_scan.rules.finding import Finding, sorted_findings
from sgl_scan.snapshots.manifest import Manifest
from sgl_scan.snapshots.scope import statement as scope_statement
from sgl_scan.snapshots.summary import describe_source, git_label

# Categories in the order reports list them, with their display titles.
CATEGORIES = {
    "algorithm_class": "Algorithm class",
    "algorithm": "Algorithms",
    "predicate": "Predicates",
    "algorithm_option": "Algorithm option",
    "choice_hook": "Choice hooks",
    "dispatch_site": "Dispatch sites",
    "d2t_site": "d2t sites",
}
STATUSES = ("added", "removed", "changed", "moved")

T = TypeVar("T")


@dataclass(frozen=True)
class Side:
    """One of the two snapshots being compared."""

    snapshot_id: str
    sglang_version: str | None
    label: str  # the reference the user gave, or where the snapshot came from
    git: str | None = None  # "1a2b3c4d5e6f (main, dirty)"
    scope: str | None = None  # the snapshot's scope ("speculative", "full"); None when unknown
    files: int | None = None  # how many files the snapshot holds
    source: str | None = None  # where the tree came from (summary.describe_source): what a `snapshot:latest` label was


@dataclass(frozen=True)
class Change:
    """One inventory item that was added, removed, changed or moved between A and B."""

    category: str  # a key of CATEGORIES
    status: str  # one of STATUSES
    key: str  # what the item is, e.g. "is_eagle" or "direct_map in LlamaForCausalLMEagle3.load_weights: ..."
    before: Location | None  # in A (None when added)
    after: Location | None  # in B (None when removed)
    details: tuple[str, ...] = ()  # e.g. ("members +DFLASH -NGRAM", "worker EAGLEWorker -> EAGLEWorkerV2")


@dataclass(frozen=True)
class InventoryDiff:
    a: Side
    b: Side
    changes: tuple[Change, ...]
    new_findings: tuple[Finding, ...]  # in B, not in A
    resolved_findings: tuple[Finding, ...]  # in A, not in B
    unchanged_findings: int
    shifted: int  # items matched in both whose only difference is their line number
    rules: tuple[RuleDoc, ...] = ()

    def by_category(self) -> list[tuple[str, list[Change]]]:
        """Changes grouped by category in CATEGORIES order; empty categories left out."""
        groups: dict[str, list[Change]] = {}
        for change in self.changes:
            groups.setdefault(change.category, []).append(change)
        return [(cat, groups[cat]) for cat in CATEGORIES if cat in groups]

    def counts(self) -> dict[str, int]:
        """Number of changes per status (every status present), then findings new and resolved."""
        counts = {status: 0 for status in STATUSES}
        for change in self.changes:
            counts[change.status] += 1
        counts["new_findings"] = len(self.new_findings)
        counts["resolved_findings"] = len(self.resolved_findings)
        return counts

    def scope_lines(self) -> list[str]:
        """What the comparison covers: one statement per scope of the two sides."""
        if self.a.scope == self.b.scope:
            return [scope_statement(self.b.scope)] if self.b.scope else []
        return [f"{name}: {scope_statement(s.scope, s.files)}" for name, s in (("A", self.a), ("B", self.b)) if s.scope]

    @property
    def empty(self) -> bool:
        return not (self.changes or self.new_findings or self.resolved_findings)


def compute_diff(
    a: Analysis,
    a_findings: Sequence[Finding],
    b: Analysis,
    b_findings: Sequence[Finding],
    *,
    a_manifest: Manifest | None = None,
    b_manifest: Manifest | None = None,
    a_label: str | None = None,
    b_label: str | None = None,
    rules: Sequence[RuleDoc] = (),
) -> InventoryDiff:
    """Compare snapshot A (before) with snapshot B (after)."""
    tracker = _Tracker()
    changes: list[Change] = []
    changes += _diff_algorithm_class(a.inventory, b.inventory)
    changes += tracker.algorithms(a.inventory, b.inventory)
    changes += tracker.predicates(a.inventory, b.inventory)
    changes += tracker.algorithm_option(a.inventory, b.inventory)
    changes += tracker.choice_hooks(a.inventory, b.inventory)
    changes += tracker.dispatch_sites(a.inventory, b.inventory)
    changes += tracker.d2t_sites(a.inventory, b.inventory)
    order = {cat: i for i, cat in enumerate(CATEGORIES)}
    status_order = {s: i for i, s in enumerate(STATUSES)}
    changes.sort(key=lambda c: (order[c.category], status_order[c.status], c.key, loc_key(c.after or c.before)))

    pairs, resolved, new = _match(
        sorted_findings(a_findings), sorted_findings(b_findings), [_finding_key], _finding_location
    )
    return InventoryDiff(
        a=_side(a, a_manifest, a_label),
        b=_side(b, b_manifest, b_label),
        changes=tuple(changes),
        new_findings=tuple(sorted_findings(new)),
        resolved_findings=tuple(sorted_findings(resolved)),
        unchanged_findings=len(pairs),
        shifted=tracker.shifted,
        rules=tuple(sorted(rules, key=lambda r: r.id)),
    )


def _side(analysis: Analysis, manifest: Manifest | None, label: str | None) -> Side:
    if label is None:
        label = describe_source(manifest) if manifest is not None else analysis.snapshot_id
    return Side(
        snapshot_id=analysis.snapshot_id,
        sglang_version=analysis.sglang_version or (manifest.sglang_version if manifest else None),
        label=label,
        git=git_label(manifest) if manifest is not None else None,
        scope=manifest.scope if manifest is not None else None,
        files=len(manifest.files) if manifest is not None else None,
        source=describe_source(manifest) if manifest is not None else None,
    )


def _finding_key(f: Finding) -> tuple:
    return ("fp", f.rule_id, f.fingerprint) if f.fingerprint else ("msg", f.rule_id, f.path, f.message)


def _finding_location(f: Finding) -> Location:
    return Location(f.path, f.line, f.column)


def _match(
    before: Iterable[T],
    after: Iterable[T],
    keys: Sequence[Callable[[T], tuple]],
    where: Callable[[T], Location],
) -> tuple[list[tuple[T, T, int]], list[T], list[T]]:
    """Pair items of `before` and `after`: first on keys[0], the leftovers on keys[1], and so on.

    Returns (pairs with the index of the key that matched, unmatched before, unmatched after).
    Items sharing a key pair up in location order.
    """
    left, right = list(before), list(after)
    order = lambda item: loc_key(where(item))  # noqa: E731
    pairs: list[tuple[T, T, int]] = []
    for level, key in enumerate(keys):
        groups_left: dict[tuple, list[T]] = {}
        for item in sorted(left, key=order):
            groups_left.setdefault(key(item), []).append(item)
        still_right: list[T] = []
        for item in sorted(right, key=order):
            bucket = groups_left.get(key(item))
            if bucket:
                pairs.append((bucket.pop(0), item, level))
            else:
                still_right.append(item)
        left = [item for bucket in groups_left.values() for item in bucket]
        right = still_right
    return pairs, sorted(left, key=order), sorted(right, key=order)


def _align(
    before: Iterable[T],
    after: Iterable[T],
    keys: Sequence[Callable[[T], tuple]],
    where: Callable[[T], Location],
    same: Callable[[T, T], bool],
    compatible: Callable[[T, T], bool],
) -> tuple[list[tuple[T, T, int]], list[T], list[T]]:
    """Pair items like `_match`, but by meaning inside each group of equal keys.

    Within a group (say the `is_none()` sites of one function) the items of A and B are aligned in
    line order, as a longest common subsequence: pairs with the same meaning (`same`) count first,
    then pairs that are merely `compatible` (never two items of opposite meaning), then the least
    line movement. So a site inserted between two old ones is "added" and the old ones keep their
    partners. Items of the same meaning left over by a reordering pair up by nearest line.
    """
    left, right = list(before), list(after)
    order = lambda item: loc_key(where(item))  # noqa: E731
    pairs: list[tuple[T, T, int]] = []
    for level, key in enumerate(keys):
        groups: dict[tuple, tuple[list[T], list[T]]] = {}
        for item in left:
            groups.setdefault(key(item), ([], []))[0].append(item)
        for item in right:
            groups.setdefault(key(item), ([], []))[1].append(item)
        left, right = [], []
        for olds, news in groups.values():
            olds.sort(key=order)
            news.sort(key=order)
            matched = _align_group(olds, news, where, same, compatible) if olds and news else []
            matched += _nearest_same(olds, news, matched, where, same)
            used_old = {id(o) for o, _ in matched}
            used_new = {id(n) for _, n in matched}
            pairs += [(o, n, level) for o, n in matched]
            left += [o for o in olds if id(o) not in used_old]
            right += [n for n in news if id(n) not in used_new]
    return pairs, sorted(left, key=order), sorted(right, key=order)


_ALIGN_LIMIT = 250_000  # cells of the alignment table; a larger group pairs greedily


def _align_group(olds: list[T], news: list[T], where, same, compatible) -> list[tuple[T, T]]:
    n, m = len(olds), len(news)

    def gain(o: T, w: T) -> tuple[int, int, int] | None:
        if same(o, w):
            return (1, 1, -abs(where(o).line - where(w).line))
        if compatible(o, w):
            return (0, 1, -abs(where(o).line - where(w).line))
        return None

    out: list[tuple[T, T]]
    if n * m > _ALIGN_LIMIT:  # pathological: pair in line order, meaning first
        out, free = [], list(news)
        for test in (same, compatible):
            for o in olds:
                if any(o is p for p, _ in out):
                    continue
                hit = next((w for w in free if test(o, w)), None)
                if hit is not None:
                    free.remove(hit)
                    out.append((o, hit))
        return out
    zero = (0, 0, 0)
    best = [[zero] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = best[i], best[i + 1]
        for j in range(m - 1, -1, -1):
            score = max(below[j], row[j + 1])
            g = gain(olds[i], news[j])
            if g is not None:
                rest = below[j + 1]
                score = max(score, (rest[0] + g[0], rest[1] + g[1], rest[2] + g[2]))
            row[j] = score
    out = []
    i = j = 0
    while i < n and j < m:
        g = gain(olds[i], news[j])
        if g is not None:
            rest = best[i + 1][j + 1]
            if best[i][j] == (rest[0] + g[0], rest[1] + g[1], rest[2] + g[2]):
                out.append((olds[i], news[j]))
                i, j = i + 1, j + 1
                continue
        if best[i][j] == best[i + 1][j]:
            i += 1
        else:
            j += 1
    return out


def _nearest_same(olds: list[T], news: list[T], matched: list[tuple[T, T]], where, same) -> list[tuple[T, T]]:
    """Items of equal meaning that the in-order alignment could not pair (they swapped places)."""
    used_old = {id(o) for o, _ in matched}
    used_new = {id(n) for _, n in matched}
    free_new = [n for n in news if id(n) not in used_new]
    out = []
    for o in olds:
        if id(o) in used_old:
            continue
        hits = [n for n in free_new if same(o, n)]
        if hits:
            hit = min(hits, key=lambda n: abs(where(n).line - where(o).line))
            free_new.remove(hit)
            out.append((o, hit))
    return out


def _set_delta(label: str, old: Iterable[str], new: Iterable[str]) -> list[str]:
    old_set, new_set = set(old), set(new)
    if old_set == new_set:
        return []
    parts = [f"+{x}" for x in sorted(new_set - old_set)] + [f"-{x}" for x in sorted(old_set - new_set)]
    return [f"{label} {' '.join(parts)}"]


def _value_delta(label: str, old, new) -> list[str]:
    if old == new:
        return []
    return [f"{label} {old if old is not None else '-'} -> {new if new is not None else '-'}"]


def _symbol(function: str, loc: Location) -> str:
    """A site's enclosing symbol; module-level code is named by its file."""
    return f"{loc.path}:<module>" if function in ("<module>", "") else function


def _short_symbol(function: str, loc: Location) -> str:
    """The function's own name (a method keeps its class), to find it again in another module."""
    if function in ("<module>", ""):
        return _symbol(function, loc)
    return ".".join(function.split(".")[-2:])


def _same_site(old, new) -> bool:
    """Two dispatch sites that select the same algorithms (the same test, the same polarity)."""
    return set(old.algorithms) == set(new.algorithms) and short_name(old.worker) == short_name(new.worker)


def _compatible_site(old, new) -> bool:
    """Sites that may be one site edited: they share a selected algorithm (or neither names any).

    A test whose polarity flipped (`is_none()` -> `not is_none()`) selects disjoint sets, so it is
    never paired with its opposite: that is one site removed and another added, not a change.
    """
    return bool(set(old.algorithms) & set(new.algorithms)) or not (old.algorithms or new.algorithms)


class _Tracker:
    """Runs the per-category comparisons and counts items that only shifted lines."""

    def __init__(self) -> None:
        self.shifted = 0

    def _classify(self, category, key, old_loc, new_loc, details, moved_note=None) -> list[Change]:
        details = list(details)
        if moved_note is None and old_loc.path != new_loc.path:
            moved_note = f"file {old_loc.path} -> {new_loc.path}"
        if details:
            if moved_note:
                details.append(moved_note)
            return [Change(category, "changed", key, old_loc, new_loc, tuple(details))]
        if moved_note:
            return [Change(category, "moved", key, old_loc, new_loc, (moved_note,))]
        if old_loc.line != new_loc.line:
            self.shifted += 1
        return []

    @staticmethod
    def _added_removed(category, removed, added, key_text, where) -> list[Change]:
        out = [Change(category, "removed", key_text(x), where(x), None) for x in removed]
        out += [Change(category, "added", key_text(x), None, where(x)) for x in added]
        return out

    def algorithms(self, a: SpecInventory, b: SpecInventory) -> list[Change]:
        where = lambda x: x.location  # noqa: E731
        pairs, removed, added = _match(a.algorithms, b.algorithms, [lambda x: (x.name,)], where)
        out = self._added_removed("algorithm", removed, added, lambda x: x.name, where)
        for old, new, _ in pairs:
            details = (
                _value_delta("kind", old.kind, new.kind)
                + _value_delta("worker", short_name(old.worker) or None, short_name(new.worker) or None)
                + _set_delta(
                    "workers", [worker_choice(w) for w in old.workers], [worker_choice(w) for w in new.workers]
                )
                + _set_delta("predicates", old.predicates, new.predicates)
            )
            out += self._classify("algorithm", old.name, old.location, new.location, details)
        return out

    def predicates(self, a: SpecInventory, b: SpecInventory) -> list[Change]:
        where = lambda x: x.location  # noqa: E731
        pairs, removed, added = _match(a.predicates, b.predicates, [lambda x: (x.name,)], where)
        out = self._added_removed("predicate", removed, added, lambda x: x.name, where)
        for old, new, _ in pairs:
            details = _set_delta("members", old.members, new.members) + _value_delta("owner", old.owner, new.owner)
            out += self._classify("predicate", old.name, old.location, new.location, details)
        return out

    def algorithm_option(self, a: SpecInventory, b: SpecInventory) -> list[Change]:
        old, new = a.algorithm_option, b.algorithm_option
        if old is None and new is None:
            return []
        if old is None or new is None:
            hook = old or new
            assert hook is not None  # not both (returned above)
            status = "removed" if new is None else "added"
            old_at = old.location if old is not None else None
            new_at = new.location if new is not None else None
            return [Change("algorithm_option", status, hook.name, old_at, new_at)]
        details = (
            _value_delta("name", old.name, new.name)
            + _value_delta("kind", old.kind, new.kind)
            + _value_delta("choices", old.choices, new.choices)
            + _set_delta("values", old.values, new.values)
        )
        return self._classify("algorithm_option", new.name, old.location, new.location, details)

    def choice_hooks(self, a: SpecInventory, b: SpecInventory) -> list[Change]:
        where = lambda x: x.location  # noqa: E731
        keys = [lambda h: (h.kind, h.name), lambda h: (h.name,)]
        pairs, removed, added = _match(a.choice_hooks, b.choice_hooks, keys, where)
        key_text = lambda h: f"{h.name} ({h.kind})"  # noqa: E731
        out = self._added_removed("choice_hook", removed, added, key_text, where)
        for old, new, _ in pairs:
            details = (
                _value_delta("kind", old.kind, new.kind)
                + _value_delta("choices", old.choices, new.choices)
                + _value_delta("speculative", old.speculative, new.speculative)
                + _set_delta("values", old.values, new.values)
            )
            out += self._classify("choice_hook", key_text(new), old.location, new.location, details)
        return out

    def dispatch_sites(self, a: SpecInventory, b: SpecInventory) -> list[Change]:
        where = lambda x: x.location  # noqa: E731
        keys = [
            lambda s: (_symbol(s.function, s.location), s.via, s.detail),
            lambda s: (_short_symbol(s.function, s.location), s.via, s.detail),
        ]
        pairs, removed, added = _align(a.dispatch_sites, b.dispatch_sites, keys, where, _same_site, _compatible_site)
        key_text = lambda s: f"{_symbol(s.function, s.location)} [{s.via}: {s.detail}]"  # noqa: E731
        out = self._added_removed("dispatch_site", removed, added, key_text, where)
        for old, new, level in pairs:
            details = _set_delta("algorithms", old.algorithms, new.algorithms) + _value_delta(
                "worker", short_name(old.worker) or None, short_name(new.worker) or None
            )
            moved = None
            if level > 0:
                moved = f"function {_symbol(old.function, old.location)} -> {_symbol(new.function, new.location)}"
            out += self._classify("dispatch_site", key_text(new), old.location, new.location, details, moved)
        return out

    def d2t_sites(self, a: SpecInventory, b: SpecInventory) -> list[Change]:
        where = lambda x: x.location  # noqa: E731
        keys = [
            lambda s: (s.kind, _symbol(s.function, s.location), s.detail),
            lambda s: (s.kind, s.detail),
            lambda s: (s.kind, _symbol(s.function, s.location)),
        ]
        pairs, removed, added = _match(a.d2t_sites, b.d2t_sites, keys, where)
        key_text = lambda s: f"{s.kind} in {_symbol(s.function, s.location)}: {s.detail}"  # noqa: E731
        out = self._added_removed("d2t_site", removed, added, key_text, where)
        for old, new, level in pairs:
            moved = None
            details: list[str] = []
            if level == 1:
                moved = f"function {_symbol(old.function, old.location)} -> {_symbol(new.function, new.location)}"
            elif level == 2:
                details = [f"expression {old.detail} -> {new.detail}"]
            out += self._classify("d2t_site", key_text(new), old.location, new.location, details, moved)
        return out


def _diff_algorithm_class(a: SpecInventory, b: SpecInventory) -> list[Change]:
    old, new = a.algorithm_class, b.algorithm_class
    if old is None and new is None:
        return []
    if old is None or new is None:
        cls = old or new
        assert cls is not None  # not both (returned above)
        status = "removed" if new is None else "added"
        old_at = old.location if old is not None else None
        new_at = new.location if new is not None else None
        return [Change("algorithm_class", status, cls.qualname, old_at, new_at)]
    details = _value_delta("qualname", old.qualname, new.qualname) + _value_delta("form", old.form, new.form)
    if old.location.path != new.location.path and not details:
        return [
            Change(
                "algorithm_class",
                "moved",
                new.qualname,
                old.location,
                new.location,
                (f"file {old.location.path} -> {new.location.path}",),
            )
        ]
    if details:
        return [Change("algorithm_class", "changed", new.qualname, old.location, new.location, tuple(details))]
    return []
