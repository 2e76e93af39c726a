"""Long idle stretches folded out of the explorer's axis: where the folds are, what their markers say,
and that hover text and the replay keep true virtual times. prod-rearm-at-now is the case: two
objects busy from 1 s to 11.004 s, then nothing until the next calls at 30 min."""

import pytest

pytest.importorskip("ipywidgets")

from alarmkit.viz._fold import FOLD_PX, find_gaps, fold_x, make_folds, short_ms  # noqa: E402
from alarmkit.viz.widgets import Explorer  # noqa: E402


def role(fig, name):
    return [t for t in fig.data if (t.meta or {}).get("role") == name]


@pytest.fixture(scope="module")
def rearm():
    return Explorer("prod-rearm-at-now")


def test_the_idle_half_hour_is_folded_where_it_is(rearm):
    meta = rearm.full.layout.meta
    assert meta["scale"] == 60_000 and meta["plot_px"] == 480  # a 700 px figure less the lane names and margins
    [(start, end, x0, x1)] = meta["folds"]
    assert (start, end) == (11_004, 1_800_000)  # the last idle eviction to the next call
    assert x0 == 11_004 / 60_000
    # kept time is 1 % of the view (the 11 s of activity is less): 18,000 ms, of which the fold takes
    # FOLD_PX of the 480 px plot
    assert x1 - x0 == pytest.approx(18_000 * (FOLD_PX / 480) / (1 - FOLD_PX / 480) / 60_000, rel=1e-12)
    assert not meta["cut"]  # the run ends with the calls at 30 min: no idle tail


def test_the_fold_marker_says_how_long_and_its_hover_is_exact(rearm):
    [marker] = role(rearm.full, "fold")
    assert list(marker.text) == ["30 min<br>idle"]
    assert list(marker.hovertext) == ["idle from 11.004 s to 30 min 0 s: 29 min 48.996 s folded out of the axis"]
    [(_, _, x0, x1)] = rearm.full.layout.meta["folds"]
    assert list(marker.x) == [(x0 + x1) / 2]
    bands = [s for s in rearm.full.layout.shapes if s.name == "fold"]
    assert [(s.x0, s.x1) for s in bands] == [(x0, x1)]


def test_ticks_name_true_times_and_the_title_says_folded(rearm):
    ax = rearm.full.layout.xaxis
    assert list(ax.ticktext) == ["0", "4", "8", "11.004", "1,800"]
    [(_, _, x0, x1)] = rearm.full.layout.meta["folds"]
    assert list(ax.tickvals)[-2:] == [x0, x1]
    assert ax.title.text == "virtual time (s) · idle stretches folded"
    assert "1 idle stretch folded (shaded)" in rearm.full.layout.title.text


def test_marks_after_the_fold_stand_at_its_end_and_hover_their_true_time(rearm):
    [(_, _, x0, x1)] = rearm.full.layout.meta["folds"]
    calls = [t for t in role(rearm.full, "events") if t.meta["kind"] == "call"][0]
    assert sorted(set(calls.x)) == [1_000 / 60_000, x1]
    assert all("at 30 min 0 s" in h for x, h in zip(calls.x, calls.hovertext) if x == x1)


def test_the_replay_cursor_inside_a_fold_says_so_and_the_marker_makes_room():
    e = Explorer("prod-rearm-at-now")
    [(a, b, x0, x1)] = e.full.layout.meta["folds"]
    e.time.value = 600_000
    [cursor] = role(e.figure, "cursor")
    assert cursor.x[0] == pytest.approx(x0 + (600_000 - a) / (b - a) * (x1 - x0), rel=1e-12)
    assert list(role(e.figure, "now")[0].text) == ["now 10 min 0 s (idle, folded)"]
    assert list(role(e.figure, "fold")[0].text) == [""]
    assert sum(len(t.x) for t in role(e.figure, "events")) == 31  # everything up to 11.004 s, nothing at 30 min
    e.time.value = 1_800_000
    assert list(role(e.figure, "fold")[0].text) == ["30 min<br>idle"]
    assert sum(len(t.x) for t in role(e.figure, "events")) == 35
    assert list(role(e.figure, "now")[0].text) == ["now 30 min 0 s"]


@pytest.mark.parametrize("scenario", ["guestbook-crash-loop", "keepalive-celld-vs-workerd", "lease-lab"])
def test_runs_without_a_long_idle_stretch_are_not_folded(scenario):
    e = Explorer(scenario)
    assert e.full.layout.meta["folds"] == [] and not role(e.full, "fold")
    assert e.full.layout.xaxis.tickvals is None  # plotly's own ticks on an unfolded axis


def test_which_gaps_fold():
    # three bursts an hour apart: each gap alone is not twice the rest, both together are
    times = [0, 1_000, 3_601_000, 3_602_000, 7_202_000]
    assert find_gaps(times, 0, 7_202_000) == [(1_000, 3_601_000), (3_602_000, 7_202_000)]
    assert find_gaps([0, 200_000, 250_000], 0, 250_000) == []  # under five minutes: part of the story
    busy = [0, 100_000, 200_000, 300_000, 400_000]
    assert find_gaps(busy + [1_000_000], 0, 1_000_000) == []  # 600 s idle is not twice the 400 s kept
    assert find_gaps(busy + [1_300_000], 0, 1_300_000) == [(400_000, 1_300_000)]  # 900 s is
    assert find_gaps([0], 0, 0) == []


def test_the_fold_map_keeps_order_and_gaps():
    folds = make_folds([(1_000, 3_601_000), (3_602_000, 7_202_000)], 0, 7_202_000, 1_000, 500)
    xs = fold_x([0, 1, 1_800, 3_601, 3_602, 5_000, 7_202, float("nan")], folds, 1_000)
    assert list(xs[:7]) == sorted(xs[:7]) and xs[0] == 0 and xs[1] == 1
    assert xs[3] == folds[0].x1 and xs[4] == folds[1].x0 and xs[6] == folds[1].x1
    assert folds[0].x0 < xs[2] < folds[0].x1 and xs[7] != xs[7]  # NaN (a line's gap) stays NaN


def test_short_durations():
    assert [short_ms(v) for v in (1_788_996, 5_400_000, 600_000, 86_400_000 * 3.14, 45_000, 300)] == [
        "30 min", "1.5 h", "10 min", "3.1 d", "45 s", "300 ms"]
