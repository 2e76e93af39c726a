"""Every demo report, written as ``alarmkit demo`` writes them (one folder, one shared plotly.min.js),
opened in headless Debian Chromium with the network off: each page draws all its figures fetching
nothing but that file, and no two rendered texts (labels on the plot, annotations, legend entries,
titles) overlap or leave their plot area, and no label covers a marker. Measured from the rendered boxes, not by eye.

Set ALARMKIT_SCREENSHOTS=<folder> to keep the screenshots (else they go to the pytest tmp dir).
"""

import os
from pathlib import Path

import pytest

import alarmkit as ak
from alarmkit.viz.report import PLOTLY_FILE, export_folder

from chromium_paths import CHROMIUM  # tests/chromium_paths.py

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no {CHROMIUM} (apt-get install chromium)"),
]

# The boxes of every text a figure shows, and of its plot areas (one per subplot).
TEXTS = """id => {
  const gd = document.getElementById(id), g = gd.getBoundingClientRect();
  const box = el => { const b = el.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const areas = Object.values(gd._fullLayout._plots).map(p => [
    g.left + p.xaxis._offset, g.top + p.yaxis._offset,
    g.left + p.xaxis._offset + p.xaxis._length, g.top + p.yaxis._offset + p.yaxis._length]);
  const texts = [];
  const add = (what, sel) => gd.querySelectorAll(sel).forEach(t => {
    const b = box(t);
    if (t.textContent.trim() && b[2] > b[0]) texts.push({what, text: t.textContent, box: b});
  });
  add('label', '.scatterlayer .textpoint text');
  add('annotation', '.annotation-text');
  add('legend', '.legend .legendtext');
  add('title', '.gtitle, .gtitle-subtitle');
  const legend = gd.querySelector('.legend .bg');
  const marks = Array.from(gd.querySelectorAll('.scatterlayer .points path.point')).map(box)
    .filter(b => b[2] - b[0] > 2 && b[3] - b[1] > 2);  // size-0 points (the ends of an arrow) draw nothing
  return {areas, paper: box(gd), texts, marks, legend: legend ? box(legend) : null};
}"""


def _overlap(a, b, slack=1.0) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack


def _inside(a, area, slack=1.0) -> bool:
    return a[0] >= area[0] - slack and a[1] >= area[1] - slack and a[2] <= area[2] + slack and a[3] <= area[3] + slack


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The demo's reports: every built-in scenario with seed 1, one journal, one folder."""
    out = tmp_path_factory.mktemp("reports")
    with ak.Journal() as j:
        runs = {f"{sc.name}.html": ak.run_scenario(sc.name, seed=1, journal=j).run_id for sc in ak.list_scenarios()}
        export_folder(j, runs, out)
    return out


def _open(browser, path: Path):
    """The page offline (the context has no network; any non-file request is refused and recorded)."""
    context = browser.new_context(viewport={"width": 1300, "height": 900}, offline=True)
    page = context.new_page()
    seen = {"blocked": [], "errors": [], "files": []}

    def route(r):
        if r.request.url.startswith("file:"):
            seen["files"].append(r.request.url.rsplit("/", 1)[-1])
            r.continue_()
        else:
            seen["blocked"].append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.goto(path.resolve().as_uri(), wait_until="load")
    figures = page.evaluate("document.querySelectorAll('.js-plotly-plot, .plotly-graph-div').length")
    page.wait_for_function("n => Number(document.body.dataset.rendered) >= n", arg=figures, timeout=60_000, polling=50)
    return context, page, seen


def test_the_folder_is_small_and_every_page_works_offline_from_the_shared_plotly_js(browser, folder):
    pages = sorted(folder.glob("*.html"))
    assert len(pages) == len(ak.list_scenarios())
    total = sum(p.stat().st_size for p in folder.iterdir())
    assert total < 8_000_000, f"{total:,} bytes"  # 84 MB when every page inlined plotly.js
    print(f"demo report folder: {total:,} bytes for {len(pages)} reports and {PLOTLY_FILE}")
    for path in pages:
        context, page, seen = _open(browser, path)
        try:
            plots = page.evaluate("Array.from(document.querySelectorAll('.js-plotly-plot')).map(e => !!e._fullLayout)")
            assert plots and all(plots), path.name
            assert seen["blocked"] == [] and seen["errors"] == [], (path.name, seen)
            assert seen["files"] == [path.name, PLOTLY_FILE], (path.name, seen["files"])
        finally:
            context.close()


def test_no_text_overlaps_another_or_leaves_its_plot_area_in_any_demo_report(browser, folder, tmp_path):
    shots = Path(os.environ.get("ALARMKIT_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    problems = []
    for path in sorted(folder.glob("*.html")):
        context, page, _ = _open(browser, path)
        try:
            ids = page.evaluate("Array.from(document.querySelectorAll('.js-plotly-plot')).map(e => e.id)")
            labels = 0
            for fid in ids:
                s = page.evaluate(TEXTS, fid)
                texts = s["texts"]
                for t in texts:
                    if t["what"] == "label":
                        labels += 1
                        visible = [a for a in s["areas"] if _overlap(t["box"], a, 0)]
                        if visible and not any(_inside(t["box"], a) for a in visible):
                            problems.append(f"{path.name} {fid}: label {t['text']!r} leaves its plot area")
                        covered = sum(_overlap(t["box"], m, 2.0) for m in s["marks"])
                        if covered:
                            problems.append(f"{path.name} {fid}: label {t['text']!r} covers {covered} marker(s)")
                    elif not _inside(t["box"], s["paper"]):
                        problems.append(f"{path.name} {fid}: {t['what']} {t['text']!r} leaves the figure")
                    if t["what"] == "legend" and s["legend"] and not _inside(t["box"], s["legend"]):
                        problems.append(f"{path.name} {fid}: legend entry {t['text']!r} leaves the legend box")
                for i, a in enumerate(texts):
                    for b in texts[i + 1:]:
                        if _overlap(a["box"], b["box"]):
                            problems.append(f"{path.name} {fid}: {a['what']} {a['text']!r} overlaps "
                                            f"{b['what']} {b['text']!r}")
            shot = shots / f"report-{path.stem}.png"
            page.screenshot(path=str(shot), full_page=True)
            if path.stem == "guestbook-crash-loop":
                print(f"screenshot: {shot}")
            assert labels or path.stem not in ("lease-exhaustion", "guestbook-crash-loop"), path.name
        finally:
            context.close()
    assert problems == []
