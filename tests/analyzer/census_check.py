"""An independent check of the census invariant: every census entry of a tree is covered by a fact
the analyzer produced or by an `unread` entry at its place. It re-walks the files itself (not the
pipeline's census records) and matches by position with its own small code, so a broken accounting
(`census.account`) or a pipeline that loses census records fails it."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

from sgl_scan.analyzer import census
from sgl_scan.analyzer.builder import module_name
from sgl_scan.analyzer.model import SpecInventory


def census_entries(tree: Path, paths) -> list:
    files = {}
    for path in paths:
        text = (tree / path).read_text(encoding="utf-8", errors="replace")
        if not census.TRIGGER.search(text):
            continue
        try:
            parsed = ast.parse(text)
        except SyntaxError:
            continue
        files[path] = SimpleNamespace(extras={census.NAME: census.census_of(parsed, text, module_name(path))})
    return census.entries(files)


def _places(inventory: SpecInventory) -> dict[str, list[tuple[int, int, int, bool]]]:
    """path -> (line, column, end line, spans a body) of every fact and unread entry."""
    out: dict[str, list] = {}
    for site in inventory.dispatch_sites:
        out.setdefault(site.location.path, []).append((site.location.line, site.location.column, site.location.line, False))
    for p in inventory.predicates:
        out.setdefault(p.location.path, []).append((p.location.line, p.location.column, p.location.end_line or p.location.line, True))
    for d in inventory.d2t_sites:
        out.setdefault(d.location.path, []).append((d.location.line, d.location.column, d.location.end_line or d.location.line, True))
    for u in inventory.unread:
        out.setdefault(u.location.path, []).append((u.location.line, u.location.column, u.location.end_line or u.location.line, True))
    return out


def uncovered(entries, inventory: SpecInventory) -> list[str]:
    """Census entries that no fact and no unread entry covers: each a silent drop."""
    places = _places(inventory)
    missing = []
    for path, ref in entries:
        ok = False
        for line, column, end_line, spans in places.get(path, ()):
            inside = (ref.line, ref.column) <= (line, column) <= (ref.end_line, ref.end_column)
            around = spans and (line, column) <= (ref.line, ref.column) and ref.line <= end_line
            if inside or around:
                ok = True
                break
        if not ok:
            missing.append(f"{path}:{ref.line}:{ref.column} {ref.form} {ref.text}")
    return missing


def sites_outside(entries, inventory: SpecInventory) -> list[str]:
    """Dispatch sites that lie in no census entry: forms the extractors read that the census does not
    count (the census must see at least what the extractors see, or it could not check them)."""
    by_path: dict[str, list] = {}
    for path, ref in entries:
        by_path.setdefault(path, []).append(ref)
    return [f"{s.location} {s.via} {s.detail}" for s in inventory.dispatch_sites
            if not any((r.line, r.column) <= (s.location.line, s.location.column) <= (r.end_line, r.end_column)
                       for r in by_path.get(s.location.path, ()))]
