"""`Trigger` (literal-led regexes that act like one pattern) and `hit_lines`."""

import re

from sgl_scan.analyzer.extractors import EXTRACTORS
from sgl_scan.analyzer.extractors._cst import Trigger
from sgl_scan.analyzer.extractors._scoped import hit_lines


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
    assert len(set(names)) == len(names) and all(n.startswith("spec_") for n in names)
    assert all(isinstance(ex.version, int) and ex.trigger.search("") is None for ex in EXTRACTORS)
