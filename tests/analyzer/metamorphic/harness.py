"""Analyse a release's default-scope files once, then the same files with one file rewritten, and
say how the facts moved: identical up to line numbers, explained by the census (every lost fact's
place now holds an `unread` entry), or silently different."""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field

from sgl_scan.analyzer.census import account
from sgl_scan.analyzer.inventory import build_inventory
from sgl_scan.analyzer.model import SpecInventory
from sgl_scan.snapshots.scope import select_local
from tests.analyzer.extractors.driver import facts_for
from tests.analyzer.metamorphic.rewrites import KINDS, Rewritten
from tests.support.releases import release_tree


@functools.lru_cache(maxsize=None)
def release_files(version: str) -> tuple[dict, dict]:
    """(path -> text, path -> facts) of a release's default-scope files."""
    tree = release_tree(version)
    package = tree / "sglang"
    relative = [p.relative_to(package).as_posix() for p in package.rglob("*.py")]
    paths = ["sglang/" + p for p in select_local(relative, "speculative", lambda p: (package / p).read_bytes())]
    texts = {p: (tree / p).read_text(encoding="utf-8") for p in sorted(paths)}
    facts = {}
    for path, text in texts.items():
        found = facts_for(path, text)
        if found is not None:
            facts[path] = found
    return texts, facts


def inventory_of(files: dict) -> SpecInventory:
    return account(files, build_inventory(files))[0]


@functools.lru_cache(maxsize=None)
def original(version: str) -> SpecInventory:
    return inventory_of(release_files(version)[1])


# `if p: return A` / `return B` and `return A if p else B` are one decision spelled two ways
BRANCH = {"if": "branch", "exit": "branch", "ifexp": "branch"}


def facts(inv: SpecInventory) -> list[tuple[tuple, str, int]]:
    """(fact without its line, path, line) for every fact the rules read."""
    out = []
    for s in inv.dispatch_sites:
        out.append((("dispatch", s.location.path, s.function, s.via, s.detail, s.algorithms, s.negative, s.worker,
                     s.negated, BRANCH.get(s.decision, s.decision), s.refuses, s.new_algorithm),
                    s.location.path, s.location.line))
    for p in inv.predicates:
        out.append((("predicate", p.name, p.members), p.location.path, p.location.line))
    for a in inv.algorithms:
        out.append((("algorithm", a.name, a.predicates, a.worker, tuple(w.qualname for w in a.workers)),
                    a.location.path, a.location.line))
    for d in inv.d2t_sites:
        out.append((("d2t", d.location.path, d.kind, d.function), d.location.path, d.location.line))
    return out


@dataclass
class Outcome:
    kind: str
    path: str
    sites: int
    lost: list = field(default_factory=list)  # facts gone or changed, with their old line
    gained: list = field(default_factory=list)
    explained: list = field(default_factory=list)  # lost facts whose place holds an unread entry
    silent: list = field(default_factory=list)  # lost facts with no unread entry: the failure
    new_unread: list = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.silent:
            return "silent"
        return "identical" if not self.lost and not self.gained else "unread"


def compare(version: str, path: str, rewritten: Rewritten, kind: str) -> Outcome:
    texts, files = release_files(version)
    before = original(version)
    changed = dict(files)
    new_facts = facts_for(path, rewritten.text)
    if new_facts is None:
        changed.pop(path, None)
    else:
        changed[path] = new_facts
    after = inventory_of(changed)

    def moved(line: int) -> int:  # an old line of `path` in the rewritten file
        shift = 0
        for site in rewritten.sites:
            if site.old[1] < line:
                shift = (site.new[1] - site.old[1])
        return line + shift

    import ast

    spans = [(n.lineno, n.end_lineno) for n in ast.walk(ast.parse(rewritten.text))
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    unread_predicates = {u.name for u in after.unread if u.what == "predicate"}
    sites_after = {(s.location.path, s.location.line): s for s in after.dispatch_sites}
    fresh = [u for u in after.unread if u.location.path == path
             and (u.what, u.name, u.location.path) not in {(b.what, b.name, b.location.path) for b in before.unread}]

    def explained(fpath: str, line: int, where: int) -> bool:
        """An unread entry at the fact's place, a new one in the rewritten function around it, or
        a predicate it depends on that could not be read."""
        if any(u.location.path == fpath and u.location.line == where for u in after.unread):
            return True
        if fpath == path:
            region = next((s.new for s in rewritten.sites if s.old[0] <= line <= s.old[1]), None)
            if region and any(region[0] <= u.location.line <= region[1] for u in fresh):
                return True
            inner = min((sp for sp in spans if sp[0] <= where <= sp[1]), key=lambda sp: sp[1] - sp[0], default=None)
            if inner and any(inner[0] <= u.location.line <= inner[1] for u in fresh):
                return True
        site = sites_after.get((fpath, where))
        if site is not None:
            names = {site.detail} | {a[3][0] for a in site.atoms if a[2] == "predicate" and a[3]}
            return bool(names & unread_predicates)
        return False

    old, new = Counter(f for f, _, _ in facts(before)), Counter(f for f, _, _ in facts(after))
    outcome = Outcome(kind, path, len(rewritten.sites))
    old_unread = Counter((u.what, u.name, u.location.path) for u in before.unread)
    outcome.new_unread = [u for u in after.unread if old_unread[(u.what, u.name, u.location.path)] <= 0
                          or u.location.path == path and u.what == "reference"]
    lost = old - new
    outcome.gained = list((new - old).elements())
    for fact, fpath, line in facts(before):
        if lost[fact] <= 0:
            continue
        lost[fact] -= 1
        outcome.lost.append((fact, fpath, line))
        where = moved(line) if fpath == path else line
        (outcome.explained if explained(fpath, line, where) else outcome.silent).append((fact, fpath, line))
    return outcome


def rewrite_sites(version: str, kind: str, limit_files: int = 3) -> list[tuple[str, Rewritten]]:
    """Up to `limit_files` files of the release with sites of this kind, each rewritten."""
    texts, _ = release_files(version)
    out = []
    for path, text in texts.items():
        rewritten = KINDS[kind](text)
        if rewritten is not None and rewritten.sites:
            out.append((path, rewritten))
            if len(out) >= limit_files:
                break
    return out
