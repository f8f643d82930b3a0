"""Issue 27 items 1-2 and issue 29's `--like`: names resolved by meaning, Python semantics, on real
release files and on small edits of them (the reproductions of `repro/hunt4`, several spellings each).

Each edit copies the few real files it needs (0.5.23 or 0.5.11, from the test cache), rewrites one
spot, and builds the inventory from exactly the extractors (`driver.scan_tree`). The metamorphic
tests rewrite real files into equivalent spellings and require the same dispatch answers.
"""

from __future__ import annotations

import re
import shutil

import pytest

from sgl_scan.analyzer.inventory import build_inventory
from tests.analyzer.extractors.driver import scan_tree
from tests.support.releases import release_tree

pytestmark = pytest.mark.slow

SPEC_INFO = "sglang/srt/speculative/spec_info.py"
REGISTRY = "sglang/srt/speculative/spec_registry.py"


def _tree(tmp_path, version: str, files: tuple[str, ...], edits: dict[str, list[tuple[str, str]]] | None = None,
          extra: dict[str, str] | None = None):
    source = release_tree(version)
    root = tmp_path / version
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, root / rel)
    for rel, pairs in (edits or {}).items():
        text = (root / rel).read_text(encoding="utf-8")
        for old, new in pairs:
            if isinstance(old, re.Pattern):
                text, n = old.subn(new, text)
                assert n, f"{rel}: {old.pattern} not found"
            else:
                assert text.count(old) == 1, f"{rel}: {old!r} found {text.count(old)} times"
                text = text.replace(old, new)
        (root / rel).write_text(text, encoding="utf-8")
    for rel, text in (extra or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _inventory(root):
    return build_inventory(scan_tree(root, only=tuple(p.relative_to(root).as_posix() for p in root.rglob("*.py"))))


def _sites(inv, path: str, line: int | None = None):
    return [s for s in inv.dispatch_sites if s.location.path == path and (line is None or s.location.line == line)]


def _algorithms(inv):
    return {a.name: a for a in inv.algorithms}


# -- unmodified 0.5.23 ------------------------------------------------------------------------------
VALIDATION = "sglang/srt/arg_groups/validation_hook.py"
KV_CACHE = "sglang/srt/arg_groups/kv_cache_hook.py"
LORA = "sglang/srt/arg_groups/lora_hook.py"
DSV4_POOL = "sglang/srt/mem_cache/deepseek_v4_memory_pool.py"


@pytest.fixture(scope="module")
def real_0_5_23(tmp_path_factory):
    root = _tree(tmp_path_factory.mktemp("real"), "0.5.23", (SPEC_INFO, REGISTRY, VALIDATION, KV_CACHE, LORA, DSV4_POOL))
    return _inventory(root)


def test_0_5_23_predicates_on_from_string_are_dispatch_sites(real_0_5_23):
    """validation_hook.py:230-234, kv_cache_hook.py:449, deepseek_v4_memory_pool.py:131: the receiver is
    `SpeculativeAlgorithm.from_string(x)`, a value the binding table knows is an algorithm."""
    (mixed,) = [s for s in _sites(real_0_5_23, VALIDATION) if s.detail == "supports_mixed_chunk"]
    # `assert not cfg.enable_mixed_chunk or from_string(...).supports_mixed_chunk()`: NGRAM can fail it, EAGLE never
    assert 230 <= mixed.location.line <= 234 and mixed.decision == "assert"
    assert "NGRAM" in mixed.negative and "EAGLE" not in mixed.negative
    (spec,) = [s for s in _sites(real_0_5_23, KV_CACHE, 449) if s.detail == "is_speculative"]
    assert "NONE" not in spec.algorithms and "EAGLE" in spec.algorithms
    (dspark,) = [s for s in _sites(real_0_5_23, DSV4_POOL, 131) if s.detail == "is_dspark"]
    assert dspark.algorithms == ("DSPARK",)


def test_0_5_23_none_in_literal_sets_and_is_none_are_the_none_algorithm(real_0_5_23):
    """validation_hook.py:90 `not in {None, "NGRAM", "EAGLE", "EAGLE3"}: raise` does not raise for NONE;
    kv_cache_hook.py:204 `not in (None, "NGRAM")` is False for NONE; lora_hook.py:247 `in ["NGRAM", None]:
    return` returns for NONE; validation_hook.py:133 `elif ... is not None: assert ... == "EAGLE"`."""
    (refuse,) = _sites(real_0_5_23, VALIDATION, 90)
    assert "NONE" not in refuse.algorithms and "NONE" in refuse.negative and refuse.refuses == "raise"
    assert "None" in refuse.literals
    (draft,) = _sites(real_0_5_23, KV_CACHE, 204)
    assert "NONE" not in draft.algorithms and "NONE" in draft.negative
    (exempt,) = _sites(real_0_5_23, LORA, 247)
    assert "NONE" in exempt.algorithms and "NONE" not in exempt.negative
    (eagle_only,) = _sites(real_0_5_23, VALIDATION, 133)
    assert "NONE" not in eagle_only.negative
    none_tests = [s for s in _sites(real_0_5_23, VALIDATION) if s.literals == ("None",)]
    # `is not None`: a new algorithm never skips it (it is not None; `unreachable` where :90 refused it already)
    assert none_tests and all(s.new_algorithm != "skips" for s in none_tests if s.negated)


# -- edits of 0.5.23's algorithm class --------------------------------------------------------------
CREATE_DFLASH = """        if self.is_dflash():
            # V2 worker drives both overlap and non-overlap (scheduler runs it
            # synchronously when overlap is disabled), same as EAGLE.
            from sglang.srt.speculative.dflash_worker_v2 import DFlashWorkerV2

            return DFlashWorkerV2
"""


@pytest.mark.parametrize("case", [
    "        match self:\n            case SpeculativeAlgorithm.DFLASH:\n",
    "        match self:\n            case SpeculativeAlgorithm.DSPARK | SpeculativeAlgorithm.DFLASH if True:\n",
    "        match self:\n            case SpeculativeAlgorithm.NGRAM:\n                pass\n            case SpeculativeAlgorithm.DFLASH:\n",
])
def test_match_case_on_the_algorithm_selects_only_its_members(tmp_path, case):
    new = case + ("                from sglang.srt.speculative.dflash_worker_v2 import DFlashWorkerV2\n\n"
                  "                return DFlashWorkerV2\n")
    inv = _inventory(_tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY), {SPEC_INFO: [(CREATE_DFLASH, new)]}))
    makers = {name for name, a in _algorithms(inv).items()
              if any(w.qualname.endswith("DFlashWorkerV2") for w in a.workers)}
    assert "DFLASH" in makers and makers <= {"DFLASH", "DSPARK"}
    assert _algorithms(inv)["DFLASH"].worker.endswith("DFlashWorkerV2")


@pytest.mark.parametrize("test", ['self.name == "UNO"', '"UNO" == self.name', 'self.name in ("UNO",)',
                                  "self is SpeculativeAlgorithm.UNO", "self in (SpeculativeAlgorithm.UNO,)"])
def test_the_members_own_name_inside_the_class_is_a_member_test(tmp_path, test):
    inv = _inventory(_tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY),
                           {SPEC_INFO: [("        if self.is_uno():\n", f"        if {test}:\n")]}))
    algos = _algorithms(inv)
    assert algos["UNO"].worker and algos["UNO"].worker.endswith("UnoWorkerV2")
    assert not any(w.qualname.endswith("UnoWorkerV2") for w in algos["NGRAM"].workers)


FAMILY_BODY = "    def is_dflash_family(self) -> bool:\n        return self.is_dflash() or self.is_dspark()"


@pytest.mark.parametrize("body", [
    "        family = (SpeculativeAlgorithm.DFLASH, SpeculativeAlgorithm.DSPARK)\n        return self in family",
    "        family = frozenset({SpeculativeAlgorithm.DSPARK, SpeculativeAlgorithm.DFLASH})\n        return self in family",
    "        if self.is_dflash():\n            return True\n        return self.is_dspark()",
    "        if self == SpeculativeAlgorithm.DFLASH:\n            return True\n        if self.name == \"DSPARK\":\n"
    "            return True\n        return False",
    "        dflash = self.is_dflash()\n        return dflash or self.is_dspark() is True",
])
def test_a_predicate_body_of_a_few_statements_is_evaluated(tmp_path, body):
    root = _tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY, "sglang/srt/speculative/spec_sampling_mask.py"),
                 {SPEC_INFO: [(FAMILY_BODY, "    def is_dflash_family(self) -> bool:\n" + body)]})
    inv = _inventory(root)
    (family,) = [p for p in inv.predicates if p.name == "is_dflash_family"]
    assert set(family.members) == {"DFLASH", "DSPARK"}
    assert [s for s in inv.dispatch_sites if s.detail == "is_dflash_family"]


def test_a_predicate_body_that_cannot_be_evaluated_is_unread(tmp_path):
    body = "        for member in FAMILY:\n            pass\n        return self in FAMILY"
    inv = _inventory(_tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY),
                           {SPEC_INFO: [(FAMILY_BODY, "    def is_dflash_family(self) -> bool:\n" + body)]}))
    assert "is_dflash_family" not in {p.name for p in inv.predicates}
    assert any(u.what == "predicate" and u.name == "is_dflash_family" for u in inv.unread)


@pytest.mark.parametrize("table,lookup", [
    ('{"NEXTN": "EAGLE", "DFLASH_TREE": "DFLASH"}', "cls[_RESERVED_ALIASES[upper]]"),
    ('dict(NEXTN="EAGLE")', "cls[_RESERVED_ALIASES[upper]]"),
])
def test_reserved_aliases_as_a_mapping(tmp_path, table, lookup):
    root = _tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY), {
        REGISTRY: [('_RESERVED_ALIASES = frozenset({"NEXTN"})', f"_RESERVED_ALIASES = {table}")],
        SPEC_INFO: [("        if upper in _RESERVED_ALIASES:\n            return cls.EAGLE",
                     f"        if upper in _RESERVED_ALIASES:\n            return {lookup}")]})
    inv = _inventory(root)
    if table.startswith("{"):
        assert inv.aliases == {"DFLASH_TREE": "DFLASH", "NEXTN": "EAGLE"}
    else:  # a mapping the extractor cannot read: not guessed, and said out loud
        assert "NEXTN" not in inv.aliases
        assert any(u.what == "alias" and u.name == "_RESERVED_ALIASES" for u in inv.unread)


def test_an_alias_return_form_not_read_is_unread(tmp_path):
    root = _tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY), {
        SPEC_INFO: [("        if upper in _RESERVED_ALIASES:\n            return cls.EAGLE",
                     "        if upper in _RESERVED_ALIASES:\n            return _resolve_alias(cls, upper)")]})
    inv = _inventory(root)
    assert "NEXTN" not in inv.aliases
    assert any(u.what == "alias" and u.name == "_RESERVED_ALIASES" for u in inv.unread)


@pytest.mark.parametrize("alias", ["NEXTN = EAGLE", "NEXTN = 2"])
def test_enum_alias_members_are_aliases_not_members(tmp_path, alias):
    text = (release_tree("0.5.23") / SPEC_INFO).read_text()
    (eagle_line,) = [line for line in text.splitlines() if re.match(r"^    EAGLE = ", line)]
    value = eagle_line.split("=", 1)[1].strip()
    spelled = alias if alias == "NEXTN = EAGLE" or value.isdigit() else f"NEXTN = {value}"
    if spelled.endswith("auto()"):
        spelled = "NEXTN = EAGLE"
    root = _tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY), {SPEC_INFO: [(eagle_line + "\n", f"{eagle_line}\n    {spelled}\n")]})
    inv = _inventory(root)
    assert "NEXTN" not in _algorithms(inv) and inv.aliases.get("NEXTN") == "EAGLE"


# -- edits of 0.5.23's call sites ---------------------------------------------------------------------
MASK = "sglang/srt/speculative/spec_sampling_mask.py"


@pytest.mark.parametrize("test", ["spec_algorithm.is_dflash_family() is False", "spec_algorithm.is_dflash_family() == False",
                                  "False is spec_algorithm.is_dflash_family()", "spec_algorithm.is_dflash_family() is not True",
                                  "not spec_algorithm.is_dflash_family() is True"])
def test_comparisons_with_bool_literals_keep_polarity_and_guard(tmp_path, test):
    inv = _inventory(_tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY, MASK),
                           {MASK: [("    if not spec_algorithm.is_dflash_family():\n", f"    if {test}:\n")]}))
    (site,) = [s for s in _sites(inv, MASK, 39)]
    assert site.guarded and "UNO" not in site.negative and "EAGLE" not in site.negative
    (exit_,) = [s for s in _sites(inv, MASK) if s.detail == "is_dflash_family" and s.location.line < 39]
    assert set(exit_.algorithms) == {"DFLASH", "DSPARK"} or set(exit_.negative) == {"DFLASH", "DSPARK"}


@pytest.mark.parametrize("old,new", [
    ('            and speculative_algorithm == "NGRAM"\n', '            and (algo := speculative_algorithm) == "NGRAM"\n'),
    ('            and speculative_algorithm == "NGRAM"\n', '            and (algo := speculative_algorithm).upper() == "NGRAM"\n'),
])
def test_walrus_subject_is_read(tmp_path, old, new):
    inv = _inventory(_tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY, KV_CACHE), {KV_CACHE: [(old, new)]}))
    assert [s for s in _sites(inv, KV_CACHE) if 189 <= s.location.line <= 191 and s.algorithms == ("NGRAM",)]


def test_named_collections_and_constants_resolve(tmp_path):
    """A module constant of members, a local constant member, the class under another name, `.name`."""
    inv = _inventory(_tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY), extra={
        "sglang/srt/speculative/uses.py": (
            "from sglang.srt.speculative.spec_info import SpeculativeAlgorithm as SA\n"
            "_DRAFTERS = (SA.EAGLE, SA.EAGLE3)\n"
            "_NAMES = frozenset({\"DFLASH\", \"DSPARK\"})\n\n\n"
            "def pick(algo, server_args):\n"
            "    dflash = SA.DFLASH\n"
            "    if algo in _DRAFTERS:\n        x = 1\n"
            "    if algo == dflash:\n        x = 2\n"
            "    if server_args.speculative_algorithm in _NAMES:\n        x = 3\n"
            "    if server_args.speculative_algorithm == SA.NGRAM.name:\n        x = 4\n"
            "    return 0\n")}))
    got = {s.location.line: (s.via, set(s.algorithms)) for s in _sites(inv, "sglang/srt/speculative/uses.py")}
    assert got[8] == ("member", {"EAGLE", "EAGLE3"})
    assert got[10] == ("member", {"DFLASH"})
    assert got[12] == ("string", {"DFLASH", "DSPARK"})
    assert got[14] == ("string", {"NGRAM"})


def test_algorithm_values_held_by_any_name_and_unresolvable_constants(tmp_path):
    """A local holding `SA.from_string(x)` (any name, on lines without the class's name), a walrus
    receiver, and a comparison with an imported constant the module cannot see: unread, not silence."""
    path = "sglang/srt/speculative/uses.py"
    inv = _inventory(_tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY), extra={path: (
        "from sglang.srt.speculative.spec_info import SpeculativeAlgorithm as SA\n"
        "from sglang.srt.speculative.families import EAGLE_FAMILY\n\n\n"
        "def f(server_args, get_spec):\n"
        "    mode = SA.from_string(server_args.speculative_algorithm)\n"
        "    if mode.is_ngram():\n        return 1\n"
        "    if (current := get_spec().speculative_algorithm).is_eagle():\n        return 2\n"
        "    if server_args.speculative_algorithm in EAGLE_FAMILY:\n        return 3\n"
        "    return 0\n")}))
    got = {s.location.line: s.detail for s in _sites(inv, path)}
    assert got.get(7) == "is_ngram" and got.get(9) == "is_eagle"
    assert [u for u in inv.unread if u.location.path == path and u.location.line == 11 and "EAGLE_FAMILY" in u.reason]


def test_a_raise_caught_by_the_enclosing_try_is_no_guard(tmp_path):
    inv = _inventory(_tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY), extra={
        "sglang/srt/speculative/uses.py": (
            "def f(spec_algorithm):\n"
            "    try:\n"
            "        if not spec_algorithm.is_eagle():\n"
            "            raise ValueError('eagle only')\n"
            "    except ValueError:\n"
            "        pass\n"
            "    if spec_algorithm.is_ngram():\n"
            "        return 1\n"
            "\n\n"
            "def g(spec_algorithm):\n"
            "    try:\n"
            "        if not spec_algorithm.is_eagle():\n"
            "            raise ValueError('eagle only')\n"
            "    except KeyError:\n"
            "        pass\n"
            "    if spec_algorithm.is_ngram():\n"
            "        return 1\n")}))
    path = "sglang/srt/speculative/uses.py"
    (caught,) = _sites(inv, path, 3)
    assert caught.refuses is None
    (after,) = _sites(inv, path, 7)
    assert after.algorithms == ("NGRAM",) and not after.guarded  # NGRAM gets there: the raise was caught
    (other,) = _sites(inv, path, 17)
    assert other.guarded and not other.algorithms  # a KeyError handler does not catch the ValueError


def test_return_a_if_c_else_b_gives_both_workers(tmp_path):
    inv = _inventory(_tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY), {SPEC_INFO: [(
        "            return DFlashWorkerV2\n",
        "            return DFlashWorkerV2 if self.is_dflash() else EAGLEWorkerV2\n")]}))
    makers = {w.qualname.rpartition(".")[2] for w in _algorithms(inv)["DFLASH"].workers}
    assert "DFlashWorkerV2" in makers and "EAGLEWorkerV2" not in makers


# -- plugins: spec_class= --------------------------------------------------------------------------------
PLUGIN = '''from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
from sglang.srt.speculative.spec_registry import CustomSpecAlgo


class {cls}({base}):
    def is_dflash(self) -> bool:
        return True

    def is_dflash_family(self) -> bool:
        return self.is_dflash()

    def is_speculative(self):
        return False


class TreeEagleSpecAlgo(CustomSpecAlgo):
    def is_eagle(self) -> bool:
        return True


@SpeculativeAlgorithm.register("DDTREE", supports_overlap=True, spec_class={cls})
def _ddtree_worker(server_args):
    from sglang.srt.speculative.dflash_worker_v2 import DFlashWorkerV2

    return DFlashWorkerV2


@SpeculativeAlgorithm.register("TREE_EAGLE", spec_class=TreeEagleSpecAlgo)
def _tree_eagle_worker(server_args):
    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

    return EAGLEWorkerV2
'''


@pytest.mark.parametrize("cls,base", [("DDTreeSpecAlgo", "CustomSpecAlgo"), ("DDTree", "CustomSpecAlgo")])
def test_plugin_spec_class_overrides_are_the_plugins_predicates(tmp_path, cls, base):
    plugin = PLUGIN.format(cls=cls, base=base)
    inv = _inventory(_tree(tmp_path, "0.5.23", (SPEC_INFO, REGISTRY), extra={"sglang/srt/plugins/ddtree.py": plugin}))
    algos = _algorithms(inv)
    assert {"is_dflash", "is_dflash_family"} <= set(algos["DDTREE"].predicates)
    assert "is_speculative" not in algos["DDTREE"].predicates and "is_eagle" not in algos["DDTREE"].predicates
    assert "is_eagle" in algos["TREE_EAGLE"].predicates and "is_dflash" not in algos["TREE_EAGLE"].predicates
    assert inv.plugin_base and inv.plugin_base.endswith("CustomSpecAlgo")

    # `graph --like --plugin` reads the same class with the same evaluation: only DDTREE's registration
    from sgl_scan.analyzer.graph_views import PluginFileError, like_listing, plugin_file_predicates

    derived = plugin_file_predicates(plugin, "ddtree", inv)
    listing = like_listing(inv, "DDTREE", "DFLASH", derived=derived)
    assert {p for p in listing.claims} == set(algos["DDTREE"].predicates) & {p.name for p in inv.predicates}
    with pytest.raises(PluginFileError, match="registers no algorithm NOPE .it registers: DDTREE, TREE_EAGLE"):
        plugin_file_predicates(plugin, "nope", inv)


# -- --like: NEW's predicates derived from the tree -----------------------------------------------------
def test_like_derives_a_new_members_predicates_from_the_definitions(real_0_5_23):
    from sgl_scan.analyzer.graph_views import format_like, like_listing

    listing = like_listing(real_0_5_23, "DDTREE", "DFLASH", {"is_dflash": True, "is_dflash_family": True})
    origin = dict(listing.origins)
    assert {"is_some", "is_speculative", "has_draft_kv"} <= set(listing.claims)  # `!= NONE`, `not is_ngram()`
    assert origin["is_some"] == "definition" and origin["is_dflash"] == "--claims"
    assert "supports_target_verify_for_draft" in listing.claims  # defined through is_dflash_family, which is claimed
    assert not [s for s in listing.sites if s.site.detail in ("is_speculative", "is_some", "has_draft_kv")]
    # a claim overrides the definition
    off = like_listing(real_0_5_23, "DDTREE", "DFLASH", {"is_dflash": True, "has_draft_kv": False})
    assert "has_draft_kv" not in off.claims and ("has_draft_kv", "--claims (false)") in off.origins
    assert "set false by --claims: has_draft_kv" in "\n".join(format_like(off))
    # an algorithm of the tree: the inventory's own answer, and its own literals
    same = like_listing(real_0_5_23, "DFLASH", "DFLASH")
    assert not same.sites and dict(same.origins)["is_dflash"] == "inventory"


def test_parse_claims():
    from sgl_scan.analyzer.graph_views import parse_claims

    assert parse_claims("is_a, is_b=false,!is_c,is_d=TRUE") == {"is_a": True, "is_b": False, "is_c": False, "is_d": True}
    with pytest.raises(ValueError):
        parse_claims("is_a=maybe")
    with pytest.raises(ValueError):
        parse_claims("is-a")


# -- metamorphic: equivalent spellings of real files give the same answers ----------------------------
def _answers(inv, path):
    return sorted((s.location.line, s.via, s.detail, s.algorithms, s.negative, s.guarded, s.new_algorithm)
                  for s in inv.dispatch_sites if s.location.path == path)


REWRITES = {
    "is False": (re.compile(r"if not ([\w.]+\.is_\w+)\(\):"), r"if \1() is False:"),
    "== False": (re.compile(r"if not ([\w.]+\.is_\w+)\(\):"), r"if \1() == False:"),
    "is True": (re.compile(r"if ([\w.]+spec_algorithm\.is_\w+)\(\):"), r"if \1() is True:"),
    "import as": (re.compile(r"SpeculativeAlgorithm"), "SA"),
}


@pytest.mark.parametrize("version,path", [("0.5.23", "sglang/srt/disaggregation/decode.py"),
                                          ("0.5.11", "sglang/srt/disaggregation/decode.py"),
                                          ("0.5.11", "sglang/srt/model_executor/model_runner.py")])
@pytest.mark.parametrize("kind", sorted(REWRITES))
def test_equivalent_spellings_give_the_same_dispatch_answers(tmp_path, version, path, kind):
    files = (SPEC_INFO, path) if version == "0.5.11" else (SPEC_INFO, REGISTRY, path)
    before = _inventory(_tree(tmp_path / "a", version, files))
    pattern, replacement = REWRITES[kind]
    rewrites = [(pattern, replacement)]
    if kind == "import as":  # only in the call-site file: `import SpeculativeAlgorithm as SA`, then SA.X
        text = (release_tree(version) / path).read_text()
        if "SpeculativeAlgorithm" not in text:
            pytest.skip("the file does not name the class")
        rewrites = [(re.compile(r"import SpeculativeAlgorithm\b"), "import SpeculativeAlgorithm as SA"),
                    (re.compile(r"(?<!import )\bSpeculativeAlgorithm\b(?! as SA)"), "SA")]
    try:
        after = _inventory(_tree(tmp_path / "b", version, files, {path: rewrites}))
    except AssertionError as exc:
        if "not found" in str(exc):
            pytest.skip(f"no spot for this rewrite in {path}")
        raise
    assert _answers(after, path) == _answers(before, path)
    assert _answers(before, path)
