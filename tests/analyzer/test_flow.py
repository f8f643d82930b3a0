"""The control-flow relation (analyzer/flow.py): which algorithms reach each side of a dispatch test,
which tests an earlier guard dominates, and which worker each algorithm gets under which flags.

Every shape is copied from a real release (release and file:line in the test name), cut down to
the statements that matter; the algorithm class is a small enum with the same predicates.
"""

from __future__ import annotations

from sgl_scan.analyzer.conditions import (
    FALSE,
    TRUE,
    Const,
    Flag,
    Term,
    conjoin,
    disjoin,
    evaluate,
    flags_text,
    negate,
    side,
)
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
    a, b, flag = Term(1, 1), Term(1, 9), Flag("server_args.enable_multi_layer_eagle")
    assert negate(negate(a)) == a and conjoin((TRUE, a, a)) == a and disjoin((a, TRUE)) == TRUE
    cond = conjoin((negate(conjoin((a, flag))), b))
    assert evaluate(cond, {(1, 1): True, (1, 9): True}) == negate(flag)
    assert evaluate(cond, {(1, 1): False, (1, 9): False}) == FALSE
    assert side(a, negate(b), {(1, 1): True, (1, 9): True}) == (False, False)  # unreachable
    assert side(conjoin((a, flag)), TRUE, {(1, 1): True}) == (True, True)
    assert flags_text(conjoin((negate(Flag("platform_worker_cls is not None")), flag))) == \
        "platform_worker_cls is None and server_args.enable_multi_layer_eagle"
    assert flags_text(TRUE) is None


def test_conditions_pickle_and_compare_by_kind():
    """They travel in the facts cache; an `and` and an `or` of the same parts are not equal."""
    import pickle

    a, flag = Term(1, 1), Flag("enable_overlap")
    cond = conjoin((negate(disjoin((a, flag))), Flag("x")))
    assert pickle.loads(pickle.dumps(cond)) == cond and hash(pickle.loads(pickle.dumps(cond))) == hash(cond)
    assert conjoin((a, flag)) != disjoin((a, flag)) and TRUE != Const(False) and Term(1, 1) != Term(1, 2)


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
    # `is not None` is a test on the algorithm too (NONE's spelling): a new algorithm is never None, so it enters
    assert site.via == "string" and site.negated and site.new_algorithm == "enters" and site.algorithms
    assert "NONE" not in site.algorithms and "NONE" in site.negative


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


_LORA_HOOK_0_5_23 = '''
    def check_lora_speculative_compatibility(server_args):
        cfg = resolving_view(server_args)
        if cfg.speculative_algorithm in ["NGRAM", None]:
            return
        ragged_mode = envs.SGLANG_RAGGED_VERIFY_MODE.get()

        # Each entry: (is unsupported, why). Reasons are appended to a shared
        # prefix so the message names the combination, not just the flag.
        unsupported = [
            (
                cfg.speculative_algorithm == "DSPARK" and ragged_mode != "static",
                f"does not support SGLANG_RAGGED_VERIFY_MODE={ragged_mode!r}: "
                "the per-request verify lengths it schedules break the "
                "uniform-width LoRA segment layout",
            ),
            (
                cfg.speculative_adaptive,
                "does not support --speculative-adaptive",
            ),
        ]
        for is_unsupported, reason in unsupported:
            if is_unsupported:
                raise ValueError(
                    f"LoRA with EAGLE/NEXTN/EAGLE3 speculative decoding {reason}."
                )
'''


def test_0_5_23_lora_hook_272_entry_of_a_raised_table_refuses():
    """0.5.23 arg_groups/lora_hook.py:270-301 (also 0.5.19-0.5.22): `unsupported = [(algo == "DSPARK"
    and ..., "why"), ...]` then `for is_unsupported, reason in unsupported: if is_unsupported: raise`.
    The entry's true side raises: a refusal, not a silent default."""
    inv = _inventory("sglang/srt/arg_groups/lora_hook.py", _LORA_HOOK_0_5_23)
    (site,) = _sites(inv, 12)
    assert site.decision == "value" and site.refuses == "raise"
    assert site.new_algorithm == "skips"  # a new algorithm is not refused here, but nothing defaults either


def test_a_table_that_is_only_logged_or_picks_a_value_does_not_refuse():
    """Negative: the same table iterated with `logger.warning` (the run goes on with the defaults),
    or a table of (test, backend) choices returning the first match: nothing refuses."""
    logged = _LORA_HOOK_0_5_23.replace("raise ValueError(", "logger.warning(")
    picked = '''
        def draft_backend(cfg):
            choices = [
                (cfg.speculative_algorithm == "DSPARK", "trtllm_mha"),
                (cfg.speculative_algorithm == "EAGLE", "flashinfer"),
            ]
            for matches, backend in choices:
                if matches:
                    return backend
            return "triton"
    '''
    for source, line in ((logged, 12), (picked, 4)):
        (site,) = _sites(_inventory("sglang/srt/arg_groups/lora_hook.py", source), line)
        assert site.refuses is None and site.new_algorithm in ("skips", "either")


def test_problems_appended_then_raised_refuse():
    """Synthetic, the list form of the same guard: `problems = []`, `if algo == "DSPARK" and ...:
    problems.append(...)`, then `if problems: raise ValueError(...)`. Appending to a list that is
    only logged does not refuse."""
    source = '''
        def validate(cfg):
            problems = []
            if cfg.speculative_algorithm == "DSPARK" and cfg.page_size != 1:
                problems.append("DSPARK needs page size 1")
            if cfg.speculative_adaptive:
                problems.append("adaptive steps are not supported")
            if problems:
                raise ValueError("; ".join(problems))
    '''
    (site,) = _sites(_inventory("sglang/srt/arg_groups/x_hook.py", source), 4)
    assert site.decision == "if" and site.refuses == "raise"
    logged = source.replace("raise ValueError(", "logger.warning(")
    (site,) = _sites(_inventory("sglang/srt/arg_groups/x_hook.py", logged), 4)
    assert site.refuses is None


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


_REGISTRY_0_5_7 = '''
    class SpeculativeAlgorithm(metaclass=_SpeculativeAlgorithmMeta):
        @classmethod
        def register(cls, name, *, aliases=None, value=None, draft_worker_factory=None):
            return cls(name, value)

        def is_none(self) -> bool:
            return self is SpeculativeAlgorithm.NONE

        def is_eagle(self) -> bool:
            return self._has_flag("EAGLE")

        def create_draft_worker(self, **factory_kwargs):
            if self._draft_worker_factory is None:
                return None
            return self._draft_worker_factory(self, **factory_kwargs)


    def register_speculative_algorithm(name, worker_cls, *, aliases=None, flags=None):
        return SpeculativeAlgorithm.register(name, aliases=aliases)


    def _create_eagle_worker(**kwargs):
        enable_overlap = kwargs.pop("enable_overlap", False)
        if enable_overlap:
            from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

            return EAGLEWorkerV2(**kwargs)

        from sglang.srt.speculative.eagle_worker import EAGLEWorker

        return EAGLEWorker(**kwargs)


    def _create_ngram_worker(**kwargs):
        from sglang.srt.speculative.ngram_worker import NGRAMWorker

        return NGRAMWorker(**kwargs)


    SpeculativeAlgorithm.register("NONE")
    register_speculative_algorithm("EAGLE", aliases=("NEXTN",), worker_cls=_create_eagle_worker, flags=("EAGLE",))
    register_speculative_algorithm("NGRAM", worker_cls=_create_ngram_worker, flags=("NGRAM",))
'''

_SCHEDULER_0_5_7 = '''
    class Scheduler:
        def init_model_worker(self):
            from sglang.srt.managers.tp_worker import TpModelWorker

            self.tp_worker = TpModelWorker(server_args=self.server_args)
            draft_worker_kwargs = dict(server_args=self.server_args, target_worker=self.tp_worker)
            if self.spec_algorithm.is_eagle():
                draft_worker_kwargs["enable_overlap"] = self.enable_overlap

            # FIXME: refactor the draft worker registration logic
            if self.server_args.enable_multi_layer_eagle:
                if self.enable_overlap:
                    from sglang.srt.speculative.multi_layer_eagle_worker_v2 import (
                        MultiLayerEagleWorkerV2,
                    )

                    self.draft_worker = MultiLayerEagleWorkerV2(server_args=self.server_args)
                else:
                    from sglang.srt.speculative.multi_layer_eagle_worker import (
                        MultiLayerEagleWorker,
                    )

                    self.draft_worker = MultiLayerEagleWorker(server_args=self.server_args)
            else:
                self.draft_worker = self.spec_algorithm.create_draft_worker(
                    **draft_worker_kwargs
                )

            if self.spec_algorithm.is_none():
                self.model_worker = self.tp_worker
            else:
                self.model_worker = self.draft_worker
'''


def test_0_5_7_scheduler_506_flag_only_workers_around_the_algorithms_own():
    """0.5.7 managers/scheduler.py:506-538: `if server_args.enable_multi_layer_eagle:` creates the
    multi-layer workers (V2 with overlap) for whatever algorithm is active, else asks the algorithm
    object (`create_draft_worker`, the registered helper, spec_info.py:263). The unconditional
    `TpModelWorker` (the target) is no alternative."""
    inv = inventory_of_sources({SPEC: _REGISTRY_0_5_7, "sglang/srt/managers/scheduler.py": _SCHEDULER_0_5_7})
    multi = [("MultiLayerEagleWorkerV2", "self.server_args.enable_multi_layer_eagle and self.enable_overlap", 18),
             ("MultiLayerEagleWorker", "self.server_args.enable_multi_layer_eagle and not self.enable_overlap", 24)]
    assert _workers(inv, "EAGLE") == ("sglang.srt.speculative.eagle_worker.EAGLEWorker", multi + [
        ("EAGLEWorkerV2", "not self.server_args.enable_multi_layer_eagle and enable_overlap", 28),
        ("EAGLEWorker", "not self.server_args.enable_multi_layer_eagle and not enable_overlap", 32)])
    assert _workers(inv, "NGRAM") == ("sglang.srt.speculative.ngram_worker.NGRAMWorker", multi + [
        ("NGRAMWorker", "not self.server_args.enable_multi_layer_eagle", 38)])
    # NONE registers no worker: only the flag makes one, so with every flag off it has none
    assert _workers(inv, "NONE") == (None, multi)


def test_0_5_6_scheduler_347_an_unconditional_delegate_changes_nothing():
    """0.5.6 managers/scheduler.py:347: `self.draft_worker = self.spec_algorithm.create_draft_worker(...)`
    with no alternative: the registered helper's choices stand as they are."""
    scheduler = _SCHEDULER_0_5_7.replace("if self.server_args.enable_multi_layer_eagle:", "if False:")
    plain = '''
    class Scheduler:
        def init_model_worker(self):
            from sglang.srt.managers.tp_worker import TpModelWorker

            self.tp_worker = TpModelWorker(server_args=self.server_args)
            if self.spec_algorithm.is_eagle():
                pass
            self.draft_worker = self.spec_algorithm.create_draft_worker(server_args=self.server_args)
    '''
    for source in (plain, scheduler):
        inv = inventory_of_sources({SPEC: _REGISTRY_0_5_7, "sglang/srt/managers/scheduler.py": source})
        assert _workers(inv, "EAGLE") == ("sglang.srt.speculative.eagle_worker.EAGLEWorker", [
            ("EAGLEWorkerV2", "enable_overlap", 28), ("EAGLEWorker", "not enable_overlap", 32)])
        assert _workers(inv, "NONE") == (None, [])


def test_flag_only_workers_without_a_delegate_are_no_dispatch():
    """Without the call to the algorithm's own worker, `if flag: W(...)` says nothing about which
    algorithm gets W (the function may run for one algorithm only): the registry's choice stands."""
    scheduler = _SCHEDULER_0_5_7.replace("self.spec_algorithm.create_draft_worker(", "build_draft_worker(")
    inv = inventory_of_sources({SPEC: _REGISTRY_0_5_7, "sglang/srt/managers/scheduler.py": scheduler})
    assert [n for n, _c, _l in _workers(inv, "EAGLE")[1]] == ["EAGLEWorkerV2", "EAGLEWorker"]


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
    # `None` in the list is NONE (no speculative algorithm): exempt too, never one of the sides below
    assert exempt.decision == "exit" and set(exempt.algorithms) == {"NGRAM", "NONE"}
    (message,) = _sites(inv, 10)
    assert message.decision == "message" and message.algorithms == ("FROZEN_KV_MTP",)
    (named,) = _sites(inv, 7)  # a named tuple of strings, resolved through the local binding
    assert named.literals == ("EAGLE", "EAGLE3", "DFLASH", "DSPARK") and named.refuses == "raise"
    assert "NONE" not in named.algorithms and "NGRAM" not in named.algorithms


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
    from sgl_scan.analyzer.graph_views import Derived, FocusError, format_like, like_listing

    inv = _inventory("sglang/srt/speculative/spec_utils.py", '''
        def spec_need_hidden_states(spec):
            if spec.speculative_algorithm in ("STANDALONE", "DFLASH"):
                return False
            return True


        def staged(spec_algo):
            if not (spec_algo.is_eagle() or spec_algo.is_dflash()):
                raise RuntimeError("only EAGLE and DFLASH")
    ''')
    plugin = Derived("spec_class DDTreeSpecAlgo", bodies=(("is_dflash", ("const", True)),
                                                          ("is_speculative", ("call", "is_dflash")),
                                                          ("is_ngram", ("const", False))), overrides=frozenset({"is_dflash"}))
    assert {p for p, v in plugin.evaluate({})[0].items() if v} == {"is_dflash", "is_speculative"}
    listing = like_listing(inv, "ddtree", "DFLASH", ["is_dflash"])
    assert [(s.site.location.line, s.base_side, s.new_side) for s in listing.sites] == [(3, "true", "false")]
    assert next(format_like(listing)) == "DDTREE like DFLASH: predicates true for DDTREE: is_dflash (--claims)"
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


# -- worker expressions the flow layer cannot read ------------------------------------------------------
def _unread(inventory):
    return [(u.what, u.name, u.location.line, u.reason) for u in inventory.unread]


def test_0_5_23_spec_info_322_platform_worker_is_said_out_loud():
    """0.5.23 spec_info.py:319-322: `platform_worker_cls = self.get_platform_worker_cls(); if
    platform_worker_cls is not None: return platform_worker_cls` before the built-in branches: an
    out-of-tree class the analyzer cannot name, listed as unread; the built-in choices still stand."""
    inv = _inventory(SPEC, '''
        def get_platform_worker_cls(self):
            from sglang.srt.platforms import current_platform

            if not current_platform.is_out_of_tree():
                return None
            return current_platform.get_speculative_worker_cls(algorithm=self.name)

        def create_worker(self, server_args):
            assert not self.is_none(), "Cannot create worker for NONE speculative algorithm."

            platform_worker_cls = self.get_platform_worker_cls()
            if platform_worker_cls is not None:
                return platform_worker_cls

            if self.is_ngram():
                from sglang.srt.speculative.ngram_worker import NGRAMWorker

                return NGRAMWorker
            raise ValueError("Unreachable code path in create_worker.")
    ''')
    ((what, name, line, reason),) = _unread(inv)
    assert (what, name, line) == ("worker", "platform_worker_cls", 47)
    assert "get_platform_worker_cls(...)" in reason and "platform_worker_cls is not None" in reason
    assert _workers(inv, "NGRAM") == ("sglang.srt.speculative.ngram_worker.NGRAMWorker",
                                      [("NGRAMWorker", "platform_worker_cls is None", 52)])


def test_0_5_23_scheduler_1063_delegate_through_a_local_is_read():
    """0.5.23 managers/scheduler.py:1063: `DraftWorkerClass = self.spec_algorithm.create_worker(...)`
    then `self.draft_worker = DraftWorkerClass(**kwargs)`; reading `self.scheduler.draft_worker`
    (metrics_reporter.py:1011) makes nothing: neither is unread."""
    inv = _inventory("sglang/srt/managers/scheduler.py", '''
        class Scheduler:
            def maybe_init_draft_worker(self):
                if self.spec_algorithm.is_none():
                    self.draft_worker = None
                    return
                DraftWorkerClass = self.spec_algorithm.create_worker(self.server_args)
                self.draft_worker = DraftWorkerClass(**draft_worker_kwargs)

            def log(self):
                if self.scheduler.spec_algorithm.is_dflash():
                    draft_worker = self.scheduler.draft_worker
                    if draft_worker is not None:
                        draft_worker.flush()
    ''')
    assert _unread(inv) == []


def test_worker_from_a_lookup_getattr_or_call_result_is_unread():
    """Synthetic: a worker class from a dict lookup, `getattr`, or a call the analyzer does not follow,
    where the function otherwise names worker classes or assigns the draft worker."""
    inv = _inventory("sglang/srt/managers/scheduler.py", '''
        _WORKERS = {"DFLASH": DFlashWorker}


        class Scheduler:
            def pick(self):
                if self.spec_algorithm.is_ngram():
                    return NGRAMWorker
                return _WORKERS[self.spec_algorithm.name]

            def launch(self):
                if self.spec_algorithm.is_eagle():
                    self.draft_worker = getattr(workers, self.server_args.worker_name)(**kwargs)
                elif self.spec_algorithm.is_dflash():
                    worker_cls = load_worker_class(self.server_args)
                    self.draft_worker = worker_cls(**kwargs)
                else:
                    self.draft_worker = None
    ''')
    got = {(name, line): reason for _what, name, line, reason in _unread(inv)}
    assert set(got) == {("_WORKERS[self.spec_algorithm.name]", 9),
                        ("getattr(workers, self.server_args.worker_name)(**kwargs)", 13),
                        ("worker_cls(**kwargs)", 16)}
    assert got[("_WORKERS[self.spec_algorithm.name]", 9)].startswith("the worker chosen here is a lookup")
    assert "getattr" in got[("getattr(workers, self.server_args.worker_name)(**kwargs)", 13)]
    assert "`worker_cls`, which holds the result of `load_worker_class(...)`" in got[("worker_cls(**kwargs)", 16)]
    assert "self.spec_algorithm.is_dflash()" in got[("worker_cls(**kwargs)", 16)]


def test_a_function_returning_no_worker_class_has_no_unread_returns():
    """`return self._cache[name]` in a function that never returns a worker class is no worker slot."""
    inv = _inventory("sglang/srt/managers/scheduler.py", '''
        class Scheduler:
            def runner(self, name):
                if self.spec_algorithm.is_eagle():
                    return self._runners[name]
                return None
    ''')
    assert _unread(inv) == []


def test_worker_under_a_test_that_cannot_be_evaluated_is_unread():
    """Synthetic: `create_worker` branches on `self.is_medusa()`, which the class does not define as a
    readable predicate: which algorithms get MedusaWorker is unknown, and so is whether an algorithm
    gets past that test to NGRAMWorker: both said out loud (not dropped, not guessed)."""
    inv = _inventory(SPEC, '''
        def create_worker(self, server_args):
            if self.is_medusa():
                from sglang.srt.speculative.medusa_worker import MedusaWorker

                return MedusaWorker
            if self.is_ngram():
                from sglang.srt.speculative.ngram_worker import NGRAMWorker

                return NGRAMWorker
            raise ValueError("Unreachable code path in create_worker.")
    ''')
    got = _unread(inv)
    assert [(what, name, line) for what, name, line, _reason in got] == [("worker", "MedusaWorker", 39),
                                                                          ("worker", "NGRAMWorker", 43)]
    assert all("`self.is_medusa()`" in reason and "could not be evaluated" in reason for *_, reason in got)
    assert _workers(inv, "NGRAM") == (None, [])
