"""The census (analyzer/census.py): what it counts as a reference, by resolution, and the accounting."""

from __future__ import annotations

import ast
import textwrap

import pytest

from sgl_scan.analyzer import census
from sgl_scan.analyzer.census import Binding, Reference, census_of
from sgl_scan.analyzer.pipeline import analyze_tree, build_inventory
from tests.analyzer.census_check import census_entries, uncovered

SPEC_INFO = textwrap.dedent('''\
    from enum import IntEnum, auto

    class SpeculativeAlgorithm(IntEnum):
        NONE = auto()
        EAGLE = auto()
        EAGLE3 = auto()
        NGRAM = auto()

        @classmethod
        def from_string(cls, name):
            return cls[name.upper()] if name else cls.NONE

        def is_none(self) -> bool:
            return self == SpeculativeAlgorithm.NONE

        def is_eagle(self) -> bool:
            return self in (SpeculativeAlgorithm.EAGLE, SpeculativeAlgorithm.EAGLE3)

        def is_ngram(self):
            return self == SpeculativeAlgorithm.NGRAM

        def get_worker(self):
            return None
    ''')


def refs(source: str, module: str = "sglang.srt.x") -> list[tuple]:
    text = textwrap.dedent(source)
    records = census_of(ast.parse(text), text, module)
    return [(r.line, r.form, r.shape, r.text) + ((r.needs,) if r.needs else ()) for r in records if type(r) is Reference]


def bindings(source: str) -> set[tuple]:
    text = textwrap.dedent(source)
    return {(b.kind, b.name, b.values) for b in census_of(ast.parse(text), text, "sglang.srt.x") if type(b) is Binding}


def test_import_alias_constants_and_named_collections_resolve():
    assert refs('''\
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm as SA
        DFLASH = SA.DFLASH
        _FAMILY = frozenset({SA.EAGLE, SA.EAGLE3})
        def f(algo: SA, name):
            if algo == DFLASH:
                return 1
            if algo in _FAMILY:
                return 2
            if name == "DFLASH":  # an unknown string: no reference
                return 3
            return algo.is_eagle()
        ''') == [(5, "member test", "named constant", "algo == DFLASH"),
                 (7, "member test", "named collection", "algo in _FAMILY"),
                 # counts only in a tree where some `from_string(x.name)` makes `name` an algorithm string
                 (9, "string test", "literal", 'name == "DFLASH"', ("algo_attr", "name")),
                 (9, "string test", "literal", 'name == "DFLASH"', ("string_attr", "name")),
                 (11, "predicate call", "name", "algo.is_eagle()")]


def test_values_of_the_algorithm_by_call_and_subscript():
    assert [r[:3] for r in refs('''\
        from sglang.srt.speculative import spec_info
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
        def f(cfg):
            if SpeculativeAlgorithm.from_string(cfg.speculative_algorithm).is_eagle():
                pass
            a = SpeculativeAlgorithm["EAGLE"]
            b = spec_info.SpeculativeAlgorithm.from_string("x")
            return a.is_ngram() or b.is_none() or (x := SpeculativeAlgorithm.NONE).is_none()
        ''')] == [(4, "predicate call", "call result"), (8, "predicate call", "name"), (8, "predicate call", "name"),
                  (8, "predicate call", "attribute")]


def test_strings_of_the_algorithm_and_attributes_bound_elsewhere():
    source = '''\
        def f(server_args, batch):
            if server_args.speculative_algorithm is None:
                return
            if str(server_args.speculative_algorithm).upper() in ("EAGLE", None):
                return
            if batch.spec_algorithm.is_eagle():
                return
            spec = batch.spec_algorithm
            if spec.is_ngram():  # a local copy of the attribute stands for it
                return
            return batch.other.is_eagle()
        '''
    found = refs(source)
    assert (2, "string test", "None", "server_args.speculative_algorithm is None", ("string_attr", "speculative_algorithm")) in found
    assert (4, "string test", "literal collection with None",
            'str(server_args.speculative_algorithm).upper() in ("EAGLE", None)', ("string_attr", "speculative_algorithm")) in found
    assert (6, "predicate call", "attribute", "batch.spec_algorithm.is_eagle()", ("algo_attr", "spec_algorithm")) in found
    assert (9, "predicate call", "name", "spec.is_ngram()", ("algo_attr", "spec_algorithm")) in found
    # which attribute names hold an algorithm is learned from the tree, not from the spelling
    assert bindings('''\
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
        class Batch:
            spec_algorithm: SpeculativeAlgorithm = None
        class Runner:
            def __init__(self, server_args):
                self.algo = SpeculativeAlgorithm.from_string(server_args.speculative_algorithm)
        ''') == {("algo_attr", "spec_algorithm", ()), ("algo_attr", "algo", ()), ("string_attr", "speculative_algorithm", ())}


def test_match_cases_and_the_algorithm_class_predicates():
    assert refs('''\
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm as SA
        def f(algo: SA):
            match algo:
                case SA.EAGLE | SA.EAGLE3:
                    return 1
                case _:
                    return 2
        ''') == [(4, "match case", "match statement", "SA.EAGLE"), (4, "match case", "match statement", "SA.EAGLE3")]
    assert ("predicates", "SpeculativeAlgorithm", ("is_eagle", "is_ngram", "is_none")) in bindings(SPEC_INFO)


def test_terms_of_a_test_carry_their_polarity():
    text = textwrap.dedent('''\
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm as SA
        def f(algo: SA):
            if not algo.is_eagle() and algo.is_ngram() is False and (algo.is_none() is not False):
                pass
            x = algo.is_eagle()
            while algo != SA.EAGLE:
                pass
        ''')
    got = [(r.text, r.in_test, r.negated) for r in census_of(ast.parse(text), text, "m") if type(r) is Reference]
    assert got == [("algo.is_eagle()", True, True), ("algo.is_ngram()", True, True), ("algo.is_none()", True, False),
                   ("algo.is_eagle()", False, False), ("algo != SA.EAGLE", True, True)]


def test_d2t_references_and_what_is_no_reference():
    assert [r[:3] for r in refs('''\
        import torch
        class M:
            def load(self, name, w):
                if "d2t" in name:
                    self.hot_token_id = w + torch.arange(w.shape[0])
                self.d2t = None
                x = self.d2t
                return self.hot_token_id
            def g(self, ids):
                return self.d2t[ids]
            def h(self, hot_token_id):
                if hot_token_id is not None:
                    return torch.add(self.d2t, hot_token_id)
        class Dropout2d:
            pass
        ''')] == [(4, "d2t", "name test"), (5, "d2t", "conversion"), (10, "d2t", "returned"), (10, "d2t", "indexing"),
                  (12, "d2t", "None test"), (13, "d2t", "returned")]


# -- accounting on a small tree -------------------------------------------------------------------

USER = textwrap.dedent('''\
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    class Scheduler:
        def __init__(self, server_args):
            self.spec_algorithm = SpeculativeAlgorithm.from_string(server_args.speculative_algorithm)

        def step(self, server_args):
            if self.spec_algorithm.is_eagle():
                return 1
            key = lambda: 1 if self.spec_algorithm.is_ngram() else 2
            return key
            return 0
    ''')


@pytest.fixture
def tree(tmp_path):
    for rel, text in (("sglang/srt/speculative/spec_info.py", SPEC_INFO), ("sglang/srt/managers/scheduler.py", USER)):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def _paths(tree):
    return sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*.py"))


def test_every_reference_is_read_or_unread_and_counted(tree, tmp_path):
    inventory = analyze_tree(tree, _paths(tree), cache_dir=tmp_path / "cache").inventory
    assert inventory.census.references == inventory.census.read + inventory.census.unread
    unread = [(u.location.line, u.name, u.reason) for u in inventory.unread_of("reference")]
    # a conditional expression inside a lambda is read as a value, not as the decision it makes
    assert unread == [(10, "self.spec_algorithm.is_ngram()",
                       "predicate call (attribute): read as a dispatch site, but not as the test it sits in")]
    assert uncovered(census_entries(tree, _paths(tree)), inventory) == []


def test_the_invariant_check_fails_when_the_accounting_drops_an_entry(tree, tmp_path, monkeypatch):
    """The release test's check is not vacuous. An extractor that loses the site at line 8 is caught by
    the accounting (an unread entry takes its place); an accounting that also forgets its unread
    entries fails the check."""
    from dataclasses import replace

    real = census.account

    def losing(files, inventory):  # the dispatch extractor drops `if self.spec_algorithm.is_eagle():`
        kept = tuple(s for s in inventory.dispatch_sites if s.location.line != 8)
        return real(files, replace(inventory, dispatch_sites=kept))

    def forgetful(files, inventory):
        inv, done = losing(files, inventory)
        return replace(inv, unread=tuple(u for u in inv.unread if u.what != "reference")), done

    monkeypatch.setattr(census, "account", losing)
    inventory = analyze_tree(tree, _paths(tree), use_cache=False).inventory
    assert [(u.location.line, u.name) for u in inventory.unread_of("reference")] == [
        (8, "self.spec_algorithm.is_eagle()"), (10, "self.spec_algorithm.is_ngram()")]
    assert uncovered(census_entries(tree, _paths(tree)), inventory) == []
    monkeypatch.setattr(census, "account", forgetful)
    inventory = analyze_tree(tree, _paths(tree), use_cache=False).inventory
    assert uncovered(census_entries(tree, _paths(tree)), inventory) == [
        "sglang/srt/managers/scheduler.py:8:12 predicate call self.spec_algorithm.is_eagle()"]


def test_warm_scans_give_the_same_census(tree, tmp_path):
    cold = analyze_tree(tree, _paths(tree), cache_dir=tmp_path / "cache").inventory
    warm = analyze_tree(tree, _paths(tree), cache_dir=tmp_path / "cache").inventory
    assert warm.census == cold.census and warm.unread == cold.unread and cold.census.references == 5  # three predicate bodies, two calls


def test_a_hand_built_inventory_has_no_census():
    assert build_inventory({}).census is not None  # the pipeline always accounts
    from sgl_scan.analyzer.pipeline import empty_inventory
    assert empty_inventory().census is None


def test_lambdas_and_keyed_lookups():
    """0.5.13 model_runner.py:3137 (a predicate call inside a lambda) and 0.5.1-0.5.3 communicator.py
    (`speculative_algo = global_server_args_dict.get("speculative_algorithm", None)`)."""
    found = refs('''\
        def f(self, args_dict, x):
            build(lambda bs: make(bs, track=self.spec_algorithm.is_none()))
            algo = args_dict.get("speculative_algorithm", None)
            other = args_dict["spec_algorithm"]
            ignored = (lambda spec_algorithm: spec_algorithm.is_none())
            return algo is not None and algo.is_eagle() and other.is_ngram()
        ''')
    assert [(r[0], r[3], r[4]) for r in found] == [
        (2, "self.spec_algorithm.is_none()", ("algo_attr", "spec_algorithm")),
        (6, "algo is not None", ("string_attr", "speculative_algorithm")),
        (6, "algo.is_eagle()", ("algo_attr", "speculative_algorithm")),
        (6, "other.is_ngram()", ("algo_attr", "spec_algorithm"))]


def test_null_checks_and_member_names():
    """`x is None` is a reference on the option string only (an algorithm object is NONE, never None);
    a member's `.name` is its string; `self.spec_algorithm.name` spells what the attribute holds."""
    found = refs('''\
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm as SA
        def f(server_args, algo_name):
            algo = SA.from_string(server_args.speculative_algorithm)
            if algo is not None and server_args.speculative_algorithm is None:
                pass
            if str(algo_name).upper() == SA.DFLASH.name:
                pass
        class S:
            def g(self):
                return self.spec_algorithm.name in {"EAGLE", "EAGLE3"}
        ''')
    tests = [(r[0], r[2], r[3], r[4]) for r in found if r[1] == "string test"]
    assert tests == [
        (4, "None", "server_args.speculative_algorithm is None", ("string_attr", "speculative_algorithm")),
        (6, "literal", "str(algo_name).upper() == SA.DFLASH.name", ("algo_attr", "algo_name")),
        (6, "literal", "str(algo_name).upper() == SA.DFLASH.name", ("string_attr", "algo_name")),
        (10, "literal collection", 'self.spec_algorithm.name in {"EAGLE", "EAGLE3"}', ("algo_attr", "spec_algorithm")),
        (10, "literal collection", 'self.spec_algorithm.name in {"EAGLE", "EAGLE3"}', ("string_attr", "spec_algorithm"))]
