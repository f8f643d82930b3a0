"""Tree text reaches generated code only after strict validation; a hostile tree is refused (trust.py)."""

from __future__ import annotations

import ast
import dataclasses

import pytest

from sgl_scan.analyzer.facts import Param
from sgl_scan.codegen.ddtree.generate import generate_ddtree
from sgl_scan.codegen.ddtree.plan import plan_ddtree
from sgl_scan.codegen.ddtree.render import render_ddtree
from sgl_scan.codegen.ddtree.trust import check_plan, is_dotted, is_identifier, is_literal
from sgl_scan.errors import CodegenError


def _payload(marker) -> str:
    command = f"touch {marker}"
    return "{__import__(chr(111)+chr(115)).system(" + "+".join(f"chr({ord(c)})" for c in command) + ")}"


def _run_fstrings(source: str) -> None:
    """Evaluate every f-string of a generated module, as its error paths would."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr):
            try:
                eval(compile(ast.Expression(node), "worker.py", "eval"), {"__builtins__": __builtins__}, {})
            except Exception:  # noqa: BLE001 - names of the worker's scope are missing here; only side effects matter
                pass


def test_a_version_with_an_fstring_field_is_refused_and_nothing_runs(release_0_5_23, tmp_path):
    tree, analysis = release_0_5_23
    marker = tmp_path / "GEN_PWNED"
    hostile = dataclasses.replace(analysis, sglang_version="0.5.23" + _payload(marker))
    try:
        generated = generate_ddtree(hostile, tree, package="ddtree_gen", budget=8, topk=4)
    except CodegenError as exc:
        assert "sglang_version" in str(exc) and "\n" not in str(exc)
    else:
        _run_fstrings(generated.files["worker.py"])
        pytest.fail(f"generated despite a hostile version (payload ran: {marker.exists()})")
    assert not marker.exists()


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda p: dataclasses.replace(p, base=dataclasses.replace(p.base, name="X:\n    import os  #")), id="class-name"),
        pytest.param(lambda p: dataclasses.replace(p, base=dataclasses.replace(p.base, module="os; import os")), id="module"),
        pytest.param(
            lambda p: dataclasses.replace(p, base=dataclasses.replace(p.base, location=dataclasses.replace(p.base.location, path='a"""\nimport os\n"""b.py'))),
            id="file-name",
        ),
        pytest.param(
            lambda p: dataclasses.replace(p, base=dataclasses.replace(p.base, entry=dataclasses.replace(
                p.base.entry, params=p.base.entry.params + (Param("extra", "kwonly", default="1  # )"),)))),
            id="default-with-comment",
        ),
        pytest.param(lambda p: dataclasses.replace(p, overlap_reason="x\x1b]0;TITLE\x07"), id="control-char"),
        pytest.param(lambda p: dataclasses.replace(p, sglang_version="0.5.23 {x}"), id="version"),
    ],
)
def test_render_refuses_a_plan_with_hostile_text(release_0_5_23, edit):
    tree, analysis = release_0_5_23
    plan = plan_ddtree(analysis, budget=8, topk=4, mode="plugin")
    check_plan(plan)  # the real release passes
    with pytest.raises(CodegenError, match="refusing to generate code"):
        render_ddtree(edit(plan), "ddtree_gen", None, "sgl-scan gen ddtree")


def test_patterns():
    assert is_identifier("DFlashWorker") and not is_identifier("class") and not is_identifier("a.b") and not is_identifier("é")
    assert is_dotted("sglang.srt.speculative") and not is_dotted("a..b") and not is_dotted("a.b ")
    # 0.5.23 decode_cuda_graph_runner.py: a dispatch site in a function nested in capture_one_shape
    assert is_dotted("sglang.srt.x.Runner.capture_one_shape.<locals>.run_once")
    assert not is_dotted("<locals>.x") and not is_dotted("a.<local>.b") and not is_dotted("a.<locals>{x}")
    assert is_literal("None") and is_literal("-1") and is_literal('"auto"') and is_literal("(1, 2)")
    assert not is_literal("1  # x") and not is_literal("'\\x1b'") and not is_literal("'{}'.format") and not is_literal("(1,\n2)")


def test_patch_notes_may_quote_but_carry_no_controls_or_braces():
    from sgl_scan.analyzer.model import Location
    from sgl_scan.codegen.ddtree.patch import PatchEdit
    from sgl_scan.codegen.ddtree.trust import check_patch_notes

    where = Location("sglang/srt/server_args.py", 10)
    check_patch_notes((PatchEdit(where, 'add "DDTREE" to the --speculative-algorithm choices'),))
    for bad in ("x\x1b]0;T\x07", "x{y}", "x\ny"):
        with pytest.raises(CodegenError):
            check_patch_notes((PatchEdit(where, bad),))
    with pytest.raises(CodegenError):
        check_patch_notes((PatchEdit(Location("../x.py", 1), "ok"),))
