"""Reporters: turn a `Report` (or an `InventoryDiff`) into text, JSON, SARIF, Markdown or HTML.

Reporters never filter and never exit; they return the whole document as a string.
"""

from __future__ import annotations

import importlib
from pathlib import PurePath
from typing import TYPE_CHECKING

from sgl_scan.errors import ConfigError

if TYPE_CHECKING:
    from sgl_scan.compare import InventoryDiff
    from sgl_scan.reports.model import Report

FORMATS = ("text", "json", "sarif", "markdown", "html")

_MODULES = {
    "text": "sgl_scan.reports.text",
    "json": "sgl_scan.reports.json_report",
    "sarif": "sgl_scan.reports.sarif",
    "markdown": "sgl_scan.reports.markdown",
    "html": "sgl_scan.reports.html",
}

_EXTENSIONS = {
    ".txt": "text",
    ".text": "text",
    ".log": "text",
    ".json": "json",
    ".sarif": "sarif",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
}


def _module(fmt: str):
    if fmt not in _MODULES:
        raise ConfigError(f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})")
    return importlib.import_module(_MODULES[fmt])


def render(report: "Report", fmt: str, *, color: bool = False) -> str:
    """The report as one document in `fmt` (text|json|sarif|markdown|html); colour applies to text only."""
    return _module(fmt).render(report, color=color)


def render_diff(diff: "InventoryDiff", fmt: str, color: bool = False) -> str:
    """A snapshot diff as one document in `fmt` (text|json|sarif|markdown|html)."""
    return _module(fmt).render_diff(diff, color=color)


def format_for_path(path) -> str | None:
    """The format an output file's extension implies (`.sarif.json` is SARIF), or None if unknown."""
    name = PurePath(str(path)).name.lower()
    if name.endswith(".sarif.json"):
        return "sarif"
    return _EXTENSIONS.get(PurePath(name).suffix)
