"""Registration calls (module level and decorator form) and the worker factories they name."""

from sgl_scan.analyzer.extractors.records import Registration, WorkerFactory
from sgl_scan.analyzer.extractors.registrations import RegistrationExtractor
from tests.analyzer.extractors.driver import records

EX = RegistrationExtractor()
PATH = "sglang/srt/speculative/spec_info.py"
MOD = "sglang.srt.speculative.spec_info"


def test_module_level_registrations_with_flags_aliases_and_factory():
    found = records('''
        def _create_eagle_worker(**kwargs):
            enable_overlap = kwargs.pop("enable_overlap", False)
            if enable_overlap:
                from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

                return EAGLEWorkerV2(**kwargs)
            from sglang.srt.speculative.eagle_worker import EAGLEWorker as Worker1, EAGLEWorker

            return EAGLEWorker(**kwargs)


        def register_speculative_algorithm(name, worker_cls, *, aliases=None, flags=None):
            algorithm = SpeculativeAlgorithm.register(name.upper(), aliases=aliases)
            return algorithm


        SpeculativeAlgorithm.register("NONE")

        register_speculative_algorithm(
            "eagle",
            aliases=("NEXTN",),
            worker_cls=_create_eagle_worker,
            flags=("EAGLE",),
        )
    ''', EX, PATH)
    regs = [r for r in found if isinstance(r, Registration)]
    assert [(r.name, r.line, r.worker, r.flags, r.aliases) for r in regs] == [
        ("NONE", 18, None, (), ()),
        ("EAGLE", 20, f"{MOD}._create_eagle_worker", ("EAGLE",), ("NEXTN",)),
    ]
    assert regs[0].receiver == f"{MOD}.SpeculativeAlgorithm" or regs[0].receiver == "SpeculativeAlgorithm"
    factories = {f.qualname: f for f in found if isinstance(f, WorkerFactory)}
    factory = factories[f"{MOD}._create_eagle_worker"]
    assert [w.qualname for w in factory.workers] == ["sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2",
                                                     "sglang.srt.speculative.eagle_worker.EAGLEWorker"]
    assert factory.fallthrough.qualname == "sglang.srt.speculative.eagle_worker.EAGLEWorker"
    assert factory.fallthrough.at.line == 10


def test_decorator_form_names_the_factory_and_docstrings_do_not_count():
    found = records('''
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
        from my_plugin.worker import MySpecWorker


        class SpeculativeAlgorithmHelp:
            """Example:
                @SpeculativeAlgorithm.register("MY_SPEC", supports_overlap=False)
                def _factory(server_args):
                    return MySpecWorker
            """


        @SpeculativeAlgorithm.register("ddtree", supports_overlap=True)
        def _ddtree_factory(server_args):
            return MySpecWorker
    ''', EX, "sglang/srt/plugins/ddtree.py")
    regs = [r for r in found if isinstance(r, Registration)]
    assert [(r.name, r.line, r.worker) for r in regs] == [("DDTREE", 14, "sglang.srt.plugins.ddtree._ddtree_factory")]
    assert regs[0].receiver == "sglang.srt.speculative.spec_info.SpeculativeAlgorithm"
    factory = next(f for f in found if isinstance(f, WorkerFactory))
    assert factory.fallthrough.qualname == "my_plugin.worker.MySpecWorker"


def test_other_register_calls_are_not_registrations():
    found = records('''
        import atexit
        atexit.register(print)
        registry.register("EAGLE")
        SpeculativeAlgorithm.register(name)
    ''', EX, PATH)
    assert [r for r in found if isinstance(r, Registration)] == []


def test_trigger():
    assert EX.trigger.search('@SpeculativeAlgorithm.register("X")')
    assert EX.trigger.search("register_speculative_algorithm(\n    'EAGLE',")
    assert not EX.trigger.search("atexit.register(cleanup)")
