"""`reduce.py`: the reduced source keeps every line and column, and the extractors read the same
records from it as from the whole file (on real SGLang releases)."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst

from sgl_scan.analyzer.parse import parse_file, run_ast_extractors, split_lines, uses_ast
from sgl_scan.analyzer.parse_cst import run_extractors, wrap
from sgl_scan.analyzer.pipeline import load_extractors, matching_extractors
from sgl_scan.analyzer.reduce import hit_lines, reduce_source


def _reduce(source: str, extractors=None) -> str:
    source = textwrap.dedent(source)
    return reduce_source(split_lines(source), ast.parse(source), extractors)


def test_lines_and_kept_text_stay_in_place():
    source = textwrap.dedent('''\
        import os
        X = 1

        def unrelated(a):
            import json
            return json.dumps(a)

        class Big:
            """doc"""
            def other(self):
                return 1

            def dispatch(self):
                if self.spec_algorithm == "EAGLE":
                    return 2

            def tail(self):
                x = 1
                return x
        ''')
    reduced = _reduce(source)
    lines, out = split_lines(source), split_lines(reduced)
    assert len(out) == len(lines)
    kept = {i + 1 for i, line in enumerate(out) if line.strip()}
    for number in kept - {5 + 1, 12 + 1}:  # where `pass` went in
        if out[number - 1].strip() != "pass":
            assert out[number - 1] == lines[number - 1]
    assert out[4] == lines[4]  # the function-local import
    assert "def unrelated(a):" in out[3]
    assert out[12:15] == lines[12:15]  # the method with a hit, whole
    assert out[18].strip() == "pass"  # last line of the class keeps the class's extent
    assert "return 1" not in reduced and "json.dumps" not in reduced
    ast.parse(reduced)


def test_algorithm_class_and_enum_kept_whole():
    source = '''\
        import enum
        class SpeculativeAlgorithm(enum.IntEnum):
            NONE = 0
            def is_none(self):
                return self == SpeculativeAlgorithm.NONE
        class Mode(enum.Enum):
            A = "spec_algorithm"
            def other(self):
                return 1
        '''
    assert _reduce(source) == textwrap.dedent(source)


def test_statements_sharing_a_line_and_inline_suites():
    source = '''\
        class C:
            a = 1; b = spec_algorithm
            if a: import os
            for x in y: pass
        '''
    reduced = _reduce(source)
    assert "a = 1; b = spec_algorithm" in reduced and "if a: import os" in reduced
    assert "for x in y" not in reduced
    ast.parse(reduced)


def test_hits_follow_the_extractors_asked_for():
    lines = split_lines("x = d2t\ny = spec_algorithm\nz = 1\nalgo = self.speculative_algorithm\nif algo: pass\n")
    assert hit_lines(lines, ("d2t",)) == {1, 2, 4, 5}  # aliases of the algorithm (y, algo) always count
    assert {2, 4, 5} <= hit_lines(lines)


def test_parse_file_gives_the_same_facts_as_full_libcst():
    source = textwrap.dedent('''\
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
        def pick(server_args):
            if server_args.speculative_algorithm == "EAGLE":
                from sglang.srt.speculative.eagle_worker import EAGLEWorker
                return EAGLEWorker
            return None
        def unrelated():
            return 3
        ''').encode()
    extractors = matching_extractors(source, load_extractors())
    assert extractors
    reduced = parse_file("sglang/srt/x.py", source, "0", extractors)
    text = source.decode()
    on_cst = [ex for ex in extractors if not uses_ast(ex)]
    full = run_extractors("sglang/srt/x.py", wrap(cst.parse_module(text), on_cst), on_cst)
    full.update(run_ast_extractors("sglang/srt/x.py", ast.parse(text), [ex for ex in extractors if uses_ast(ex)], text))
    assert reduced.extras == full
    assert any(reduced.extras.values())
