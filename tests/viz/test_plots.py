"""The figures' structure (traces, markers per kind, axes, hover text), from real runs' journals; not pixels.

Plus the HTML export, the ``alarmkit export`` command and the demo's reports, without a browser
(tests/viz/test_report_browser.py opens them in Chromium).
"""

import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

import alarmkit as ak
from alarmkit import AlarmkitError, Journal, run_scenario
from alarmkit.cli import main as cli
from alarmkit.journal import rows_to_frame
from alarmkit.viz.plots import DUPLICATE, KIND_STYLE, backoff_ladder, compare, fmt_ms, lateness, style, timeline
from alarmkit.viz.report import export_html, report_html, summary_rows
from alarmkit.runtime.profiles import PROFILES

# these tests are about figures, not fire lateness: simulations here take the exact fire latency
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)
EXACT = PROFILES["workerd"].replace(fire_latency="exact")

HOSTILE = '<img src=x onerror="window.__pwned=1;alert(1)">'


@pytest.fixture(scope="module")
def journal():
    """One journal, one run per scenario the tests draw (seed 1)."""
    j = Journal()
    for name in ("lease-crash-after-effect", "lease-exhaustion", "lease-revival", "lease-moves-only-earlier"):
        run_scenario(name, seed=1, journal=j, profile=EXACT)
    yield j
    j.close()


def run_events(journal, scenario):
    runs = journal.runs()
    return journal.events(int(runs.loc[runs.scenario == scenario, "run_id"].iloc[0]))


def details(events, kind):
    return [json.loads(d) for d in events.loc[events.kind == kind, "detail"]]


def traces(fig, role, kind=None):
    return [t for t in fig.data if t.meta and t.meta.get("role") == role and (kind is None or t.meta.get("kind") == kind)]


def one(fig, role, kind=None):
    (t,) = traces(fig, role, kind)
    return t


def segments(trace, per=3):
    """A gapped polyline's segments as (x0, x1) pairs."""
    xs = list(trace.x)
    return [(xs[i], xs[i + per - 2]) for i in range(0, len(xs), per)]


def frame(rows, run_id=1):
    """A journal frame from (t, object, kind, scheduled, prev, retry, detail) rows."""
    return rows_to_frame(run_id, [(i, t, None if o is None else "NS", o, k, s, p, r, d)
                                  for i, (t, o, k, s, p, r, d) in enumerate(rows, start=1)])


def strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from strings(v)
    elif isinstance(obj, (list, tuple, np.ndarray)):
        for v in obj:
            yield from strings(v)


# -- timeline ------------------------------------------------------------------------------------

def test_every_event_is_one_marker_in_the_trace_of_its_kind(journal):
    ev = run_events(journal, "lease-crash-after-effect")
    fig = timeline(ev)
    marks = traces(fig, "events")
    assert sum(len(t.x) for t in marks) == len(ev)
    expected = ev.kind.value_counts().to_dict()
    expected["effect"] -= 1  # the second revoke(lease-0) is drawn as a duplicate
    expected[DUPLICATE] = 1
    assert {t.meta["kind"]: len(t.x) for t in marks} == expected
    for t in marks:  # one legend entry per kind, in the kind's own colour and shape
        colour, symbol, _, _ = KIND_STYLE[t.meta["kind"]]
        assert (t.name, t.marker.color, t.marker.symbol, t.showlegend) == (t.meta["kind"], colour, symbol, True)
    assert fig.layout.xaxis.title.text == "virtual time (s)"
    assert list(fig.layout.yaxis.ticktext) == ["ledger"]


def test_fire_marker_sits_at_its_virtual_time_with_the_detail_in_its_hover(journal):
    ev = run_events(journal, "lease-crash-after-effect")
    fires = ev[ev.kind == "fire"]
    t = one(timeline(ev), "events", "fire")
    assert list(t.x) == [ms / 1000 for ms in fires.t_ms]
    assert t.hovertext[1].startswith(f"<b>fire</b> at {fmt_ms(fires.t_ms.iloc[1])}<br>object: ledger")
    late = details(ev, "fire")[1]["late_ms"]
    assert f"late_ms: {late}" in t.hovertext[1] and "retry_count: 1" in t.hovertext[1]


def test_an_effect_that_already_ran_is_highlighted_and_linked_to_its_first_run(journal):
    ev = run_events(journal, "lease-crash-after-effect")
    first_t, again_t = ev.loc[ev.kind == "effect", "t_ms"]
    fig = timeline(ev)
    assert list(one(fig, "events", "effect").x) == [first_t / 1000]
    dup = one(fig, "events", DUPLICATE)
    assert list(dup.x) == [again_t / 1000]
    assert dup.marker.color == KIND_STYLE[DUPLICATE][0] != KIND_STYLE["effect"][0]
    assert f"already ran at {fmt_ms(first_t)}" in dup.hovertext[0] and "key: lease-0" in dup.hovertext[0]
    link = one(fig, "link")
    assert list(link.x)[:4] == [first_t / 1000, first_t / 1000, again_t / 1000, again_t / 1000]


def test_duplicates_are_counted_per_run_and_object_by_name_and_key():
    rows = [(0, "a", "effect", None, None, None, {"name": "revoke", "key": "k"}),
            (5, "b", "effect", None, None, None, {"name": "revoke", "key": "k"}),  # another object: not a duplicate
            (6, "b", "effect", None, None, None, {"name": "notify", "key": "k"}),  # another name
            (7, "b", "effect", None, None, None, {"name": "revoke", "key": ["k"]}),  # another key
            (8, "a", "effect", None, None, None, {"name": "revoke", "key": "k"})]  # a again: the duplicate
    fig = timeline(pd.concat([frame(rows, run_id=1), frame(rows[:1], run_id=2)]))
    dups = traces(fig, "events", DUPLICATE)
    assert [list(t.x) for t in dups] == [[8.0]]  # ms axis; run 2's single effect is its first


def test_exhaustion_climbs_the_ladder_with_each_rung_labelled_and_ends_abandoned(journal):
    ev = run_events(journal, "lease-exhaustion")
    fig = timeline(ev)
    rs = ev[ev.kind == "retry_scheduled"]
    labels = one(fig, "label", "rung")
    # the real wait (armed to due, jitter included) on the plot; the nominal rung in hover
    assert list(labels.text) == [f"+{(s - t) / 1000:g} s" for t, s in zip(rs.t_ms, rs.scheduled_ms)]
    assert [h.split("<br>")[1].split(",")[0] for h in labels.hovertext] == [
        "nominal +2 s", "nominal +4 s", "nominal +8 s", "nominal +16 s", "nominal +32 s", "nominal +64 s"]
    arrows = one(fig, "move", "retry")  # from the failed attempt to the retry's due time
    assert segments(arrows) == [(t / 1000, s / 1000) for t, s in zip(rs.t_ms, rs.scheduled_ms)]
    assert list(labels.x) == [(t + s) / 2 / 1000 for t, s in zip(rs.t_ms, rs.scheduled_ms)]
    fires = one(fig, "events", "fire")
    assert [x * 1000 for x in fires.x[1:]] == [s + 2 for s in rs.scheduled_ms]  # 2 ms fire latency
    gave_up = one(fig, "events", "abandoned")
    assert list(gave_up.text) == ["abandoned after 7 attempts"]
    assert list(gave_up.x) == [fires.x[-1]]


def test_revival_marks_the_restart_its_downtime_and_the_constructor_revive(journal):
    ev = run_events(journal, "lease-revival")
    fig = timeline(ev)
    (restart_t,) = ev.loc[ev.kind == "restart", "t_ms"]
    (down,) = [d["downtime_ms"] for d in details(ev, "restart")]
    assert list(fig.layout.yaxis.ticktext) == ["runtime", "ledger"]
    restart = one(fig, "events", "restart")
    assert (list(restart.x), list(restart.y)) == ([restart_t / 1000], [0.0])
    band = [s for s in fig.layout.shapes if s.type == "rect"]
    assert [(s.x0, s.x1) for s in band] == [(restart_t / 1000, (restart_t + down) / 1000)]
    revive = one(fig, "events", "revive")
    # the revive sits 1 s after the restart's dotted line: no label may cross that line (alarmkit._labels),
    # and here no side clear of it is free, so the label is dropped; its hover keeps the cause
    assert list(revive.text) in (["revive (constructor)"], [""])
    assert list(revive.x) == [ev.loc[ev.kind == "revive", "t_ms"].iloc[0] / 1000]
    assert "cause: constructor" in revive.hovertext[0]


def test_alarm_moves_are_drawn_from_the_old_time_to_the_new_earlier_and_later_apart(journal):
    ev = run_events(journal, "lease-moves-only-earlier")
    fig = timeline(ev)
    arms = ev[(ev.kind == "arm") & ev.prev_scheduled_ms.notna()]
    earlier = arms[arms.scheduled_ms < arms.prev_scheduled_ms]
    later = arms[arms.scheduled_ms > arms.prev_scheduled_ms]  # both set by alarm(): re-arms, not moves
    assert segments(one(fig, "move", "earlier")) == [(5.0, 1.0)]  # grant 1 s after 5 s: 5 s -> 1 s
    assert segments(one(fig, "move", "earlier")) == list(zip(earlier.prev_scheduled_ms / 1000, earlier.scheduled_ms / 1000))
    assert traces(fig, "move", "later") == []
    assert segments(one(fig, "move", "rearm")) == list(zip(later.t_ms / 1000, later.scheduled_ms / 1000)) == [(1.002, 5.0), (5.002, 60.0)]
    e, lt = one(fig, "move", "earlier"), one(fig, "move", "rearm")
    assert (e.line.color, e.line.dash) != (lt.line.color, lt.line.dash)
    assert "alarm moved earlier at 0 ms: 5 s → 1 s" in e.hovertext[0]


def test_the_handler_span_runs_from_the_fire_to_the_handler_end():
    ev = frame([(0, "a", "arm", 1000, None, None, {"direction": "new"}),
                (1002, "a", "fire", 1000, None, 0, {"attempt": 1}),
                (1502, "a", "handler_ok", 1000, None, 0, {}),
                (3000, "a", "fire", 1000, None, 0, {"attempt": 2}),
                (3000, "a", "handler_error", 1000, None, 0, {"error": "E"})])  # no time: no span
    fig = timeline(ev)
    assert segments(one(fig, "span", "handler_ok")) == [(1.002, 1.502)]
    assert traces(fig, "span", "handler_error") == []


@pytest.mark.parametrize("last_ms, unit, x", [(1_500, "ms", 1_500.0), (90_000, "s", 90.0),
                                              (30 * 60_000, "min", 30.0), (20 * 3_600_000, "h", 20.0)])
def test_the_time_axis_picks_a_readable_unit(last_ms, unit, x):
    fig = timeline(frame([(0, "a", "construct", None, None, None, None), (last_ms, "a", "call", None, None, None, {})]))
    assert fig.layout.xaxis.title.text == f"virtual time ({unit})"
    assert one(fig, "events", "call").x[0] == x


def test_the_view_opens_on_the_alarm_activity_not_the_idle_eviction_after_it(journal):
    ev = run_events(journal, "lease-crash-after-effect")
    fig = timeline(ev)
    last = ev.loc[ev.kind != "evict", "t_ms"].max()
    assert fig.layout.xaxis.range[1] < ev.t_ms.max() / 1000
    assert fig.layout.xaxis.range[1] > last / 1000
    assert f"idle evictions until {fmt_ms(ev.t_ms.max())}" in fig.layout.title.subtitle.text


def test_filters_by_object_kind_run_and_window(journal):
    ev = journal.events()
    fig = timeline(ev, kinds=["fire", "retry_scheduled"], runs=[2])
    assert {t.meta["kind"] for t in traces(fig, "events")} == {"fire", "retry_scheduled"}
    wanted = (ev.run_id == 2) & ev.kind.isin(["fire", "retry_scheduled"])
    assert sum(len(t.x) for t in traces(fig, "events")) == int(wanted.sum())
    windowed = timeline(ev, runs=[2], window=(0, 5_000))
    assert max(max(t.x) for t in traces(windowed, "events")) <= 5.0
    assert list(timeline(ev, objects=["ledger"], runs=[3]).layout.yaxis.ticktext) == ["ledger"]  # no runtime lane


@pytest.mark.parametrize("kwargs, message", [
    ({"kinds": ["fires"]}, r"^unknown event kind\(s\) \['fires'\]; kinds: \['construct'"),
    ({"objects": ["nope"]}, r"^no object \['nope'\] in these events; objects here: \['ledger'\]$"),
    ({"runs": [99]}, r"^no run \[99\] in these events; runs here: \[1, 2, 3, 4\]$"),
    ({"window": (10**9, 10**10)}, r"^no events left to draw; loosen objects=, kinds=, runs= or window=$"),
])
def test_filter_errors_name_the_value_and_what_is_there(journal, kwargs, message):
    with pytest.raises(AlarmkitError, match=message):
        timeline(journal.events(), **kwargs)


def test_a_frame_that_is_not_a_journals_is_refused_with_the_missing_columns():
    with pytest.raises(AlarmkitError, match=r"^events lack column\(s\) \['seq',"):
        timeline(pd.DataFrame({"run_id": [1], "t_ms": [0]}))
    with pytest.raises(AlarmkitError, match=r"^events must be a DataFrame from Journal.events\(run_id\), got list$"):
        timeline([])


def test_several_runs_become_rows_on_one_time_axis_with_one_legend(journal):
    ev = journal.events()
    fig = timeline(ev, runs=[1, 2])
    assert [a.text for a in fig.layout.annotations] == ["run 1", "run 2"]
    assert fig.layout.xaxis2.matches == "x" and fig.layout.xaxis.matches == "x"
    fires = traces(fig, "events", "fire")
    assert [t.showlegend for t in fires] == [True, False]
    assert [t.xaxis for t in fires] == ["x", "x2"]


def test_compare_aligns_two_fault_plans_of_one_scenario_on_one_axis():
    quiet = run_scenario("lease-crash-after-effect", seed=1, revoke_throws=0, profile=EXACT).events
    throws = run_scenario("lease-crash-after-effect", seed=1, revoke_throws=2, profile=EXACT).events
    fig = compare({"revoke never throws": quiet, "revoke throws twice": throws})
    assert [a.text for a in fig.layout.annotations] == ["revoke never throws", "revoke throws twice"]
    assert fig.layout.xaxis2.matches == "x"
    assert [len(t.x) for t in traces(fig, "events", "fire")] == [1, 3]
    assert [len(t.x) for t in traces(fig, "events", DUPLICATE)] == [2]
    with pytest.raises(AlarmkitError, match=r"^compare needs a dict label -> events"):
        compare([quiet, throws])


def test_hostile_strings_reach_plotly_escaped():
    ev = frame([(0, HOSTILE, "arm", 10, None, None, {"direction": "new"}),
                (12, HOSTILE, "fire", 10, None, 0, {"attempt": 1}),
                (12, HOSTILE, "effect", None, None, None, {"name": "<b>x</b>", "key": "<script>window.__pwned=2</script>"}),
                (12, HOSTILE, "handler_error", 10, None, 0,
                 {"error": "E", "message": "</script><script>alert(3)</script>"})])
    fig = timeline(ev, title="<i>title</i>")
    assert list(fig.layout.yaxis.ticktext) == ['&lt;img src=x onerror="window.__pwned=1;alert(1)"&gt;']
    hover = one(fig, "events", "effect").hovertext[0]
    assert "key: &lt;script&gt;window.__pwned=2&lt;/script&gt;" in hover
    for s in strings(fig.to_plotly_json()):
        assert "<img" not in s and "<script" not in s and "</script" not in s and "<i>" not in s, s


def test_kinds_from_other_modules_and_unknown_kinds_are_drawn_too():
    ev = frame([(0, "g", "keepalive_arm", 10_000, None, None, {}), (10_002, "g", "revival", None, None, None, {}),
                (10_003, "g", "<odd kind>", None, None, None, {"note": 1})])
    fig = timeline(ev)
    marks = {t.meta["kind"]: t for t in traces(fig, "events")}
    assert set(marks) == {"keepalive_arm", "revival", "<odd kind>"}
    assert marks["revival"].marker.symbol == KIND_STYLE["revival"][1]
    odd = marks["<odd kind>"]
    assert odd.name == "&lt;odd kind&gt;" and odd.uid == "ev-_odd_kind_-1" and odd.marker.symbol == style("<odd kind>")[1]
    assert style("<odd kind>") == style("<odd kind>")  # the same in every figure


def test_a_big_run_is_drawn_with_webgl_and_light_hover():
    n = 6_000
    rows = []
    for i in range(n):
        t = i * 10
        rows += [(t, f"o{i % 40}", "fire", t, None, 0, {"attempt": 1}), (t, f"o{i % 40}", "handler_ok", t, None, 0, {})]
    ev = frame(rows)
    fig = timeline(ev)
    assert fig.layout.meta["large"] is True and "WebGL" in fig.layout.title.subtitle.text
    assert {t.type for t in fig.data} == {"scattergl"}
    marks = traces(fig, "events")
    assert sum(len(t.x) for t in marks) == 2 * n
    assert all(t.hovertext is None and "%{x}" in t.hovertemplate for t in marks)  # > 5,000 of a kind: no detail
    assert timeline(ev, gl_threshold=10**6).data[0].type == "scatter"


def test_a_very_big_run_opens_on_a_density_map_and_its_notable_events():
    rows = [(i * 10, f"o{i % 7}", "fire" if i % 50 else "handler_error", i * 10, None, 0, {}) for i in range(3_000)]
    ev = frame(rows)
    fig = timeline(ev, gl_threshold=500, overview_threshold=1_000)
    density = one(fig, "density")
    assert np.nansum(np.asarray(density.z, float)) == len(ev) and np.asarray(density.z).shape == (7, 800)
    fires, errors = one(fig, "events", "fire"), one(fig, "events", "handler_error")
    assert (fires.visible, fires.meta["detail"]) == ("legendonly", True)  # drawn once a zoom brings it in
    assert errors.visible is None and "detail" not in errors.meta  # notable: drawn from the start
    assert len(fires.x) + len(errors.x) == len(ev)
    assert fig.layout.meta["detail_in_view"] == 100_000 and "zoomed out" in fig.layout.title.subtitle.text
    assert timeline(ev, gl_threshold=500).layout.meta["detail_in_view"] == 0  # under the default threshold


def test_hundreds_of_lanes_name_one_lane_in_k():
    ev = frame([(i, f"obj-{i:03d}", "call", None, None, None, {}) for i in range(300)])
    ticks = timeline(ev).layout.yaxis
    assert len(ticks.ticktext) == 60 and list(ticks.ticktext[:2]) == ["obj-000", "obj-005"]
    assert list(ticks.tickvals[:2]) == [0, 5]


# -- backoff ladder and lateness ---------------------------------------------------------------

def test_backoff_ladder_puts_each_wait_against_the_nominal_rung_and_its_jitter_band(journal):
    ev = run_events(journal, "lease-exhaustion")
    fig = backoff_ladder(ev)
    rs = details(ev, "retry_scheduled")
    retries = one(fig, "retries")
    assert list(retries.x) == [0, 1, 2, 3, 4, 5]
    assert list(retries.y) == [r["delay_ms"] / 1000 for r in rs]
    assert list(one(fig, "nominal").y) == [2, 4, 8, 16, 32, 64]
    assert list(one(fig, "band").y) == [2.5, 5, 10, 20, 40, 80]
    for r in rs:
        assert r["base_ms"] <= r["delay_ms"] <= r["base_ms"] * 1.25
    assert fig.layout.yaxis.type == "log" and list(fig.layout.yaxis.ticktext[:2]) == ["2 s", "4 s"]
    assert fig.layout.xaxis.title.text == "backoff rung n (nominal wait 2 s << n)"
    with pytest.raises(AlarmkitError, match=r"^no retry_scheduled events in this run"):
        backoff_ladder(run_events(journal, "lease-moves-only-earlier"))


def test_lateness_of_a_retry_is_measured_from_the_end_of_its_backoff(journal):
    ev = run_events(journal, "lease-exhaustion")
    due = one(lateness(ev), "lateness")
    assert list(due.x) == [2.0] * 7  # the workerd profile's fixed 2 ms fire latency
    scheduled = one(lateness(ev, against="scheduled"), "lateness")
    assert list(scheduled.x) == [d["late_ms"] / 1000 for d in details(ev, "fire")]  # the runtime's own late_ms
    assert "lateness: fire time − scheduled time (s)" == lateness(ev, against="scheduled").layout.xaxis.title.text


def test_lateness_per_profile_from_a_runs_frame_or_per_label_from_a_dict():
    j = Journal()
    run_scenario("lease-normal", seed=1, journal=j, profile=EXACT)
    run_scenario("lease-normal", seed=1, journal=j, profile="workerd-2026-07")
    run_scenario("lease-exhaustion", seed=1, journal=j, profile=EXACT)
    fig = lateness(j.events(), j.runs(), by="profile")
    assert [(t.name, t.meta["n"]) for t in fig.data] == [("workerd", 9), ("workerd-2026-07", 2)]
    by_run = lateness(j.events(), j.runs())
    assert [t.name for t in by_run.data][0] == "run 1 · lease-normal (workerd)"
    labelled = lateness({"one": j.events(1), "<two>": j.events(2)})
    assert [t.name for t in labelled.data] == ["one", "&lt;two&gt;"]
    with pytest.raises(AlarmkitError, match=r"^by='profile' needs runs=journal.runs\(\)"):
        lateness(j.events(), by="profile")


# -- HTML export, CLI, demo ---------------------------------------------------------------------

def test_the_report_inlines_plotly_once_escapes_the_summary_and_forbids_fetching(journal, tmp_path):
    runs = journal.runs()
    run_id = int(runs.loc[runs.scenario == "lease-crash-after-effect", "run_id"].iloc[0])
    out = export_html(run_id, tmp_path / "r.html", journal=journal, violations=[f"effect {HOSTILE} ran twice"])
    page = out.read_text()
    assert page.count("Plotly.newPlot(") == 3  # timeline, backoff ladder, lateness
    assert page.count("plotly.js v") == 1 and "<script src" not in page  # inlined, once; no CDN
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert HOSTILE not in page and 'effect &lt;img src=x onerror="window.__pwned=1;alert(1)"&gt; ran twice' in page
    assert '<th>duplicate effects</th><td class=bad>1: revoke("lease-0") on ledger ×2</td>' in page
    assert "<th>attempts</th><td>2 alarm() runs: 1 first, 1 retry (1 counted); 1 ok, 1 failed, 0 abandoned, 0 revived</td>" in page


def test_the_summary_names_the_run_its_fault_plan_and_its_violations():
    ev = frame([(0, "a", "fire", 0, None, 0, {}), (0, "a", "effect", None, None, None, {"name": "n", "key": 1})])
    rows = {k: (v, bad) for k, v, bad in summary_rows(ev, {"scenario": "s", "run_id": 4, "profile": "workerd", "seed": 9,
                                                           "params": {"ttl": 5}, "faults": {"crash": [1]}}, [])}
    assert rows["scenario"] == ("s", False) and rows["seed"] == ("9", False)
    assert rows["fault plan"] == ('{"crash": [1]}', False) and rows["parameters"] == ('{"ttl": 5}', False)
    assert rows["violations"] == ("none", False) and "duplicate effects" not in rows
    from alarmkit.journal.invariants import Violation

    lost = Violation("lost", "ledger", 139_974, "revoke(lease-0) never ran", key="lease-0")
    (row,) = [r for r in summary_rows(ev, None, [lost, "by hand"]) if r[0] == "violations"]
    assert row == ("violations", "lost · ledger at 139.974 s: revoke(lease-0) never ran\nby hand", True)


def test_export_takes_a_run_scenario_result_or_figures(tmp_path):
    r = run_scenario("lease-normal", seed=1, profile=EXACT)
    out = export_html(r, tmp_path / "a.html")
    assert "<th>scenario</th><td>lease-normal</td>" in out.read_text()
    fig = go.Figure(go.Scatter(x=[1], y=[1]))
    assert "Plotly.newPlot(" in export_html([fig, fig], tmp_path / "b.html").read_text()
    with pytest.raises(AlarmkitError, match=r"^run 3 needs journal=Journal\(path\)"):
        export_html(3, tmp_path / "c.html")
    with pytest.raises(AlarmkitError, match=r"^folder '.*nope' does not exist"):
        export_html(fig, tmp_path / "nope" / "d.html")
    with pytest.raises(AlarmkitError, match=r"^report_html needs plotly figures, got \['str'\]"):
        report_html(["x"])


def test_cli_export_writes_the_report_and_names_the_known_runs_on_a_bad_id(tmp_path, capsys):
    db = tmp_path / "j.duckdb"
    with Journal(db) as j:
        run_scenario("lease-normal", seed=1, journal=j, profile=EXACT)
    out = tmp_path / "r.html"
    assert cli(["export", "--db", str(db), "--run", "1", "--out", str(out)]) == 0
    assert out.stat().st_size > 4_000_000 and f"wrote {out}" in capsys.readouterr().out
    assert cli(["export", "--db", str(db), "--run", "7", "--out", str(out)]) == 2
    assert capsys.readouterr().err == "alarmkit: error: no run 7 in the journal; runs here: [1]\n"
    assert cli(["export", "--db", str(tmp_path / "none.duckdb"), "--run", "1"]) == 2
    assert "no journal file" in capsys.readouterr().err and not (tmp_path / "none.duckdb").exists()
    with pytest.raises(SystemExit) as exit_:
        cli(["export", "--db", str(db), "--run", "one"])
    assert exit_.value.code == 2 and "run ids are integers, got 'one'" in capsys.readouterr().err


@pytest.mark.slow
def test_the_demo_writes_one_report_per_scenario_named_after_it(demo_run):
    tmp_path, results, out = demo_run  # run once per test process (tests/conftest.py)
    names = sorted(p.name for p in (tmp_path / "reports").glob("*.html"))
    assert (tmp_path / "reports" / "plotly.min.js").stat().st_size > 3_000_000  # shared by every report
    # one page per scenario run, the index, and a counterexample page for each anti-pattern that held unfaulted
    assert "index.html" in names
    replays = {n for n in names if n.endswith(".counterexample.html")}
    assert replays and replays <= {f"{s.name}.counterexample.html" for s in ak.list_scenarios() if s.kind == "anti-pattern"}
    assert set(names) - replays - {"index.html"} == {f"{r['scenario']}.html" for r in results}
    assert all(r["report_html"].endswith(f"{r['scenario']}.html") for r in results)
    with ak.Journal(tmp_path / "j.duckdb", read_only=True) as j:  # the summary line counts what is in the file
        events, runs = len(j.events()), len(j.runs())
    assert runs > len(results)  # keepalive-celld-vs-workerd journals its workerd peer as a run too
    # a new file: it says so, with the run ids it holds
    assert f"wrote {events} events from {runs} runs (runs 1-{runs}) of {len(results)} scenarios to a new journal" in out


def test_fmt_ms_is_exact_and_readable():
    assert [fmt_ms(v) for v in (0, 850, 3_072, 139_974, 725_000, 3_605_000, -2_000)] == [
        "0 ms", "850 ms", "3.072 s", "139.974 s", "12 min 5 s", "1 h 0 min 5 s", "-2 s"]


def test_a_duplicate_is_an_effect_run_again_on_the_same_object_as_check_counts_it():
    """Two objects each running send(1) once is no duplicate (the prod-* scenarios' naive and fixed objects);
    one object running it twice is, in the timeline and in the report's summary alike."""
    from alarmkit.viz.plots import drawn_kinds

    ev = frame([(0, "naive", "effect", None, None, None, {"name": "send", "key": 1}),
                (5, "fixed", "effect", None, None, None, {"name": "send", "key": 1}),
                (9, "fixed", "effect", None, None, None, {"name": "send", "key": 1})])
    assert drawn_kinds(ev).tolist() == ["effect", "effect", DUPLICATE]
    rows = {k: v for k, v, _ in summary_rows(ev, {"run_id": 1})}
    assert rows["duplicate effects"] == "1: send(1) on fixed ×2"
    early = run_scenario("prod-set-early-throw-later", profile=EXACT)
    assert "duplicate effects" not in {k for k, _, _ in summary_rows(early.events, {"run_id": 1})}
    assert (drawn_kinds(early.events) == DUPLICATE).sum() == 0


def test_the_summary_counts_uncounted_retries_as_retries():
    """prod-runaway-internal-errors: 'runaway' fails with uncounted errors (retry_count stays 0) and
    'counted' fails 7 times; every attempt after an object's first is a retry."""
    r = run_scenario("prod-runaway-internal-errors", profile=EXACT)
    fires = r.events[r.events.kind == "fire"]
    per_object = fires.groupby("object_id").size().to_dict()
    retries = sum(n - 1 for n in per_object.values())
    counted = int((fires.retry_count.fillna(0) > 0).sum())
    rows = {k: v for k, v, _ in summary_rows(r.events, {"run_id": 1})}
    assert per_object == {"counted": 7, "runaway": 233} and counted == 6
    assert rows["attempts"].startswith(f"240 alarm() runs: 2 first, {retries} retries ({counted} counted; "
                                       f"{retries - counted} uncounted, retry_count 0; ")


def test_a_window_is_the_view_the_time_axis_spans():
    """window=(110 s, 190 s) of prod-set-early-throw-later: the axis spans 109.2..190.8 s (1 % padding),
    not 0 to the last event kept; compare() does the same on its shared axis; a reversed window is refused."""
    ev = run_scenario("prod-set-early-throw-later", profile=EXACT).events
    fig = timeline(ev, window=(110_000, 190_000))
    assert tuple(fig.layout.xaxis.range) == (109.2, 190.8)
    chain = run_scenario("prod-rearm-at-now").events
    both = compare({"workerd-local": chain, "again": chain}, window=(900, 1_100))
    assert tuple(both.layout.xaxis.range) == (898.0, 1102.0)  # 200 ms: drawn in ms
    with pytest.raises(AlarmkitError, match=r"window must end after it starts, got \(5, 5\)"):
        timeline(ev, window=(5, 5))


def test_the_ladder_of_uncounted_retries_reads_in_one_unit_with_visible_marks():
    """prod-runaway-internal-errors: every uncounted retry scheduled, up to the 1024 s cap; the wait axis is
    labelled in seconds throughout (not '17 min 4 s' beside '512 s'); the open uncounted marks are not faded to 0.35."""
    ev = run_scenario("prod-runaway-internal-errors", profile=EXACT).events
    scheduled = ev[ev.kind == "retry_scheduled"]
    fig = backoff_ladder(ev)
    assert list(fig.layout.yaxis.ticktext) == [f"{2 ** n} s" for n in range(1, 11)]
    [uncounted] = [t for t in fig.data if t.name == "retry (uncounted)"]
    assert len(uncounted.x) == scheduled.detail.str.contains('"counted":false').sum() == 233
    assert max(uncounted.x) == 9 and uncounted.marker.opacity == 0.7 and uncounted.marker.line.width == 2
