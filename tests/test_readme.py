"""README.md stays true: its Markdown structure (parsed with markdown-it-py, as a renderer would), and
every command block marked `bash offline` runs (against a small real SGLang tree, no network).

README.md and the docs/ pages stay user documentation: the README fits in LINE_LIMIT lines, no page
carries the project's internal history (issue numbers, commit ids, "this round", dated figures:
those belong in git and bench/), and every relative link, anchors included, leads somewhere."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py comes with the test extra: pip install -e '.[test]'")

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
LINE_LIMIT = 300

# Real 0.5.23 files enough for the inventory: algorithms, the option, dispatch and worker branches.
TREE_FILES = (
    "sglang/__init__.py",
    "sglang/version.py",
    "sglang/srt/speculative/spec_info.py",
    "sglang/srt/speculative/spec_utils.py",
    "sglang/srt/speculative/eagle_worker_v2.py",
    "sglang/srt/speculative/ngram_worker.py",
    "sglang/srt/server_args.py",
    "sglang/srt/arg_groups/choices.py",
    "sglang/srt/arg_groups/fields/spec.py",
    "sglang/srt/models/llama_eagle3.py",
)


def _tokens(text: str):
    return markdown_it.MarkdownIt("commonmark").parse(text)


def _offline_blocks(text: str) -> list[tuple[int, str]]:
    return [(t.map[0] + 1, t.content) for t in _tokens(text) if t.type == "fence" and t.info.split()[1:2] == ["offline"]]


def unclosed_fences(text: str) -> list[int]:
    """Lines (1-based) of code fences that run to the end of the document instead of closing."""
    lines = text.splitlines()
    bad = []
    for token in _tokens(text):
        if token.type != "fence":
            continue
        start, end = token.map
        last = lines[end - 1].strip() if end - 1 > start else ""
        if not (last.startswith(token.markup) and set(last) == {token.markup[0]}):
            bad.append(start + 1)
    return bad


def section_lines_not_headings(text: str) -> list[str]:
    """`## ...` lines that a renderer does not show as headings (e.g. swallowed by a code block)."""
    tokens = _tokens(text)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag in ("h2", "h3")]
    written = [re.sub(r"^#{2,3} ", "", line).strip() for line in text.splitlines() if re.match(r"#{2,3} \S", line)]
    return [line for line in written if line not in headings]


def user_pages() -> list[Path]:
    """README.md and the docs/ pages; the per-release precision notes may cite the history they measure."""
    return [README] + sorted(p for p in DOCS.glob("*.md") if not p.name.startswith("precision-"))


# What marks text as a lab notebook rather than user documentation.
HISTORY_MARKS = (
    ("issue number", re.compile(r"\bissues? #?\d+", re.IGNORECASE)),
    # 7-40 hex digits with at least one letter and one digit: not a plain number, not a word like "defaced"
    ("commit id", re.compile(r"(?<![0-9A-Za-z_])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![0-9A-Za-z_])")),
    ("this round/session", re.compile(r"\bthis (?:round|session)\b", re.IGNORECASE)),
    ("date", re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b")),
    ("date", re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.? (?:\d{1,2}, )?(?:19|20)\d\d\b")),
    ("machine load", re.compile(r"\bload (?:~|averages?\b|\d)", re.IGNORECASE)),
)


def history_marks(text: str) -> list[str]:
    """`line N: what: match` for every piece of internal history in a page."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in HISTORY_MARKS:
            found += [f"line {number}: {what}: {m.group(0)}" for m in pattern.finditer(line)]
    return found


def _slug(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    tokens = _tokens(text)
    titles = ("".join(c.content for c in tokens[i + 1].children if c.type in ("text", "code_inline"))
              for i, t in enumerate(tokens) if t.type == "heading_open")
    return {_slug(title) for title in titles}


def broken_links(text: str, page: Path) -> list[str]:
    """Relative links of a page (beside `page`) whose file, or whose #anchor in a Markdown file, does not exist."""
    broken = []
    for token in _tokens(text):
        for child in token.children or ():
            href = child.attrGet("href") if child.type == "link_open" else child.attrGet("src") if child.type == "image" else None
            if not href or re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", href):
                continue  # no link, or an absolute URL (https:, mailto:)
            target, _, anchor = href.partition("#")
            path = (page.parent / target.split("?")[0]).resolve() if target else page
            if target and not path.exists():
                broken.append(f"{href}: no such file")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path.read_text(encoding="utf-8") if target else text):
                broken.append(f"{href}: no heading #{anchor} in {path.name}")
    return broken


def test_the_checks_catch_a_long_readme_history_and_broken_links(tmp_path):
    assert len(("line\n" * (LINE_LIMIT + 1)).splitlines()) > LINE_LIMIT
    notebook = ("Fixed in issue 27 (commit 9da5b69) this round.\n"
                "On this machine (load ~2, 2026-12-02) a pull took 1.3 s; measured Dec 2, 2026.\n")
    assert [m.split(": ")[1] for m in history_marks(notebook)] == [
        "issue number", "commit id", "this round/session", "date", "date", "machine load"]
    clean = ("The snapshot 20261203T080503-pip-0.5.23-9f2112 of sglang==0.5.23 has 2,143 files and 163840 ids;\n"
             "`--load-format dummy` and a defaced deadbeef stay; see `0x7fffffff` and sm_120.\n")
    assert history_marks(clean) == []
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("# Here\n\n## A `code` title: yes\n")
    page = tmp_path / "README.md"
    text = ("# T\n\n[ok](docs/here.md) [ok](docs/here.md#a-code-title-yes) [ok](#t) [web](https://example.com/x.md)\n"
            "[gone](docs/gone.md) [bad anchor](docs/here.md#nowhere) | [in a table](docs/missing.md) |\n\n"
            "[ref]: docs/also-missing.md\n\nSee [the ref][ref].\n")
    assert broken_links(text, page) == [
        "docs/gone.md: no such file", "docs/here.md#nowhere: no heading #nowhere in here.md",
        "docs/missing.md: no such file", "docs/also-missing.md: no such file"]


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= LINE_LIMIT, f"README.md has {len(lines)} lines; move reference material to docs/"


@pytest.mark.parametrize("page", user_pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_user_pages_carry_no_internal_history(page):
    assert history_marks(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_resolve(page):
    assert broken_links(page.read_text(encoding="utf-8"), page) == []


def test_the_checks_catch_an_unclosed_fence():
    broken = "# t\n\ntext\n\n```yaml\nkey: 1\n\n## Next section\n\nmore\n"
    assert unclosed_fences(broken) == [5]
    assert section_lines_not_headings(broken) == ["Next section"]
    fixed = broken.replace("key: 1\n", "key: 1\n```\n")
    assert unclosed_fences(fixed) == [] and section_lines_not_headings(fixed) == []


def test_readme_fences_close_and_sections_are_headings():
    text = README.read_text(encoding="utf-8")
    assert unclosed_fences(text) == []
    assert section_lines_not_headings(text) == []
    titles = [t.content for t in _tokens(text) if t.type == "inline"]
    assert "Running the installed tool" in titles and "Environment variables" in titles


def _fake_venv(folder: Path) -> Path:
    """`.venv/bin/sgl-scan` (this checkout's code) and `.venv/bin/activate`, as the demo leaves them."""
    bin_dir = folder / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    tool = bin_dir / "sgl-scan"
    tool.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m sgl_scan \"$@\"\n")
    tool.chmod(0o755)
    (bin_dir / "activate").write_text(f"PATH={shlex.quote(str(bin_dir))}:\"$PATH\"\nexport PATH\n")
    return bin_dir


def _script(block: str) -> str:
    """The block as a bash script that stops at the first command exiting above 1 (1 = findings)."""
    out = []
    for line in block.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        out.append(line)
        out.append(f"rc=$?; if [ $rc -gt 1 ]; then echo \"README command failed (exit $rc): \"{shlex.quote(line)} >&2; exit 99; fi")
    return "\n".join(out) + "\n"


@pytest.mark.slow
def test_offline_readme_blocks_run(tmp_path, sglang_0_5_23):
    blocks = _offline_blocks(README.read_text(encoding="utf-8"))
    assert blocks, "no `bash offline` block in README.md"
    home = tmp_path / "home"
    for rel in TREE_FILES:  # ~/sglang is a checkout: python/sglang/...
        target = home / "sglang" / "python" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sglang_0_5_23 / rel, target)
    work = tmp_path / "work"
    work.mkdir()
    bin_dir = _fake_venv(work)
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != str(bin_dir))
    for line, block in blocks:
        result = subprocess.run(["bash", "-c", _script(block)], cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"README.md line {line}: {result.stderr[-3000:]}"
        assert "Traceback" not in result.stderr and "error:" not in result.stderr, f"README.md line {line}: {result.stderr[-3000:]}"
    assert (work / "report.html").read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
