"""Labels measured in headless Chromium against each other, against the markers and against the
vertical lines (a restart's dotted line; the explorer's "now" cursor): every demo report's timeline,
and the explorer's figure at several instants of guestbook-crash-loop (a restart at 300 s),
keepalive-celld-vs-workerd (process deaths, a cut idle tail) and prod-rearm-at-now (half an hour
of idle folded), drawn at 700 px, the narrowest figure the explorer lays its labels out for, with the
overview strip under the axis."""

from __future__ import annotations

import os
from pathlib import Path

import plotly.graph_objects as go
import pytest

import alarmkit as ak
from alarmkit.viz.report import export_folder

from chromium_paths import CHROMIUM  # tests/chromium_paths.py

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no {CHROMIUM} (apt-get install chromium)"),
]

BOXES = """id => {
  const gd = document.getElementById(id);
  const box = el => { const b = el.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const labels = Array.from(gd.querySelectorAll('.scatterlayer .textpoint text'))
    .filter(t => t.textContent.trim()).map(t => ({text: t.textContent, box: box(t)}))
    .filter(l => l.box[2] > l.box[0] && l.box[3] > l.box[1]);  // drawn: plotly hides text out of range
  const marks = Array.from(gd.querySelectorAll('.scatterlayer .points path.point')).map(box)
    .filter(b => b[2] - b[0] > 2 && b[3] - b[1] > 2);
  // vertical lines: line shapes with no width (a restart), and the explorer's cursor trace
  const vlines = Array.from(gd.querySelectorAll('.shapelayer path')).map(box).filter(b => b[2] - b[0] < 3 && b[3] - b[1] > 20);
  gd._fullData.filter(t => t.meta && t.meta.role === 'cursor').forEach(t =>
    gd.querySelectorAll('.trace' + CSS.escape(t.uid) + ' path.js-line').forEach(p => vlines.push(box(p))));
  return {labels, marks, vlines};
}"""


def _overlap(a, b, slack=1.0) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack


def _problems(s: dict, where: str) -> list[str]:
    out = []
    labels = s["labels"]
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            if _overlap(a["box"], b["box"]):
                out.append(f"{where}: {a['text']!r} overlaps {b['text']!r}")
        for v in s["vlines"]:
            if _overlap(a["box"], [v[0] - 1, v[1], v[2] + 1, v[3]], 0.5) and not a["text"].startswith("now "):
                out.append(f"{where}: {a['text']!r} is crossed by a vertical line at x={v[0]:.0f}")
        covered = sum(_overlap(a["box"], m, 2.0) for m in s["marks"])
        if covered:
            out.append(f"{where}: {a['text']!r} covers {covered} marker(s)")
    return out


def _page(browser, html: str, tmp: Path):
    path = tmp / "page.html"
    path.write_text(html)
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.goto(path.resolve().as_uri())
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length > 0 && "
                           "Array.from(document.querySelectorAll('.js-plotly-plot')).every(e => e._fullLayout)",
                           timeout=60_000)
    return page


def test_report_labels_clear_each_other_markers_and_restart_lines(browser, tmp_path):
    out = tmp_path / "reports"
    out.mkdir()
    with ak.Journal() as j:
        runs = {f"{sc.name}.html": ak.run_scenario(sc.name, seed=1, journal=j).run_id for sc in ak.list_scenarios()}
        export_folder(j, runs, out)
    problems, vlines = [], 0
    for path in sorted(out.glob("*.html")):
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        try:
            page.goto(path.resolve().as_uri())
            page.wait_for_function("Number(document.body.dataset.rendered) >= 1", timeout=60_000)
            s = page.evaluate(BOXES, "figure-0")
            vlines += len(s["vlines"])
            problems += _problems(s, path.stem)
        finally:
            page.close()
    assert vlines >= 2  # guestbook-crash-loop and lease-revival draw a restart line: measured, not skipped
    assert problems == []


@pytest.mark.parametrize("scenario,times", [("guestbook-crash-loop", (11_002, 151_008, 301_000, 311_402, 381_402)),
                                            ("keepalive-celld-vs-workerd", (20_000, 60_002, 67_402)),
                                            ("prod-rearm-at-now", (1_000, 11_004, 600_000, 1_800_000))])
def test_explorer_labels_clear_each_other_markers_the_cursor_and_restart_lines(browser, tmp_path, scenario, times):
    pytest.importorskip("ipywidgets")
    from alarmkit.viz.widgets import Explorer

    e = Explorer(scenario)
    problems = []
    shots = Path(os.environ.get("ALARMKIT_SCREENSHOTS") or tmp_path)
    for t in times:
        e.time.value = t
        fig = go.Figure(e.figure)
        fig.update_layout(width=700)  # the FigureWidget's own width in JupyterLab's first draw
        page = _page(browser, fig.to_html(include_plotlyjs=True, div_id="explorer", full_html=True), tmp_path)
        try:
            s = page.evaluate(BOXES, "explorer")
            assert any(v for v in s["vlines"]), f"{scenario} at {t}: the cursor was not measured"
            texts = [a["text"] for a in s["labels"]]
            assert sum(x.startswith("now ") for x in texts) == 1, texts  # the now label is never dropped
            assert any(x.startswith("idle until ") for x in texts) == e.full.layout.meta["cut"], texts
            if scenario == "prod-rearm-at-now":  # idle from 11.004 s to 30 min: folded, its marker measured too
                folded = 11_004 < t < 1_800_000
                assert ("30 minidle" in texts) == (not folded), texts  # <br> splits the marker's two lines
                assert any("(idle, folded)" in x for x in texts) == folded, texts
            problems += _problems(s, f"{scenario} at {t} ms")
            page.screenshot(path=str(shots / f"marks-{scenario}-{t}.png"))
        finally:
            page.close()
    assert problems == []
