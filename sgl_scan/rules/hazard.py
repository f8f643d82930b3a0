"""What a finding is about, without where its lines are: `check` comments on what the change did.

A finding's hazard is its line-free key (rule id, path, symbol: `base.fingerprint_of`, kept as the
finding's `group`) plus the algorithm set its rule says reaches it (`algorithms`, `members`,
`literals`, `predicate`, `method` in its data; counts such as SGL209's `sites` are left out). A finding
on a changed line that the diff base accounts for was not made by the change: an argument line of a
call that moved (0.5.15 -> 0.5.16 re-reported an SGL206 so) is no new comment. Base findings are
matched as baselines are (`baseline.KnownFindings`): the same fingerprint first, then as many
findings per hazard as the base had, so a second, new test of the same kind in the same function
(0.5.23 `model_config.py:1022` beside :1052) is still new.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Iterable, Sequence

from sgl_scan.rules.baseline import KnownFindings
from sgl_scan.rules.finding import Finding

_HAZARD_DATA = ("algorithms", "members", "literals", "predicate", "method", "member", "claims", "derived_from")


def hazard_key(finding: Finding) -> str:
    data = finding.data or {}
    part = {k: data[k] for k in _HAZARD_DATA if k in data}
    text = json.dumps(
        [finding.rule_id, finding.path, finding.group or finding.fingerprint or "", part], sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class BaseHazards:
    """The diff base's findings as (fingerprint, hazard) pairs."""

    known: KnownFindings

    @classmethod
    def of(cls, findings: Iterable[Finding]) -> "BaseHazards":
        return cls(KnownFindings(tuple((f.fingerprint or "", hazard_key(f)) for f in findings), "diff base"))

    def match(self, findings: Sequence[Finding]) -> set[int]:
        """Indices of the `findings` the base accounts for (fingerprint, then hazard, each entry once)."""
        import dataclasses

        keyed = [dataclasses.replace(f, group=hazard_key(f)) for f in findings]
        return self.known.match(keyed)
