"""`Trigger` (literal-led regexes that act like one pattern) and `hit_lines`."""

import re

from sgl_scan.analyzer.extractors import EXTRACTORS
from sgl_scan.analyzer.extractors._text import Trigger, hit_lines


def test_trigger_matches_like_the_alternation():
    trigger = Trigger(r"d2t\b(?<!\wd2t)", r"hot_token_id")
    alternation = re.compile(trigger.pattern)
    for text in ("x = 1", 'if "d2t" in name:', "Dropoutd2t", "self.hot_token_id = None", "rpd2tracing"):
        assert bool(trigger.search(text)) == bool(alternation.search(text)), text
    assert trigger.search("a\nb d2t").group() == "d2t"


def test_hit_lines_sorted_unique_from_several_parts():
    text = "spec\nnothing\nalgo spec\n\nSpec"
    assert hit_lines(text, Trigger("spec", "algo", "Spec")) == [1, 3, 5]
    assert hit_lines(text, re.compile("nothing")) == [2]


def test_every_extractor_has_a_stable_name_and_version():
    names = [ex.name for ex in EXTRACTORS]
    # the census (analyzer/census.py) rides the same per-file pass; the inventory reads only `spec_*` records
    assert len(set(names)) == len(names) and all(n.startswith("spec_") for n in names if n != "census")
    assert names.count("census") == 1
    assert all(isinstance(ex.version, int) and ex.trigger.search("") is None for ex in EXTRACTORS)


def test_required_literal_is_in_every_match():
    from sgl_scan.analyzer.extractors._text import _required_literal

    cases = {"ab*c": "a", "x|y": "", "(?i)abc": "", "(?i:ab)cd": "cd", "abc(?:d|e)": "abc", r"\bfoo": "foo",
             "a{2}b": "b", "(?m:^xyz)": "xyz", "(a|b)cde": "cde", r"spec(?:ulative)?_algorithm": "_algorithm",
             r"d2t\b(?<!\wd2t)": "d2t", "(?:ab)*cd": "cd", "": ""}
    for pattern, literal in cases.items():
        assert _required_literal(re.compile(pattern)) == literal, pattern


def test_trigger_skips_only_parts_that_cannot_match():
    """The `in` shortcut changes nothing: the same first match and the same matches as each regex alone."""
    texts = ["", "x = spec_algorithm == 'EAGLE'", "class SpecAlgo:\n  ALIAS = 1", "self.d2t\nhot_token_id = d2t",
             "if self.spec_algorithm.is_eagle():\n    pass\n", "return algo", "a\nb add_x_choices(\n",
             'parser.add_argument("--speculative-algorithm", type=str)']
    for ex in EXTRACTORS:
        trigger = ex.trigger
        for text in texts:
            plain = next((m for m in (p.search(text) for p in trigger.parts) if m), None)
            found = trigger.search(text)
            assert (found and (found.span(), found.re)) == (plain and (plain.span(), plain.re)), (ex.name, text)
            every = [m.span() for p in trigger.parts for m in p.finditer(text)]
            assert [m.span() for m in trigger.finditer(text)] == every, (ex.name, text)
