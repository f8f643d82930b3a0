"""One hostile tree through every reporter and the generator: nothing executes, nothing escapes.

The tree's version, registered algorithm names, dispatch string literals and file names all carry
the same payload: terminal escapes (OSC 52 clipboard, OSC 0 title, OSC 8 link, clear screen, BEL,
C1 CSI, a bidi override), HTML (`<img src=http://…>`, `</script><script>`), Markdown (a link, an
image, backticks, pipes), quotes and a Python f-string field that would run a command. Then:

- text: no control character but the line breaks (and, coloured, only our SGR codes);
- Markdown: outside code spans no `<` but our `<details>`/`<summary>`, no link, image or autolink;
- JSON and SARIF: valid, no raw control character, and the payload comes back intact;
- HTML: no element or attribute the payload names, the no-network content policy in place;
- `graph` (DOT, GraphML, the dispatch listing) and `snapshot show`: no control character;
- the generator: a plan with the payload in any one of its strings is refused, nothing runs.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

from sgl_scan.cli import cli
from sgl_scan.codegen.ddtree.plan import plan_ddtree
from sgl_scan.codegen.ddtree.render import render_ddtree
from sgl_scan.errors import CodegenError
from tests.support.releases import cache_root, release_tree

ESCAPES = "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b]0;TITLE\x07\x1b]8;;http://127.0.0.1:9/\x1b\\L\x1b]8;;\x1b\\\x1b[2J\x9b31m\u202e"
HTML = "<img src=http://127.0.0.1:9/i.png></script><script>alert(1)</script>"
MARKDOWN = "[UPDATE REQUIRED](http://127.0.0.1:9/fix)![x](http://127.0.0.1:9/m.png)`|`"


def payload(marker: str) -> str:
    return f"{ESCAPES}{HTML}{MARKDOWN}\"'{{__import__('os').system('touch {marker}')}}"


@pytest.fixture
def hostile_tree(tmp_path):
    marker = tmp_path / "PAYLOAD_RAN"
    p = payload(marker)
    src = release_tree("0.5.23") / "sglang"
    package = tmp_path / "checkout" / "sglang"
    (package / "srt/speculative").mkdir(parents=True)
    (package / "srt/arg_groups").mkdir(parents=True)
    shutil.copyfile(src / "srt/speculative/spec_info.py", package / "srt/speculative/spec_info.py")
    version = p.replace("'", "").replace('"', "")  # the version pattern stops at quotes
    (package / "version.py").write_text(f"__version__ = '0.5.23{version}'\n")
    (package / "srt/arg_groups/evil_hook.py").write_text(
        f"def hook(cfg):\n    if cfg.speculative_algorithm == {p!r}:\n        return 1\n"
    )
    (package / "srt/speculative/evil_reg.py").write_text(
        "from sglang.srt.speculative.spec_info import SpeculativeAlgorithm\n\n\n"
        f"@SpeculativeAlgorithm.register({p.upper()!r})\ndef _f(server_args):\n    return EvilWorker\n"
    )
    name = "esc" + ESCAPES.replace("/", "").replace("\\", "") + "<img src=x>`|`.py"
    (package / "srt/speculative" / name).write_text("def broken(:\n")
    return package, marker, p


def _scan(package, fmt, out):
    result = CliRunner().invoke(cli, ["scan", "--path", str(package), "--format", fmt, "-o", str(out)])
    assert result.exit_code in (0, 1), result.output
    return out.read_text(encoding="utf-8")


CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _strip_code_spans(text: str) -> str:
    """Markdown outside code spans (CommonMark: a run of n backticks closes at the next run of n)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "`" and (i == 0 or text[i - 1] != "\\"):
            n = len(text[i:]) - len(text[i:].lstrip("`"))
            close = re.compile(r"(?<!`)" + "`" * n + r"(?!`)").search(text, i + n)
            if close:
                i = close.end()
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


class _Tags(HTMLParser):
    """Start tags with their attributes, and the text inside <script> elements."""

    def __init__(self):
        super().__init__()
        self.tags, self.scripts, self._in_script = [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def test_every_reporter_keeps_the_payload_inert(hostile_tree, tmp_path):
    package, marker, p = hostile_tree
    text = _scan(package, "text", tmp_path / "r.txt")
    assert not CONTROL.search(text) and "\\x1b]52" in text and "\\x1b]0;TITLE" in text
    assert "\\u202e" in text

    md = _scan(package, "markdown", tmp_path / "r.md")
    assert not CONTROL.search(md)
    prose = _strip_code_spans(md)
    assert not re.search(r"<(?!/?(details|summary)>)", prose), [l for l in prose.splitlines() if "<" in l][:3]
    assert not re.search(r"(?<!\\)[\[\]]", prose) and "://" not in prose  # no link, image or autolink
    assert "&lt;img src=http&#58;//127.0.0.1:9/i.png&gt;" not in prose  # `>` stays; the `<` is what matters
    assert "&lt;img src=http&#58;//127.0.0.1:9/i.png>" in prose

    for fmt in ("json", "sarif"):
        document = _scan(package, fmt, tmp_path / f"r.{fmt}")
        assert not CONTROL.search(document)
        data = json.loads(document)
        assert any(p.upper() in text for text in _strings(data))  # escaped in the file, intact when read

    html = _scan(package, "html", tmp_path / "r.html")
    parser = _Tags()
    parser.feed(html)
    assert not any(tag == "img" for tag, _ in parser.tags)
    assert not any("127.0.0.1" in (value or "") for _, attrs in parser.tags for value in attrs.values())
    assert not any("alert(1)" in script for script in parser.scripts)
    assert "&lt;img src=http://127.0.0.1:9/i.png&gt;" in html  # shown as text
    assert "default-src 'none'" in html

    for args in (["graph", "--format", "dot"], ["graph", "--format", "graphml"], ["graph", "--dispatch", "EAGLE"]):
        result = CliRunner().invoke(cli, [*args, "--path", str(package)])
        assert result.exit_code == 0, result.output
        assert not CONTROL.search(result.stdout), args
    listed = CliRunner().invoke(cli, ["snapshot", "show", "latest", "--files"])
    assert listed.exit_code == 0 and not CONTROL.search(listed.stdout) and "\\x1b" in listed.stdout
    assert not marker.exists()


def _leaves(value, path=()):
    """(path, text) of every string reachable from a plan, by dataclass field / tuple index."""
    if isinstance(value, str):
        yield path, value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _leaves(getattr(value, f.name), path + (f.name,))
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            yield from _leaves(item, path + (i,))


def _replace(value, path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        return value[:head] + (_replace(value[head], rest, new),) + value[head + 1:]
    return dataclasses.replace(value, **{head: _replace(getattr(value, head), rest, new)})


def test_the_generator_refuses_a_payload_in_any_plan_string(tmp_path):
    from tests.codegen.conftest import release_analysis

    tree, analysis = release_analysis("0.5.23", cache_root() / "facts")
    plan = plan_ddtree(analysis, budget=8, topk=4, mode="plugin")
    marker = tmp_path / "PAYLOAD_RAN"
    leaves = list(_leaves(plan))
    assert len(leaves) > 200
    accepted = []
    for path, text in leaves:
        try:
            render_ddtree(_replace(plan, path, text + payload(marker)), "ddtree_gen", None, "sgl-scan gen ddtree")
        except CodegenError:
            continue
        accepted.append(".".join(map(str, path)))
    assert not accepted, accepted[:5]
    assert not marker.exists()
