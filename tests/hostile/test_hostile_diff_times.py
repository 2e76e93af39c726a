"""Generated runs for ``ak.diff``'s times: a run shifted as a whole never agrees under exact
alignment and always agrees counted from its first request; one event moved by more than the
tolerance is always a row with that delta; the order a DataFrame is sorted in never changes the
diff or its invariants; hostile cell values (lone surrogates, floats, text in an int column) give a
RunDiff or one AlarmkitError, never another exception."""

from __future__ import annotations

import json

import pandas as pd
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import alarmkit as ak

COLS = ["seq", "t_ms", "namespace", "object_id", "kind", "scheduled_ms", "prev_scheduled_ms", "retry_count", "detail"]


@st.composite
def runs(draw, max_cycles=6):
    """A plausible run: per object, arms, fires 0..30 ms late, handler ends, an effect; failures retried."""
    rows, t = [], draw(st.integers(0, 10_000))
    for _ in range(draw(st.integers(1, max_cycles))):
        obj = draw(st.sampled_from(["a", "b", "c"]))
        due = t + draw(st.integers(1, 5_000))
        rows.append((t, obj, "arm", due, None, 0, {"direction": "new", "cause": "user"}))
        fire = due + draw(st.integers(0, 30))
        for rc in range(draw(st.integers(0, 2)) + 1):
            rows.append((fire, obj, "fire", due, rc, None, {"attempt": rc + 1, "late_ms": fire - due}))
            last = rc == 0 or draw(st.booleans())
            rows.append((fire + 1, obj, "effect", None, None, None, {"name": "send", "key": due}))
            rows.append((fire + 2, obj, "handler_ok" if last else "handler_error", due, rc, None, {}))
            if last:
                break
            fire += 2_000 + draw(st.integers(0, 500))
        t = fire + 3
    return rows


def _frame(rows, shift=0):
    return pd.DataFrame([(i + 1, t + shift, "N", o, k, None if s is None else s + shift, None, rc, json.dumps(d))
                         for i, (t, o, k, s, rc, _, d) in enumerate(rows)], columns=COLS)


@settings(max_examples=12)
@given(rows=runs(), shift=st.integers(1, 10**9) | st.integers(-10**3, -1))
def test_a_run_shifted_as_a_whole_differs_exactly_and_agrees_from_its_first_request(rows, shift):
    assume(min(r[0] for r in rows) + shift >= 0)
    a, b = _frame(rows), _frame(rows, shift)
    d = ak.diff(a, b)
    assert not d.same and d.matched == 0 and d.shift_ms == shift
    assert "the whole run is shifted" in d.summary()
    rel = ak.diff(a, b, align="first_request")
    assert rel.same and "(each counted from its first request)" in rel.summary().splitlines()[0]


@settings(max_examples=12)
@given(rows=runs(), pick=st.integers(0, 10**6), delta=st.integers(1, 10**7), tol=st.sampled_from([0, 250]))
def test_one_event_moved_past_the_tolerance_is_a_row_with_its_delta(rows, pick, delta, tol):
    assume(delta > tol)
    i = pick % len(rows)
    moved = list(rows)
    t, o, k, s, rc, p, det = moved[i]
    moved[i] = (t + delta, o, k, s, rc, p, det)
    d = ak.diff(_frame(rows), _frame(moved), align=tol)
    assert not d.same
    row = d.table()[d.table()["seq_b"] == i + 1]
    assert len(row) == 1 and row["status"].iloc[0] in ("moved", "late") and int(row["delta_ms"].iloc[0]) == delta


@settings(max_examples=8)
@given(rows=runs(), order=st.sampled_from(["kind", "object_id", "detail", "t_ms"]), descending=st.booleans())
def test_the_order_a_frame_is_sorted_in_changes_nothing(rows, order, descending):
    a = _frame(rows)
    b = a.sort_values(order, ascending=not descending, kind="stable")
    d = ak.diff(a, b)
    assert d.same and d.invariants.empty and d.matched == ak.diff(a, a).matched
    assert ak.check_run(b).violations == ak.check_run(a).violations


_hostile = st.one_of(st.just("o\ud800"), st.just("\udfff"), st.floats(allow_nan=True), st.text(max_size=3),
                     st.integers(-2**70, 2**70), st.just(True), st.just([1]), st.just({"a": 1}), st.none())


@settings(max_examples=25)
@given(rows=runs(max_cycles=2), column=st.sampled_from(COLS), value=_hostile, at=st.integers(0, 100))
def test_a_hostile_cell_gives_a_diff_or_one_alarmkit_error(rows, column, value, at):
    b = _frame(rows).astype(object)
    b.at[at % len(b), column] = value
    try:
        d = ak.diff(_frame(rows), b)
    except ak.AlarmkitError as err:
        assert "\n" not in str(err)
        return
    d.summary()
    d.figure()
