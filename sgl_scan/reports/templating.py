"""The jinja2 environments for the Markdown and HTML reports (templates under reports/templates/)."""

from __future__ import annotations

import functools
import re

import jinja2

from sgl_scan.reports import common


def md_cell(value) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped."""
    text = " ".join(str(value).split())
    return text.replace("|", "\\|")


def md_code(value) -> str:
    """Inline code that survives backticks in the text and sits safely in a table cell."""
    text = md_cell(value)
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def anchor(value) -> str:
    """An HTML id fragment from any text (`sglang/srt/x.py:12` -> `sglang-srt-x-py-12`)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(value)).strip("-")


def _common_globals(env: jinja2.Environment) -> None:
    from sgl_scan.reports.dispatch_graph import function_label

    env.filters.update(md_cell=md_cell, md_code=md_code, anchor=anchor, short_name=common.short_name, worker_choice=common.worker_choice,
                       function_label=function_label)
    env.globals.update(plural=common.plural)


@functools.lru_cache(maxsize=None)
def markdown_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("sgl_scan.reports", "templates"),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    _common_globals(env)
    return env


@functools.lru_cache(maxsize=None)
def html_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("sgl_scan.reports", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "svg", "j2"), default_for_string=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    _common_globals(env)
    return env
