"""Pinning in real JupyterLab (headless Chromium): notebook 06's explorer pins its first run; setting
"cells" to 4 makes a run the row diffs against it, naming the first divergence exactly as
``ak.diff`` of the same two runs does; the "diff figure" toggle draws one strong mark per row of the
diff's table; Unpin takes the figure away; the timeline above never moves. Set
ALARMKIT_SCREENSHOTS=<folder> to keep the screenshots.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from test_jupyterlab_browser import _lab_page, _wait_until, lab  # noqa: F401 - the fixture
from test_widget_replay_browser import NB06, _run_all

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PLOTS = """e => Array.from(e.querySelectorAll('.js-plotly-plot')).map(gd => ({
  top: gd.getBoundingClientRect().top - e.getBoundingClientRect().top,
  strong: (gd.data || []).filter(t => t.meta && t.meta.role === 'strong')
                         .reduce((n, t) => n + (t.x || []).length, 0),
  rows: ((gd.layout || {}).meta || {}).strong_rows,
  drawn: gd.querySelectorAll('.scatterlayer path.point').length,
}))"""


def _expected(pinned: int, current: int):
    """The explorer's two runs made here the same way (seed 0, the scenario's profile, 2 ms fire
    latency; the second with cells=4), diffed under the names the widget gives them."""
    import alarmkit as ak
    from alarmkit.runtime.profiles import PROFILES, Latency

    sc = ak.scenarios.get_scenario("keepalive-celld-vs-workerd")
    prof = PROFILES[sc.profile].replace(fire_latency=Latency.fixed(2))
    a = ak.run_scenario(sc.name, seed=0, profile=prof)
    b = ak.run_scenario(sc.name, seed=0, profile=prof, cells=4)
    return ak.diff(a, b, names=(f"pinned run {pinned}", f"run {current}"))


@pytest.mark.parametrize("lab", [NB06], indirect=True)
def test_pin_change_a_setting_read_the_diff_then_unpin(lab, tmp_path):
    shots = Path(os.environ.get("ALARMKIT_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with _lab_page() as page:
        try:
            _run_all(page, lab, NB06)
            explorer = page.locator(".jp-NotebookPanel .alarmkit-explorer").last
            explorer.scroll_into_view_if_needed()
            summary = explorer.locator(".alarmkit-pin-summary")
            head = _wait_until(lambda: re.match(r"Run (\d+) is pinned: every later run is diffed against it\.$",
                                                summary.inner_text().strip()), 60, "the first run pinned", page)
            pinned = int(head.group(1))
            _wait_until(lambda: len(explorer.evaluate(PLOTS)) == 1, 60, "the explorer's timeline", page)
            top = explorer.evaluate(PLOTS)[0]["top"]
            field = explorer.locator(".widget-inline-hbox", has_text="cells").locator("input")
            field.fill("4")
            field.press("Enter")
            text = _wait_until(lambda: "First divergence" in (t := summary.inner_text()) and t, 90,
                               "the diff against the pinned run", page)
            current = int(re.match(r"Run (\d+) against pinned run", text).group(1))
            d = _expected(pinned, current)
            lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
            assert lines[0] == (f"Run {current} against pinned run {pinned}: 5 differing alarm events "
                                f"(5 only in the pinned run); 25 matched."), lines
            assert lines[1] == f"First divergence: {d.first_divergence.text}." == (
                f"First divergence: pinned run {pinned} arms cell-4 for 67 s at 57 s (cause: user); "
                f"run {current} does not."), lines
            assert lines[1:] == d.summary().split("\n")[1:]
            explorer.locator("button", has_text="diff figure").click()
            plots = _wait_until(lambda: len(p := explorer.evaluate(PLOTS)) == 2 and p[1]["drawn"] > 0 and p, 60,
                                "the diff figure", page)
            assert plots[1]["rows"] == len(d.table()) == 5 and plots[1]["strong"] == 5, plots
            assert plots[0]["top"] == top  # the timeline stays where it was
            explorer.screenshot(path=str(shots / "explorer-nb06-pinned-diff.png"))
            explorer.locator("button", has_text="Unpin").click()
            _wait_until(lambda: summary.inner_text().strip().startswith("No run pinned"), 30, "the unpin", page)
            _wait_until(lambda: len(explorer.evaluate(PLOTS)) == 1, 30, "the diff figure gone", page)
            assert explorer.evaluate(PLOTS)[0]["top"] == top
        except BaseException:
            page.screenshot(path=str(shots / "failure.png"))
            raise
