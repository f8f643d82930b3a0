"""Dispatch terms (predicate / string / member tests), worker-creating branches and alias assignments."""

from sgl_scan.analyzer.extractors.dispatch import DispatchExtractor
from sgl_scan.analyzer.extractors.records import AliasAssign, Branch, DispatchTerm
from tests.analyzer.extractors.driver import records

EX = DispatchExtractor()


def terms(found):
    return [(t.line, t.via, t.values, t.negated, t.subject) for t in found if isinstance(t, DispatchTerm)]


def test_predicate_calls_on_algorithm_receivers_only():
    found = records('''
        def f(self, batch, device):
            if self.spec_algorithm.is_eagle():
                pass
            ok = not batch.spec_algorithm.is_none() and device.is_cuda()
            algo = get_spec_algorithm()
            return algo.supports_spec_v2() or self.tree_cache.is_chunk_cache() or self.is_eagle()
    ''', EX, "sglang/srt/managers/scheduler.py")
    assert terms(found) == [
        (3, "predicate", ("is_eagle",), False, "self.spec_algorithm"),
        (5, "predicate", ("is_none",), True, "batch.spec_algorithm"),
        (7, "predicate", ("supports_spec_v2",), False, "algo"),
    ]
    assert {t.function for t in found} == {"sglang.srt.managers.scheduler.f"}


def test_string_comparisons_direct_upper_alias_and_tuples():
    found = records('''
        class ServerArgs:
            def check(self, server_args):
                if self.speculative_algorithm == "NEXTN":
                    self.speculative_algorithm = "EAGLE"
                if server_args.speculative_algorithm.upper() in ("EAGLE", "EAGLE3"):
                    pass
                algo = server_args.speculative_algorithm
                if algo != "STANDALONE":
                    pass
                if "EAGLE" in self.speculative_algorithm:  # a substring test, not dispatch
                    pass
                name = "EAGLE"  # speculative_algorithm == "EAGLE" in a comment
    ''', EX, "sglang/srt/server_args.py")
    assert terms(found) == [
        (4, "string", ("NEXTN",), False, "self.speculative_algorithm"),
        (6, "string", ("EAGLE", "EAGLE3"), False, "server_args.speculative_algorithm.upper()"),
        (9, "string", ("STANDALONE",), True, "algo"),
    ]
    aliases = [(a.alias, a.target, a.line) for a in found if isinstance(a, AliasAssign)]
    assert aliases == [("NEXTN", "EAGLE", 4)]
    assert next(t for t in found if isinstance(t, DispatchTerm)).function == "sglang.srt.server_args.ServerArgs.check"


def test_member_comparisons():
    found = records('''
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

        def g(spec_algorithm, x):
            a = spec_algorithm == SpeculativeAlgorithm.EAGLE3
            b = x.algo in (SpeculativeAlgorithm.DFLASH, SpeculativeAlgorithm.NGRAM)
            c = x is not SpeculativeAlgorithm.NONE
    ''', EX)
    assert terms(found) == [
        (5, "member", ("EAGLE3",), False, "spec_algorithm"),
        (6, "member", ("DFLASH", "NGRAM"), False, "x.algo"),
        (7, "member", ("NONE",), True, "x"),
    ]


def test_branches_in_create_worker_pure_conditional_and_fallthrough():
    found = records('''
        class SpeculativeAlgorithm(Enum):
            EAGLE = auto()

            def is_eagle(self) -> bool:
                return self == SpeculativeAlgorithm.EAGLE

            def create_worker(self, server_args):
                if self.is_eagle() and server_args.enable_multi_layer_eagle:
                    from sglang.srt.speculative.multi_layer_eagle_worker import MultiLayerEagleWorker

                    return MultiLayerEagleWorker
                elif self.is_eagle():
                    if server_args.enable_overlap:
                        from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

                        return EAGLEWorkerV2
                    from sglang.srt.speculative.eagle_worker import EAGLEWorker

                    return EAGLEWorker
                raise ValueError("unreachable")
    ''', EX, "sglang/srt/speculative/spec_info.py")
    # the predicate body itself is a definition, not a dispatch site
    assert [t.line for t in found if isinstance(t, DispatchTerm)] == [9, 13]
    branches = [b for b in found if isinstance(b, Branch)]
    assert [(b.line, b.pure, [w.qualname.rpartition(".")[2] for w in b.workers],
             b.fallthrough.qualname if b.fallthrough else None) for b in branches] == [
        (9, False, ["MultiLayerEagleWorker"], "sglang.srt.speculative.multi_layer_eagle_worker.MultiLayerEagleWorker"),
        (13, True, ["EAGLEWorkerV2", "EAGLEWorker"], "sglang.srt.speculative.eagle_worker.EAGLEWorker"),
    ]
    assert branches[0].owner_class == "sglang.srt.speculative.spec_info.SpeculativeAlgorithm"
    assert branches[1].fallthrough.at.line == 20


def test_inline_scheduler_branch_instantiates_worker():
    found = records('''
        class Scheduler:
            def __init__(self, server_args):
                if self.spec_algorithm.is_eagle():
                    from sglang.srt.speculative.eagle_worker import EAGLEWorker

                    self.draft_worker = EAGLEWorker(server_args=server_args)
                else:
                    self.draft_worker = None
    ''', EX, "sglang/srt/managers/scheduler.py")
    (branch,) = [b for b in found if isinstance(b, Branch)]
    assert branch.pure and branch.owner_class is None
    assert branch.fallthrough.qualname == "sglang.srt.speculative.eagle_worker.EAGLEWorker"
    assert branch.fallthrough.at.line == 7


def test_trigger():
    assert EX.trigger.search("if self.spec_algorithm.is_eagle():")
    assert EX.trigger.search('if server_args.speculative_algorithm == "EAGLE":')
    assert EX.trigger.search("algo = server_args.speculative_algorithm\n")
    assert EX.trigger.search("x = SpeculativeAlgorithm.EAGLE")
    assert not EX.trigger.search("def f(speculative_algorithm: Optional[str]):\n    return g(speculative_algorithm)")


def test_positions_count_lines_as_python_does():
    # a form feed and a LINE SEPARATOR inside a string: str.splitlines() would see extra lines
    found = records(
        'NOTE = "a\u2028b"\n'
        '\x0c\n'
        'def pick(server_args):\n'
        '    if server_args.speculative_algorithm == "EAGLE":  # é\n'
        '        return 1\n',
        EX, "sglang/srt/server_args.py")
    assert [(t.line, t.column, t.subject) for t in found if isinstance(t, DispatchTerm)] == [
        (4, 8, "server_args.speculative_algorithm")]


def test_old_mac_line_endings_keep_sites_and_lines():
    source = 'import os\r\rdef pick(server_args):\r    if server_args.speculative_algorithm == "EAGLE":\r        return 1\r'
    found = records(source, EX, "sglang/srt/server_args.py")
    assert [(t.line, t.column) for t in found if isinstance(t, DispatchTerm)] == [(4, 8)]


def test_spellings_of_the_algorithm_string_and_tuples_holding_none():
    """0.5.23 arg_groups/kv_cache_hook.py:154 (a conditional-expression alias), lora_hook.py:247 and
    model_config.py:1052 (tuples holding None), `str(x).upper()` and `(x or "").upper()`."""
    found = records('''
        def handle(cfg):
            algo = (
                cfg.speculative_algorithm.upper()
                if cfg.speculative_algorithm is not None
                else None
            )
            if algo in ("DFLASH", "DSPARK"):
                pass
            if cfg.speculative_algorithm in ["NGRAM", None]:
                return
            if str(cfg.speculative_algorithm).upper() == "EAGLE":
                pass
            if (cfg.speculative_algorithm or "").upper() != "NONE":
                pass
    ''', EX, "sglang/srt/arg_groups/kv_cache_hook.py")
    assert terms(found) == [
        (5, "string", ("None",), True, "cfg.speculative_algorithm"),  # `is not None`: NONE's spelling
        (8, "string", ("DFLASH", "DSPARK"), False, "algo"),
        (10, "string", ("NGRAM", "None"), False, "cfg.speculative_algorithm"),  # None is kept: it is NONE
        (12, "string", ("EAGLE",), False, "str(cfg.speculative_algorithm).upper()"),
        (14, "string", ("NONE",), True, '(cfg.speculative_algorithm or "").upper()'),
    ]


def test_alias_names_reads_only_lines_naming_an_algorithm_and_finds_what_the_regex_finds(sglang_0_5_23):
    from sgl_scan.analyzer.extractors.dispatch import _ALIAS_DEF, alias_names
    from sgl_scan.analyzer.pipeline import discover

    samples = ["algo = self.speculative_algorithm\n", "A = x.SPEC_ALGORITHM.upper()", "a = spec_algorithm\r\nb = 1\n",
               "b = spec_algorithm  # no\n  c = server_args.speculative_algorithm \n\nd=e_algorithm",
               "é = 1\nalgo = spec_algorithm\n", "x = 1\ny = speculative_algorithm_alias.lower()\n"]
    texts = samples + [(sglang_0_5_23 / rel).read_text("utf-8") for rel in discover(sglang_0_5_23)
                       if "speculative" in rel or "server_args" in rel]
    found = 0
    for text in texts:
        assert alias_names(text) == set(_ALIAS_DEF.findall(text))
        found += len(alias_names(text))
    assert found > 5


def test_is_none_is_the_member_none_only_on_the_option_string():
    """`server_args.speculative_algorithm is None` (a local copy, `.get(...)`) means no algorithm; an
    algorithm object (`SA.from_string(x)`, `model_runner.spec_algorithm`) is NONE then, never None, so
    its null check is no term (0.5.23 model_runner.py:1561, eagle_utils.py:264)."""
    found = records('''
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm as SA
        def f(server_args, model_runner, args):
            algo = SA.from_string(server_args.speculative_algorithm)
            spec_algorithm = model_runner.spec_algorithm
            name = get_spec().speculative_algorithm
            if algo is None or spec_algorithm is not None or model_runner.spec_algorithm is None:
                pass
            if server_args.speculative_algorithm is None or name is not None:
                pass
            if args.get("speculative_algorithm") is None:
                pass
    ''', EX, "sglang/srt/x.py")
    assert [(line, via, values, negated) for line, via, values, negated, _ in terms(found)] == [
        (9, "string", ("None",), False), (9, "string", ("None",), True), (11, "string", ("None",), False)]
