"""The teaching bundle is a handout: an index that is a learning path, pages with contents,
previous/next, the glossary of marks under every figure, the scenario's source, exercises with
hidden answers, one shared plotly.js. Two small notebooks are built here; the pages are opened
offline in headless Chromium and the navigation is followed."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from alarmkit.viz._handout import EXERCISES, GLOSSARY, PLOTLY_FILE
from alarmkit.viz._timeline import KIND_STYLE
from alarmkit.viz.bundle import build_bundle

pytest.importorskip("jupytext")
pytest.importorskip("nbclient")
pytest.importorskip("nbconvert")
CHROMIUM = "/usr/bin/chromium"

NOTEBOOK = textwrap.dedent('''\
    # %% [markdown]
    # # {n} · {title}
    #
    # {para} It goes on <here> & there.
    #
    # Second paragraph, not on the index.

    # %%
    import alarmkit as ak
    from alarmkit.plots import timeline

    # %% [markdown]
    # ## Part {n}a

    # %%
    r = ak.run_scenario("{scenario}")
    timeline(r.events)

    # %% [markdown]
    # ### Part {n}b

    # %%
    timeline(r.events, kinds=["fire"])
    ''')


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    for n, title, para, sc in (("01", "First", "The first notebook teaches leases.", "lease-normal"),
                               ("02", "Second", "The second teaches retries.", "lease-exhaustion")):
        (src / f"{n}_{title.lower()}.py").write_text(NOTEBOOK.format(n=n, title=title, para=para, scenario=sc))
    out = tmp_path_factory.mktemp("out")
    return build_bundle(out, source=src, ci=True, progress=False)


def test_the_index_is_the_learning_path(bundle):
    index = bundle.index.read_text()
    items = re.findall(r'<li><h2><a href="([^"]+)">([^<]+)</a></h2><p>([^<]*)</p>', index)
    assert [(h, t) for h, t, _ in items] == [("01_first.html", "01 · First"), ("02_second.html", "02 · Second")]
    assert items[0][2] == "The first notebook teaches leases. It goes on &lt;here&gt; &amp; there."
    assert f'href="{GLOSSARY}"' in index and "2 exercises" in index


def test_every_page_has_contents_neighbours_glossary_source_and_exercises(bundle):
    first, second = (p.html.read_text() for p in bundle.pages)
    assert 'rel="next" href="02_second.html"' in first and 'rel="prev"' not in first
    assert 'rel="prev" href="01_first.html"' in second and 'rel="next"' not in second
    for page, n, scenario in ((first, "01", "lease-normal"), (second, "02", "lease-exhaustion")):
        toc = re.search(r'<nav class="ak-toc">(.*?)</nav>', page, re.S).group(1)
        assert [t for t in re.findall(r">([^<>]+)</a>", toc)] == [f"Part {n}a", f"Part {n}b", "Exercises"]
        figures = len(re.findall(r'class="plotly-graph-div"', page))
        assert figures == 2 and page.count(f'<a href="{GLOSSARY}">the glossary of marks</a>') == figures
        source = page.index('<details class="ak-source">')
        assert source < page.index('class="plotly-graph-div"') and f"<code>{scenario}</code>" in page
        assert "def " in page[source:page.index("</details>", source)]
        for q, a in EXERCISES[n]:
            from html import escape

            assert f"<li>{escape(q)}<details><summary>answer</summary>{escape(a)}</details></li>" in page
        assert "plotly.js v" not in page and page.count(f'<script src="{PLOTLY_FILE}"></script>') == 1


def test_one_shared_plotly_and_a_glossary_of_every_mark(bundle):
    assert (bundle.out / PLOTLY_FILE).read_text().startswith("/**\n* plotly.js v")
    glossary = (bundle.out / GLOSSARY).read_text()
    from html import escape

    assert all(f"<code>{escape(k)}</code>" in glossary for k in KIND_STYLE)
    sizes = sum(p.stat().st_size for p in bundle.out.iterdir() if p.is_file() and not p.name.startswith("."))
    assert bundle.bytes == sizes and bundle.bytes < 25_000_000


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no {CHROMIUM}")
def test_the_pages_draw_offline_and_the_links_lead_on(bundle):
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            fetched = []
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                       else (fetched.append(r.request.url), r.abort()))
            page.goto(bundle.index.resolve().as_uri())
            page.click("text=01 · First")
            page.wait_for_function("document.querySelectorAll('.plotly-graph-div .main-svg').length >= 2",
                                   timeout=60_000)
            page.click('a[rel="next"] >> nth=0')
            page.wait_for_url(re.compile(r"02_second\.html$"))
            page.wait_for_function("document.querySelectorAll('.plotly-graph-div .main-svg').length >= 2",
                                   timeout=60_000)
            answer = page.locator(".ak-exercises details").first
            assert not answer.evaluate("d => d.open")
            page.locator(".ak-exercises summary").first.click()
            assert answer.evaluate("d => d.open")
            page.click(f'a[href="{GLOSSARY}"] >> nth=0')
            page.wait_for_function("document.querySelectorAll('.main-svg').length >= 1", timeout=60_000)
            assert fetched == []
        finally:
            browser.close()


def test_an_index_entry_that_introduces_a_list_ends_as_a_sentence():
    from types import SimpleNamespace

    from alarmkit.viz._handout import learning_paragraph

    def nb(text):
        return SimpleNamespace(cells=[SimpleNamespace(cell_type="markdown", source=text)])

    assert learning_paragraph(nb("# 3 · Six\n\nEach mistake is a `subclass`, and\nexplore breaks it:\n\n1. run")) == \
        "Each mistake is a subclass, and explore breaks it."
    assert learning_paragraph(nb("# 1 · One\n\nA *lease* ledger.\n\nMore.")) == "A lease ledger."
