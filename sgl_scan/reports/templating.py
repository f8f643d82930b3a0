"""The jinja2 environments for the Markdown and HTML reports (templates under reports/templates/)."""

from __future__ import annotations

import functools
import re

import jinja2
import markupsafe
from markupsafe import Markup

from sgl_scan.reports import common
from sgl_scan.reports.visible import visible_in_page


class MdSafe(str):
    """Markdown already escaped by a filter here; the Markdown environment's finalize leaves it alone."""


_MD_PUNCT = re.compile(r"[\\`*\[\]|~#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_WHITESPACE = re.compile(r"[ \t\n\r\f\v]+")  # one line; the template's own spacing stays
_AUTOLINK = re.compile(r"(?i)(://|www\.)")


def md_text(value) -> MdSafe:
    """Any text as inert Markdown: one line, no control characters, no HTML, links, emphasis or tables.

    `&` and `<` become entities (`>` alone opens nothing in the middle of a line); Markdown punctuation
    (backslash, backtick, `*`, brackets, pipe, `~`, `#`, and `_` at a word's edge) is backslash-escaped;
    `://` and `www.` are broken with an entity so GitHub's autolinker makes no link.
    """
    if isinstance(value, MdSafe):
        return value
    text = common.visible(_WHITESPACE.sub(" ", str(value)))
    text = text.replace("&", "&amp;").replace("<", "&lt;")  # no tag or comment can open without `<`
    text = _MD_PUNCT.sub(lambda m: "\\" + m.group(), text)
    text = _AUTOLINK.sub(lambda m: m.group().replace(":", "&#58;").replace(".", "&#46;"), text)
    return MdSafe(text)


def md_cell(value) -> MdSafe:
    """Text safe inside a Markdown table cell (and anywhere else): `md_text`, trimmed."""
    return md_text(" ".join(str(value).split()))


_MARKUP_LIKE = re.compile(r"<|\]\(|://")


def md_code(value) -> MdSafe:
    """Inline code that survives backticks in the text and sits safely in a table cell.

    Text that looks like markup (`<`, `](`, `://`) is inert inside a code span too, but a
    reader skimming the raw Markdown (or a tool that is not CommonMark) should not see a tag or a
    link there: such text is written as escaped prose (`md_text`) instead.
    """
    if _MARKUP_LIKE.search(str(value)):
        return md_text(" ".join(str(value).split()))
    text = common.visible(" ".join(str(value).split())).replace("|", "\\|")
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return MdSafe(f"{fence}{pad}{text}{pad}{fence}")


def anchor(value) -> str:
    """An HTML id fragment from any text (`sglang/srt/x.py:12` -> `sglang-srt-x-py-12`)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(value)).strip("-")


def breakable(value) -> Markup:
    """Escaped text with a line-break opportunity (`<wbr>`) after each `.`, `/`, `(`, `[` and `,`, so
    that a long dotted name or expression in a narrow table cell wraps between its parts."""
    return Markup(re.sub(r"([./(\[,])", r"\1<wbr>", str(markupsafe.escape(html_visible(str(value))))))


def html_visible(value):
    """The HTML environment's `finalize`: every `{{ }}` of tree text (cells, attributes, titles) has its
    control characters, DEL and bidi overrides written as visible escapes, as in the text report;
    markup the reporters built themselves (`Markup`) is left alone (it was made from escaped text).
    A field longer than `common.MAX_VALUE_CHARS` (a 1 MB literal) is cut, saying how much was left out."""
    if isinstance(value, (Markup, int, float)) or value is None or isinstance(value, jinja2.Undefined):
        return value
    return visible_in_page(common.clip(str(value), common.MAX_VALUE_CHARS))


def _common_globals(env: jinja2.Environment) -> None:
    env.filters.update(
        md_cell=md_cell,
        md_code=md_code,
        anchor=anchor,
        short_name=common.short_name,
        worker_choice=common.worker_choice,
        function_label=common.function_label,
        breakable=breakable,
    )
    env.globals.update(plural=common.plural, census_line=common.census_line)


@functools.lru_cache(maxsize=None)
def markdown_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("sgl_scan.reports", "templates"),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=md_text,  # every {{ }} not already escaped by md_cell/md_code is made inert
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
        finalize=html_visible,
    )
    _common_globals(env)
    return env
