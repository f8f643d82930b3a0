"""Headless Chromium for the HTML report tests: dump the DOM, take screenshots, collect console errors."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")
# Console messages and page errors as Chromium logs them with --enable-logging=stderr --v=0.
CONSOLE = re.compile(r"(CONSOLE\(\d+\)|:CONSOLE:|Uncaught|Refused to|Failed to load resource)[^\n]*")


def chromium() -> str:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("headless Chromium is not installed (apt-get install -y chromium; scripts/test.sh does it)")


def _run(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [
        chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp / 'chromium-profile'}",
        *extra, page.resolve().as_uri(),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@dataclass(frozen=True)
class Rendered:
    dom: str
    console: tuple[str, ...]


def dump_dom(page: Path, tmp: Path) -> Rendered:
    result = _run(page, tmp, "--dump-dom")
    assert result.returncode == 0, result.stderr[-2000:]
    return Rendered(result.stdout, tuple(m.group(0) for m in CONSOLE.finditer(result.stderr)))


def screenshot(page: Path, tmp: Path, out: Path, width: int = 1400, height: int = 2400) -> tuple[int, int]:
    """Write a PNG of the page; return its size as read from the PNG header."""
    result = _run(page, tmp, "--hide-scrollbars", f"--window-size={width},{height}", f"--screenshot={out}")
    assert result.returncode == 0 and out.exists(), result.stderr[-2000:]
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


class Elements(HTMLParser):
    """Tags, ids and text of a DOM, for assertions."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def count(self, tag: str, cls: str | None = None) -> int:
        return sum(1 for t, a in self.tags if t == tag and (cls is None or cls in (a.get("class") or "").split()))

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.tags if "id" in a}
