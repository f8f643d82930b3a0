"""Aliases in every release form, and SGL203 on every release 0.4.6-0.5.23.

Forms, read from the releases: 0.4.6-0.5.11 `if self.speculative_algorithm == "NEXTN":
self.speculative_algorithm = "EAGLE"` in `server_args.py` (0.5.5-0.5.7 also `aliases=("NEXTN",)` on
the registration); 0.5.12 `_resolve_speculative_algorithm_alias` in `server_args.py`; 0.5.13-0.5.23
the same resolver in `arg_groups/speculative_hook.py` beside the `_RESERVED_ALIASES` table (0.5.20+
also `if upper in _RESERVED_ALIASES: return cls.EAGLE` in `from_string`). In every release NEXTN
means EAGLE, and no string compared with the algorithm names nothing: no SGL203 anywhere.
"""

from __future__ import annotations

import functools

import pytest

from sgl_scan.analyzer.extractors.aliases import AliasResolverExtractor
from sgl_scan.analyzer.extractors.records import AliasResolver
from sgl_scan.rules.engine import run_rules
from tests.analyzer.extractors.driver import facts_for
from tests.support.releases import analyse_release, release_tree

pytestmark = pytest.mark.slow

RELEASES = ["0.4.6", "0.4.10", *(f"0.5.{n}" for n in range(1, 24))]

# release -> (file, line of the `if ... == "NEXTN" or ... == "EAGLE":` of the resolver)
RESOLVERS = {
    "0.5.12": ("sglang/srt/server_args.py", 344),
    "0.5.13": ("sglang/srt/arg_groups/speculative_hook.py", 41),
    "0.5.16": ("sglang/srt/arg_groups/speculative_hook.py", 52),
    "0.5.19": ("sglang/srt/arg_groups/speculative_hook.py", 69),
    "0.5.23": ("sglang/srt/arg_groups/speculative_hook.py", 109),
}


@functools.lru_cache(maxsize=None)
def analysed(version: str):
    """(analysis, findings) of a default-scope scan of a release, as the snapshot layer selects files."""
    analysis = analyse_release(version)
    return analysis, tuple(run_rules(analysis))


@pytest.mark.parametrize("version", sorted(RESOLVERS))
def test_alias_resolver_function_is_read(version):
    path, line = RESOLVERS[version]
    text = (release_tree(version) / path).read_text(encoding="utf-8")
    facts = facts_for(path, text, (AliasResolverExtractor(),))
    records = [r for r in facts.extras["spec_alias_resolvers"] if isinstance(r, AliasResolver)]
    assert [(r.line, r.aliases, r.target, r.function.rpartition(".")[2]) for r in records] == [
        (line, ("NEXTN",), "EAGLE", "_resolve_speculative_algorithm_alias")]


@pytest.mark.parametrize("version", RELEASES)
def test_nextn_is_eagle_and_no_sgl203(version):
    analysis, findings = analysed(version)
    assert analysis.inventory.aliases.get("NEXTN") == "EAGLE"
    assert [f"{f.path}:{f.line} {f.message}" for f in findings if f.rule_id == "SGL203"] == []


def test_nextn_sites_that_were_false_errors_are_still_dispatch_sites():
    """0.5.13's resolver site (the one SGL203 called an error) is a string site on EAGLE."""
    analysis, _ = analysed("0.5.13")
    sites = [s for s in analysis.inventory.dispatch_sites
             if (s.location.path, s.location.line) == ("sglang/srt/arg_groups/speculative_hook.py", 41)]
    assert sites and all(s.via == "string" and "EAGLE" in s.algorithms for s in sites)
