"""Headless Chromium for the HTML report tests: dump the DOM, take screenshots, collect console errors,
and measure the laid-out page with a test-only script (`probe`)."""

from __future__ import annotations

import base64
import hashlib
import json
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


def dump_dom(page: Path, tmp: Path, *extra: str) -> Rendered:
    result = _run(page, tmp, "--dump-dom", *extra)
    assert result.returncode == 0, result.stderr[-2000:]
    return Rendered(result.stdout, tuple(m.group(0) for m in CONSOLE.finditer(result.stderr)))


def screenshot(page: Path, tmp: Path, out: Path, width: int = 1400, height: int = 2400) -> tuple[int, int]:
    """Write a PNG of the page; return its size as read from the PNG header."""
    result = _run(page, tmp, "--hide-scrollbars", f"--window-size={width},{height}", f"--screenshot={out}")
    assert result.returncode == 0 and out.exists(), result.stderr[-2000:]
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


CSP = re.compile(r'(<meta http-equiv="Content-Security-Policy" content=")([^"]*)(">)')
PROBE_ID = "sgl-scan-test-probe"


def probe(html: str, script: str, tmp: Path, width: int = 1400, height: int = 1000) -> tuple[object, Rendered]:
    """Lay the page out in headless Chromium at `width` px and return what `script` measured.

    The report allows no script, so the test renders a copy with `script` appended to the body and
    the page's own Content-Security-Policy extended by exactly that script's hash (everything else in
    the policy, `default-src 'none'` included, stays). The script must end by calling
    `report(value)`; the value comes back as JSON through the dumped DOM. The page's console stays
    part of the result, so a refused load still shows.
    """
    body = f"(function () {{ function report(value) {{ const out = document.createElement('pre'); " \
           f"out.id = '{PROBE_ID}'; out.textContent = JSON.stringify(value); document.body.appendChild(out); }}\n" \
           f"{script}\n}})();"
    digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
    policies = CSP.findall(html)
    assert len(policies) == 1 and "default-src 'none'" in policies[0][1], policies
    page_html = CSP.sub(lambda m: f"{m.group(1)}{m.group(2)}; script-src 'sha256-{digest}'{m.group(3)}", html)
    assert page_html.count("</body>") == 1
    page_html = page_html.replace("</body>", f"<script>{body}</script>\n</body>")
    page = tmp / "probed.html"
    page.write_text(page_html, encoding="utf-8")
    rendered = dump_dom(page, tmp, "--hide-scrollbars", f"--window-size={width},{height}")
    found = re.search(rf'<pre id="{PROBE_ID}">(.*?)</pre>', rendered.dom, re.S)
    assert found, f"the probe script did not run: {rendered.console}"
    text = found.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
    return json.loads(text), rendered


# Measures every table cell that holds a location (`path.py:line`, or a bare `path.py`): its box and
# the visible box of the nearest ancestor that clips it (a scroll container), or the viewport.
# Folded <details> are opened first so that every table is laid out.
LOCATION_PROBE = r"""
const LOCATION = /^[\w.\/<>-]+\.py(:\d+)?$/;
document.querySelectorAll('details').forEach(d => { d.open = true; });
const viewport = document.documentElement.clientWidth;
function clip(el) {
  for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
    if (getComputedStyle(p).overflowX !== 'visible') return p;
  }
  return null;
}
const cells = [], tables = [];
document.querySelectorAll('table').forEach((table, index) => {
  const section = table.closest('section');
  const t = table.getBoundingClientRect(), scroller = clip(table);
  const s = scroller ? scroller.getBoundingClientRect() : null;
  tables.push({table: index, section: section ? section.id : '', left: t.left, right: t.right,
               own_scroller: scroller !== null && scroller === table.parentElement && scroller.children.length === 1
                             && ['auto', 'scroll'].includes(getComputedStyle(scroller).overflowX),
               visible_right: s ? Math.min(viewport, s.left + scroller.clientLeft + scroller.clientWidth) : viewport,
               scroller_right: s ? s.right : null});
  for (const cell of table.querySelectorAll('td, th')) {
    const text = cell.textContent.trim();
    if (!LOCATION.test(text)) continue;
    const r = cell.getBoundingClientRect();
    let left = 0, right = viewport;
    const box = clip(cell);
    if (box) {
      const b = box.getBoundingClientRect();
      left = Math.max(left, b.left + box.clientLeft);
      right = Math.min(right, b.left + box.clientLeft + box.clientWidth);
    }
    cells.push({table: index, section: section ? section.id : '', text: text,
                left: r.left, right: r.right, visible_left: left, visible_right: right});
  }
});
report({width: window.innerWidth, viewport: viewport, page_width: document.documentElement.scrollWidth,
        tables: tables, cells: cells});
"""


def hidden_locations(measured: dict) -> list[str]:
    """The location cells of a LOCATION_PROBE result that are not wholly inside their visible box."""
    return [f"{c['section']} table {c['table']}: {c['text']} spans {c['left']:.0f}..{c['right']:.0f} px, "
            f"visible {c['visible_left']:.0f}..{c['visible_right']:.0f} px"
            for c in measured["cells"]
            if c["left"] < c["visible_left"] - 0.5 or c["right"] > c["visible_right"] + 0.5]


def overflowing_tables(measured: dict) -> list[str]:
    """Tables of a LOCATION_PROBE result that reach past what is visible of them and do not scroll in
    a box of their own (a box holding only that table, itself inside the viewport)."""
    viewport = measured["viewport"]
    return [f"{t['section']} table {t['table']}: {t['left']:.0f}..{t['right']:.0f} px, "
            f"visible up to {t['visible_right']:.0f} px"
            for t in measured["tables"]
            if t["right"] > t["visible_right"] + 0.5
            and not (t["own_scroller"] and t["scroller_right"] <= viewport + 0.5)]


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
