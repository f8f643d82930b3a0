"""Which text read from a scanned tree may reach generated code: strict patterns, or the tree is refused.

`gen ddtree` writes Python that users import into their inference server, and every name in it
comes from the tree (class, method, field and module names, the version, file paths in comments
and docstrings). The tree may be hostile: a version `0.5.23{__import__("os").system(...)}` pasted
into an f-string runs when that line does. So before anything is rendered, every string of the
plan is checked against the pattern of what it is:

- identifiers (method, field, parameter, attribute names): `str.isidentifier()`, not a keyword;
- module paths and qualified names: dotted identifiers;
- the SGLang version: `[0-9A-Za-z.+-]`;
- file paths in locations: `[A-Za-z0-9_./-]`, no `..` part;
- parameter defaults: one-line Python literals without comments or backslashes (other defaults are
  never restated: the generated signature inherits them);
- everything else (sentences built from the above): printable ASCII without quotes `"`, backslash,
  braces or `#`, so it can end no string, docstring, comment or f-string field.

A plan with any string outside its pattern raises `CodegenError` (exit 3) naming the field and the
text (as a repr, so control characters stay visible); nothing is generated. Templates may then
paste these strings anywhere; text that can hold anything goes through the `py` (repr) filter.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import keyword
import re
import tokenize

from sgl_scan.errors import CodegenError

VERSION = re.compile(r"[0-9A-Za-z.+-]+\Z")
PATH = re.compile(r"[A-Za-z0-9_./-]+\Z")
TEXT = re.compile(r"[ !$%&`'()*+,\-./0-9:;<=>?@A-Z\[\]^_a-z|~]*\Z")

IDENTIFIER_FIELDS = frozenset(
    {
        "name",
        "algorithm_name",
        "target_attr",
        "worker_batch_method",
        "result_field",
        "draft_method",
        "draft_runner",
        "root_field",
        "hidden_field",
        "ctx_field",
        "accept_method",
        "append_method",
        "next_input_method",
        "publish_param",
        "reservation_attr",
        "methods",
        "fields",
        "left_default",
        "accept_keywords",
        "append_keywords",
        "next_input_keywords",
        "result_keywords",
        "base_predicates",
        "backend_guards",
        "predicates",
        "algorithms",
        "draft_args",
        "kv_field",
        "write_ids_method",
        "kv_plan_keywords",
        "loader_keywords",
        "phases",
    }
)
DOTTED_FIELDS = frozenset(
    {
        "module",
        "qualname",
        "enum_qualname",
        "verify_class",
        "forward_mode_module",
        "result_class",
        "window_func",
        "kv_mover",
        "base_qualname",
        "draft_input_class",
        "page_setting",
        "worker",
        "workers",
        "function",
        "kv_plan",
        "parser",
        "loader",
        "settings_bag",
    }
)


def is_identifier(text: str) -> bool:
    return text.isidentifier() and text.isascii() and not keyword.iskeyword(text)


# the analyzer's own parts of a qualified name (`f.<locals>.g`, a function in a function): never tree text
QUALNAME_PARTS = frozenset({"<locals>", "<lambda>", "<module>"})


def is_dotted(text: str) -> bool:
    parts = text.split(".")
    return is_identifier(parts[0]) and all(is_identifier(part) or part in QUALNAME_PARTS for part in parts[1:])


def is_literal(text: str) -> bool:
    """A one-line Python literal without comments or backslashes (safe in a generated signature)."""
    if not TEXT.match(text.replace('"', "'")) or "\\" in text:
        return False
    try:
        ast.literal_eval(text)
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, tokenize.TokenError):
        return False
    return not any(t.type in (tokenize.COMMENT, tokenize.NL) for t in tokens)


def _evaluates(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def _check(kind: str, text: str) -> bool:
    if kind == "identifier":
        return is_identifier(text) or text == "<module>"
    if kind == "dotted":
        return is_dotted(text) or text == "<module>"
    if kind == "version":
        return bool(VERSION.match(text))
    if kind == "path":
        return bool(PATH.match(text)) and ".." not in text.split("/")
    if kind == "literal":  # a literal default is restated in signatures; any other is never rendered
        return is_literal(text) or not _evaluates(text) and bool(TEXT.match(text.replace('"', "'")))
    if kind == "annotation":
        return bool(TEXT.match(text.replace('"', "'")))
    return bool(TEXT.match(text))


def _kind(field: str) -> str:
    if field == "sglang_version":
        return "version"
    if field == "path":
        return "path"
    if field == "default":
        return "literal"
    if field == "annotation":
        return "annotation"  # dropped by the generator; string annotations keep their quotes
    if field in IDENTIFIER_FIELDS:
        return "identifier"
    if field in DOTTED_FIELDS:
        return "dotted"
    return "text"


def check_plan(plan: object) -> None:
    """Raise `CodegenError` unless every string reachable from `plan` matches the pattern of its field."""
    _walk(plan, "plan", "text", set())


def check_patch_notes(edits) -> None:
    """A patch's edit notes go to README.md and the plan text only (never Python): quotes allowed."""
    for edit in edits:
        _walk(edit.location, "patch edit location", "text", set())
        _walk(edit.what.replace('"', "'"), "patch edit note", "text", set())


def _walk(value: object, where: str, kind: str, seen: set[tuple[int, str]]) -> None:
    if value is None or isinstance(value, (bool, int, float)):
        return
    if isinstance(value, str):
        if not _check(kind, value):
            raise CodegenError(
                f"refusing to generate code: the scanned tree's {where} is not a plain {kind} ({value[:120]!r})"
            )
        return
    key = (id(value), kind)  # a value shared by two fields is checked under each field's pattern
    if key in seen:
        return
    seen.add(key)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _walk(getattr(value, f.name), f"{where}.{f.name}", _kind(f.name), seen)
    elif isinstance(value, (tuple, list, frozenset, set)):
        for item in value:
            _walk(item, where, kind, seen)
    elif isinstance(value, dict):
        for name, item in value.items():
            _walk(name, where, kind, seen)
            _walk(item, where, kind, seen)
