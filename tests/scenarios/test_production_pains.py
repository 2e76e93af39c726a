"""What bites in production: the six prod-* scenarios, their exact virtual times and
outcomes, and the pieces they brought (the runaway_retries invariant, the forgotten_alarms fault,
uncounted="always", the rearm_at_now and id_name_since profile settings, ctx.id.name).

Every scenario runs a naive object and a fixed one (labels ``naive``/``fixed``) under one workload;
the checks show the loss on ``naive`` and nothing on ``fixed``.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter

import pytest

import alarmkit as ak
from alarmkit.errors import FaultPlanError, InvalidValue
from alarmkit.journal.invariants import DEFAULT_MAX_UNCOUNTED_RETRIES

# the workerd profiles' fire latency: seeded draws from 300 fires measured on local workerd, from a generator of
# their own; seed 0 (every scenario below) draws 1, 1, 1, 1, 1, 2, 1, 1, ... ms, so most fires here are 1 ms late,
# and the retry jitter (the seeded source's) is what it was under the exact 2 ms


def fires(result) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for a in result.attempts:
        out.setdefault(a["object_id"], []).append(a["t_ms"])
    return out


def violations(report) -> Counter:
    return Counter((v.object, v.invariant) for v in report.violations)


def status(report) -> dict:
    return {(o["object"], o["key"]): (o["status"], o["done_ms"]) for o in report.obligations}


def test_the_six_are_registered_with_their_profiles_and_default_faults():
    prod = {s.name: s for s in ak.list_scenarios() if s.name.startswith("prod-")}
    assert sorted(prod) == ["prod-clobbered-alarm", "prod-cold-wake-name", "prod-rearm-at-now",
                            "prod-runaway-internal-errors", "prod-set-early-throw-later", "prod-stale-overdue-alarm"]
    assert prod["prod-rearm-at-now"].profile == "workerd-local"
    assert prod["prod-stale-overdue-alarm"].faults == {"forgotten_alarms": [{"at_ms": 1_000}]}
    assert prod["prod-runaway-internal-errors"].faults == {"object": "runaway", "uncounted": "always"}
    from alarmkit import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["list", "--json"]) == 0
    listed = {s["name"]: s["faults"] for s in json.loads(out.getvalue())}
    assert listed["prod-stale-overdue-alarm"] == {"forgotten_alarms": [{"at_ms": 1_000}]} and listed["lease-normal"] is None


def test_a_default_plan_is_checked_at_registration_and_replaced_by_an_explicit_one():
    from alarmkit.scenarios import SCENARIOS, scenario

    with pytest.raises(FaultPlanError, match=r"^unknown fault plan field 'forgotten'"):
        scenario("test-bad-default-plan", "never registered", faults={"forgotten": []})(lambda sim: {})
    assert "test-bad-default-plan" not in SCENARIOS
    r = ak.run_scenario("prod-runaway-internal-errors", days=1, faults=ak.FaultPlan())
    assert [(a["object_id"], a["retry_count"]) for a in r.attempts][:2] == [("runaway", 0), ("counted", 0)]
    assert len(r.attempts) == 8 and ak.check(r).ok  # runaway succeeds at once; counted: 7 attempts, stuck


# -- 1. the clobbered alarm slot ------------------------------------------------------------------------------
def test_clobbered_alarm_the_idle_timeout_moves_then_deletes_the_reminder_and_the_schedule_table_does_not():
    r = ak.run_scenario("prod-clobbered-alarm")
    # naive: the join moved the reminder's 30 s wake-up to 605 s, the leave deleted it; fixed: 30 s throughout
    assert r["alarm_after"] == {"naive after join": 605_000, "fixed after join": 30_000,
                                "naive after leave": None, "fixed after leave": 30_000}
    assert fires(r) == {"fixed": [30_001]}
    assert r["reminders_left"] == {"naive": ["stand-up"], "fixed": []}
    report = ak.check(r)
    assert violations(report) == {("naive", "alarm_pushed_past_due"): 1, ("naive", "lost"): 1}
    pushed = next(v for v in report.violations if v.invariant == "alarm_pushed_past_due")
    assert pushed.t_ms == 5_000 and "armed the alarm for 605.000 s, 575.000 s after remind('stand-up')" in pushed.message
    assert status(report) == {("naive", "stand-up"): ("lost", None), ("fixed", "stand-up"): ("done", 30_001)}


# -- 2. set early, throw later --------------------------------------------------------------------------------
def test_set_early_throw_later_the_queued_alarm_replaces_the_retry_and_the_period_is_never_sent():
    r = ak.run_scenario("prod-set-early-throw-later")
    # both fail at 120.001 s (the mail service is down 119-121 s); only fixed is retried (2 s + 432 ms jitter
    # + 1 ms); the two 180 s fires share their instant's 2 ms draw (same-instant delivery, _scheduler.py)
    assert fires(r) == {"naive": [60_001, 120_001, 180_002, 240_001, 300_001],
                        "fixed": [60_001, 120_001, 122_434, 180_002, 240_001, 300_001]}
    assert [a["retry_count"] for a in r.attempts if a["object_id"] == "fixed"] == [0, 0, 1, 0, 0, 0]
    ev = r.events
    assert list(ev[ev["kind"] == "retry_scheduled"]["object_id"]) == ["fixed"]  # naive: no retry at all
    report = ak.check(r)
    assert status(report)[("naive", 2)] == ("lost", None)
    assert status(report)[("fixed", 2)] == ("done", 122_434)
    assert all(s == "done" for (obj, _), (s, _t) in status(report).items() if obj == "fixed")
    assert {obj for obj, _ in violations(report)} == {"naive"}
    assert violations(report)[("naive", "lost")] == 1


# -- 3. runaway internal errors -------------------------------------------------------------------------------
def test_runaway_internal_errors_wake_the_object_for_three_days_and_the_invariant_reports_the_cost():
    r = ak.run_scenario("prod-runaway-internal-errors")
    f = fires(r)
    # waits 2, 4, 8 ... 512 s then capped at 1024 s (+ up to 25 % jitter): alarm-scheduler.h
    assert f["runaway"][:13] == [60_001, 62_434, 67_347, 75_430, 92_491, 128_680, 199_315, 353_003, 663_389,
                                 1_215_145, 2_492_848, 3_641_786, 4_759_648]
    assert len(f["runaway"]) == 233 and f["runaway"][-1] == 259_101_567
    assert {a["retry_count"] for a in r.attempts if a["object_id"] == "runaway"} == {0}
    gaps = [b - a for a, b in zip(f["runaway"][10:], f["runaway"][11:])]
    assert all(1_024_000 <= g <= 1_280_000 for g in gaps)
    # the counted failure beside it: 7 attempts in 2.5 minutes, then abandoned
    assert f["counted"] == [60_001, 62_199, 66_976, 75_838, 95_793, 131_774, 210_819]
    assert r["alarm_at_end"] == {"runaway": 60_000, "counted": None}
    assert r.sim.now == r.horizon_ms == 3 * 86_400_000
    assert r.sim.faults.applied() == {"uncounted": 233}
    report = ak.check(r)
    assert violations(report) == {("runaway", "runaway_retries"): 1, ("counted", "lost"): 1}
    v = next(v for v in report.violations if v.invariant == "runaway_retries")
    assert v.t_ms == 2_492_848  # the 11th uncounted retry: one more than DEFAULT_MAX_UNCOUNTED_RETRIES
    assert DEFAULT_MAX_UNCOUNTED_RETRIES == 10
    assert v.message == ("the alarm scheduled at 60.000 s failed without the failures counting and was retried 233 "
                         "times (more than 10) from 60.001 s to 259101.567 s: 233 alarm() invocations over 72.0 h, "
                         "and retry_count never moved")
    assert status(report)[("runaway", "report")] == ("stuck", None)  # the faults never stopped: not "lost"
    # the bound is a parameter: 233 retries pass a bound of 233, not one of 232
    assert not [v for v in ak.check(r, max_uncounted_retries=233).violations if v.invariant == "runaway_retries"]
    assert [v.t_ms for v in ak.check(r, max_uncounted_retries=232).violations if v.invariant == "runaway_retries"] \
        == [f["runaway"][-1]]


def test_runaway_retries_ends_a_streak_at_success_and_refuses_a_bad_bound():
    # three uncounted failures, then a success that revokes both leases: a streak of 3, under a bound of 2 a
    # violation, under 3 none
    r = ak.run_scenario("lease-normal", faults=ak.FaultPlan(uncounted=[1, 2, 3]))
    assert [a["retry_count"] for a in r.attempts] == [0, 0, 0, 0]
    assert [v.invariant for v in ak.check(r, max_uncounted_retries=2).violations] == ["runaway_retries"]
    assert ak.check(r, max_uncounted_retries=3).ok
    with pytest.raises(InvalidValue, match=r"^max_uncounted_retries must be an int >= 0 .*got -1$"):
        ak.check(r, max_uncounted_retries=-1)


def test_uncounted_always_is_a_plan_value_and_round_trips():
    plan = ak.FaultPlan(uncounted="always")
    assert ak.FaultPlan.from_json(plan.to_json()) == plan and ak.FaultPlan.from_toml(plan.to_toml()) == plan
    assert plan.size() == 1
    with pytest.raises(FaultPlanError, match=r"uncounted.*, or \"always\""):
        ak.FaultPlan(uncounted="sometimes")


# -- 4. setAlarm(Date.now()) inside alarm() -------------------------------------------------------------------
def test_rearm_at_now_in_the_scheduled_millisecond_stalls_on_workerd_local_and_now_plus_one_chains():
    r = ak.run_scenario("prod-rearm-at-now")  # fire latency 0: ctx.now() in alarm() is its scheduled time
    assert r.profile == "workerd-local" and r["rearm_at_now"] == "same-time-unfired"
    assert fires(r) == {"naive": [1_000], "fixed": [1_000, 1_001, 1_002, 1_003, 1_004]}
    # the stalled alarm stays stored (overdue) and is never delivered, for the whole 30 minutes
    assert r["status"] == {"naive": {"done": 1, "alarm": 1_000}, "fixed": {"done": 5, "alarm": None}}
    report = ak.check(r)
    assert violations(report) == {("naive", "lost"): 4}
    assert [k for (obj, k), (s, _) in status(report).items() if obj == "naive" and s == "lost"] == [2, 3, 4, 5]


def test_rearm_at_now_fires_under_the_workerd_profile():
    r = ak.run_scenario("prod-rearm-at-now", profile="workerd")
    assert r["rearm_at_now"] == "fires"
    assert fires(r) == {"naive": [1_000] * 5, "fixed": [1_000, 1_001, 1_002, 1_003, 1_004]}
    assert r["status"] == {"naive": {"done": 5, "alarm": None}, "fixed": {"done": 5, "alarm": None}}
    assert ak.check(r).ok


def test_rearm_at_now_chains_on_workerd_local_once_the_handler_starts_a_millisecond_late():
    # now is then one ms past the running alarm's time: a new time, which the alarm manager hears of
    r = ak.run_scenario("prod-rearm-at-now", fire_latency_ms=1)
    assert fires(r) == {"naive": [1_001, 1_002, 1_003, 1_004, 1_005], "fixed": [1_001, 1_003, 1_005, 1_007, 1_009]}
    assert ak.check(r).ok


def test_a_stalled_alarm_fires_once_code_sets_the_alarm_again():
    sim = ak.Simulation(profile="workerd-local", fire_latency=0)
    from alarmkit.scenarios.pains_platform import Ticker

    t = sim.namespace("T", Ticker).get("t")
    sim.run(until=1_000)
    sim.call(t.start(3))
    sim.run(until=60_000)
    assert sim.alarms() == {"t": 1_000}  # stored, overdue since 1 s, never fired again
    sim.call(t.start(3))  # set_alarm from a request: the alarm manager hears of it
    sim.run(until=120_000)
    assert [int(x) for x in sim.events().query("kind == 'fire'")["t_ms"]] == [1_000, 60_000]


# -- 5. the stored alarm in the past that never fires ---------------------------------------------------------
def test_stale_overdue_alarm_arm_only_if_none_stalls_and_rearm_if_overdue_purges():
    r = ak.run_scenario("prod-stale-overdue-alarm")
    assert r["alarm_after_first_tag"] == {"naive": 5_000, "fixed": 5_000}
    # at 60 s get_alarm() still says 5 s: naive leaves it, fixed sees it is overdue and arms 65 s
    assert r["alarm_after_second_tag"] == {"naive": 5_000, "fixed": 65_000}
    assert fires(r) == {"fixed": [65_001]}
    assert r["tags_left"] == {"naive": [{"tag": "tag-a"}, {"tag": "tag-b"}], "fixed": []}
    assert r.sim.alarms() == {"naive": 5_000, "fixed": None}  # naive: overdue for 40 minutes
    ev = r.events
    faults = ev[ev["kind"] == "fault"]
    assert list(zip(faults["t_ms"], faults["object_id"])) == [(1_000, "naive"), (1_000, "fixed")]
    assert r.sim.faults.applied() == {"forgotten_alarms[0]": 2}
    report = ak.check(r)
    assert violations(report) == {("naive", "lost"): 2}
    assert status(report)[("fixed", "tag-a")] == ("done", 65_001)


def test_stale_overdue_alarm_without_the_fault_loses_nothing_and_a_restart_revives_it():
    r = ak.run_scenario("prod-stale-overdue-alarm", faults=ak.FaultPlan())
    assert fires(r) == {"naive": [5_001, 65_001], "fixed": [5_001, 65_001]} and ak.check(r).ok
    plan = ak.FaultPlan(forgotten_alarms=[{"at_ms": 1_000, "object": "naive"}], restarts=[{"at_ms": 10_000}])
    r = ak.run_scenario("prod-stale-overdue-alarm", faults=plan)
    assert fires(r)["naive"][0] == 10_001  # the reload after the restart delivers the stored alarm


def test_forgotten_alarms_is_validated_and_says_when_it_did_not_apply():
    with pytest.raises(FaultPlanError, match=r"^fault plan field 'forgotten_alarms\[0\]' needs 'at_ms'"):
        ak.FaultPlan(forgotten_alarms=[{"object": "a"}])
    plan = ak.FaultPlan(forgotten_alarms=[{"at_ms": 10}])
    assert ak.FaultPlan.from_toml(plan.to_toml()) == plan
    ak.run_scenario("lease-normal", faults=plan)  # at 10 ms the alarm is waiting: applied
    assert plan.applied() == {"forgotten_alarms[0]": 1}
    r = ak.run_scenario("prod-stale-overdue-alarm", faults=ak.FaultPlan(forgotten_alarms=[{"at_ms": 1_000}]),
                        profile="celld")
    from alarmkit.runtime._applied import unapplied

    assert unapplied(r.sim.faults) == {"forgotten_alarms[0]": "the celld scheduler keeps no alarm apart from the "
                                                              "stored one: nothing to forget"}


# -- 6. the cold wake that loses the object's name ------------------------------------------------------------
def test_cold_wake_name_missing_before_2026_03_15_fails_every_attempt_and_the_stored_name_works():
    r = ak.run_scenario("prod-cold-wake-name")
    assert r["name_on_cold_alarm"] is False
    assert fires(r) == {"naive": [120_001, 122_434, 126_829, 136_382, 156_030, 191_476, 256_140], "fixed": [120_001]}
    ev = r.events
    errors = ev[(ev["kind"] == "handler_error")]["detail"]
    assert errors.str.contains("NameUnavailable").all() and len(errors) == 7
    assert list(ev[ev["kind"] == "abandoned"]["t_ms"]) == [256_140]
    report = ak.check(r)
    assert violations(report) == {("naive", "lost"): 1}
    assert status(report)[("fixed", "fixed")] == ("done", 120_001)


# both draw from their measured samples, seeded: workerd's quiet 300 fires (seed 0: 1 ms), workerd-local's
# 27 first fires (seed 0: 0 ms); the two objects share their instant's draw (same-instant delivery)
@pytest.mark.parametrize("profile, date, at_ms", [("workerd", "2026-03-15", 120_001),
                                                  ("workerd-local", "2026-01-28", 120_000)])
def test_cold_wake_name_is_present_from_the_compat_date_and_on_local_workerd(profile, date, at_ms):
    r = ak.run_scenario("prod-cold-wake-name", profile=profile, compatibility_date=date)
    assert r["name_on_cold_alarm"] is True
    assert fires(r) == {"naive": [at_ms], "fixed": [at_ms]} and ak.check(r).ok
    seen = r.events.query("kind == 'name_seen'")["detail"].tolist()
    assert seen == ['{"name":"naive"}', '{"name":"fixed"}']


def test_ctx_id_is_the_name_with_a_name_attribute_and_profile_dates_are_checked():
    from alarmkit.runtime import ObjectId

    oid = ObjectId("room", None)
    assert oid == "room" and isinstance(oid, str) and oid.name is None
    with pytest.raises(InvalidValue, match=r"^profile 'workerd' setting compatibility_date must be a date 'YYYY-MM-DD', "
                                           r"got '2026-3-1'$"):
        ak.Simulation(compatibility_date="2026-3-1")
    with pytest.raises(InvalidValue, match=r"^profile 'workerd' setting rearm_at_now must be one of "
                                           r"\['fires', 'same-time-unfired'\], got 'never'$"):
        ak.Simulation(rearm_at_now="never")
    assert ak.get_profile("workerd").replace(id_name_since=None).id_name_on_cold_alarm()
