"""Invariants over a finished run: lost vs stuck, duplicates, early, overlapping, pushed and dropped wake-ups."""

import pytest

from alarmkit import AlarmkitError, FaultPlan, Journal, check, check_run, run_scenario
from alarmkit.journal.invariants import INVARIANTS
from alarmkit.runtime.profiles import PROFILES

# these tests are about the invariants, not fire lateness: simulations here take the exact fire latency
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)
EXACT = PROFILES["workerd"].replace(fire_latency="exact")

DUES = {"lease-0": 30_000, "lease-1": 90_000, "lease-2": 15_000, "lease-3": 240_000, "lease-4": 105_000,
        "lease-5": 170_000}


def row(seq, t, kind, obj="o", sched=None, prev=None, retry=None, detail=None):
    return (seq, t, "NS", obj, kind, sched, prev, retry, detail)


def test_the_correct_ledger_owes_six_revokes_and_does_each_two_ms_after_due():
    rep = check(run_scenario("lease-ledger", seed=0, profile=EXACT))
    assert rep.ok and rep.violations == []
    t = rep.table()
    assert dict(zip(t["key"], t["due_ms"])) == DUES
    assert list(t["done_ms"] - t["due_ms"]) == [2] * 6 and list(t["late_ms"]) == [2] * 6
    assert list(t["count"]) == [1] * 6 and set(t["status"]) == {"done"}
    assert rep.summary()["max_late_ms"] == 2


def test_duplicates_of_an_idempotent_effect_are_reported_not_failures():
    r = run_scenario("lease-ledger", seed=0, faults=FaultPlan(effect_throws=[{"effect": "revoke"}]), profile=EXACT)
    rep = check(r)
    assert rep.ok
    assert rep.duplicates == [{"object": "ledger", "effect": "revoke", "key": "lease-2", "count": 2}]
    assert rep.summary()["extra_effects"] == 1


def test_exhaustion_without_revival_is_lost_with_when_and_why():
    r = run_scenario("lease-no-revival", seed=0, faults=FaultPlan(handler_throws=[1, 2, 3, 4, 5, 6, 7]), profile=EXACT)
    rep = check(r)
    assert [v.invariant for v in rep.violations] == ["lost"] * 6
    lost = {o["key"]: o["why"] for o in rep.lost}
    assert lost["lease-2"] == (
        "revoke('lease-2') due at 15.000 s never ran by the horizon 2400.000 s: the last fault ended at 151.146 s, "
        "the object was woken at 360.000 s and still did not do it; no alarm pending at the end; the platform "
        "abandoned its alarm at 151.146 s after the last retry"
    )


def test_faults_that_never_stop_leave_work_stuck_not_lost():
    r = run_scenario("lease-ledger", seed=0, faults=FaultPlan(handler_throws="always"), profile=EXACT)
    rep = check(r)
    assert rep.ok and len(rep.stuck) == 6 and rep.summary()["done"] == 0
    assert "overdue since 15.000 s at the horizon 2400.000 s: nothing woke the object after the last fault" in (
        next(o["why"] for o in rep.stuck if o["key"] == "lease-2"))


def test_lost_needs_a_wake_after_the_due_time_and_the_grace_before_the_horizon():
    ob = [{"object": "o", "effect": "send", "key": "k", "due_ms": 1_000, "since_ms": 0}]
    no_wake = [row(1, 0, "construct")]
    (o,) = check_run(no_wake, ob, horizon_ms=10_000).obligations
    assert o["status"] == "stuck" and "nothing woke the object after it was due" in o["why"]
    woken = no_wake + [row(2, 5_000, "construct")]
    assert check_run(woken, ob, horizon_ms=10_000, grace_ms=5_000).obligations[0]["status"] == "lost"
    assert check_run(woken, ob, horizon_ms=10_000, grace_ms=5_001).obligations[0]["status"] == "stuck"
    faulty = woken + [row(3, 6_000, "fault", detail={"fault": "evict"})]
    (o,) = check_run(faulty, ob, horizon_ms=10_000, grace_ms=1_000).obligations
    assert o["status"] == "stuck" and "the last fault ended at 6.000 s" in o["why"]


def test_a_restart_fault_ends_when_the_runtime_is_back():
    ob = [{"object": "o", "effect": "send", "key": "k", "due_ms": 1_000, "since_ms": 0}]
    events = [row(1, 2_000, "fault", obj=None, detail={"fault": "restart", "downtime_ms": 3_000}),
              row(2, 4_000, "construct"), row(3, 5_000, "construct")]
    (o,) = check_run(events, ob, horizon_ms=20_000, grace_ms=1_000).obligations
    assert o["status"] == "lost" and "the last fault ended at 5.000 s, the object was woken at 5.000 s" in o["why"]


def test_early_effect_reading_the_clock_revokes_a_valid_lease():
    # the turn model: alarm()'s DELETE and its re-arm are one turn, so a crash cannot split them (before it,
    # a crash at the third await did, and the retry revoked lease-0 at 17.436 s). Late fires plus a crash in
    # the second alarm() (after its revoke ran, before its DELETE) still make a run revoke a valid lease
    plan = FaultPlan(crashes=[{"task": "alarm", "invocation": 2, "at_await": 1}],
                     latency={"kind": "failover", "lo": 1, "hi": 5, "p": 0.44})
    rep = check(run_scenario("lease-reads-clock", seed=0, faults=plan, profile=EXACT))
    (v,) = rep.violations
    assert (v.invariant, v.object, v.key, v.t_ms) == ("early_effect", "ledger", "lease-1", 51_016)
    assert v.message == "revoke('lease-1') ran at 51.016 s, 38.984 s before it was due at 90.000 s"


def test_early_fire_and_concurrent_alarm_from_events():
    events = [
        row(1, 990, "fire", sched=1_000),
        row(2, 995, "fire", sched=1_000),
        row(3, 996, "handler_ok"),
        row(4, 2_000, "fire", sched=2_000),
        row(5, 2_001, "handler_error"),
    ]
    vs = check_run(events).violations
    # ordered by time, then invariant name
    assert [(v.invariant, v.t_ms) for v in vs] == [("early_fire", 990), ("concurrent_alarm", 995), ("early_fire", 995)]
    assert vs[0].message == "alarm() started at 0.990 s, before its scheduled time 1.000 s"
    assert vs[1].message == "alarm() started at 0.995 s while the one started at 0.990 s ran"


def test_alarm_as_data_pushes_the_alarm_past_an_owed_lease_and_loses_it():
    rep = check(run_scenario("lease-alarm-as-data", seed=0, profile=EXACT))
    pushed = [v for v in rep.violations if v.invariant == "alarm_pushed_past_due"]
    assert pushed[0].message == ("at 40.000 s the user code armed the alarm for 240.000 s, 200.000 s after "
                                 "revoke('lease-0') was due (30.000 s)")
    assert sorted(o["key"] for o in rep.lost) == ["lease-0", "lease-1", "lease-3"]


def test_platform_arms_retries_reloads_duplicates_are_not_pushes():
    ob = [{"object": "o", "effect": "send", "key": "k", "due_ms": 1_000, "since_ms": 0}]
    events = [row(1, 500, "arm", sched=9_000, detail={"cause": cause}) for cause in ("retry", "reload", "duplicate")]
    assert check_run(events, ob, horizon_ms=500, invariants=["alarm_pushed_past_due"]).ok
    user = [row(1, 500, "arm", sched=9_000, detail={"cause": "user"})]
    (v,) = check_run(user, ob, horizon_ms=500, invariants=["alarm_pushed_past_due"]).violations
    assert v.message == "at 0.500 s the user code armed the alarm for 9.000 s, 8.000 s after send('k') was due (1.000 s)"


def test_get_alarm_in_the_handler_drops_the_wakeup():
    rep = check(run_scenario("lease-getalarm-in-handler", seed=0, profile=EXACT))
    first = rep.violations[0]
    assert first.invariant == "dropped_wakeup" and first.t_ms == 15_002
    assert first.message == ("alarm() finished at 15.002 s with 2 obligation(s) owed, the first revoke('lease-0') "
                             "due at 30.000 s, and left no alarm")
    assert {v.invariant for v in rep.violations} == {"dropped_wakeup"}  # revival makes it late, not lost


def test_late_is_checked_only_against_a_bound():
    r = run_scenario("lease-ledger", seed=0, faults=FaultPlan(latency=45_000), profile=EXACT)
    assert check(r).ok and check(r).summary()["max_late_ms"] == 45_000
    vs = check(r, max_late_ms=30_000).violations
    # lease-0 and lease-4 ride along with a later lease's fire: exactly 30 s late, within the bound
    assert [(v.invariant, v.key) for v in vs] == [("late", k) for k in ("lease-2", "lease-1", "lease-5", "lease-3")]
    assert vs[0].message == "revoke('lease-2') ran 45.000 s after it was due (bound 30.000 s)"


def test_a_journal_frame_and_the_simulation_rows_give_the_same_report():
    plan = FaultPlan(handler_throws=[1, 2, 3, 4, 5, 6, 7])
    plain = check(run_scenario("lease-no-revival", seed=3, faults=plan, profile=EXACT))
    with Journal() as j:
        journaled = check(run_scenario("lease-no-revival", seed=3, faults=plan, journal=j, profile=EXACT))
    assert journaled.violations == plain.violations
    assert journaled.obligations == plain.obligations


def test_invariants_can_be_chosen_and_unknown_names_are_refused():
    r = run_scenario("lease-alarm-as-data", seed=0, profile=EXACT)
    assert {v.invariant for v in check(r, invariants=["lost"]).violations} == {"lost"}
    with pytest.raises(AlarmkitError, match=r"^unknown invariant 'lots'; known: \["):
        check(r, invariants=["lots"])
    with pytest.raises(AlarmkitError, match=r"^check\(\) needs the RunResult run_scenario returns, got dict"):
        check({"scenario": "x"})
    assert set(INVARIANTS) == {"lost", "early_effect", "early_fire", "concurrent_alarm", "alarm_pushed_past_due",
                               "dropped_wakeup", "late", "runaway_retries", "expect", "library_dropped"}
