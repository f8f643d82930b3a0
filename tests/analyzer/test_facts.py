"""Per-file facts: one example per kind of fact, through both parsers (stdlib ast and libcst)."""

from __future__ import annotations

import dataclasses
import pickle
import textwrap

import pytest

from sgl_scan.analyzer.builder import module_name
from sgl_scan.analyzer.parse import parse_file

PATH = "sglang/srt/speculative/sample.py"

SOURCE = textwrap.dedent('''\
    """A sample module."""
    from __future__ import annotations

    import os.path
    import numpy as np
    from enum import IntEnum, auto
    from . import spec_utils as su
    from ..managers.scheduler import Scheduler
    from .eagle_worker import EAGLEWorker as EAGLEWorker
    from sglang.srt.server_args import ServerArgs, LOAD_FORMAT_CHOICES

    __all__ = ["su", "SpeculativeAlgorithm"]


    class SpeculativeAlgorithm(IntEnum):
        NONE = auto()
        EAGLE = auto()
        EAGLE3 = 3
        _ignore_ = ["helper"]

        def is_eagle(self):
            return self in (SpeculativeAlgorithm.EAGLE, SpeculativeAlgorithm.EAGLE3)

        @staticmethod
        def from_string(name: str) -> "SpeculativeAlgorithm":
            return SpeculativeAlgorithm[name.upper()]


    @su.register("worker")
    @np.vectorize
    async def create(algo, /, size: int = (1 + 2), *rest, flag=True, **options) -> Worker:
        from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2 as V2

        def nested(x):
            class Local:
                pass
            return V2(os.path.join(x, "a"))

        if algo.is_eagle():
            return EAGLEWorker(*rest, **options)
        return nested(algo)


    class Worker(Scheduler, metaclass=type):
        def run(self):
            self.step()
            return self.unknown()

        def step(self):
            print("café")


    add_load_format_choices = LOAD_FORMAT_CHOICES.extend
    DEFAULT: int = 3
    a, (b, c) = 1, (2, 3)
    DEFAULT += 1
    create(SpeculativeAlgorithm.EAGLE)
''')


@pytest.fixture(params=["ast", "cst"])
def facts(request):
    return parse_file(PATH, SOURCE.encode(), "0" * 64, force_cst=request.param == "cst")


def test_both_parsers_give_identical_facts():
    fast = parse_file(PATH, SOURCE.encode(), "0" * 64)
    full = parse_file(PATH, SOURCE.encode(), "0" * 64, force_cst=True)
    assert (fast.source, full.source) == ("ast", "cst")
    assert dataclasses.replace(fast, source="") == dataclasses.replace(full, source="")


def test_module_name():
    assert module_name("sglang/srt/speculative/__init__.py") == "sglang.srt.speculative"
    assert module_name("sglang/srt/server_args.py") == "sglang.srt.server_args"


def test_imports_with_aliases_relative_and_reexports(facts):
    by_bound = {i.bound: i for i in facts.imports}
    assert by_bound["os"].target == "os" and by_bound["os"].module == "os.path" and by_bound["os"].name is None
    assert by_bound["np"].target == "numpy" and by_bound["np"].alias == "np"
    su = by_bound["su"]
    assert (su.module, su.name, su.alias, su.level, su.target) == (
        "sglang.srt.speculative", "spec_utils", "su", 1, "sglang.srt.speculative.spec_utils")
    assert su.reexport  # listed in __all__
    assert by_bound["Scheduler"].target == "sglang.srt.managers.scheduler.Scheduler"
    assert by_bound["Scheduler"].level == 2 and not by_bound["Scheduler"].reexport
    assert by_bound["EAGLEWorker"].reexport  # `import X as X`
    assert (su.line, su.column, su.end_line) == (7, 15, 7)
    local = [i for i in facts.imports if i.scope]
    assert [(i.bound, i.target, i.scope) for i in local] == [
        ("V2", "sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2", "create")]
    assert facts.all_names == ("su", "SpeculativeAlgorithm")


def test_enum_members_in_order_with_values(facts):
    algo = next(c for c in facts.classes if c.name == "SpeculativeAlgorithm")
    assert algo.enum_base == "enum.IntEnum"
    assert algo.bases == ("enum.IntEnum",)
    assert [(m.name, m.value, m.line, m.column) for m in algo.enum_members] == [
        ("NONE", "auto()", 16, 5), ("EAGLE", "auto()", 17, 5), ("EAGLE3", "3", 18, 5)]
    assert algo.methods == ("is_eagle", "from_string")
    assert (algo.line, algo.column, algo.end_line) == (15, 1, 26)


def test_functions_nested_decorated_and_params(facts):
    funcs = {f.qualname: f for f in facts.functions}
    assert set(funcs) == {
        "SpeculativeAlgorithm.is_eagle", "SpeculativeAlgorithm.from_string", "create",
        "create.<locals>.nested", "Worker.run", "Worker.step"}
    create = funcs["create"]
    assert create.is_async and create.owner is None
    assert create.decorators == ("sglang.srt.speculative.spec_utils.register", "numpy.vectorize")
    assert (create.decorator_line, create.line, create.column, create.end_line) == (29, 31, 1, 41)
    assert [(p.name, p.kind, p.annotation, p.default) for p in create.params] == [
        ("algo", "posonly", None, None), ("size", "positional", "int", "1 + 2"), ("rest", "vararg", None, None),
        ("flag", "kwonly", None, "True"), ("options", "varkw", None, None)]
    assert create.returns == "Worker"
    assert funcs["SpeculativeAlgorithm.from_string"].decorators == ("builtins.staticmethod",)
    assert funcs["Worker.run"].owner == "Worker"
    assert [c.qualname for c in facts.classes] == ["SpeculativeAlgorithm", "create.<locals>.nested.<locals>.Local", "Worker"]


def test_calls_resolved_through_imports_and_self(facts):
    funcs = {f.qualname: f for f in facts.functions}
    calls = [(c.callee, c.resolved, c.line) for c in funcs["create"].calls]
    assert calls == [
        ("algo.is_eagle", None, 39),
        ("EAGLEWorker", "sglang.srt.speculative.eagle_worker.EAGLEWorker", 40),
        ("nested", None, 41),  # a local function: not resolved (lexical, module-level names only)
    ]
    eagle = funcs["create"].calls[1]
    assert (eagle.args, eagle.keywords, eagle.column) == (1, ("**",), 16)
    nested = [(c.callee, c.resolved) for c in funcs["create.<locals>.nested"].calls]
    assert nested == [("V2", "sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2"), ("os.path.join", "os.path.join")]
    run = [(c.callee, c.resolved) for c in funcs["Worker.run"].calls]
    assert run == [("self.step", "sglang.srt.speculative.sample.Worker.step"), ("self.unknown", None)]
    module_level = [(c.callee, c.resolved, c.line) for c in facts.module_calls]
    assert ("create", "sglang.srt.speculative.sample.create", 57) in module_level
    assert ("su.register", "sglang.srt.speculative.spec_utils.register", 29) in module_level
    assert ("auto", "enum.auto", 16) in module_level


def test_assignments_and_aliases(facts):
    got = [(a.target, a.value, a.value_name, a.kind, a.line) for a in facts.assignments]
    assert got == [
        ("__all__", '["su", "SpeculativeAlgorithm"]', None, "assign", 12),
        ("add_load_format_choices", "LOAD_FORMAT_CHOICES.extend",
         "sglang.srt.server_args.LOAD_FORMAT_CHOICES.extend", "assign", 53),
        ("DEFAULT", "3", None, "annassign", 54),
        ("a", "1, (2, 3)", None, "assign", 55),
        ("b", "1, (2, 3)", None, "assign", 55),
        ("c", "1, (2, 3)", None, "assign", 55),
        ("DEFAULT", "1", None, "augassign", 56),
    ]
    assert facts.assignments[2].annotation == "int"


def test_worker_class(facts):
    worker = next(c for c in facts.classes if c.name == "Worker")
    assert worker.bases == ("sglang.srt.managers.scheduler.Scheduler",)
    assert dict(worker.keywords) == {"metaclass": "builtins.type"}
    assert worker.enum_base is None and worker.enum_members == ()


def test_facts_pickle_round_trip(facts):
    assert pickle.loads(pickle.dumps(facts)) == facts


def test_non_ascii_columns_are_characters():
    src = 'x = "é"; y = f("é", g())\n'.encode()
    fast = parse_file("m.py", src, "h")
    full = parse_file("m.py", src, "h", force_cst=True)
    assert [(c.callee, c.column) for c in fast.module_calls] == [("f", 14), ("g", 21)]
    assert dataclasses.replace(fast, source="") == dataclasses.replace(full, source="")


@pytest.mark.parametrize("data, message, line", [
    (b"def f(:\n    pass\n", "syntax error", 1),
    (b"x = 1\ny = 2\x00\n", "null bytes", 2),
    ("s = 'caf\xe9'\n".encode("latin-1"), "cannot decode", 1),
    (b"import os\nprint 'hello'\n", "Missing parentheses", 2),
    (b"# -*- coding: no-such-codec -*-\nx = 1\n", "cannot decode", 1),
    (bytes(range(256)), "null bytes", 1),
])
@pytest.mark.parametrize("force_cst", [False, True])
def test_unparsable_files_are_recorded(data, message, line, force_cst):
    facts = parse_file("sglang/srt/bad.py", data, "h", force_cst=force_cst)
    assert facts.parse_error is not None
    assert message in facts.parse_error.message
    assert facts.parse_error.location.path == "sglang/srt/bad.py"
    assert facts.parse_error.location.line == line
    assert facts.functions == () and facts.imports == ()


def test_latin1_with_coding_declaration_parses():
    data = "# -*- coding: latin-1 -*-\ndef f():\n    return 'caf\xe9'\n".encode("latin-1")
    facts = parse_file("m.py", data, "h")
    assert facts.parse_error is None
    assert [f.qualname for f in facts.functions] == ["f"]


class _FirstCallExtractor:
    """A minimal extractor: the position of every call to `spec_algorithm.is_*()`."""

    name, version = "first_call", 1
    trigger = __import__("re").compile(r"spec_algorithm\.is_")

    @property
    def metadata(self):
        import libcst.metadata as meta

        return (meta.PositionProvider,)

    def extract(self, wrapper, context):
        import libcst as cst
        import libcst.metadata as meta

        positions = wrapper.resolve(meta.PositionProvider)
        found = []

        class Visitor(cst.CSTVisitor):
            def visit_Call(self, node):
                if isinstance(node.func, cst.Attribute) and node.func.attr.value.startswith("is_"):
                    found.append((context.module, node.func.attr.value, positions[node].start.line))

        wrapper.visit(Visitor())
        return tuple(found)


def test_extractors_get_the_cst_and_general_facts_stay_the_same():
    src = b"def f(self):\n    if self.spec_algorithm.is_eagle():\n        return 1\n"
    plain = parse_file("sglang/srt/x.py", src, "h")
    with_extractor = parse_file("sglang/srt/x.py", src, "h", (_FirstCallExtractor(),))
    assert with_extractor.extras == {"first_call": (("sglang.srt.x", "is_eagle", 2),)}
    assert dataclasses.replace(with_extractor, extras={}) == plain


def test_syntax_ast_rejects_falls_back_to_libcst():
    # PEP 695 (Python 3.12): stdlib ast of older Pythons rejects it, libcst reads it
    src = b"type Alias = list[int]\n\ndef f():\n    return g()\n"
    facts = parse_file("m.py", src, "h")
    assert facts.parse_error is None
    assert [f.qualname for f in facts.functions] == ["f"]
    assert [c.callee for c in facts.functions[0].calls] == ["g"]


class _BrokenExtractor:
    name, version, metadata, parser = "broken", 1, (), "ast"
    trigger = __import__("re").compile("spec")

    def extract(self, tree, context):
        raise ValueError("cannot read this")


def test_an_extractor_that_raises_is_recorded_and_the_file_keeps_its_general_facts():
    src = b"def f(self):\n    if self.spec_algorithm.is_eagle():\n        return 1\n"
    plain = parse_file("sglang/srt/x.py", src, "h")
    broken = parse_file("sglang/srt/x.py", src, "h", (_FirstCallExtractor(), _BrokenExtractor()))
    assert broken.parse_error.message == "extractor broken failed: ValueError: cannot read this"
    assert broken.parse_error.location.path == "sglang/srt/x.py"
    assert broken.extras == {}  # no half-written records from the extractors that did run
    assert dataclasses.replace(broken, parse_error=None) == plain


def test_an_expression_too_deep_for_an_extractor_keeps_the_general_facts():
    chain = " + ".join(["a"] * 1500)  # a left-nested BinOp 1,500 levels deep: fine for `ast`, not for a recursive walk
    src = f"def f(server_args):\n    return server_args.speculative_algorithm == 'EAGLE' or {chain}\n".encode()
    from sgl_scan.analyzer.pipeline import load_extractors, matching_extractors

    extractors = matching_extractors(src, load_extractors())
    assert [ex.name for ex in extractors] == ["spec_dispatch", "spec_branch_shapes", "census"]
    facts = parse_file("sglang/srt/deep.py", src, "h", [ex for ex in extractors if ex.name == "census"])
    assert facts.parse_error is None  # the census says it could not walk the file, and never fails it
    assert [getattr(r, "kind", None) for r in facts.extras["census"]][-1:] == ["incomplete"]
    facts = parse_file("sglang/srt/deep.py", src, "h", extractors)
    assert facts.parse_error.message == "extractor spec_dispatch failed: nested too deeply (RecursionError)"
    assert [f.qualname for f in facts.functions] == ["f"] and facts.extras == {}


@pytest.mark.parametrize("text", ["", "a", "a\n", "a\r\nb\rc\n\n", "\r\r\n\n", "x\fy\vz\x1c\x1d\x1en",
                                  "é\x85f\u2028g\u2029h\r\n", "é\ni\r", "tail without break"])
def test_split_lines_ends_lines_only_where_python_does(text):
    """The fast path (`str.splitlines`) and the tokenizer's rule (only \\n, \\r\\n, \\r) give the same lines."""
    from sgl_scan.analyzer.builder import _LINE, split_lines

    assert split_lines(text) == _LINE.findall(text)
    assert "".join(split_lines(text)) == text


def test_hit_lines_counts_lines_with_or_without_carriage_returns():
    import re

    from sgl_scan.analyzer.extractors._text import hit_lines

    for text in ("a\nb a\n\na", "a\r\nb a\r\rz\na", "\n\na"):
        lines_of = [i + 1 for i, line in enumerate(re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)) if "a" in line]
        assert hit_lines(text, re.compile("a")) == lines_of
