"""``python3 dev.py docs``: the API reference is built from the docstrings with pdoc, and every
link in it leads somewhere (a page that exists, an anchor on it)."""

from __future__ import annotations

import html.parser
import subprocess
import sys
from pathlib import Path
from urllib.parse import urldefrag

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("pdoc")
sys.path.insert(0, str(ROOT))
import dev  # noqa: E402


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])


def broken_links(out: Path) -> list[str]:
    pages = {p: _Links() for p in out.rglob("*.html")}
    for page, parser in pages.items():
        parser.feed(page.read_text(encoding="utf-8"))
    bad = []
    for page, parser in pages.items():
        for href in parser.hrefs:
            if href.startswith(("http://", "https://", "mailto:", "javascript:")):
                continue
            target, anchor = urldefrag(href)
            dest = (page.parent / target).resolve() if target else page
            if dest not in pages:
                bad.append(f"{page.relative_to(out)}: {href} (no page)")
            elif anchor and anchor not in pages[dest].ids:
                bad.append(f"{page.relative_to(out)}: {href} (no anchor)")
    return bad


@pytest.mark.slow
def test_the_api_reference_builds_and_every_link_resolves(tmp_path):
    out = tmp_path / "api"
    rc = subprocess.call([sys.executable, "-m", "pdoc", *dev.API_MODULES, "--no-show-source", "--docformat",
                          "restructuredtext", "-o", str(out)], cwd=ROOT, stderr=subprocess.DEVNULL)
    assert rc == 0
    pages = {p.relative_to(out).as_posix() for p in out.rglob("*.html")}
    assert {"alarmkit.html", "alarmkit/runtime.html", "alarmkit/journal.html", "alarmkit/viz/plots.html",
            "alarmkit/errors.html"} <= pages
    assert "Simulation" in (out / "alarmkit" / "runtime.html").read_text(encoding="utf-8")
    assert broken_links(out) == []


def test_the_link_check_finds_a_broken_link(tmp_path):
    (tmp_path / "a.html").write_text('<a href="b.html">b</a><a href="a.html#x">x</a><a href="#top">t</a>'
                                     '<h1 id="top">a</h1>')
    assert broken_links(tmp_path) == ["a.html: b.html (no page)", "a.html: a.html#x (no anchor)"]
