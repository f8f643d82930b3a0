"""A small local driver for the speculative extractors: parse only the files their triggers select
(the whole file: libcst + positions for libcst extractors, stdlib `ast` for `parser = "ast"` ones,
nothing else) and build the inventory. It stands in for the analyzer pipeline so these tests
exercise exactly the extractors and `build_inventory`."""

from __future__ import annotations

import ast
import hashlib
import textwrap
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
import libcst.metadata as meta

from sgl_scan.analyzer.builder import module_name
from sgl_scan.analyzer.extractors import EXTRACTORS
from sgl_scan.analyzer.facts import FileFacts
from sgl_scan.analyzer.inventory import build_inventory


@dataclass(frozen=True)
class Context:
    path: str
    module: str
    text: str


def facts_for(path: str, text: str, extractors=EXTRACTORS, *, use_triggers: bool = True) -> FileFacts | None:
    chosen = [ex for ex in extractors if not use_triggers or ex.trigger.search(text)]
    if not chosen:
        return None
    context = Context(path, module_name(path), text)
    extras = {}
    on_ast = [ex for ex in chosen if getattr(ex, "parser", "cst") == "ast"]
    if on_ast:
        tree = ast.parse(text)
        extras.update({ex.name: tuple(ex.extract(tree, context)) for ex in on_ast})
    on_cst = [ex for ex in chosen if ex not in on_ast]
    if on_cst:
        wrapper = meta.MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
        wrapper.resolve(meta.PositionProvider)
        extras.update({ex.name: tuple(ex.extract(wrapper, context)) for ex in on_cst})
    return FileFacts(path=path, module=context.module, sha256=hashlib.sha256(text.encode()).hexdigest(),
                     extras=extras, source="cst")


def scan_tree(root: Path, under: str = "sglang/srt", only: tuple[str, ...] = ()) -> dict[str, FileFacts]:
    """FileFacts (extras only) for the triggered files of a release tree (or just the `only` paths)."""
    files = {}
    paths = [root / p for p in only] if only else sorted((root / under).rglob("*.py"))
    for file in paths:
        rel = file.relative_to(root).as_posix()
        facts = facts_for(rel, file.read_text(encoding="utf-8"))
        if facts is not None:
            files[rel] = facts
    return files


def records(source: str, extractor, path: str = "sglang/srt/example.py") -> tuple:
    """The records one extractor produces for a snippet (no trigger check)."""
    facts = facts_for(path, textwrap.dedent(source), (extractor,), use_triggers=False)
    return facts.extras[extractor.name]


def inventory_of_sources(sources: dict[str, str]):
    files = {}
    for path, source in sources.items():
        facts = facts_for(path, textwrap.dedent(source))
        if facts is not None:
            files[path] = facts
    return build_inventory(files)
