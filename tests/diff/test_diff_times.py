"""ak.diff compares when events happen, not only which alarm they belong to: a fire that
moved is late or moved with its delta, "at the same times" only when they are, a run shifted as a
whole differs, and the invariants read each run in seq order."""

import json

import pandas as pd
import pytest

import alarmkit as ak

EPOCH = 1_796_113_096_000  # a real trace's epoch milliseconds (data/real-runs/lease-exhaustion)


def _frame(rows):
    return pd.DataFrame([(i + 1, t, "N", o, k, s, None, rc, json.dumps(d) if d else None)
                         for i, (t, o, k, s, rc, d) in enumerate(rows)],
                        columns=["seq", "t_ms", "namespace", "object_id", "kind", "scheduled_ms", "prev_scheduled_ms",
                                 "retry_count", "detail"])


def _failing(retry_gaps, late_ms_said=None):
    """An alarm due at EPOCH + 500 that fails on every delivery; the n-th retry after the gaps given.
    ``late_ms_said``: the lateness each fire's detail claims (a trace may say what its times do not)."""
    due = EPOCH + 500
    rows = [(EPOCH, "o", "call", None, None, {"method": "arm"}),
            (EPOCH, "o", "arm", due, None, {"direction": "new", "cause": "user"})]
    t = due + 1
    for rc, gap in enumerate([0] + list(retry_gaps)):
        t += gap
        late = (t - due) if late_ms_said is None else late_ms_said[rc]
        rows += [(t, "o", "fire", due, rc, {"attempt": rc + 1, "late_ms": late}),
                 (t + 1, "o", "handler_error", due, rc, {"error": "Error", "message": "boom"})]
    return _frame(rows)


def test_two_traces_failing_over_126_s_and_over_6_h_do_not_agree():
    fast = _failing([2_000, 4_000, 8_000, 16_000, 32_000, 64_000])          # over 126 s
    slow = _failing([2_000, 60_000, 600_000, 3_600_000, 7_200_000, 10_800_000])  # over 6 h
    assert (fast.t_ms.max() - EPOCH) // 1000 == 126 and (slow.t_ms.max() - EPOCH) // 3_600_000 == 6
    d = ak.diff(fast, slow)
    assert not d.same
    late = d.table()[d.table()["status"] == "late"]
    assert [int(x) for x in late["retry_count"]] == [2, 3, 4, 5, 6]
    assert [int(x) for x in late["delta_ms"]] == [56_000, 648_000, 4_232_000, 11_400_000, 22_136_000]
    assert "A and B agree" not in d.summary()
    # even when each fire's detail claims the same lateness, the times say otherwise
    claims = [1] * 7
    d = ak.diff(_failing([2_000] * 6, claims), _failing([2_000, 2_000, 9_000, 2_000, 2_000, 2_000], claims))
    assert [(int(r.retry_count), int(r.delta_ms), int(r.late_a), int(r.late_b))
            for r in d.table().itertuples() if r.status == "late"] == [
        (3, 7_000, 6_001, 13_001), (4, 7_000, 8_001, 15_001), (5, 7_000, 10_001, 17_001), (6, 7_000, 12_001, 19_001)]


@pytest.mark.parametrize("shift", [5_000, 3_600_000, -5_000])
def test_a_run_shifted_as_a_whole_does_not_agree_and_the_summary_says_so(shift):
    a = _failing([2_000, 4_000])
    b = a.copy()
    for c in ("t_ms", "scheduled_ms"):
        b[c] = b[c] + shift
    d = ak.diff(a, b)
    assert not d.same and d.shift_ms == shift and d.matched == 0
    word = "later" if shift > 0 else "earlier"
    text = {5_000: "5 s", 3_600_000: "1 h 0 min 0 s", -5_000: "5 s"}[shift]
    assert (f"Every event A and B share happens {text} {word} in B: the whole run is shifted (align='first_request' "
            "counts each run from its first request).") in d.summary().splitlines()
    assert d.summary().splitlines()[0] == "A and B differ in 7 alarm events; 0 matched (times as journaled)."
    # counted from each run's first request they agree, and the summary names that alignment
    rel = ak.diff(a, b, align="first_request")
    assert rel.same and rel.summary().splitlines()[0] == ("A and B agree: 7 alarm events matched at the same times (each counted "
                                          "from its first request).")


def test_at_the_same_times_only_when_they_are():
    a = _failing([2_000, 4_000])
    b = _failing([2_003, 4_000])
    d = ak.diff(a, b, align=250)
    # a fire 3 ms later is still a late row (a lateness is never tolerated away), its handler's end is within 250 ms
    assert [(r.kind, r.status, int(r.delta_ms)) for r in d.table().itertuples()] == [
        ("fire", "late", 3), ("fire", "late", 3)]
    assert d.largest_ms == 3
    same = ak.diff(a, a.copy(), align=250)
    assert same.summary().splitlines()[0] == ("A and B agree: 7 alarm events matched at the same times (times as journaled, "
                              "250 ms tolerance).")
    ends_only = b.copy()
    ends_only.loc[ends_only["kind"] == "handler_error", "t_ms"] += 40  # the handlers end 40 ms later, fires as they were
    d = ak.diff(_failing([2_003, 4_000]), ends_only, align=250)
    assert d.same and d.largest_ms == 40
    assert d.summary().splitlines()[0] == ("A and B agree: 7 alarm events matched within 250 ms of each other (the largest difference "
                           "40 ms) (times as journaled, 250 ms tolerance).")


def test_clock_start_alignment_counts_each_run_from_its_clock_start():
    a = _failing([2_000])
    b = a.copy()
    for c in ("t_ms", "scheduled_ms"):
        b[c] = b[c] + 60_000
    starts = [_frame([(EPOCH, None, "clock_start", None, None, {"start_ms": EPOCH})]),
              _frame([(EPOCH + 60_000, None, "clock_start", None, None, {"start_ms": EPOCH + 60_000})])]
    runs = []
    for start, run in zip(starts, (a, b)):
        f = pd.concat([start, run], ignore_index=True)
        f["seq"] = range(1, len(f) + 1)
        runs.append(f)
    assert not ak.diff(*runs).same
    d = ak.diff(*runs, align="clock_start")
    assert d.same and "each counted from its clock's start" in d.summary()


def test_the_invariants_read_each_run_in_seq_order_not_frame_order():
    rows = []
    for i in range(3):
        due = i * 1_000 + 500
        rows += [(i * 1_000, "o", "arm", due, None, {"direction": "new", "cause": "user"}),
                 (due + 2, "o", "fire", due, 0, {"attempt": 1, "late_ms": 2}),
                 (due + 3, "o", "handler_ok", due, 0, {"next_ms": None})]
    run = _frame(rows)
    by_kind = run.sort_values("kind", kind="stable")  # the same events, the frame sorted by kind
    assert list(by_kind["kind"][:4]) == ["arm", "arm", "arm", "fire"]
    d = ak.diff(run, by_kind)
    assert d.same and d.invariants.empty
    assert ak.check_run(by_kind).violations == []  # no concurrent_alarm that never happened
