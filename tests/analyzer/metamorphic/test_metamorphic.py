"""Metamorphic tests on real releases (issue 27 item 4): equivalent rewrites of real SGLang files give
the same facts up to line numbers, or the census says exactly which entries became unread.

For each release and rewrite kind, up to three files with sites of that kind are rewritten (up to
four sites each, tests/analyzer/metamorphic/rewrites.py), the inventory is rebuilt with that one file
changed, and every fact that moved (other than by line) must be explained by an `unread` entry at its
place, in the rewritten function, or by a predicate it depends on that could not be read. A fact that
changes with no unread entry is a silent difference: the test fails and prints it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.analyzer.metamorphic.harness import compare, rewrite_sites
from tests.analyzer.metamorphic.rewrites import KINDS

pytestmark = pytest.mark.slow

RELEASES = ("0.5.16", "0.5.20", "0.5.23")

# Forms read by meaning: on 0.5.23 every rewrite of these gives the same facts, up to line numbers.
READ_BY_MEANING = ("constant_alias", "d2t_torch_add", "d2t_two_statements", "import_alias", "is_false", "is_true",
                   "match", "named_constant", "ternary", "two_statement_predicate")


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("version", RELEASES)
def test_rewrite_changes_no_fact_silently(version, kind):
    rewrites = rewrite_sites(version, kind)
    assert sum(len(r.sites) for _path, r in rewrites) >= 2, f"too few {kind} sites in {version}"
    silent = []
    for path, rewritten in rewrites:
        outcome = compare(version, path, rewritten, kind)
        silent += [f"{fpath}:{line} {fact}" for fact, fpath, line in outcome.silent]
    assert silent == []


@pytest.mark.parametrize("kind", READ_BY_MEANING)
def test_forms_read_by_meaning_give_the_same_facts(kind):
    outcomes = [compare("0.5.23", path, rewritten, kind) for path, rewritten in rewrite_sites("0.5.23", kind)]
    assert outcomes
    assert [(o.path, o.status) for o in outcomes if o.status != "identical"] == []


def test_an_unreadable_case_is_named_where_it_stands():
    """A `case` whose pattern is no member, string or None (`case modes.eagle:` in 0.5.23's
    model_overrides/gigachat35.py, rewritten to `match cfg.speculative_algorithm:`) is an unread entry
    at the pattern, saying which form it could not read: the lost fact is explained, never silent."""
    path, rewritten = next((p, r) for p, r in rewrite_sites("0.5.23", "match") if p.endswith("/gigachat35.py"))
    text = rewritten.text.replace("case 'EAGLE':", "case modes.eagle:")
    assert text != rewritten.text
    outcome = compare("0.5.23", path, replace(rewritten, text=text), "match")
    assert outcome.status == "unread" and outcome.lost and not outcome.silent
    assert [(u.what, u.location.line, u.reason) for u in outcome.new_unread if u.location.path == path] == [
        ("dispatch", 19, "a `case` pattern on the algorithm that is not a member, a string or `None`")]
