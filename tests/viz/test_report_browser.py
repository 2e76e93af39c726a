"""Exported reports opened in headless Debian Chromium with the network off (no browser download).

Each page loads from file://; every non-file request is blocked and recorded (there must be none),
every page error is recorded (there must be none), and dialogs are recorded (there must be none).
"""

import os
from pathlib import Path

import pytest

from alarmkit import DurableObject, Journal, Simulation, run_scenario
from alarmkit.viz.plots import timeline
from alarmkit.viz.report import export_html

from chromium_paths import CHROMIUM  # tests/chromium_paths.py
HOSTILE = '<img src=x onerror="window.__pwned=1;alert(1)">'

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no {CHROMIUM} (apt-get install chromium)"),
]


class Visit:
    """One page: what it tried to fetch, the errors it raised, the dialogs it opened."""

    def __init__(self, browser, path: Path, figures: int, hold_idle: bool = False) -> None:
        self.page = browser.new_page(viewport={"width": 1300, "height": 900})
        if hold_idle:  # idle callbacks wait in a queue until release_idle(): the page as first drawn
            self.page.add_init_script("window.__idle = []; window.requestIdleCallback = f => window.__idle.push(f);")
        self.blocked, self.errors, self.dialogs = [], [], []
        self.page.route("**/*", self._route)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.goto(path.resolve().as_uri(), wait_until="commit")
        self.page.wait_for_function(f"Number(document.body && document.body.dataset.rendered) >= {figures}",
                                    timeout=60_000, polling=50)

    def _route(self, route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()

    def release_idle(self):
        """Run the held idle callbacks (and those they queue) until a big timeline's idle work is done."""
        self.page.wait_for_function("""() => {
            (window.__idle || []).splice(0).forEach(f => f({didTimeout: false, timeRemaining: () => 50}));
            return document.getElementById('figure-0').alarmkitWarm === true; }""", timeout=30_000, polling=100)

    def js(self, script, arg=None):
        return self.page.evaluate(script, arg)

    def assert_clean(self):
        assert self.blocked == [] and self.errors == [] and self.dialogs == []


EVENT_POINTS = """id => {
  const gd = document.getElementById(id);
  return {
    data: gd._fullData.filter(t => t.meta && t.meta.role === 'events').reduce((n, t) => n + t.x.length, 0),
    dom: document.querySelectorAll(`#${id} g.trace[class*="traceev-"] path.point`).length,
    svg: document.querySelectorAll(`#${id} svg.main-svg`).length,
    canvas: document.querySelectorAll(`#${id} canvas`).length,
  };
}"""


POINT_AT = """([id, kind]) => {
  const gd = document.getElementById(id), t = gd._fullData.find(t => t.meta && t.meta.kind === kind);
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
  return [box.left + xa._offset + xa.l2p(t.x[0]), box.top + ya._offset + ya.l2p(t.y[0])];
}"""


def test_a_report_opens_offline_and_draws_one_point_per_journal_event(browser, tmp_path):
    with Journal() as j:
        r = run_scenario("lease-crash-after-effect", seed=1, journal=j)
        events = j.events(r.run_id)
        out = export_html(r.run_id, tmp_path / "report.html", journal=j)
    v = Visit(browser, out, figures=3)
    n = v.js(EVENT_POINTS, "figure-0")
    assert n["data"] == n["dom"] == len(events) and n["svg"] >= 1
    assert v.js("() => document.querySelectorAll('.js-plotly-plot').length") == 3
    assert v.js("() => [...document.querySelectorAll('#figure-0 .ytick text')].map(t => t.textContent)") == ["ledger"]
    assert "duplicate effects" in v.js("() => document.querySelector('table.summary').textContent")
    v.assert_clean()


class Target(DurableObject):
    """An object whose id, effect key and error message are hostile strings."""

    async def go(self):
        await self.ctx.storage.set_alarm(self.ctx.now() + 100)

    async def alarm(self, info):
        await self.ctx.effect("<b>notify</b>", "<script>window.__pwned=2</script>")
        if info.retry_count == 0:
            raise ValueError('</script><script>window.__pwned=3;alert(3)</script>')


def test_a_hostile_object_id_opens_no_dialog_and_runs_no_script(browser, tmp_path):
    with Journal() as j:
        sim = Simulation(seed=1, journal=j, scenario="<script>alert(4)</script>", params={"x": HOSTILE})
        sim.call(sim.namespace("NS", Target).get(HOSTILE).go())
        sim.run()
        sim.close()
        out = export_html(sim.run_id, tmp_path / "hostile.html", journal=j, violations=[HOSTILE])
    v = Visit(browser, out, figures=3)
    ticks = v.js("() => [...document.querySelectorAll('#figure-0 .ytick text')].map(t => t.textContent)")
    assert ticks == [HOSTILE]  # shown as text, exactly as the journal has it
    x, y = v.js(POINT_AT, ["figure-0", "duplicate effect"])  # hover it: its detail holds the hostile key
    v.page.mouse.move(x, y)
    v.page.wait_for_function("document.querySelector('#figure-0 .hoverlayer').textContent.length > 0")
    hover = v.js("() => document.querySelector('#figure-0 .hoverlayer').textContent")
    assert "key: <script>window.__pwned=2</script>" in hover
    assert v.js("() => [window.__pwned, document.querySelectorAll('img, script[src]').length]") == [None, 0]
    assert HOSTILE in v.js("() => document.querySelector('table.summary').textContent")
    v.assert_clean()


def test_a_big_timeline_is_webgl_and_zooming_in_restores_marker_sizes(browser, tmp_path):
    class Ticker(DurableObject):
        async def start(self, n):
            await self.ctx.storage.put("n", n)
            await self.ctx.storage.set_alarm(self.ctx.now() + 100)

        async def alarm(self, info):
            n = await self.ctx.storage.get("n")
            await self.ctx.effect("tick", n)
            if n > 0:
                await self.ctx.storage.put("n", n - 1)
                await self.ctx.storage.set_alarm(self.ctx.now() + 1_000)

    with Journal() as j:
        sim = Simulation(seed=1, journal=j, scenario="tickers")
        ns = sim.namespace("T", Ticker)
        for i in range(40):
            sim.call(ns.get(f"ticker-{i:02d}").start(12))
        sim.run()
        sim.close()
        events = j.events(sim.run_id)
    fig = timeline(events, gl_threshold=1_000)  # what a run of more than GL_THRESHOLD events gets
    assert len(events) > 1_000 and fig.layout.meta["large"]
    out = export_html(fig, tmp_path / "big.html", events=events)
    v = Visit(browser, out, figures=1)
    n = v.js(EVENT_POINTS, "figure-0")
    assert n["data"] == len(events) and n["canvas"] >= 1
    sizes = """() => {
        const gd = document.getElementById('figure-0');
        return gd._fullData.filter(t => t.meta && t.meta.kind === 'fire').map(t => t.marker.size)[0];
    }"""
    small = v.js(sizes)
    v.js("() => Plotly.relayout('figure-0', {'yaxis.range': [2.4, -0.6]})")
    v.page.wait_for_function(f"({sizes})() > {small}", timeout=20_000)
    assert v.js(sizes) == 15  # a fire's full marker size
    v.assert_clean()


def overview_report(tmp_path, name: str, scaled: bool = True):
    """A 6,000-event run on 30 lanes (5,850 fires, 150 crashes) whose timeline opens on its density map:
    the events and the exported page. ``scaled``: detail at 1,000 events in view, WebGL past 100 (the
    defaults, 100,000 and 10,000, scaled down with the run)."""
    from alarmkit.journal import rows_to_frame

    rows = [(i, i * 10, "NS", f"o{i % 30:02d}", "fire" if i % 40 else "crash", i * 10, None, 0, {"n": i})
            for i in range(1, 6_001)]
    events = rows_to_frame(1, rows)
    fig = timeline(events, gl_threshold=1_000, overview_threshold=2_000)
    if scaled:
        fig.layout.meta = {**fig.layout.meta, "detail_in_view": 1_000, "gl_threshold": 100}
    return events, export_html(fig, tmp_path / name, events=events)


def test_a_very_big_timeline_opens_on_its_density_and_draws_every_event_when_zoomed_in(browser, tmp_path):
    events, out = overview_report(tmp_path, "overview.html")  # this zoom draws its ~450 events in WebGL
    v = Visit(browser, out, figures=1, hold_idle=True)
    state = """() => { const gd = document.getElementById('figure-0');
        return Object.fromEntries(gd.data.filter(t => t.meta && !['span', 'warm-up'].includes(t.meta.role))
            .map(t => [t.meta.kind || t.meta.role, t.visible === undefined ? true : t.visible])); }"""
    assert v.js(state) == {"density": True, "fire": "legendonly", "crash": True}
    subtitle = "() => document.querySelector('#figure-0 .gtitle-subtitle').textContent"
    assert "zoomed out: events per lane and time" in v.js(subtitle)
    # the page opens on the 150 crashes in SVG (no WebGL yet); the 5,850 fires wait, unparsed, in a JSON block
    n = v.js(EVENT_POINTS, "figure-0")
    assert (n["data"], n["dom"], n["canvas"]) == (150 + 1, 150, 0)  # + the hidden fires' one gap point
    assert v.js("() => document.getElementById('figure-0-detail').type") == "application/json"
    # then, idle, it parses the block and starts WebGL with a trace of one gap point; the overview is unchanged
    v.release_idle()
    n = v.js(EVENT_POINTS, "figure-0")
    assert (n["data"], n["dom"]) == (150 + 1, 150) and n["canvas"] > 0
    assert v.js(state) == {"density": True, "fire": "legendonly", "crash": True}
    assert v.js("() => document.getElementById('figure-0-detail')") is None
    warm_up = "() => document.getElementById('figure-0').data.filter(t => t.meta && t.meta.role === 'warm-up').map(t => [t.type, t.x, t.showlegend])"
    assert v.js(warm_up) == [["scattergl", [None], False]]  # nothing to draw, no legend entry
    v.js("() => Plotly.relayout('figure-0', {'xaxis.range': [0, 5], 'yaxis.range': [3.5, -0.5]})")
    v.page.wait_for_function("document.getElementById('figure-0').alarmkitDetail === true", timeout=30_000)
    assert v.js(state) == {"density": False, "fire": True, "crash": True}
    # the subtitle says which drawing this is, as drawn in the page (not only in the figure)
    assert v.js(subtitle).startswith("6,000 events · WebGL · in detail: every event in and around the view is drawn")
    # every fire in view is drawn, read from the block; of the rest, only those near the view
    in_view = """() => { const t = document.getElementById('figure-0')._fullData.find(t => t.meta && t.meta.kind === 'fire');
        let n = 0; for (let k = 0; k < t.x.length; k++) if (t.x[k] >= 0 && t.x[k] <= 5 && t.y[k] <= 3.5) n++;
        return [n, t.x.length]; }"""
    fires = events[events["kind"] == "fire"]
    lane = fires["object_id"].str[1:].astype(int)
    drawn, near = v.js(in_view)
    assert drawn == int(((fires["t_ms"] <= 5_000) & (lane <= 3)).sum()) == 63  # i <= 500, i % 30 <= 3, less 4 crashes
    assert drawn < near < len(fires) // 10
    v.js("() => Plotly.relayout('figure-0', {'xaxis.range': [30, 35]})")  # a pan in detail: its 63 fires come along
    v.page.wait_for_function("(" + in_view.replace(">= 0 &&", ">= 30 &&").replace("<= 5 &&", "<= 35 &&") + ")()[0] === 63",
                             timeout=30_000)
    types = "() => [...new Set(document.getElementById('figure-0').data.filter(t => t.meta && t.meta.role === 'events').map(t => t.type))]"
    assert v.js(types) == ["scattergl"] and v.js(EVENT_POINTS, "figure-0")["canvas"] > 0  # the crashes too
    v.js("() => Plotly.relayout('figure-0', {'xaxis.autorange': true, 'yaxis.autorange': true})")
    v.page.wait_for_function("document.getElementById('figure-0').alarmkitDetail === false", timeout=30_000)
    assert v.js(state)["fire"] == "legendonly"
    assert "zoomed out: events per lane and time" in v.js(subtitle) and "in detail" not in v.js(subtitle)
    v.assert_clean()


def test_a_legend_click_on_a_big_timeline_draws_the_hidden_kind_before_any_zoom(browser, tmp_path):
    events, out = overview_report(tmp_path, "o.html", scaled=False)
    v = Visit(browser, out, figures=1, hold_idle=True)  # before the page's idle work starts WebGL
    v.page.click("#figure-0 g.legend g.traces:has-text('fire') rect.legendtoggle")
    v.page.wait_for_function("""() => document.getElementById('figure-0')._fullData
        .filter(t => t.meta && t.meta.kind === 'fire' && t.visible === true).some(t => t.x.length === 5850)""", timeout=30_000)
    # a zoom to detail with fewer than 10,000 events around the view draws them in SVG: no WebGL at all
    v.js("() => Plotly.relayout('figure-0', {'xaxis.range': [0, 5], 'yaxis.range': [3.5, -0.5]})")
    v.page.wait_for_function("document.getElementById('figure-0').alarmkitDetail === true", timeout=30_000)
    n = v.js(EVENT_POINTS, "figure-0")
    assert n["canvas"] == 0 and 0 < n["data"] == n["dom"] < 1_000
    v.assert_clean()


def test_a_zoom_onto_every_lane_after_the_idle_warm_up_draws_every_event_around_the_view_in_webgl(browser, tmp_path):
    events, out = overview_report(tmp_path, "all.html")
    v = Visit(browser, out, figures=1)
    v.page.wait_for_function("document.getElementById('figure-0').alarmkitWarm === true", timeout=30_000)
    assert v.js(EVENT_POINTS, "figure-0")["canvas"] > 0  # WebGL started before any zoom
    # its canvases at the screen's pixel ratio (1 here), not plotly's default of 2: a quarter of the pixels
    sizes = "() => [...document.querySelectorAll('#figure-0 canvas')].map(c => [c.width, c.height, c.getBoundingClientRect().width])"
    assert all(w == round(css) and h > 0 for w, h, css in v.js(sizes))
    v.js("() => Plotly.relayout('figure-0', {'xaxis.range': [10, 18]})")  # every lane, 8 s of the run's 60
    v.page.wait_for_function("document.getElementById('figure-0').alarmkitDetail === true", timeout=30_000)
    drawn = """() => { const gd = document.getElementById('figure-0'), out = {};
        gd._fullData.filter(t => t.meta && t.meta.role === 'events' && t.visible === true).forEach(t => {
            out[t.meta.kind] = [t.type, t.x.length, Array.from(t.x).filter(x => x >= 10 && x <= 18).length]; });
        return out; }"""
    t = events["t_ms"] / 1000
    fires, crashes = t[events["kind"] == "fire"], t[events["kind"] == "crash"]
    # in view: 10 to 18 s (i = 1000..1800); around it the page keeps the view widened by its width each side
    # (2 to 26 s); the 150 crashes, a notable kind the overview drew, stay whole
    want = {"fire": ["scattergl", int(fires.between(2, 26).sum()), int(fires.between(10, 18).sum())],
            "crash": ["scattergl", 150, int(crashes.between(10, 18).sum())]}
    assert v.js(drawn) == want and want["fire"][1:] == [2_340, 780] and want["crash"][2] == 21
    assert v.js("() => document.getElementById('figure-0').data.filter(t => t.meta && t.meta.role === 'warm-up').map(t => t.x)") == [[None]]
    v.assert_clean()


VISIBLE = """([id, kind]) => { const t = document.getElementById(id).data.find(t => t.meta && t.meta.kind === kind);
    return [t.visible === undefined ? true : t.visible, t.type, t.x.length]; }"""
DETAIL = "b => document.getElementById('figure-0').alarmkitDetail === b"


def test_a_kind_shown_from_the_legend_after_a_zoom_draws_in_webgl_and_stays_shown_through_zooms(browser, tmp_path):
    events, out = overview_report(tmp_path, "legend.html")
    v = Visit(browser, out, figures=1)
    subtitle = "() => document.querySelector('#figure-0 .gtitle-subtitle').textContent"
    # two zooms: the second holds fewer than gl_threshold events around the view, drawn in SVG
    v.js("() => Plotly.relayout('figure-0', {'xaxis.range': [0, 5], 'yaxis.range': [3.5, -0.5]})")
    v.page.wait_for_function(DETAIL, arg=True, timeout=30_000)
    v.js("() => Plotly.relayout('figure-0', {'xaxis.range': [0, 1], 'yaxis.range': [1.5, -0.5]})")
    v.page.wait_for_function(f"({VISIBLE})(['figure-0', 'fire'])[1] === 'scatter'", timeout=30_000)
    assert v.js(subtitle).startswith("6,000 events · SVG · in detail")  # not "WebGL": it is drawn in SVG
    v.js("() => Plotly.relayout('figure-0', {'xaxis.autorange': true, 'yaxis.autorange': true})")  # double-click out
    v.page.wait_for_function(DETAIL, arg=False, timeout=30_000)
    assert v.js(VISIBLE, ["figure-0", "fire"])[0] == "legendonly"
    assert v.js(subtitle).startswith("6,000 events · zoomed out")  # density and crashes, SVG: no "WebGL"
    # the greyed kind shown from the legend: all 5,850 fires, in WebGL (in SVG they were 5,850 DOM nodes)
    v.page.click("#figure-0 g.legend g.traces:has-text('fire') rect.legendtoggle")
    v.page.wait_for_function(f"({VISIBLE})(['figure-0', 'fire'])[0] === true", timeout=30_000)
    assert v.js(VISIBLE, ["figure-0", "fire"]) == [True, "scattergl", 5_850]
    n = v.js(EVENT_POINTS, "figure-0")
    assert n["dom"] == 150 and n["canvas"] > 0  # only the crashes are SVG points
    # the user's choice outlives a zoom in and out: the fires stay shown, whole, in WebGL
    v.js("() => Plotly.relayout('figure-0', {'xaxis.range': [0, 5], 'yaxis.range': [3.5, -0.5]})")
    v.page.wait_for_function(DETAIL, arg=True, timeout=30_000)
    assert v.js(subtitle).startswith("6,000 events · WebGL · in detail")
    v.js("() => Plotly.relayout('figure-0', {'xaxis.autorange': true, 'yaxis.autorange': true})")
    v.page.wait_for_function(DETAIL, arg=False, timeout=30_000)
    assert v.js(VISIBLE, ["figure-0", "fire"]) == [True, "scattergl", 5_850]
    # and a kind hidden in detail stays hidden after the next zoom out and in
    v.js("() => Plotly.relayout('figure-0', {'xaxis.range': [0, 5], 'yaxis.range': [3.5, -0.5]})")
    v.page.wait_for_function(DETAIL, arg=True, timeout=30_000)
    v.page.click("#figure-0 g.legend g.traces:has-text('fire') rect.legendtoggle")
    v.page.wait_for_function(f"({VISIBLE})(['figure-0', 'fire'])[0] === 'legendonly'", timeout=30_000)
    v.js("() => Plotly.relayout('figure-0', {'xaxis.autorange': true, 'yaxis.autorange': true})")
    v.page.wait_for_function(DETAIL, arg=False, timeout=30_000)
    v.js("() => Plotly.relayout('figure-0', {'xaxis.range': [0, 5], 'yaxis.range': [3.5, -0.5]})")
    v.page.wait_for_function(DETAIL, arg=True, timeout=30_000)
    assert v.js(VISIBLE, ["figure-0", "fire"])[0] == "legendonly"
    v.assert_clean()


TICKS = """([id, axis]) => [...document.querySelectorAll(`#${id} .${axis}tick text`)].map(t => {
    const b = t.getBoundingClientRect(); return [t.textContent, b.left, b.top, b.right, b.bottom]; })"""


def _apart(ticks):
    """No two tick labels' boxes overlap."""
    boxes = [t[1:] for t in ticks]
    return all(min(a[2], b[2]) - max(a[0], b[0]) <= 0.5 or min(a[3], b[3]) - max(a[1], b[1]) <= 0.5
               for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_lane_names_and_time_labels_follow_the_zoom_of_a_big_timeline(browser, tmp_path):
    from alarmkit.journal import rows_to_frame

    # 300 objects over 12 h: the axis opens naming every 5th lane, its time in hours; the first lane's
    # name is hostile (it sorts first)
    rows = [(i, i * 7_200, "NS", f"o{i % 300:03d}" if i % 300 else HOSTILE, "fire" if i % 40 else "crash",
             i * 7_200, None, 0, {}) for i in range(1, 6_001)]
    events = rows_to_frame(1, rows)
    fig = timeline(events, gl_threshold=1_000, overview_threshold=2_000)
    v = Visit(browser, export_html(fig, tmp_path / "lanes.html", events=events), figures=1)
    names = [t[0] for t in v.js(TICKS, ["figure-0", "y"])]
    assert names == [HOSTILE, *[f"o{k:03d}" for k in range(5, 300, 5)]] and fig.layout.meta["unit"] == "h"
    v.js("() => Plotly.relayout('figure-0', {'yaxis.range': [7.5, -0.5]})")  # 8 lanes: each one named, as text
    want = [HOSTILE, *[f"o{k:03d}" for k in range(1, 8)]]
    v.page.wait_for_function("w => JSON.stringify([...document.querySelectorAll('#figure-0 .ytick text')]"
                             ".map(t => t.textContent)) === JSON.stringify(w)", arg=want, timeout=30_000)
    assert v.js("() => [window.__pwned, document.querySelectorAll('img').length]") == [None, 0]
    v.js("() => Plotly.relayout('figure-0', {'yaxis.range': [62.5, 54.5]})")  # lanes 55 to 62: each one named
    want = [f"o{k:03d}" for k in range(55, 63)]
    v.page.wait_for_function("w => JSON.stringify([...document.querySelectorAll('#figure-0 .ytick text')]"
                             ".map(t => t.textContent)) === JSON.stringify(w)", arg=want, timeout=30_000)
    assert _apart(v.js(TICKS, ["figure-0", "y"]))
    # two minutes of the 12 hours: labelled as times every 15 s, not as hours (5.39, 5.395, ...)
    v.js("() => Plotly.relayout('figure-0', {'xaxis.range': [5.39, 5.39 + 2 / 60]})")
    v.page.wait_for_function("document.querySelector('#figure-0 .xtick text').textContent.includes(' min ')", timeout=30_000)
    times = v.js(TICKS, ["figure-0", "x"])
    assert [t[0] for t in times] == [f"5 h {m} min {s} s" for m, s in
                                     [(23, 30), (23, 45), (24, 0), (24, 15), (24, 30), (24, 45), (25, 0), (25, 15)]]
    assert _apart(times)
    assert v.js("() => document.querySelector('#figure-0 .g-xtitle').textContent") == "virtual time"
    # zoomed out again: every 5th lane, the time in hours
    v.js("() => Plotly.relayout('figure-0', {'xaxis.autorange': true, 'yaxis.autorange': true})")
    v.page.wait_for_function("document.querySelectorAll('#figure-0 .ytick text').length === 60", timeout=30_000)
    times = v.js(TICKS, ["figure-0", "x"])
    assert [t[0] for t in times] == ["0", *[f"{h} h" for h in range(1, 13)]] and _apart(times)
    v.page.screenshot(path=str(tmp_path / "lanes.png"))
    v.assert_clean()


@pytest.mark.slow
def test_every_demo_report_opens_offline(browser, demo_run):
    folder, results, _printed = demo_run  # run once per test process (tests/conftest.py)
    with Journal(folder / "j.duckdb", read_only=True) as j:  # a comparing run's report draws its peer run beside it
        counts = j.events().groupby("run_id").size().to_dict()
    for r in results:
        v = Visit(browser, Path(r["report_html"]), figures=1)
        expected = r["events"] + (counts[r["compare_run_id"]] if "compare_run_id" in r else 0)
        assert v.js(EVENT_POINTS, "figure-0")["data"] == expected, r["scenario"]
        v.assert_clean()
        v.page.close()


def test_a_kind_with_nothing_near_the_view_keeps_its_legend_entry_in_detail(browser, tmp_path):
    """Fires only in the run's first half, arms only in its second: zoomed onto the second half, the
    fires have nothing to draw, and their legend entry (the way to hide or show them) stays."""
    from alarmkit.journal import rows_to_frame

    rows = [(i, i * 10, "NS", f"o{i % 30:02d}", "fire" if i < 3_000 else "arm", i * 10, None, 0, {"n": i})
            for i in range(1, 6_001)]
    events = rows_to_frame(1, rows)
    fig = timeline(events, gl_threshold=1_000, overview_threshold=2_000)
    fig.layout.meta = {**fig.layout.meta, "detail_in_view": 1_000, "gl_threshold": 100}
    v = Visit(browser, export_html(fig, tmp_path / "halves.html", events=events), figures=1)
    entries = "() => [...document.querySelectorAll('#figure-0 g.legend g.traces')].map(g => g.textContent)"
    assert {"fire", "arm"} <= set(v.js(entries))
    v.js("() => Plotly.relayout('figure-0', {'xaxis.range': [50, 52]})")  # i = 5000..5200: arms only
    v.page.wait_for_function("document.getElementById('figure-0').alarmkitDetail === true", timeout=30_000)
    drawn = """() => Object.fromEntries(document.getElementById('figure-0')._fullData
        .filter(t => t.meta && t.meta.role === 'events').map(t => [t.meta.kind, Array.from(t.x).filter(x => x === x && x !== null).length]))"""
    counts = v.js(drawn)
    assert counts["fire"] == 0 and counts["arm"] > 0
    assert {"fire", "arm"} <= set(v.js(entries))
    v.assert_clean()
