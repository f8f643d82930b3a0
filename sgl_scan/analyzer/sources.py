"""The text of a snapshot's files, exactly as the analyzer read it, for the stages after it.

Fingerprints need a finding's neighbour lines, suppression comments need the lines of its span, and
reports show excerpts. None of those stages opens a file: they ask the analysis (`Analysis.sources`).
A file's text is read once, and only given out when its bytes still hash to the sha256 its facts were
made from; a file changed (or removed) since then has no text, so every stage sees the bytes that
were analysed or nothing, never a mix.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Callable, Mapping

log = logging.getLogger(__name__)

Lines = tuple[str, ...]


class SourceText:
    """The bytes and lines of the files under `tree`, checked against `sha_of`
    (path -> the sha256 the analyzer read, or None for a file it did not analyse)."""

    def __init__(self, tree: Path, sha_of: Callable[[str], str | None]) -> None:
        self._tree = Path(tree)
        self._sha_of = sha_of
        self._data: dict[str, bytes | None] = {}
        self._lines: dict[str, Lines | None] = {}

    def data(self, path: str) -> bytes | None:
        """The bytes of `path`, or None when it was not analysed or has changed since."""
        if path not in self._data:
            self._data[path] = self._read(path)
        return self._data[path]

    def lines(self, path: str) -> Lines | None:
        """The lines of `path` (no line ends; undecodable bytes replaced), or None as for `data`."""
        if path not in self._lines:
            data = self.data(path)
            self._lines[path] = None if data is None else tuple(data.decode("utf-8", errors="replace").splitlines())
        return self._lines[path]

    def read(self) -> Mapping[str, Lines]:
        """The lines of every file read so far (what reports may quote)."""
        return {path: lines for path in self._data if (lines := self.lines(path)) is not None}

    def _read(self, path: str) -> bytes | None:
        expected = self._sha_of(path)
        if expected is None:
            return None
        try:
            data = (self._tree / path).read_bytes()
        except OSError as exc:
            log.warning("%s: cannot be read again for excerpts and fingerprints (%s)", path, exc.strerror or exc)
            return None
        if hashlib.sha256(data).hexdigest() != expected:
            log.warning("%s changed after it was analysed: no excerpts or neighbour lines from it", path)
            return None
        return data
