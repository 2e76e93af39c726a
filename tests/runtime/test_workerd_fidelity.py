"""Behaviours recorded on real local workerd 1.20261117.1 (calibration probes ctor_fail_*, no_alarm_class,
long_alarm, delete_all_*), asserted on the simulator at exact virtual times. Fire latency 0 (the exact
option) keeps the times readable: each retry is 2 s << rung plus the seed's jitter, read from the journal."""

import json

import pandas as pd
import pytest

import alarmkit as ak
from alarmkit.errors import InvalidValue, NoAlarmHandler


class Flaky(ak.DurableObject):
    fails = 0  # constructions still to fail (set by the test)

    def __init__(self, ctx, env):
        if type(self).fails > 0:
            type(self).fails -= 1
            raise RuntimeError("constructor fails")
        super().__init__(ctx, env)

    async def arm(self, at):
        await self.ctx.storage.set_alarm(at)

    async def alarm(self, info):
        self.ctx.journal_event("ran", retry_count=info.retry_count)


class NoAlarm(ak.DurableObject):
    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        at = ctx.storage.sql.exec("SELECT 1").to_list() and getattr(type(self), "ctor_arm_at", None)
        if at is not None:
            ctx.storage.set_alarm(at)  # allowed in the constructor

    async def arm(self, at):
        await self.ctx.storage.set_alarm(at)

    async def get(self):
        return await self.ctx.storage.get_alarm()


class Long(ak.DurableObject):
    made = 0

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        type(self).made += 1
        self.instance = type(self).made

    async def arm(self, at):
        self.ctx.storage.put("n", 0)
        await self.ctx.storage.set_alarm(at)

    async def alarm(self, info):
        self.ctx.journal_event("ran", retry_count=info.retry_count, detail={"instance": self.instance})
        if info.retry_count == 0:
            await self.ctx.sleep(20 * 60_000)


class Wiper(ak.DurableObject):
    async def arm_then_wipe(self, at):
        await self.ctx.storage.put("x", 1)
        await self.ctx.storage.set_alarm(at)
        before = await self.ctx.storage.get_alarm()
        await self.ctx.storage.delete_all()
        return before, await self.ctx.storage.get_alarm(), await self.ctx.storage.get("x")

    async def alarm(self, info):
        self.ctx.journal_event("ran")


def rows(sim, *kinds):
    ev = sim.events()
    ev = ev[ev["kind"].isin(kinds)]
    return [(int(r.t_ms), r.kind, None if pd.isna(r.retry_count) else int(r.retry_count)) for r in ev.itertuples()]


def details(sim, kind):
    ev = sim.events()
    return [json.loads(d) for d in ev[ev["kind"] == kind]["detail"]]


def flaky(fails, **kw):
    Flaky.fails = 0
    sim = ak.Simulation(seed=0, fire_latency=0, **kw)
    f = sim.namespace("F", Flaky).get("f")
    sim.call(f.arm(1_000))
    sim.evict(f)  # the alarm must construct its object
    Flaky.fails = fails
    return sim


def test_a_failing_constructor_is_retried_without_counting():
    sim = flaky(2)
    sim.run()
    # real workerd: constructions failed at +0.17 s and +2.2 s, then alarm() ran at +6.4 s with retryCount 0
    assert rows(sim, "fire", "handler_error", "ran") == [
        (1_000, "fire", 0), (1_000, "handler_error", 0), (3_432, "fire", 0), (3_432, "handler_error", 0),
        (7_826, "fire", 0), (7_826, "ran", 0)]
    assert [d["counted"] for d in details(sim, "handler_error")] == [False, False]
    jit = [d["jitter_ms"] for d in details(sim, "retry_scheduled")]
    assert (3_432 - 1_000, 7_826 - 3_432) == (2_000 + jit[0], 4_000 + jit[1])


def test_a_constructor_that_never_recovers_backs_off_for_ever_and_is_never_abandoned():
    sim = flaky(10**9)
    sim.run(until=3 * 86_400_000)
    fails = [t for t, k, _ in rows(sim, "handler_error")]
    rungs = [d["rung"] for d in details(sim, "retry_scheduled")]
    assert len(fails) > 6 and rows(sim, "abandoned") == [] and rows(sim, "ran") == []
    assert rungs[:11] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9]  # 2 s << rung, capped at 2 << 9 s (1024 s)
    assert sim.alarms() == {"f": 1_000}
    Flaky.fails = 0


def test_the_old_counted_behaviour_stays_on_celld():
    sim = flaky(2, profile="celld")
    sim.run(until=600_000)
    # (celld's waker constructs the object first: that construction takes one of the two failures)
    assert [d["counted"] for d in details(sim, "handler_error")] == [True]
    assert [r for _, _, r in rows(sim, "ran")] == [1]
    Flaky.fails = 0


def test_set_alarm_from_a_request_in_a_class_without_alarm_throws_a_type_error():
    sim = ak.Simulation(seed=0, fire_latency=0)
    n = sim.namespace("N", NoAlarm).get("n")
    with pytest.raises(NoAlarmHandler, match=r"^Your Durable Object class must have an alarm\(\) handler in order to "
                                             r"call setAlarm\(\)$") as err:
        sim.call(n.arm(5_000))
    assert isinstance(err.value, TypeError)
    assert sim.alarms() == {"n": None}


def test_a_due_alarm_of_a_class_without_alarm_is_dropped_once_with_a_warning():
    NoAlarm.ctor_arm_at = 1_000
    try:
        sim = ak.Simulation(seed=0, fire_latency=0)
        ns = sim.namespace("N", NoAlarm)
        a, b = ns.get("a"), ns.get("b")
        assert sim.call(a.get()) == 1_000 and sim.call(b.get()) == 1_000  # set in the constructor: allowed
        sim.run()
    finally:
        del NoAlarm.ctor_arm_at
    assert rows(sim, "fire", "handler_error", "retry_scheduled") == [
        (1_000, "fire", 0), (1_000, "handler_error", 0), (1_000, "fire", 0), (1_000, "handler_error", 0)]
    d = details(sim, "handler_error")
    assert [x["retry"] for x in d] == [False, False] and ["warning" in x for x in d] == [True, False]
    assert sim.alarms() == {"a": None, "b": None}


def test_a_deploy_that_removes_alarm_drops_the_stored_alarm():
    sim = ak.Simulation(seed=0, fire_latency=0)
    ns = sim.namespace("F", Flaky)
    Flaky.fails = 0
    sim.call(ns.get("f").arm(10_000))
    sim.restart(1_000)
    ns.cls = NoAlarm  # the new deploy's class has no alarm()
    sim.run()
    assert rows(sim, "fire", "construct", "handler_error", "retry_scheduled", "abandoned")[-3:] == [
        (10_000, "fire", 0), (10_000, "construct", None), (10_000, "handler_error", 0)]
    assert sim.alarms() == {"f": None}


def test_the_warning_comes_again_after_a_restart_as_in_workerds_new_isolate():
    # real workerd 1.20261117.1: two due alarms of FidNoAlarm in one process, one warning; after a restart
    # another due alarm of the same class, a second warning (in the new process's log)
    NoAlarm.ctor_arm_at = 1_000
    try:
        sim = ak.Simulation(seed=0, fire_latency=0)
        ns = sim.namespace("N", NoAlarm)
        sim.call(ns.get("a").get())
        sim.call(ns.get("b").get())
        sim.run(until=2_000)
        NoAlarm.ctor_arm_at = 5_000
        sim.restart(500)
        sim.run(until=2_500)
        sim.call(ns.get("c").get())
        sim.run()
    finally:
        del NoAlarm.ctor_arm_at
    assert rows(sim, "restart", "fire", "handler_error") == [
        (1_000, "fire", 0), (1_000, "handler_error", 0), (1_000, "fire", 0), (1_000, "handler_error", 0),
        (2_000, "restart", None), (5_000, "fire", 0), (5_000, "handler_error", 0)]
    assert ["warning" in x for x in details(sim, "handler_error")] == [True, False, True]


def test_the_15_minute_limit_resets_the_object_and_the_retry_runs_in_a_new_instance():
    sim = ak.Simulation(seed=0, fire_latency=0)
    lg = sim.namespace("L", Long).get("l")
    sim.call(lg.arm(1_000))
    sim.run()
    limit = 15 * 60_000
    jit = details(sim, "retry_scheduled")[0]["jitter_ms"]
    assert rows(sim, "fire", "aborted", "handler_error", "construct", "ran") == [
        (0, "construct", None), (1_000, "fire", 0), (1_000, "ran", 0), (1_000 + limit, "aborted", None),
        (1_000 + limit, "handler_error", 0), (3_000 + limit + jit, "fire", 1), (3_000 + limit + jit, "construct", None),
        (3_000 + limit + jit, "ran", 1)]
    first, second = (d["instance"] for d in details(sim, "ran"))
    assert first != second
    assert details(sim, "handler_error")[0]["error"] == "HandlerTimeout"


@pytest.mark.parametrize("date, deleted", [("2026-11-17", True), ("2026-02-24", True), ("2026-01-28", False)])
def test_delete_all_deletes_the_alarm_from_compatibility_date_2026_02_24(date, deleted):
    sim = ak.Simulation(seed=0, fire_latency=0, compatibility_date=date)
    w = sim.namespace("W", Wiper).get("w")
    assert sim.call(w.arm_then_wipe(500)) == (500, None if deleted else 500, None)
    sim.run()
    assert rows(sim, "ran") == ([] if deleted else [(500, "ran", None)])


def test_the_default_compatibility_date_is_the_calibrations():
    from alarmkit.calibrate.workerd import DEFAULT_COMPAT_DATE

    assert ak.Simulation().profile.compatibility_date == DEFAULT_COMPAT_DATE


@pytest.mark.parametrize("bad", ["2026-2-24", "20260224", "2026-02-30", 20260224, None])
def test_a_malformed_compatibility_date_is_refused_naming_it_and_the_format(bad):
    with pytest.raises(InvalidValue, match=r"compatibility_date must be a date 'YYYY-MM-DD'.*got " + repr(bad).replace("(", r"\(")):
        ak.Simulation(compatibility_date=bad)


class Stamp(ak.DurableObject):
    async def arm(self, at):
        await self.ctx.storage.set_alarm(at)

    async def alarm(self, info):
        self.ctx.journal_event("ran")


def same_instant(seed, **kw):
    sim = ak.Simulation(seed=seed, fire_latency=0, **kw)
    ns = sim.namespace("S", Stamp)
    names = [f"o{i:02d}" for i in range(40)]
    for n in names:
        sim.call(ns.get(n).arm(1_000))
    sim.run()
    ev = sim.events()
    ran = ev[ev["kind"] == "ran"]
    assert set(ran["t_ms"]) == {1_000}  # all at the instant: the exact latency option
    return [names.index(o) for o in ran["object_id"]]


def test_alarms_due_at_one_instant_run_in_an_order_drawn_from_the_seed():
    a, b, c = same_instant(0), same_instant(0), same_instant(1)
    assert sorted(a) == list(range(40))
    assert a == b  # same seed, same order
    assert a != list(range(40)) and c != list(range(40)) and a != c  # neither arming order nor each other


def test_the_exact_option_keeps_arming_order():
    assert same_instant(0, same_instant_order="arming") == list(range(40))


def test_order_handoff_fails_only_under_another_order():
    from alarmkit import FaultPlan, check, explore, run_scenario

    ok = {s: check(run_scenario("order-handoff", seed=s)).ok for s in range(6)}
    assert ok == {0: True, 1: False, 2: True, 3: False, 4: True, 5: True}
    assert all(check(run_scenario("order-handoff", seed=s, profile="celld")).ok for s in range(6))
    bad = run_scenario("order-handoff", seed=1)
    assert bad.summary["order"] == ["consumer", "producer"]
    assert run_scenario("order-handoff", seed=0).summary["order"] == ["producer", "consumer"]
    # explore with no fault at all: the seed (and so the order) is the only dimension
    ex = explore("order-handoff", faults=FaultPlan(), crash_points=None, seeds=6, workers=1, progress=False)
    assert {(c.invariant, c.seed, c.plan.to_json()) for c in ex.counterexamples} >= {("lost", 1, "{}")}


def test_the_loaded_lateness_is_the_recorded_fires_and_the_option_replays_it():
    from collections import Counter

    from alarmkit.calibrate.recorded import fidelity_reference
    from alarmkit.runtime.profiles import LOADED_LATENESS_COUNTS, LOADED_LATENESS_MS

    samples = fidelity_reference()["lateness_many"]["samples_ms"]
    assert len(samples) == 300 and tuple(sorted(Counter(samples).items())) == LOADED_LATENESS_COUNTS
    srt = sorted(LOADED_LATENESS_MS)
    assert (srt[0], srt[149], srt[150], srt[-1]) == (1, 4, 5, 107)
    sim = ak.Simulation(seed=3, fire_latency="measured-loaded")
    ns = sim.namespace("S", Stamp)
    for i in range(50):
        sim.call(ns.get(f"o{i}").arm(1_000))
    sim.run()
    ev = sim.events()
    late = [t - 1_000 for t in ev[ev["kind"] == "fire"]["t_ms"]]
    assert len(late) == 50 and set(late) <= set(LOADED_LATENESS_MS) and len(set(late)) > 5
    again = ak.Simulation(seed=3, fire_latency="measured-loaded")
    ns2 = again.namespace("S", Stamp)
    for i in range(50):
        again.call(ns2.get(f"o{i}").arm(1_000))
    again.run()
    assert again.events()["t_ms"].tolist() == ev["t_ms"].tolist()  # seeded: the same journal
