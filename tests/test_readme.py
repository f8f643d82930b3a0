"""README.md stays true: its Markdown structure (parsed with markdown-it-py, as a renderer would), and
every command block marked `bash offline` runs (against a small real SGLang tree, no network)."""

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
