"""Metamorphic tests on real releases (issue 27 item 4): equivalent rewrites of real SGLang files give
the same facts up to line numbers, or the census says exactly which entries became unread.

For each release and rewrite kind, up to three files with sites of that kind are rewritten (up to
four sites each, tests/analyzer/metamorphic/rewrites.py), the inventory is rebuilt with that one file
changed, and every fact that moved (other than by line) must be explained by an `unread` entry at its
place, in the rewritten function, or by a predicate it depends on that could not be read. A fact that
changes with no unread entry is a silent difference: the test fails and prints it.
"""

from __future__ import annotations

import pytest

from tests.analyzer.metamorphic.harness import compare, rewrite_sites
from tests.analyzer.metamorphic.rewrites import KINDS

pytestmark = pytest.mark.slow

RELEASES = ("0.5.16", "0.5.20", "0.5.23")

# Rewrites the analyzer of this branch reads wrongly and the census cannot see (a fact is produced,
# with another value). They are issue 27 items 2 and 5 (branch closed-semantics): strict, so they
# fail loudly the day they pass.
NEEDS_SEMANTICS = {
    "two_statement_predicate": "a predicate body of two statements is evaluated to another set of algorithms (issue 27 item 2)",
    "d2t_two_statements": "an offset conversion in two statements is read as a direct map (issue 27 item 5)",
}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("version", RELEASES)
def test_rewrite_changes_no_fact_silently(version, kind, request):
    if kind in NEEDS_SEMANTICS:
        request.applymarker(pytest.mark.xfail(strict=True, reason=NEEDS_SEMANTICS[kind]))
    rewrites = rewrite_sites(version, kind)
    assert sum(len(r.sites) for _path, r in rewrites) >= 2, f"too few {kind} sites in {version}"
    silent = []
    for path, rewritten in rewrites:
        outcome = compare(version, path, rewritten, kind)
        silent += [f"{fpath}:{line} {fact}" for fact, fpath, line in outcome.silent]
    assert silent == []


@pytest.mark.parametrize("kind", ["match", "named_constant", "constant_alias", "d2t_torch_add", "is_false"])
def test_unread_rewrites_name_their_form(kind):
    """Where a rewrite is not read, the census's unread entry sits in the rewritten lines and says which
    form it could not read."""
    seen = 0
    for path, rewritten in rewrite_sites("0.5.23", kind):
        outcome = compare("0.5.23", path, rewritten, kind)
        if outcome.status != "unread":
            continue
        regions = [site.new for site in rewritten.sites]
        inside = [u for u in outcome.new_unread if u.what == "reference" and u.location.path == path
                  and any(a <= u.location.line <= b for a, b in regions)]
        assert inside, (path, [str(u.location) for u in outcome.new_unread])
        seen += 1
    assert seen
