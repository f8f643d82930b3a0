"""The algorithm-class extractor: forms, members, predicate bodies, plugin-base hints, alias constants."""

from sgl_scan.analyzer.extractors.algorithm_class import AlgorithmClassExtractor
from sgl_scan.analyzer.extractors.records import AlgoClassRecord, ConstStrings
from tests.analyzer.extractors.driver import records

EX = AlgorithmClassExtractor()
PATH = "sglang/srt/speculative/spec_info.py"


def only_class(source, name="SpeculativeAlgorithm"):
    found = [r for r in records(source, EX, PATH) if isinstance(r, AlgoClassRecord) and r.name == name]
    assert len(found) == 1
    return found[0]


def test_intenum_members_and_predicates():
    record = only_class('''
        from enum import IntEnum, auto


        class SpeculativeAlgorithm(IntEnum):
            NONE = auto()
            EAGLE = auto()
            EAGLE3 = auto()

            def is_none(self):
                return self == SpeculativeAlgorithm.NONE

            def is_eagle(self):
                return self == SpeculativeAlgorithm.EAGLE or self == SpeculativeAlgorithm.EAGLE3

            @staticmethod
            def from_string(name: str):
                return {"EAGLE": SpeculativeAlgorithm.EAGLE}[name]
    ''')
    assert record.form == "IntEnum"
    assert record.qualname == "sglang.srt.speculative.spec_info.SpeculativeAlgorithm"
    assert [(name, at.line) for name, at in record.members] == [("NONE", 6), ("EAGLE", 7), ("EAGLE3", 8)]
    assert {p.name: p.expr for p in record.predicates} == {
        "is_none": ("eq", "NONE"),
        "is_eagle": ("or", (("eq", "EAGLE"), ("eq", "EAGLE3"))),
    }
    assert [p.line for p in record.predicates] == [10, 13]


def test_enum_with_in_tuple_recursion_negation_docstring_and_comments():
    record = only_class('''
        import enum


        class SpeculativeAlgorithm(enum.Enum):
            DFLASH = enum.auto()
            DSPARK = enum.auto()
            NGRAM = enum.auto()
            NONE = enum.auto()

            def is_some(self) -> bool:
                return self != SpeculativeAlgorithm.NONE

            def is_family(self) -> bool:
                """Docstring first."""
                # and a comment
                return self.is_dflash() or self.is_dspark()

            def supports_x(self) -> bool:
                return self in (SpeculativeAlgorithm.DFLASH, SpeculativeAlgorithm.NGRAM)

            def has_kv(self) -> bool:
                return not self.is_ngram()

            def get_width(self, n: int) -> int:
                return n

            def create_worker(self, server_args):
                if self.is_dflash():
                    return None
                return None
    ''')
    assert record.form == "Enum"
    exprs = {p.name: p.expr for p in record.predicates}
    assert exprs == {
        "is_some": ("ne", "NONE"),
        "is_family": ("or", (("call", "is_dflash"), ("call", "is_dspark"))),
        "supports_x": ("in", ("DFLASH", "NGRAM")),
        "has_kv": ("not", ("call", "is_ngram")),
    }
    assert "create_worker" in record.methods and "get_width" in record.methods


def test_registry_form_with_metaclass_and_flags():
    record = only_class('''
        class _SpeculativeAlgorithmMeta(type):
            def __iter__(cls):
                return iter(cls._order)


        class SpeculativeAlgorithm(metaclass=_SpeculativeAlgorithmMeta):
            _flags = {}

            @classmethod
            def register(cls, name, *, aliases=None):
                return cls(name)

            def _has_flag(self, flag: str) -> bool:
                return self.value in type(self)._flags.get(flag.upper(), set())

            def is_none(self) -> bool:
                return self is SpeculativeAlgorithm.NONE

            def is_eagle(self) -> bool:
                return self._has_flag("EAGLE")
    ''')
    assert record.form == "registry"
    assert record.members == ()
    assert record.metaclass == "sglang.srt.speculative.spec_info._SpeculativeAlgorithmMeta"
    assert {p.name: p.expr for p in record.predicates} == {"is_none": ("eq", "NONE"), "is_eagle": ("flag", "EAGLE")}


def test_plugin_base_register_default_and_alias_constant():
    found = records('''
        _RESERVED_ALIASES = frozenset({"NEXTN"})


        class CustomSpecAlgo:
            def is_speculative(self) -> bool:
                return True

            def is_eagle(self) -> bool:
                return False


        class SpeculativeAlgorithm(Enum):
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
    ''', EX, PATH)
    const = [r for r in found if isinstance(r, ConstStrings)]
    assert [(c.qualname, c.values, c.line) for c in const] == [
        ("sglang.srt.speculative.spec_info._RESERVED_ALIASES", ("NEXTN",), 2)]
    plugin = next(r for r in found if isinstance(r, AlgoClassRecord) and r.name == "CustomSpecAlgo")
    assert plugin.form == "plain"
    assert [(p.name, p.expr) for p in plugin.predicates] == [("is_speculative", ("const", True)),
                                                            ("is_eagle", ("const", False))]
    algo = next(r for r in found if isinstance(r, AlgoClassRecord) and r.name == "SpeculativeAlgorithm")
    assert algo.register_defaults == ("sglang.srt.speculative.spec_info.CustomSpecAlgo",)
    assert algo.alias_returns == (("sglang.srt.speculative.spec_info._RESERVED_ALIASES", "EAGLE"),)


def test_unrelated_classes_are_ignored():
    found = records('''
        from enum import IntEnum, auto


        class SpecInputType(IntEnum):
            EAGLE_DRAFT = auto()

        class Dropout2dAlgorithmish:
            def is_x(self):
                return True
    ''', EX, PATH)
    assert found == ()


def test_trigger_is_precise():
    assert EX.trigger.search("class SpeculativeAlgorithm(Enum):")
    assert EX.trigger.search("class CustomSpecAlgo:")
    assert not EX.trigger.search("from sglang.srt.speculative.spec_info import SpeculativeAlgorithm")
