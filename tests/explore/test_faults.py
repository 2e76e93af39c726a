"""FaultPlan: a validated plain value, applied deterministically, every fault journaled beside its effect."""

import ast
import math
import random

import pytest

from alarmkit import FaultPlan, FaultPlanError, Journal, Simulation
from alarmkit.runtime.faults import Crash, EffectThrow, Restart
from alarmkit.errors import SqlError
from alarmkit.scenarios.antipatterns import NoRevival
from alarmkit.scenarios.lease import LeaseLedger

# these tests are about fault plans, not fire lateness: simulations here take fire_latency="exact"
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)

LAT = 2  # workerd profile: fixed 2 ms fire latency


def ledger_run(plan, seed=0, until=400_000, journal=None, cls=LeaseLedger):
    """One lease of 1 s on the lease ledger, run under ``plan``."""
    sim = Simulation(seed=seed, faults=plan, journal=journal, fire_latency="exact")
    led = sim.namespace("LEASES", cls).get("ledger")
    sim.call(led.grant("a", 1_000))
    sim.run(until=until)
    return sim


def rows(sim, *kinds):
    return [(r[1], r[4], r[8]) for r in sim.rows if not kinds or r[4] in kinds]


def fires(sim):
    return [(t, retry) for _seq, t, _ns, _o, kind, _s, _p, retry, _d in sim.rows if kind == "fire"]


def effects(sim):
    return sum(r[4] == "effect" for r in sim.rows)


def jitter(seed, n):
    rng = random.Random(seed)
    return [rng.randint(0, math.floor(0.25 * (2000 << k))) for k in range(n)]


# -- applied to a simulation ----------------------------------------------------------------------


def test_handler_throws_at_given_attempts_then_the_third_attempt_revokes():
    sim = ledger_run(FaultPlan(handler_throws=[1, 2]))
    j = jitter(0, 2)
    t2 = 1_000 + LAT + 2000 + j[0] + LAT
    assert fires(sim) == [(1_002, 0), (t2, 1), (t2 + 4000 + j[1] + LAT, 2)]
    assert rows(sim, "fault") == [
        (1_002, "fault", {"fault": "handler_throws", "attempt": 1}),
        (t2, "fault", {"fault": "handler_throws", "attempt": 2}),
    ]
    assert effects(sim) == 1


def test_every_fault_event_comes_right_before_the_failure_it_causes():
    sim = ledger_run(FaultPlan(handler_throws=[1, 2]))
    kinds = [r[4] for r in sim.rows]
    for i, k in enumerate(kinds):
        if k == "fault":
            assert kinds[i + 1] == "handler_error"


def test_always_throwing_uses_up_the_seven_attempts_then_the_alarm_is_abandoned():
    # the ledger without revival: the lease ledger would re-arm when the retries woke an evicted instance
    sim = ledger_run(FaultPlan(handler_throws="always"), cls=NoRevival)
    assert [r for _t, r in fires(sim)] == [0, 1, 2, 3, 4, 5, 6]
    assert len(rows(sim, "fault")) == 7 and len(rows(sim, "abandoned")) == 1
    assert effects(sim) == 0


def test_uncounted_failures_retry_without_using_the_budget():
    sim = ledger_run(FaultPlan(uncounted=[1, 2, 3]))
    assert [r for _t, r in fires(sim)] == [0, 0, 0, 0]  # retry_count never moves
    errors = [d for _t, _k, d in rows(sim, "handler_error")]
    assert [(e["error"], e["counted"]) for e in errors] == [("UncountedFailure", False)] * 3
    delays = [d["base_ms"] for _t, _k, d in rows(sim, "retry_scheduled")]
    assert delays == [2000, 4000, 8000]  # the backoff still grows
    assert effects(sim) == 1


def test_effect_throwing_after_it_ran_runs_the_effect_twice():
    sim = ledger_run(FaultPlan(effect_throws=[{"effect": "revoke", "times": 1}]))
    assert effects(sim) == 2
    (fault,) = [d for _t, _k, d in rows(sim, "fault")]
    assert fault == {"fault": "effect_throws", "effect": "revoke", "key": "a", "call": 1, "when": "after"}


def test_effect_throwing_before_it_ran_happens_once_on_the_retry():
    sim = ledger_run(FaultPlan(effect_throws=[EffectThrow("revoke", when="before")]))
    effect_times = [t for t, _k, _d in rows(sim, "effect")]
    assert effect_times == [1_002 + 2000 + jitter(0, 1)[0] + LAT]
    (err,) = [d for _t, _k, d in rows(sim, "handler_error")]
    assert err["counted"] is True and err["message"] == "injected: effect revoke('a') failed before it happened (call 1)"


def test_crash_at_an_await_kills_the_instance_rolls_back_and_is_not_counted():
    sim = ledger_run(FaultPlan(crashes=[Crash("alarm", 1, 1)]))
    seq = [(t, k) for t, k, _d in rows(sim)][3:8]
    assert seq == [(1_002, "fire"), (1_002, "effect"), (1_002, "fault"), (1_002, "crash"), (1_002, "handler_error")]
    (fault,) = [d for _t, _k, d in rows(sim, "fault")]
    assert fault == {"fault": "crash", "task": "alarm", "invocation": 1, "at_await": 1}
    (err,) = [d for _t, _k, d in rows(sim, "handler_error")]
    assert err["counted"] is False
    assert [r for _t, r in fires(sim)][:2] == [0, 0]
    assert effects(sim) == 2  # the row survived the crash: the retry revokes again


def test_crash_right_after_a_named_effect():
    sim = ledger_run(FaultPlan(crash_after_effect=[{"effect": "revoke", "call": 1}]))
    (crash,) = [d for _t, _k, d in rows(sim, "crash")]
    assert crash["reason"] == "injected right after effect revoke('a')"
    assert effects(sim) == 2


def test_crash_points_name_rpcs_and_constructors_by_their_ordinal():
    plan = FaultPlan(crashes=[{"task": "rpc:grant", "invocation": 1, "at_await": 1}])
    sim = Simulation(seed=0, faults=plan, fire_latency="exact")
    led = sim.namespace("LEASES", LeaseLedger).get("ledger")
    with pytest.raises(Exception, match="crashed: injected at await 1 of rpc:grant"):
        sim.call(led.grant("a", 1_000))
    # the INSERT and the constructor's CREATE TABLE were one turn, and the turn was lost (the turn model)
    with pytest.raises(SqlError, match="no such table"):
        sim.inspect(led).sql("SELECT id FROM leases")
    sim.call(led.grant("a", 1_000))  # the second grant is invocation 2: it goes through
    assert sim.inspect(led).alarm == 1_000


def test_evict_at_a_time():
    sim = ledger_run(FaultPlan(evictions=[{"at_ms": 500}]))
    assert rows(sim, "fault", "evict")[:2] == [
        (500, "fault", {"fault": "evict", "at_ms": 500}),
        (500, "evict", {"reason": "injected", "busy": False}),
    ]
    assert (1_002, "construct", None) in rows(sim, "construct")  # the alarm wakes a fresh instance
    assert effects(sim) == 1


def test_restart_at_a_time_for_a_downtime_reloads_the_alarm():
    sim = ledger_run(FaultPlan(restarts=[Restart(500, 3_000)]))
    assert rows(sim, "fault", "restart") == [
        (500, "fault", {"fault": "restart", "at_ms": 500, "downtime_ms": 3_000}),
        (500, "restart", {"downtime_ms": 3_000}),
    ]
    assert fires(sim)[0] == (3_500 + LAT, 0)


def test_late_fire_from_the_plan_latency():
    sim = ledger_run(FaultPlan(latency=30_000))
    assert fires(sim) == [(31_000, 0)]
    assert rows(sim, "fault") == [(0, "fault", {"fault": "late_fire", "late_ms": 30_000})]


def test_duplicate_delivery_runs_a_succeeded_alarm_once_more():
    sim = ledger_run(FaultPlan(duplicates=[1]))
    assert fires(sim) == [(1_002, 0), (1_004, 0)]
    (arm,) = [d for _t, k, d in rows(sim, "arm") if d["cause"] == "duplicate"]
    assert arm == {"direction": "new", "cause": "duplicate"}
    assert effects(sim) == 1  # the second run finds nothing due


def test_object_limits_handler_faults_to_one_object():
    sim = ledger_run(FaultPlan(object="someone-else", handler_throws="always"))
    assert fires(sim) == [(1_002, 0)] and rows(sim, "fault") == []


def test_a_plan_is_reusable_each_install_resets_its_counters():
    plan = FaultPlan(handler_throws=[1], effect_throws=[{"effect": "revoke"}], duplicates=[1])
    first, second = ledger_run(plan, seed=5).rows, ledger_run(plan, seed=5).rows
    assert first == second


def test_the_journal_records_the_plan_with_the_run():
    plan = FaultPlan(handler_throws=[1], restarts=[Restart(500, 3_000)])
    with Journal() as j:
        sim = ledger_run(plan, journal=j)
        sim.flush()
        assert j.run(sim.run_id)["faults"] == {"handler_throws": [1], "restarts": [{"at_ms": 500, "downtime_ms": 3000}]}
        assert j.sql("SELECT count(*) AS n FROM events WHERE kind = 'fault'")["n"][0] == 2


# -- the value ------------------------------------------------------------------------------------

FULL = FaultPlan(
    object="ledger", handler_throws=[3, 1], uncounted=[2], effect_throws=[{"effect": "revoke", "times": 2, "when": "before"}],
    crashes=[{"task": "rpc:grant", "invocation": 1, "at_await": 2, "object": "ledger"}],
    crash_after_effect=[{"effect": "revoke", "call": 3}], evictions=[{"at_ms": 10}], restarts=[{"at_ms": 5, "downtime_ms": 7}],
    latency={"kind": "failover", "p": 0.25, "max_ms": 60_000}, duplicates=[1, 2],
)


def test_json_and_toml_round_trip():
    assert FaultPlan.from_json(FULL.to_json()) == FULL
    assert FaultPlan.from_toml(FULL.to_toml()) == FULL
    assert FULL.handler_throws == (1, 3)  # sorted, deduplicated attempt numbers
    assert FULL.size() == 11  # every attempt, part and the latency count one


def test_files_round_trip(tmp_path):
    for name in ("plan.json", "plan.toml"):
        assert FaultPlan.load(FULL.save(tmp_path / name)) == FULL


def test_the_python_literal_builds_the_same_plan():
    call = ast.parse(FULL.to_python(), mode="eval").body
    assert call.func.id == "FaultPlan"
    assert FaultPlan(**{k.arg: ast.literal_eval(k.value) for k in call.keywords}) == FULL
    assert repr(FaultPlan()) == "FaultPlan()"


@pytest.mark.parametrize("data, message", [
    ({"crash": []}, r"^unknown fault plan field 'crash'; allowed fields: \['object', 'handler_throws'"),
    ({"handler_throws": "sometimes"}, r"^fault plan field 'handler_throws' must be a list of alarm\(\) attempt numbers .*"
                                      r"or \"always\", got 'sometimes'$"),
    ({"handler_throws": [0]}, r"^fault plan field 'handler_throws\[0\]' must be an int >= 1"),
    ({"crashes": [{"task": "timer", "invocation": 1, "at_await": 1}]},
     r"^fault plan field 'crashes\[0\].task' must be one of \['alarm', 'constructor', 'block_concurrency_while', "
     r"'rpc:<method>'\], got 'timer'$"),
    ({"crashes": [{"task": "alarm", "invocation": 1, "await": 2}]},
     r"^unknown fault plan field 'crashes\[0\].await'; allowed fields: .*at_await"),
    ({"crashes": [{"task": "alarm", "invocation": 1}]}, r"^fault plan field 'crashes\[0\]' needs 'at_await'"),
    ({"effect_throws": [{"effect": "revoke", "when": "during"}]},
     r"^fault plan field 'effect_throws\[0\].when' must be one of \['after', 'before'\], got 'during'$"),
    ({"restarts": {"at_ms": 5}}, r"^fault plan field 'restarts' must be a list of tables with fields \['at_ms', 'downtime_ms'\]"),
    ({"evictions": [{"at_ms": -1}]}, r"^fault plan field 'evictions\[0\].at_ms' must be an int >= 0"),
    ({"latency": {"kind": "failover", "max_ms": 90_000}}, r"^fault plan field 'latency' can make a fire 90000 ms late; "
                                                          r"the documented worst case is a minute"),
    ({"latency": {"kind": "gamma"}}, r"^fault plan field 'latency': unknown latency kind 'gamma'"),
    ([1, 2], r"^a fault plan is a table of fields, got list"),
])
def test_bad_values_name_the_field_and_what_it_allows(data, message):
    with pytest.raises(FaultPlanError, match=message):
        FaultPlan.from_dict(data)


def test_bad_files_name_the_file_and_the_field(tmp_path):
    (tmp_path / "bad.toml").write_text('[[crashes]]\ntask = "alarm"\ninvocation = 1\nat_await = "two"\n')
    with pytest.raises(FaultPlanError, match=r"^bad.toml: fault plan field 'crashes\[0\].at_await' must be an int >= 1"):
        FaultPlan.load(tmp_path / "bad.toml")
    (tmp_path / "broken.json").write_text("{handler_throws: [1]")
    with pytest.raises(FaultPlanError, match=r"^broken.json: fault plan is not valid JSON"):
        FaultPlan.load(tmp_path / "broken.json")
    with pytest.raises(FaultPlanError, match=r"must end in .json or .toml$"):
        FaultPlan.load(tmp_path / "plan.yaml")
    with pytest.raises(FaultPlanError, match=r"^cannot read fault plan file .*missing.toml"):
        FaultPlan.load(tmp_path / "missing.toml")
