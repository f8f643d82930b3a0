"""Running one extractor on one file: what it is told, which tree it reads, and how it fails.

Shared by both parser halves (`parse.py` for stdlib `ast`, `parse_cst.py` for libcst); it imports
neither parser, so the `ast` half never loads libcst through it.
"""

from __future__ import annotations

from typing import Any


class ExtractorFailed(Exception):
    """An extractor raised on one file (a bug in it, or input it cannot handle); the file's other
    facts stand, and the failure is recorded as that file's `parse_error`."""


class ExtractorContext:
    """What an extractor is told of the file (`extractor.FileContext`); `lines` and `source`
    (`extractors._ast.Source.of`) are made once per file and shared by its extractors."""

    __slots__ = ("path", "module", "text", "line_map", "lines", "source")

    def __init__(
        self,
        path: str,
        module: str,
        text: str | None = None,
        line_map: tuple[int, ...] | None = None,
        lines: list[str] | None = None,
    ) -> None:
        self.path, self.module, self.text, self.line_map = path, module, text, line_map
        self.lines, self.source = lines, None


def run_extractor(ex: Any, parsed: Any, context: ExtractorContext) -> tuple:
    """One extractor's records from the parsed file; any failure but memory is `ExtractorFailed`."""
    try:
        return tuple(ex.extract(parsed, context))
    except MemoryError:
        raise
    except RecursionError as exc:  # nesting deeper than the extractor's walk can follow
        raise ExtractorFailed(f"extractor {ex.name} failed: nested too deeply ({type(exc).__name__})") from exc
    except Exception as exc:
        raise ExtractorFailed(f"extractor {ex.name} failed: {type(exc).__name__}: {exc}") from exc


def uses_ast(extractor: Any) -> bool:
    """Whether an extractor reads the stdlib `ast` (else a libcst `MetadataWrapper`)."""
    return getattr(extractor, "parser", "cst") == "ast"
