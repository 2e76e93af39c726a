"""The library schedules' marks in a report, in headless Chromium: each lib_* event is one drawn point of its
kind, the dotted leads to their due times are drawn, hovering the dropped schedule names its callback and
attempts, and the summary's "library schedules" row is marked bad (tests/workers/js/objects/libtables.js)."""

import os

import pytest

import alarmkit as ak
from alarmkit.report import export_html
from alarmkit.workers.js import load

from chromium_paths import CHROMIUM  # tests/chromium_paths.py

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no {CHROMIUM} (apt-get install chromium)"),
]

POINTS = """kind => {
  const gd = document.getElementById('figure-0');
  const t = gd._fullData.find(t => t.meta && t.meta.role === 'events' && t.meta.kind === kind);
  if (!t) return null;
  const drawn = document.querySelectorAll(`#figure-0 g.trace.scatter`)[t.index].querySelectorAll('path.point').length;
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
  return {data: t.x.length, drawn, at: [box.left + xa._offset + xa.l2p(t.x[0]), box.top + ya._offset + ya.l2p(t.y[0])]};
}"""


def test_library_marks_draw_and_hover_in_chromium(js_host, browser, tmp_path):
    sim = ak.Simulation(seed=0)
    w = load(sim, js_host / "libtables.js", {"AGENT": "AgentLike"})
    a = w.env.AGENT.getByName("a")
    sim.call(a.schedule(10, "ok", "x"))
    sim.call(a.schedule(20, "boom", "y"))
    sim.run(until=60_000)
    ev = sim.events()
    out = export_html(ev, tmp_path / "libs.html")
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.resolve().as_uri())
    page.wait_for_function("document.getElementById('figure-0') && document.getElementById('figure-0')._fullLayout",
                           timeout=60_000)
    counts = {k: int((ev["kind"] == k).sum()) for k in ("lib_schedule", "lib_ran", "lib_dropped")}
    assert counts == {"lib_schedule": 2, "lib_ran": 1, "lib_dropped": 1}
    for kind, n in counts.items():
        got = page.evaluate(POINTS, kind)
        assert got is not None and got["data"] == got["drawn"] == n, (kind, got)
    leads = page.evaluate("() => document.getElementById('figure-0')._fullData"
                          ".filter(t => t.meta && t.meta.kind === 'lib').map(t => t.x.length)")
    assert leads == [6]                                    # two leads, three values each (x0, x1, gap)
    x, y = page.evaluate(POINTS, "lib_dropped")["at"]
    page.mouse.move(x, y)
    page.wait_for_selector(".hoverlayer .hovertext", timeout=10_000)
    hover = page.evaluate("() => document.querySelector('.hoverlayer .hovertext').textContent")
    assert "lib_dropped at 20.301 s" in hover and "callback: boom" in hover and "attempts: 3" in hover
    row = page.evaluate("() => [...document.querySelectorAll('table.summary tr')]"
                        ".filter(r => r.querySelector('th').textContent === 'library schedules')"
                        ".map(r => [r.querySelector('td').className, r.querySelector('td').textContent])")
    assert row[0][0] == "bad" and "dropped at 20.301 s after 3 attempts: Error: boom" in row[0][1]
    assert errors == []
