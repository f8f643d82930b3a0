"""The control-flow relation (analyzer/flow.py): which algorithms reach each side of a dispatch test,
which tests an earlier guard dominates, and which worker each algorithm gets under which flags.

Every shape is copied from a real release (release and file:line in the test name), cut down to
the statements that matter; the algorithm class is a small enum with the same predicates.
"""

from __future__ import annotations

from sgl_scan.analyzer.flow import FALSE, TRUE, conjoin, disjoin, evaluate, flags_text, negate, side
from tests.analyzer.extractors.driver import inventory_of_sources

SPEC_INFO = '''
    from enum import Enum, auto


    class SpeculativeAlgorithm(Enum):
        NONE = auto()
        DFLASH = auto()
        EAGLE = auto()
        EAGLE3 = auto()
        FROZEN_KV_MTP = auto()
        STANDALONE = auto()
        NGRAM = auto()

        def is_none(self) -> bool:
            return self == SpeculativeAlgorithm.NONE

        def is_eagle(self) -> bool:
            return self in (SpeculativeAlgorithm.EAGLE, SpeculativeAlgorithm.EAGLE3, SpeculativeAlgorithm.FROZEN_KV_MTP)

        def is_eagle3(self) -> bool:
            return self == SpeculativeAlgorithm.EAGLE3

        def is_dflash(self) -> bool:
            return self == SpeculativeAlgorithm.DFLASH

        def is_frozen_kv_mtp(self) -> bool:
            return self == SpeculativeAlgorithm.FROZEN_KV_MTP

        def is_standalone(self) -> bool:
            return self == SpeculativeAlgorithm.STANDALONE

        def is_ngram(self) -> bool:
            return self == SpeculativeAlgorithm.NGRAM
'''
SPEC = "sglang/srt/speculative/spec_info.py"


def _inventory(path: str, source: str, spec_info: str = SPEC_INFO):
    return inventory_of_sources({SPEC: spec_info, path: source} if path != SPEC else {SPEC: spec_info + source})


def _sites(inventory, line: int):
    return [s for s in inventory.dispatch_sites if s.location.line == line]


def _workers(inventory, name: str):
    algorithm = next(a for a in inventory.algorithms if a.name == name)
    return algorithm.worker, [(w.qualname.rpartition(".")[2], w.condition, w.location.line) for w in algorithm.workers]


# -- conditions ----------------------------------------------------------------------------------------
def test_conditions_simplify_and_evaluate_to_flags():
    a, b, flag = ("term", 1, 1), ("term", 1, 9), ("flag", "server_args.enable_multi_layer_eagle")
    assert negate(negate(a)) == a and conjoin((TRUE, a, a)) == a and disjoin((a, TRUE)) == TRUE
    cond = conjoin((negate(conjoin((a, flag))), b))
    assert evaluate(cond, {(1, 1): True, (1, 9): True}) == negate(flag)
    assert evaluate(cond, {(1, 1): False, (1, 9): False}) == FALSE
    assert side(a, negate(b), {(1, 1): True, (1, 9): True}) == (False, False)  # unreachable
    assert side(conjoin((a, flag)), TRUE, {(1, 1): True}) == (True, True)
    assert flags_text(conjoin((negate(("flag", "platform_worker_cls is not None")), flag))) == \
        "platform_worker_cls is None and server_args.enable_multi_layer_eagle"
    assert flags_text(TRUE) is None


# -- sides of a test ---------------------------------------------------------------------------------------
def test_0_5_23_overlap_utils_447_not_of_or_raises_for_dflash_and_ngram():
    """`if not (a.is_eagle() or a.is_standalone()): raise` (issue 18, case 2): the raise is for
    DFLASH and NGRAM; EAGLE only reaches its false side."""
    inv = _inventory("sglang/srt/managers/overlap_utils.py", '''
        class FutureMap:
            def make_staged_spec_input(self, future_indices):
                """Build the relay handle for a request leaving HiSparse staging."""
                if not (self.spec_algo.is_eagle() or self.spec_algo.is_standalone()):
                    raise RuntimeError("HiSparse staging only supports EAGLE-family speculative inputs.")
                return future_indices
    ''')
    sites = _sites(inv, 5)
    assert [s.detail for s in sites] == ["is_eagle", "is_standalone"]
    for site in sites:
        assert site.negated and site.refuses == "raise" and site.decision == "if"
        assert site.algorithms == ("NONE", "DFLASH", "NGRAM")
        assert site.negative == ("EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE")
        assert site.decision_location == sites[0].decision_location


def test_0_5_23_hisparse_hook_116_ne_none_lets_a_new_algorithm_enter():
    """`cfg.speculative_algorithm.upper() != "NONE"` (through a local bool): a new algorithm enters."""
    inv = _inventory("sglang/srt/arg_groups/hisparse_hook.py", '''
        def handle(cfg):
            enable_spec = (
                cfg.speculative_algorithm is not None
                and cfg.speculative_algorithm.upper() != "NONE"
            )
            if enable_spec and (cfg.speculative_eagle_topk or 1) != 1:
                raise ValueError("linear speculation only")
    ''')
    (site,) = _sites(inv, 5)
    # `is not None` is a flag here, so a new algorithm enters unless that flag is false; it never skips
    assert site.via == "string" and site.negated and site.new_algorithm == "either" and site.algorithms


def test_0_5_23_speculative_hook_176_not_in_raise_is_a_guard():
    inv = _inventory("sglang/srt/arg_groups/speculative_hook.py", '''
        def handle(cfg):
            if cfg.speculative_use_block_verification:
                if cfg.speculative_algorithm not in ("EAGLE", "EAGLE3", "DFLASH", "DSPARK"):
                    raise ValueError("--speculative-use-block-verification only supports EAGLE / EAGLE3")
                if cfg.speculative_algorithm in ("EAGLE", "EAGLE3") and not cfg.speculative_use_rejection_sampling:
                    cfg.speculative_use_rejection_sampling = True
    ''')
    (guard,) = _sites(inv, 4)
    assert guard.negated and guard.refuses == "raise" and guard.new_algorithm == "enters"
    (after,) = _sites(inv, 6)  # only EAGLE, EAGLE3 and DFLASH get past the guard
    assert after.guarded and after.new_algorithm == "unreachable"
    assert after.algorithms == ("EAGLE", "EAGLE3") and after.negative == ("DFLASH", "EAGLE", "EAGLE3")


def test_0_5_23_kv_cache_hook_590_assert_allow_list_dominates_later_tests():
    inv = _inventory("sglang/srt/arg_groups/kv_cache_hook.py", '''
        def _validate_unified_memory(cfg):
            assert cfg.speculative_algorithm in (
                "DSPARK",
                "EAGLE",
                "EAGLE3",
                "DFLASH",
            ), "--enable-unified-memory only supports DSPARK, DFLASH, EAGLE and EAGLE3"
            if cfg.speculative_algorithm in ("EAGLE", "EAGLE3"):
                cfg.fused = True
            if cfg.speculative_algorithm == "DFLASH":
                cfg.check = True
    ''')
    (allow,) = _sites(inv, 3)
    assert allow.decision == "assert" and allow.refuses == "assert" and allow.new_algorithm == "skips"
    eagle, dflash = _sites(inv, 9)[0], _sites(inv, 11)[0]
    assert eagle.algorithms == ("EAGLE", "EAGLE3") and eagle.negative == ("DFLASH",)
    assert dflash.new_algorithm == eagle.new_algorithm == "unreachable" and dflash.guarded


def test_0_5_23_scheduler_continue_in_loop_removes_algorithms_from_the_rest_of_the_body():
    """An early `continue` (a loop over requests, as in 0.5.23 scheduler.py's batch loops)."""
    inv = _inventory("sglang/srt/managers/scheduler.py", '''
        class Scheduler:
            def process(self, reqs):
                for req in reqs:
                    if self.spec_algorithm.is_none():
                        continue
                    if self.spec_algorithm.is_eagle():
                        req.eagle = True
    ''')
    (site,) = _sites(inv, 7)
    assert "NONE" not in site.algorithms + site.negative and site.guarded


# -- workers -----------------------------------------------------------------------------------------------
def test_0_5_4_scheduler_564_class_variable_chosen_by_a_conditional_expression():
    """`WorkerClass = EAGLEWorkerV2 if self.enable_overlap else EAGLEWorker; self.draft_worker =
    WorkerClass(...)` (0.5.4 managers/scheduler.py:560-574): no worker was found before."""
    inv = _inventory("sglang/srt/managers/scheduler.py", '''
        class Scheduler:
            def launch_draft_worker(self, gpu_id, server_args):
                if server_args.speculative_draft_load_format is not None:
                    server_args.load_format = server_args.speculative_draft_load_format
                if self.spec_algorithm.is_eagle():
                    from sglang.srt.speculative.eagle_worker import EAGLEWorker
                    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

                    WorkerClass = EAGLEWorkerV2 if self.enable_overlap else EAGLEWorker

                    self.draft_worker = WorkerClass(gpu_id=gpu_id, server_args=server_args)
                elif self.spec_algorithm.is_standalone():
                    from sglang.srt.speculative.standalone_worker import StandaloneWorker

                    self.draft_worker = StandaloneWorker(gpu_id=gpu_id, server_args=server_args)
                else:
                    self.draft_worker = None
    ''')
    assert _workers(inv, "EAGLE") == ("sglang.srt.speculative.eagle_worker.EAGLEWorker", [
        ("EAGLEWorkerV2", "self.enable_overlap", 10), ("EAGLEWorker", "not self.enable_overlap", 10)])
    assert _workers(inv, "STANDALONE")[1] == [("StandaloneWorker", None, 16)]
    assert _workers(inv, "NGRAM") == (None, [])


def test_0_5_8_spec_info_52_overlap_branches_inside_an_elif_chain():
    """0.5.8-0.5.12 `create_worker`: V2 classes inside `if enable_overlap:`, then the V1 class."""
    inv = _inventory(SPEC, '''
        def create_worker(self, server_args):
            assert (
                not self.is_none()
            ), "Cannot create worker for NONE speculative algorithm."

            enable_overlap = not server_args.disable_overlap_schedule
            if self.is_eagle() and server_args.enable_multi_layer_eagle:
                if enable_overlap:
                    from sglang.srt.speculative.multi_layer_eagle_worker_v2 import MultiLayerEagleWorkerV2

                    return MultiLayerEagleWorkerV2

                from sglang.srt.speculative.multi_layer_eagle_worker import MultiLayerEagleWorker

                return MultiLayerEagleWorker

            elif self.is_eagle():
                if enable_overlap:
                    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

                    return EAGLEWorkerV2

                from sglang.srt.speculative.eagle_worker import EAGLEWorker

                return EAGLEWorker
            elif self.is_ngram():
                if enable_overlap:
                    raise ValueError(f"Speculative algorithm {self.name} does not support overlap worker creation.")

                from sglang.srt.speculative.ngram_worker import NGRAMWorker

                return NGRAMWorker

            raise ValueError("Unreachable code path in create_worker.")
    ''')
    worker, choices = _workers(inv, "EAGLE3")
    assert worker == "sglang.srt.speculative.eagle_worker.EAGLEWorker"
    assert [(name, cond) for name, cond, _ in choices] == [
        ("MultiLayerEagleWorkerV2", "server_args.enable_multi_layer_eagle and enable_overlap"),
        ("MultiLayerEagleWorker", "server_args.enable_multi_layer_eagle and not enable_overlap"),
        ("EAGLEWorkerV2", "not server_args.enable_multi_layer_eagle and enable_overlap"),
        ("EAGLEWorker", "not server_args.enable_multi_layer_eagle and not enable_overlap"),
    ]
    assert [(n, c) for n, c, _ in _workers(inv, "NGRAM")[1]] == [("NGRAMWorker", "not enable_overlap")]
    assert _workers(inv, "NONE") == (None, [])


def test_0_5_12_spec_info_129_early_return_keeps_frozen_kv_mtp_from_the_is_eagle_branches():
    """0.5.12+: `if self.is_frozen_kv_mtp(): return FrozenKVMTPWorker…` before the `is_eagle()`
    branches; FROZEN_KV_MTP (inside is_eagle()) must not reach EAGLEWorkerV2."""
    inv = _inventory(SPEC, '''
        def create_worker(self, server_args):
            if self.is_frozen_kv_mtp():
                from sglang.srt.speculative.frozen_kv_mtp_worker_v2 import FrozenKVMTPWorkerV2

                return FrozenKVMTPWorkerV2

            if self.is_eagle() and server_args.enable_multi_layer_eagle:
                from sglang.srt.speculative.multi_layer_eagle_worker_v2 import MultiLayerEagleWorkerV2

                return MultiLayerEagleWorkerV2

            elif self.is_eagle():
                from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

                return EAGLEWorkerV2
            raise ValueError("Unreachable code path in create_worker.")
    ''')
    assert _workers(inv, "FROZEN_KV_MTP")[1] == [("FrozenKVMTPWorkerV2", None, 39)]
    first = next(s for s in inv.dispatch_sites if s.detail == "is_eagle" and s.worker and "MultiLayer" in s.worker)
    assert first.algorithms == ("EAGLE", "EAGLE3")  # not FROZEN_KV_MTP
    assert [n for n, _c, _l in _workers(inv, "EAGLE")[1]] == ["MultiLayerEagleWorkerV2", "EAGLEWorkerV2"]


def test_0_5_6_spec_info_264_helper_factory_named_at_registration():
    """0.5.6: `register_speculative_algorithm("EAGLE", worker_cls=_create_eagle_worker)`, the helper
    choosing the V2 worker under `enable_overlap`."""
    registry = '''
        class SpeculativeAlgorithm(metaclass=_SpeculativeAlgorithmMeta):
            @classmethod
            def register(cls, name, *, aliases=None, value=None, draft_worker_factory=None):
                return cls(name, value)

            def is_none(self) -> bool:
                return self is SpeculativeAlgorithm.NONE


        def register_speculative_algorithm(name, worker_cls, *, aliases=None, flags=None):
            return SpeculativeAlgorithm.register(name, aliases=aliases)


        def _create_eagle_worker(**kwargs):
            enable_overlap = kwargs.pop("enable_overlap", False)
            if enable_overlap:
                from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

                return EAGLEWorkerV2(**kwargs)

            from sglang.srt.speculative.eagle_worker import EAGLEWorker

            return EAGLEWorker(**kwargs)


        SpeculativeAlgorithm.register("NONE")

        register_speculative_algorithm(
            "EAGLE",
            aliases=("NEXTN",),
            worker_cls=_create_eagle_worker,
            flags=("EAGLE",),
        )
    '''
    inv = inventory_of_sources({SPEC: registry})
    assert _workers(inv, "EAGLE") == ("sglang.srt.speculative.eagle_worker.EAGLEWorker", [
        ("EAGLEWorkerV2", "enable_overlap", 20), ("EAGLEWorker", "not enable_overlap", 24)])


def test_0_5_23_mooncake_conn_949_returning_a_rejection_is_a_refusal():
    """`if spec.speculative_algorithm == "DFLASH" and <tp mismatch>: return False, "<reason>"`
    (disaggregation/mooncake/conn.py:948): the peer is rejected with a reason, not silently defaulted."""
    inv = _inventory("sglang/srt/disaggregation/mooncake/conn.py", '''
        class MooncakeKVManager:
            def _check_state_components(self, registration_info):
                if (
                    get_spec().speculative_algorithm == "DFLASH"
                    and self.state_tp_size != self.attn_tp_size
                ):
                    return False, ("CP/TP-sharing DFLASH PD requires the same physical TP size")
                if get_spec().speculative_algorithm == "DSPARK":
                    return True, None
                return True, None
    ''')
    (reject,) = _sites(inv, 5)
    assert reject.refuses == "return" and reject.algorithms == ("DFLASH",)
    (accept,) = _sites(inv, 9)
    assert accept.refuses is None and accept.new_algorithm == "skips"


def test_0_5_23_lora_hook_247_exemption_and_message_text_are_not_branches_a_new_algorithm_skips():
    """arg_groups/lora_hook.py:247 `if algo in ["NGRAM", None]: return` exempts NGRAM from the checks
    below; :257 `" (…)" if algo == "FROZEN_KV_MTP" else ""` only picks message text inside a raise."""
    inv = _inventory("sglang/srt/arg_groups/lora_hook.py", '''
        def _validate_lora_speculative(server_args):
            cfg = resolving_view(server_args)
            if cfg.speculative_algorithm in ["NGRAM", None]:
                return
            lora_spec_algorithms = ("EAGLE", "EAGLE3", "DFLASH", "DSPARK")
            if cfg.speculative_algorithm not in lora_spec_algorithms:
                promoted = (
                    " (promoted to FROZEN_KV_MTP, which does not support LoRA)"
                    if cfg.speculative_algorithm == "FROZEN_KV_MTP"
                    else ""
                )
                raise ValueError(f"LoRA is not compatible with {cfg.speculative_algorithm}{promoted}.")
    ''')
    (exempt,) = _sites(inv, 4)
    assert exempt.decision == "exit" and exempt.algorithms == ("NGRAM",)
    (message,) = _sites(inv, 10)
    assert message.decision == "message" and message.algorithms == ("FROZEN_KV_MTP",)


def test_0_5_23_validation_hook_124_branch_of_asserts_refuses():
    inv = _inventory("sglang/srt/arg_groups/validation_hook.py", '''
        def check_pipeline_parallel_compat(cfg):
            assert cfg.disable_overlap_schedule, "Pipeline parallelism is not compatible with overlap schedule"
            if cfg.speculative_algorithm == "DSPARK":
                assert cfg.disaggregation_mode == "prefill", "Pipeline parallel DSPARK requires disaggregation-mode=prefill"
    ''')
    (site,) = _sites(inv, 4)
    assert site.refuses == "assert" and site.decision == "if"


def test_like_listing_compares_a_new_algorithm_with_a_base_at_every_test():
    """`graph --dispatch NEW --like BASE`: shapes of 0.5.23 spec_utils.py:412 (a string list the new
    algorithm is not in) and overlap_utils.py:447 (a predicate the plugin claims)."""
    from sgl_scan.analyzer.graph_views import FocusError, format_like, like_listing, plugin_claims

    inv = _inventory("sglang/srt/speculative/spec_utils.py", '''
        def spec_need_hidden_states(spec):
            if spec.speculative_algorithm in ("STANDALONE", "DFLASH"):
                return False
            return True


        def staged(spec_algo):
            if not (spec_algo.is_eagle() or spec_algo.is_dflash()):
                raise RuntimeError("only EAGLE and DFLASH")
    ''')
    claims = plugin_claims('''
class DDTreeSpecAlgo(CustomSpecAlgo):
    def is_dflash(self) -> bool:
        return True

    def is_speculative(self):
        return self.is_dflash()

    def is_ngram(self):
        return False
''')
    assert claims == ("is_dflash", "is_speculative")
    listing = like_listing(inv, "ddtree", "DFLASH", ["is_dflash"])
    assert [(s.site.location.line, s.base_side, s.new_side) for s in listing.sites] == [(3, "true", "false")]
    assert next(format_like(listing)) == "DDTREE like DFLASH: predicates true for DDTREE: is_dflash"
    unclaimed = like_listing(inv, "ddtree", "DFLASH", [])
    assert [(s.site.location.line, s.base_side, s.new_side) for s in unclaimed.sites] == [
        (3, "true", "false"), (9, "false", "true")]
    try:
        like_listing(inv, "ddtree", "DFLASH", ["is_dflash_family"])
    except FocusError as exc:
        assert "no predicate is_dflash_family" in str(exc)
    else:
        raise AssertionError("an unknown predicate must be refused")


def test_0_5_4_scheduler_560_branch_creating_a_worker_through_a_class_variable_names_it():
    inv = _inventory("sglang/srt/managers/scheduler.py", '''
        class Scheduler:
            def launch_draft_worker(self, gpu_id):
                if self.spec_algorithm.is_eagle():
                    from sglang.srt.speculative.eagle_worker import EAGLEWorker
                    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

                    WorkerClass = EAGLEWorkerV2 if self.enable_overlap else EAGLEWorker
                    self.draft_worker = WorkerClass(gpu_id=gpu_id)
                else:
                    self.draft_worker = None
    ''')
    (site,) = _sites(inv, 4)
    assert site.worker == "sglang.srt.speculative.eagle_worker.EAGLEWorker" and site.algorithms == ("EAGLE", "EAGLE3", "FROZEN_KV_MTP")
