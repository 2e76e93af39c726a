"""The explorer's first draw in real JupyterLab (headless Chromium), with no resize or click by the
reader: the plot fills the width of its box (plotly's FigureWidget alone draws at its 700 px default),
the half hour of idle inside prod-rearm-at-now is folded with its marker drawn, and no two labels, no
label and marker, no label and vertical line overlap (measured from the rendered boxes).
Set ALARMKIT_SCREENSHOTS=<folder> to keep the screenshot."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from test_jupyterlab_browser import _jupyter_lab, _lab_page, _wait_until, jupytext  # noqa: F401 - skips without it
from test_marks_browser import _problems
from test_widget_replay_browser import _run_all

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOK = """# %%
import alarmkit.plots
from alarmkit.widgets import Explorer

# %%
Explorer("prod-rearm-at-now")
"""

# the explorer's figure as drawn: widths, folds, and the boxes test_marks_browser measures
FIRST_DRAW = """e => {
  const gd = e.querySelector('.js-plotly-plot');
  if (!gd || !gd._fullLayout || !gd.layout.meta) return null;
  const box = el => { const b = el.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const labels = Array.from(gd.querySelectorAll('.scatterlayer .textpoint text'))
    .filter(t => t.textContent.trim()).map(t => ({text: t.textContent, box: box(t)}))
    .filter(l => l.box[2] > l.box[0] && l.box[3] > l.box[1]);
  const marks = Array.from(gd.querySelectorAll('.scatterlayer .points path.point')).map(box)
    .filter(b => b[2] - b[0] > 2 && b[3] - b[1] > 2);
  const vlines = Array.from(gd.querySelectorAll('.shapelayer path')).map(box).filter(b => b[2] - b[0] < 3 && b[3] - b[1] > 20);
  gd._fullData.filter(t => t.meta && t.meta.role === 'cursor').forEach(t =>
    gd.querySelectorAll('.trace' + CSS.escape(t.uid) + ' path.js-line').forEach(p => vlines.push(box(p))));
  return {
    svgWidth: gd._fullLayout.width, plotWidth: gd.getBoundingClientRect().width,
    boxWidth: e.querySelector('.alarmkit-figure-box').getBoundingClientRect().width,
    cellWidth: e.closest('.jp-Cell').getBoundingClientRect().width,
    folds: gd.layout.meta.folds || [], xTitle: ((gd.layout.xaxis || {}).title || {}).text || '',
    labels, marks, vlines,
  };
}"""


@pytest.fixture
def lab(tmp_path):
    source = tmp_path / "explorer_first_draw.py"
    source.write_text(NOTEBOOK, encoding="utf-8")
    root = tmp_path / "root"
    root.mkdir()
    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    jupytext.write(nb, root / "explorer_first_draw.ipynb", fmt="ipynb")
    settings = {("apputils-extension", "notification"): {"fetchNews": "false", "checkForUpdates": False},
                ("notebook-extension", "tracker"): {"windowingMode": "none"}}
    with _jupyter_lab(tmp_path, root, settings, {"ALARMKIT_OUT": str(tmp_path / "out")}) as (url, token, log):
        yield {"url": url, "token": token, "root": root, "log": log, "notebook": "explorer_first_draw.ipynb",
               "source": source}


def test_the_explorer_fills_its_width_and_folds_idle_at_first_draw(lab, tmp_path):
    shots = Path(os.environ.get("ALARMKIT_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with _lab_page() as page:
        try:
            _run_all(page, lab, lab["source"])
            explorer = page.locator(".jp-NotebookPanel .alarmkit-explorer").last
            explorer.scroll_into_view_if_needed()
            # settled: plotly drew at the box's width (Fit's resize lands a frame or two after the first plot)
            s = _wait_until(lambda: (d := explorer.evaluate(FIRST_DRAW)) and d["labels"]
                            and abs(d["svgWidth"] - d["boxWidth"]) <= 3 and d, 60, "the explorer drawn at its box's width",
                            page)
            page.wait_for_timeout(500)  # and stays there
            s = explorer.evaluate(FIRST_DRAW)
            explorer.screenshot(path=str(shots / "explorer-first-draw.png"))
            print(f"explorer at first draw: plot {s['svgWidth']} px in a {s['boxWidth']:.0f} px box "
                  f"(cell {s['cellWidth']:.0f} px)")
            assert abs(s["svgWidth"] - s["boxWidth"]) <= 3 and s["svgWidth"] > 900, s  # not plotly's 700 px
            assert s["boxWidth"] > 0.8 * s["cellWidth"], s  # the box is the cell's width, less its prompt
            # idle from 11.004 s to 30 min: one fold, said on the axis, its marker drawn
            assert [f[:2] for f in s["folds"]] == [[11_004, 1_800_000]], s["folds"]
            assert "idle stretches folded" in s["xTitle"]
            texts = [a["text"] for a in s["labels"]]
            assert "30 minidle" in texts and sum(t.startswith("now ") for t in texts) == 1, texts
            assert _problems(s, "explorer at first draw") == []
        except BaseException:
            page.screenshot(path=str(shots / "failure.png"))
            raise
