"""The explorer as a replay, in real JupyterLab (headless Chromium): notebook 06's explorer
(keepalive-celld-vs-workerd, whose idle tail runs an hour past its 75 s of activity).

After Run All: the x axis covers the activity and not the idle hour, with the cut marked; after
scrubbing the slider, the drawn events are exactly the run's events up to the slider, the "now"
cursor stands at the slider's time, title and status count the same events, and lanes, height and
unit are those of the first draw; Play ends at the last event with every event drawn; a refused value
greys the stale figure and says what the parameter takes. Set ALARMKIT_SCREENSHOTS=<folder> to keep
the screenshots.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from test_jupyterlab_browser import ROOT, _lab_page, _wait_until, jupytext, lab  # noqa: F401 - the fixture

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NB06 = ROOT / "notebooks" / "06_celld_vs_workerd.py"

STATE = """e => {
  const gd = e.querySelector('.js-plotly-plot');
  if (!gd || !gd.data || !gd.layout || !gd.layout.xaxis) return {events: -1};
  const real = xs => Array.from(xs || []).filter(x => x !== null && !Number.isNaN(x));
  const ev = gd.data.filter(t => t.meta && t.meta.role === 'events');
  const cursor = gd.data.find(t => t.meta && t.meta.role === 'cursor');
  return {
    events: ev.reduce((n, t) => n + real(t.x).length, 0),
    maxX: Math.max(-1e300, ...ev.flatMap(t => real(t.x))),
    cursor: cursor ? cursor.x[0] : null,
    cut: gd.data.some(t => t.meta && t.meta.role === 'cut'),
    range: gd.layout.xaxis.range,
    slider: !!gd.querySelector('.rangeslider-container'),
    height: (gd._fullLayout || {}).height,  // drawn: plotly's resize to the box leaves layout.height unset
    ticks: ((gd.layout.yaxis || {}).ticktext || []).join('|'),
    unit: gd.layout.meta && gd.layout.meta.unit,
    title: (gd.layout.title || {}).text || '',
    width: gd.getBoundingClientRect().width,
    svgWidth: (gd._fullLayout || {}).width,
    boxWidth: e.getBoundingClientRect().width,
  };
}"""


def _expected_events():
    """The explorer's own run, made the same way here: seed 0, the scenario's profile, 2 ms fire latency."""
    import alarmkit as ak
    from alarmkit.runtime.profiles import PROFILES, Latency

    sc = ak.scenarios.get_scenario("keepalive-celld-vs-workerd")
    prof = PROFILES[sc.profile].replace(fire_latency=Latency.fixed(2))
    return ak.run_scenario(sc.name, seed=0, profile=prof).events


def _run_all(page, lab: dict, notebook: Path) -> None:
    """Open the notebook, Run All Cells, wait for every code cell; no cell may print a traceback."""
    n_code = sum(c.cell_type == "code" for c in jupytext.read(notebook).cells)
    page.goto(f"{lab['url']}/lab/tree/{lab['notebook']}?token={lab['token']}", timeout=90_000)
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
    status_bar = page.locator("#jp-main-statusbar")
    idle = lambda: "(ipykernel) | Idle" in status_bar.inner_text()  # noqa: E731
    _wait_until(idle, 90, "the kernel to start", page)
    cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
    _wait_until(lambda: cells.count() == n_code, 30, f"{n_code} code cells in the page", page)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    prompts = page.locator(".jp-NotebookPanel .jp-CodeCell .jp-InputPrompt")
    _wait_until(lambda: prompts.first.inner_text().strip() not in ("[ ]:", ""), 30, "Run All to start", page)
    _wait_until(lambda: all(p.strip() not in ("[ ]:", "[*]:", "") for p in prompts.all_inner_texts()) and idle(),
                300, "every cell to run", page)
    errors = page.locator(".jp-NotebookPanel .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t]
    assert not tracebacks, tracebacks[0][:2000]


def _set_slider(page, explorer, t_ms: int) -> None:
    explorer.locator(".widget-slider .widget-readout").click()
    page.keyboard.press("Control+A")
    page.keyboard.type(str(t_ms))
    page.keyboard.press("Enter")


@pytest.mark.parametrize("lab", [NB06], indirect=True)
def test_the_explorer_replays_the_run(lab, tmp_path):
    events = _expected_events()
    end = int(events.t_ms.max())
    busy = int(events.loc[events.kind != "evict", "t_ms"].max())
    shots = Path(os.environ.get("ALARMKIT_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with _lab_page() as page:
        try:
            _run_all(page, lab, NB06)
            explorer = page.locator(".jp-NotebookPanel .alarmkit-explorer").last
            explorer.scroll_into_view_if_needed()
            plot = explorer.locator(".js-plotly-plot")
            _wait_until(lambda: plot.count() == 1, 60, "the explorer's FigureWidget", page)
            first = _wait_until(lambda: (s := explorer.evaluate(STATE))["events"] == len(events) and s, 60,
                                f"all {len(events)} events drawn", page)
            scale = 1000 if first["unit"] == "s" else 1
            # the axis covers the activity, not the idle hour after it; the cut is said; the strip is there
            lo, hi = first["range"]
            assert lo <= events.t_ms.min() / scale and hi >= busy / scale and hi < end / scale / 10, first
            assert first["cut"] and first["slider"]
            # the plot takes the widget's width from its first draw, with no resize by the reader (plotly's
            # widget alone draws at its 700 px default: it plots before its element is in the page)
            assert abs(first["svgWidth"] - first["boxWidth"]) <= 3 and first["svgWidth"] > 900, first
            print(f"explorer at first draw: plot {first['svgWidth']} px in a {first['boxWidth']:.0f} px box")
            verdict = explorer.locator(".alarmkit-verdict .verdict-head").inner_text()
            assert verdict.startswith("no obligations declared, so none checked; 5 run-wide invariants checked"), verdict
            explorer.screenshot(path=str(shots / "explorer-nb06.png"))
            for t_ms in (40_000, 11_000, busy):
                _set_slider(page, explorer, t_ms)
                want = int((events.t_ms <= t_ms).sum())

                def at_t():
                    s = explorer.evaluate(STATE)
                    # the traces and the layout (title, shapes) reach plotly.js as separate messages: wait for both
                    return s if (s["events"] == want and s["cursor"] == pytest.approx(min(t_ms / scale, hi))
                                 and f"{want:,} of {len(events):,} events" in s["title"]) else None

                s = _wait_until(at_t, 30, f"{want} events and the cursor at {t_ms} ms", page)
                assert s["maxX"] <= t_ms / scale + 1e-9
                assert f"{want:,} of {len(events):,} events" in s["title"]
                status = explorer.locator(".alarmkit-status").inner_text()
                assert f"{want:,} of {len(events):,} events" in status, status
                # stable while scrubbing: lanes, height, unit and the view as first drawn
                assert (s["height"], s["ticks"], s["unit"], s["range"]) == (
                    first["height"], first["ticks"], first["unit"], first["range"])
            explorer.screenshot(path=str(shots / "explorer-nb06-scrubbed.png"))
            # Play from the start ends at the last event, every event drawn
            _set_slider(page, explorer, 0)
            explorer.locator(".widget-play button").first.click()
            done = _wait_until(lambda: (s := explorer.evaluate(STATE))["events"] == len(events)
                               and s["cursor"] == pytest.approx(hi) and s, 90, "Play to reach the last event", page)
            assert explorer.locator(".widget-slider .widget-readout").inner_text().replace(",", "") == str(end)
            assert done["events"] == len(events)
            # a refused value: the figure greys, the status says what the parameter takes
            field = explorer.locator(".widget-inline-hbox", has_text="cells").locator("input")
            field.fill("-3")
            field.press("Enter")
            _wait_until(lambda: explorer.locator(".alarmkit-stale").count() == 1, 30, "the stale figure greyed", page)
            status = explorer.locator(".alarmkit-status").inner_text()
            assert "not run" in status and "cells" in status and "takes int" in status, status
            explorer.screenshot(path=str(shots / "explorer-nb06-refused.png"))
        except BaseException:
            page.screenshot(path=str(shots / "failure.png"))
            raise
