"""A rule's documentation as one frozen value: what `sgl-scan rules`, SARIF and the reports list."""

from __future__ import annotations

from typing import NamedTuple


class RuleDoc(NamedTuple):
    id: str  # "SGL301"
    name: str  # "d2t-used-as-direct-map"
    severity: str
    message: str  # the one-line summary
    docs: str  # Markdown with What it does / Why it matters / Example / Use instead
