"""`build_inventory` on small multi-file trees: predicate sets, registry flags, workers, aliases,
dispatch sites, hooks and the plugin base."""

from tests.analyzer.extractors.driver import inventory_of_sources

SPEC = "sglang/srt/speculative/spec_info.py"

ENUM_FORM = {
    SPEC: '''
        from enum import Enum, auto

        from sglang.srt.speculative.spec_registry import _RESERVED_ALIASES, CustomSpecAlgo


        class SpeculativeAlgorithm(Enum):
            DFLASH = auto()
            DSPARK = auto()
            EAGLE = auto()
            NONE = auto()

            @classmethod
            def from_string(cls, name):
                upper = name.upper()
                if upper in _RESERVED_ALIASES:
                    return cls.EAGLE
                return cls[upper]

            @classmethod
            def register(cls, name, *, spec_class=CustomSpecAlgo):
                pass

            def is_speculative(self) -> bool:
                return self != SpeculativeAlgorithm.NONE

            def is_dflash(self) -> bool:
                return self == SpeculativeAlgorithm.DFLASH

            def is_dspark(self) -> bool:
                return self == SpeculativeAlgorithm.DSPARK

            def is_dflash_family(self) -> bool:
                return self.is_dflash() or self.is_dspark()

            def supports_tv(self) -> bool:
                return self.is_dflash_family()

            def is_eagle(self) -> bool:
                return self in (SpeculativeAlgorithm.EAGLE,)

            def create_worker(self, server_args):
                if self.is_dflash_family() and server_args.fast:
                    from sglang.srt.speculative.fast_worker import FastWorker

                    return FastWorker
                if self.is_dflash():
                    from sglang.srt.speculative.dflash_worker import DFlashWorker

                    return DFlashWorker
                if self.is_dflash_family():
                    from sglang.srt.speculative.dspark_worker import DSparkWorker

                    return DSparkWorker
                elif self.is_eagle():
                    from sglang.srt.speculative.eagle_worker import EAGLEWorker

                    return EAGLEWorker
    ''',
    "sglang/srt/speculative/spec_registry.py": '''
        _RESERVED_ALIASES = frozenset({"NEXTN"})


        class CustomSpecAlgo:
            def is_speculative(self) -> bool:
                return True

            def is_dflash(self) -> bool:
                return False
    ''',
    "sglang/srt/plugins/ddtree.py": '''
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
        from sglang.srt.plugins.ddtree_worker import DDTreeWorker


        @SpeculativeAlgorithm.register("DDTREE")
        def _factory(server_args):
            return DDTreeWorker
    ''',
    "sglang/srt/managers/scheduler.py": '''
        def run(self, server_args):
            if self.spec_algorithm.is_dflash_family():
                pass
            if server_args.speculative_algorithm in ("NEXTN", "DFLASH", "EAGEL"):
                pass
    ''',
    "sglang/srt/arg_groups/choices.py": '''
        SPECULATIVE_CHOICES = ["EAGLE"]
        add_load_format_choices = LOAD_FORMAT_CHOICES.extend
        add_speculative_choices = SPECULATIVE_CHOICES.extend
    ''',
    "sglang/srt/arg_groups/fields/spec.py": '''
        class SpecArgs:
            speculative_algorithm: A[Optional[str], Arg(choices=SPECULATIVE_CHOICES)] = None
    ''',
}


def test_enum_form_with_plugin_registry():
    inv = inventory_of_sources(ENUM_FORM)
    assert inv.algorithm_class.qualname == "sglang.srt.speculative.spec_info.SpeculativeAlgorithm"
    assert inv.algorithm_class.form == "Enum"
    table = {p.name: p.members for p in inv.predicates}
    assert table == {
        "is_speculative": ("DFLASH", "DSPARK", "EAGLE", "DDTREE"),
        "is_dflash": ("DFLASH",),
        "is_dspark": ("DSPARK",),
        "is_dflash_family": ("DFLASH", "DSPARK"),
        "supports_tv": ("DFLASH", "DSPARK"),
        "is_eagle": ("EAGLE",),
    }
    algos = {a.name: a for a in inv.algorithms}
    assert [(a.name, a.kind) for a in inv.algorithms] == [
        ("DFLASH", "enum"), ("DSPARK", "enum"), ("EAGLE", "enum"), ("NONE", "enum"), ("DDTREE", "registered")]
    assert algos["DDTREE"].location.path == "sglang/srt/plugins/ddtree.py"
    assert algos["DDTREE"].predicates == ("is_speculative",)
    assert algos["DDTREE"].worker == "sglang.srt.plugins.ddtree_worker.DDTreeWorker"
    # the conditional first branch only adds a candidate; DFLASH is claimed by the pure `is_dflash()` branch
    # and so skips the later `is_dflash_family()` branch, which gives DSPARK its worker
    assert algos["DFLASH"].worker == "sglang.srt.speculative.dflash_worker.DFlashWorker"
    assert [(w.qualname, w.condition) for w in algos["DFLASH"].workers] == [
        ("sglang.srt.speculative.fast_worker.FastWorker", "server_args.fast"),
        ("sglang.srt.speculative.dflash_worker.DFlashWorker", "not server_args.fast")]
    assert algos["DSPARK"].worker == "sglang.srt.speculative.dspark_worker.DSparkWorker"
    assert algos["DSPARK"].worker_location.line == 54
    assert algos["EAGLE"].worker == "sglang.srt.speculative.eagle_worker.EAGLEWorker"
    assert algos["NONE"].worker is None and algos["NONE"].predicates == ()
    assert inv.plugin_base == "sglang.srt.speculative.spec_registry.CustomSpecAlgo"
    assert inv.plugin_base_predicates == ("is_speculative", "is_dflash")
    assert dict(inv.aliases) == {"NEXTN": "EAGLE"}


def test_dispatch_sites_resolve_predicates_aliases_and_unknown_literals():
    inv = inventory_of_sources(ENUM_FORM)
    outside = [d for d in inv.dispatch_sites if d.location.path == "sglang/srt/managers/scheduler.py"]
    assert [(d.location.line, d.via, d.detail, d.algorithms) for d in outside] == [
        (3, "predicate", "is_dflash_family", ("DFLASH", "DSPARK")),
        (5, "string", "NEXTN, DFLASH, EAGEL", ("DFLASH", "EAGLE")),
    ]
    inside = [d for d in inv.dispatch_sites if d.function.endswith("create_worker")]
    assert [(d.location.line, d.detail, d.worker) for d in inside][1] == (
        47, "is_dflash", "sglang.srt.speculative.dflash_worker.DFlashWorker")


def test_option_and_hooks():
    inv = inventory_of_sources(ENUM_FORM)
    assert inv.algorithm_option.kind == "config_field"
    assert inv.algorithm_option.choices == "SPECULATIVE_CHOICES"
    assert [(h.name, h.kind, h.speculative) for h in inv.choice_hooks] == [
        ("add_load_format_choices", "alias", False),
        ("add_speculative_choices", "alias", True),
        ("--speculative-algorithm", "config_field", True),
    ]


REGISTRY_FORM = {
    SPEC: '''
        class _SpeculativeAlgorithmMeta(type):
            pass


        class SpeculativeAlgorithm(metaclass=_SpeculativeAlgorithmMeta):
            @classmethod
            def register(cls, name, *, aliases=None):
                return cls(name)

            def is_none(self) -> bool:
                return self is SpeculativeAlgorithm.NONE

            def is_eagle(self) -> bool:
                return self._has_flag("EAGLE")

            def is_eagle3(self) -> bool:
                return self._has_flag("EAGLE3")


        def _create_eagle_worker(**kwargs):
            from sglang.srt.speculative.eagle_worker import EAGLEWorker

            return EAGLEWorker(**kwargs)


        SpeculativeAlgorithm.register("NONE")
        register_speculative_algorithm("EAGLE", aliases=("NEXTN",), worker_cls=_create_eagle_worker, flags=("EAGLE",))
        register_speculative_algorithm("EAGLE3", worker_cls=_create_eagle_worker, flags=("EAGLE", "EAGLE3"))
    ''',
}


def test_registry_form_members_flags_and_factories():
    inv = inventory_of_sources(REGISTRY_FORM)
    assert inv.algorithm_class.form == "registry"
    assert [(a.name, a.kind, a.location.line) for a in inv.algorithms] == [
        ("NONE", "registered", 27), ("EAGLE", "registered", 28), ("EAGLE3", "registered", 29)]
    assert {p.name: p.members for p in inv.predicates} == {
        "is_none": ("NONE",), "is_eagle": ("EAGLE", "EAGLE3"), "is_eagle3": ("EAGLE3",)}
    algos = {a.name: a for a in inv.algorithms}
    assert algos["EAGLE3"].worker == "sglang.srt.speculative.eagle_worker.EAGLEWorker"
    assert algos["EAGLE3"].worker_location.line == 24
    assert algos["NONE"].worker is None
    assert dict(inv.aliases) == {"NEXTN": "EAGLE"}
    assert inv.plugin_base is None


def test_empty_tree():
    inv = inventory_of_sources({"sglang/srt/utils.py": "x = 1\n"})
    assert inv.algorithm_class is None and inv.algorithms == () and inv.algorithm_option is None


def test_files_that_did_not_parse_are_skipped():
    from sgl_scan.analyzer.facts import FileFacts
    from sgl_scan.analyzer.inventory import build_inventory
    from sgl_scan.analyzer.model import Location, ParseError

    broken = FileFacts(path="sglang/srt/broken.py", module="sglang.srt.broken", sha256="0" * 64,
                       parse_error=ParseError(Location("sglang/srt/broken.py", 3, 1), "syntax error"))
    inv = build_inventory({"sglang/srt/broken.py": broken})
    assert inv.algorithms == () and inv.d2t_sites == ()
