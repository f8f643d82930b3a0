"""Restating a base method's parameters: every parameter kind, literal and non-literal defaults."""

from __future__ import annotations

import pytest

from sgl_scan.analyzer.facts import Param
from sgl_scan.analyzer.model import Location
from sgl_scan.analyzer.query import Signature
from sgl_scan.codegen.ddtree.render import forwarding
from sgl_scan.errors import CodegenError

LOC = Location("sglang/srt/speculative/x.py", 10)


def _override(params):
    """Build Base/Child from the rendered text and return (Child, the calls Base recorded)."""
    fwd = forwarding(Signature("run", tuple(params), LOC))
    base_params = ", ".join(
        ("*" + p.name if p.kind == "vararg" else "**" + p.name if p.kind == "varkw" else p.name + (f"={p.default}" if p.default else ""))
        for p in params
    )
    source = (
        "DEFAULT_MODE = 'base-default'\n"
        "_INHERITED = object()\n"
        "def _given(**kw):\n    return {k: v for k, v in kw.items() if v is not _INHERITED}\n"
        "calls = []\n"
        f"class Base:\n    def run(self, {base_params}):\n        calls.append(dict(locals()))\n"
        f"class Child(Base):\n    def run(self{fwd.signature}):\n        return super().run({fwd.call})\n"
    )
    namespace: dict = {}
    exec(compile(source, "<rendered>", "exec"), namespace)
    return namespace["Child"](), namespace["calls"], fwd


def test_plain_parameters_are_forwarded_by_name():
    child, calls, fwd = _override([Param("batch", "positional"), Param("on_publish", "positional", default="None")])
    child.run("b")
    child.run("b", on_publish=print)
    assert [(c["batch"], c["on_publish"]) for c in calls] == [("b", None), ("b", print)]
    assert (fwd.batch, fwd.sentinel, fwd.text) == ("batch", False, "batch, on_publish=None")


def test_keyword_only_varargs_and_kwargs():
    params = [
        Param("batch", "positional"), Param("args", "vararg"), Param("mode", "kwonly", default="1"),
        Param("kwargs", "varkw"),
    ]
    child, calls, fwd = _override(params)
    child.run("b", 1, 2, mode=3, extra=4)
    assert (calls[0]["batch"], calls[0]["args"], calls[0]["mode"], calls[0]["kwargs"]) == ("b", (1, 2), 3, {"extra": 4})
    assert fwd.text == "batch, *args, mode=1, **kwargs"


def test_a_bare_star_is_written_before_keyword_only_parameters():
    child, calls, fwd = _override([Param("batch", "positional"), Param("is_verify", "kwonly", default="False")])
    child.run("b", is_verify=True)
    assert calls[0]["is_verify"] is True and fwd.text == "batch, *, is_verify=False"


def test_non_literal_defaults_stay_the_base_classes_own():
    child, calls, fwd = _override([Param("batch", "positional"), Param("mode", "positional", default="DEFAULT_MODE")])
    child.run("b")
    child.run("b", "mine")
    assert [c["mode"] for c in calls] == ["base-default", "mine"]
    assert fwd.sentinel and "mode=_INHERITED" in fwd.signature


def test_positional_only_parameters():
    child, calls, fwd = _override([Param("batch", "posonly"), Param("x", "positional", default="2")])
    child.run("b", x=5)
    assert (calls[0]["batch"], calls[0]["x"]) == ("b", 5) and fwd.text == "batch, /, x=2"


def test_a_non_literal_default_before_varargs_is_refused():
    with pytest.raises(CodegenError, match="cannot forward run"):
        forwarding(Signature("run", (Param("mode", "positional", default="X"), Param("args", "vararg")), LOC))
