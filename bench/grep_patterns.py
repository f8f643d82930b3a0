"""The grep a user would type for each inventory rule, and the bookkeeping to score its hits.

Patterns are POSIX extended regular expressions that GNU `grep -E` and Python's `re` read the same
way (only `\\b`, `\\s`, `\\w`, classes and alternation). They are what one writes from the rule's
description, not tuned to a release: grep has no scopes, so an enum member pattern matches every
enum, and a d2t search matches `Dropout2d` and comments. That noise is what the precision column
measures.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

RULE_PATTERNS: dict[str, tuple[str, ...]] = {
    # SGL101: members of SpeculativeAlgorithm (enum bodies, values auto() or ints) and registrations.
    "SGL101": (
        r"^\s+[A-Z][A-Z0-9_]*\s*=\s*(auto\(\)|[0-9]+)\s*(#.*)?$",
        r"SpeculativeAlgorithm\.register\(",
    ),
    # SGL102: add_*_choices functions and aliases, and the --speculative-algorithm definition.
    "SGL102": (
        r"def add_\w+_choices\b",
        r"^add_\w+_choices\s*=",
        r"--speculative-algorithm\b",
        r"^\s+speculative_algorithm\s*:",
    ),
    # SGL103: the drafter vocabulary mapping, as the seeds searched for it.
    "SGL103": (
        r"d2t|t2d|draft_to_target|target_to_draft",
        r"hot_token_id|load_token_map",
    ),
}


def all_patterns() -> tuple[str, ...]:
    return tuple(p for patterns in RULE_PATTERNS.values() for p in patterns)


def grep_command(root: Path, subdir: str) -> list[str]:
    """One `grep -rnE` over `subdir` of `root` with every pattern; paths print relative to `root`."""
    command = ["grep", "-rnE", "--include=*.py"]
    for pattern in all_patterns():
        command += ["-e", pattern]
    return command + [subdir]


def run_grep(root: Path, subdir: str) -> str:
    """Run `grep_command` in `root`; exit 1 (no match) is a normal outcome."""
    result = subprocess.run(grep_command(root, subdir), cwd=root, capture_output=True, text=True)
    if result.returncode not in (0, 1):
        raise RuntimeError(f"grep failed ({result.returncode}): {result.stderr.strip()[:300]}")
    return result.stdout


def classify(grep_output: str) -> dict[str, set[tuple[str, int]]]:
    """Per rule id, the (path, line) of each grep hit whose text matches one of that rule's patterns."""
    compiled = {rule: [re.compile(p) for p in patterns] for rule, patterns in RULE_PATTERNS.items()}
    hits: dict[str, set[tuple[str, int]]] = {rule: set() for rule in RULE_PATTERNS}
    for raw in grep_output.splitlines():
        path, sep1, rest = raw.partition(":")
        line, sep2, text = rest.partition(":")
        if not (sep1 and sep2 and line.isdigit()):
            continue
        for rule, patterns in compiled.items():
            if any(p.search(text) for p in patterns):
                hits[rule].add((path.removeprefix("./"), int(line)))
    return hits
