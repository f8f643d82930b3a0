"""What every rule is: a class with a stable id, a severity, docs and its own examples.

A rule reads only the `Analysis` (inventory, per-file facts, graph) and yields `Finding`s through
`Rule.finding`, which fills in the snapshot id and a provisional fingerprint; the engine makes
fingerprints unique. Selection, suppression and baselines are not a rule's business.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from typing import Any, ClassVar, Iterable, Mapping, NamedTuple

from sgl_scan.analyzer.model import Analysis, Location
from sgl_scan.rules.doc import RuleDoc
from sgl_scan.rules.finding import SEVERITIES, Finding

DOC_SECTIONS = ("What it does", "Why it matters", "Example", "Use instead")
EXPECT_MARKER = "# expect"  # ends a line of an example that the rule must flag


class Example(NamedTuple):
    """A tiny SGLang tree (path -> source). Lines carrying `# expect` must be flagged, no others.

    An example without any marked line is clean code the rule must leave alone.
    """

    files: Mapping[str, str]
    note: str = ""

    def expected(self) -> frozenset[tuple[str, int]]:
        return frozenset(
            (path, number)
            for path, text in self.files.items()
            for number, line in enumerate(text.splitlines(), start=1)
            if line.rstrip().endswith(EXPECT_MARKER)
        )


def fingerprint_of(rule_id: str, path: str, symbol: str) -> str:
    """A line-free fingerprint: rule id, path and the symbol/kind/normalised source text."""
    normal = " ".join(symbol.split())
    digest = hashlib.sha256(f"{rule_id}\0{path}\0{normal}".encode()).hexdigest()
    return digest[:20]


class Rule:
    """Base class. Subclasses set the class attributes and implement `check`."""

    id: ClassVar[str]  # "SGL301": SGL1xx inventory, 2xx dispatch, 3xx d2t, 4xx configuration
    name: ClassVar[str]  # "d2t-used-as-direct-map"
    severity: ClassVar[str]  # "info" | "warning" | "error"
    message: ClassVar[str]  # one line; what the rule reports
    examples: ClassVar[tuple[Example, ...]] = ()

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        raise NotImplementedError

    def finding(
        self,
        analysis: Analysis,
        location: Location,
        message: str,
        *,
        symbol: str,
        data: Mapping[str, Any] | None = None,
        hint: str | None = None,
    ) -> Finding:
        """A finding of this rule at `location`; `symbol` identifies it without its line."""
        return Finding(
            rule_id=self.id,
            severity=self.severity,
            message=message,
            path=location.path,
            line=location.line,
            column=location.column,
            end_line=location.end_line,
            end_column=location.end_column,
            snapshot_id=analysis.snapshot_id,
            data=dict(data or {}),
            hint=hint,
            fingerprint=fingerprint_of(self.id, location.path, symbol),
        )

    @classmethod
    def docs(cls) -> str:
        """The rule's documentation: its docstring, dedented (Markdown)."""
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def doc(cls) -> RuleDoc:
        return RuleDoc(id=cls.id, name=cls.name, severity=cls.severity, message=cls.message, docs=cls.docs())

    @classmethod
    def problems(cls) -> list[str]:
        """What is wrong with this rule's definition (empty when it may be loaded)."""
        found = []
        if not re.fullmatch(r"SGL[1-9]\d\d", getattr(cls, "id", "") or ""):
            found.append("id must look like SGL301")
        if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", getattr(cls, "name", "") or ""):
            found.append("name must be kebab-case")
        if getattr(cls, "severity", None) not in SEVERITIES:
            found.append(f"severity must be one of {', '.join(SEVERITIES)}")
        message = getattr(cls, "message", "") or ""
        if not message or "\n" in message:
            found.append("message must be one non-empty line")
        docs = cls.docs()
        for section in DOC_SECTIONS:
            if not re.search(rf"^#*\s*{re.escape(section)}\s*$", docs, re.MULTILINE):
                found.append(f"docstring lacks the section '{section}'")
        if not any(example.expected() for example in cls.examples):
            found.append("needs an example with a line marked '# expect'")
        if not any(not example.expected() for example in cls.examples):
            found.append("needs a clean example (no line marked '# expect')")
        if cls.check is Rule.check:
            found.append("does not implement check()")
        return found


class RuleSet(NamedTuple):
    """The loaded rules, in id order."""

    rules: tuple[Rule, ...] = ()

    def ids(self) -> tuple[str, ...]:
        return tuple(rule.id for rule in self.rules)

    def get(self, rule_id: str) -> Rule | None:
        wanted = rule_id.upper()
        for rule in self.rules:
            if rule.id == wanted or rule.name == rule_id.lower():
                return rule
        return None

    def docs(self) -> tuple[RuleDoc, ...]:
        return tuple(rule.doc() for rule in self.rules)
