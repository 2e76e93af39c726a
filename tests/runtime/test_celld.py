"""The celld profile: its retry ladder, generations, minute buckets and waker, against exact virtual times."""

import json

import pytest

import alarmkit as ak
from alarmkit.runtime._celld import CelldScheduler, set_residency, wake_key
from alarmkit.runtime.faults import Faults, UncountedFailure

LOG = []


class Cell(ak.DurableObject):
    async def arm(self, at):
        await self.ctx.storage.set_alarm(at)
        return await self.ctx.storage.get_alarm()

    async def get(self):
        return await self.ctx.storage.get_alarm()

    async def alarm(self, info):
        seen = await self.ctx.storage.get_alarm()
        LOG.append((self.ctx.now(), info.retry_count, info.scheduled_time, seen))
        rearm = getattr(self.env, "REARM_MS", None)
        if rearm is not None and len(LOG) == 1:
            await self.ctx.storage.set_alarm(self.ctx.now() + rearm)
            LOG.append(("get_alarm after re-arm", await self.ctx.storage.get_alarm()))
        if getattr(self.env, "FAILS", 0) >= len([x for x in LOG if isinstance(x[0], int)]):
            raise RuntimeError("the handler fails")


@pytest.fixture
def celld():
    LOG.clear()

    def make(**profile):
        sim = ak.Simulation(profile="celld", **profile)
        return sim, sim.namespace("CELLS", Cell).get("c")

    return make


def kinds(sim, *names):
    ev = sim.events()
    return [(int(r.t_ms), r.kind, json.loads(r.detail) if isinstance(r.detail, str) else None)
            for r in ev[ev["kind"].isin(names)].itertuples()]


def fires(sim):
    ev = sim.events()
    f = ev[ev["kind"] == "fire"]
    return [(int(t), int(r)) for t, r in zip(f["t_ms"], f["retry_count"])]


def test_the_profile_quotes_celld():
    p = ak.PROFILES["celld"]
    assert (p.scheduler, p.retry_start_ms, p.retry_max_tries, p.backoff_max_shift, p.jitter_factor) == (
        "celld", 2_000, 6, 6, 0.0)
    assert (p.facet_alarms, p.waker_tick_ms, p.resident_ms, p.idle_evict_ms) == (None, 60_000, 3_600_000, 3_600_000)
    assert [p.retry_delay_ms(n) for n in range(7)] == [2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000]
    assert wake_key(0, "c") == "wake/1970-01-01T00:00/c"
    assert wake_key(24 * 60 + 61, "x") == "wake/1970-01-02T01:01/x"


def test_counted_failures_retry_six_times_without_jitter_then_the_row_is_deleted(celld):
    sim, c = celld()
    sim.env.FAILS = 99
    sim.call(c.arm(1_000))
    sim.run()
    assert fires(sim) == [(1_002, 0), (3_004, 1), (7_006, 2), (15_008, 3), (31_010, 4), (63_012, 5), (127_014, 6)]
    assert [t for t, *_ in kinds(sim, "abandoned")] == [127_014]
    assert sim.inspect(c).alarm is None and sim.scheduler.rows == {} and sim.scheduler.wake_keys() == []


def test_uncounted_failures_retry_forever_with_the_shift_capped_at_128_s(celld):
    class Flaky(Faults):
        def before_alarm(self, host, invocation, retry_count):
            if invocation <= 8:
                raise UncountedFailure("not the worker's fault")

    sim = ak.Simulation(profile="celld", faults=Flaky())
    c = sim.namespace("CELLS", Cell).get("c")
    sim.call(c.arm(1_000))
    sim.run()
    assert fires(sim) == [(1_002, 0), (3_004, 0), (7_006, 0), (15_008, 0), (31_010, 0), (63_012, 0),
                          (127_014, 0), (255_016, 0), (383_018, 0)]
    assert sim.inspect(c).alarm is None


def test_get_alarm_is_hidden_in_the_handler_and_a_rearm_there_wins(celld):
    sim, c = celld()
    sim.env.REARM_MS = 500
    sim.call(c.arm(1_000))
    sim.run()
    assert LOG == [(1_002, 0, 1_000, None), ("get_alarm after re-arm", 1_502), (1_504, 0, 1_502, None)]
    assert sim.inspect(c).alarm is None


def test_a_rearm_then_a_failure_runs_the_new_arm_not_a_retry(celld):
    sim, c = celld()
    sim.env.REARM_MS = 500
    sim.env.FAILS = 1
    sim.call(c.arm(1_000))
    sim.run()
    assert fires(sim) == [(1_002, 0), (1_504, 0)]
    assert kinds(sim, "retry_scheduled") == []


def test_set_alarm_resets_the_counters_and_draws_a_new_generation(celld):
    sim, c = celld()
    sim.env.FAILS = 99
    sim.call(c.arm(1_000))
    sim.run(until=8_000)  # attempts at 1 002, 3 004, 7 006: two counted retries so far
    sim.env.FAILS = 0
    sim.call(c.arm(9_000))
    sim.run()
    assert fires(sim) == [(1_002, 0), (3_004, 1), (7_006, 2), (9_002, 0)]
    gens = [d["gen"] for _, _, d in kinds(sim, "arm") if d["cause"] == "user"]
    assert gens == [1, 2]


def test_resident_cells_fire_to_the_millisecond(celld):
    sim, c = celld()
    sim.call(c.arm(12_345))
    sim.run()
    assert fires(sim) == [(12_347, 0)]
    assert [(t, d["op"], d["key"]) for t, _, d in kinds(sim, "bucket")] == [
        (0, "write", "wake/1970-01-01T00:00/c"), (12_347, "delete", "wake/1970-01-01T00:00/c")]


def test_a_dormant_cell_waits_for_the_waker_tick(celld):
    sim, c = celld()
    sim.call(c.arm(15_000))
    sim.evict(c)
    sim.run()
    assert fires(sim) == [(60_002, 0)]
    assert [(t, d["spurious"]) for t, _, d in kinds(sim, "wake")] == [(60_000, False)]


def test_a_bucket_due_ahead_of_its_alarm_wakes_the_cell_in_time(celld):
    sim, c = celld()
    sim.call(c.arm(70_000))  # minute 1: its bucket is due at the 60 s tick
    sim.evict(c)
    sim.run()
    assert fires(sim) == [(70_002, 0)]
    assert [t for t, *_ in kinds(sim, "construct")] == [0, 60_000]  # the wake loaded the cell


def test_an_earlier_or_same_minute_entry_covers_a_new_arm(celld):
    sim, c = celld()
    sim.call(c.arm(30_000))
    sim.call(c.arm(90_000))  # later: covered by minute 0, nothing written
    sim.call(c.arm(45_000))  # same minute: covered
    assert sim.scheduler.wake_keys() == ["wake/1970-01-01T00:00/c"]
    assert len(kinds(sim, "bucket")) == 1


def test_moving_earlier_writes_the_new_entry_before_deleting_the_old(celld):
    sim, c = celld()
    sim.call(c.arm(150_000))
    sim.call(c.arm(30_000))
    assert [(d["op"], d["key"]) for _, _, d in kinds(sim, "bucket")] == [
        ("write", "wake/1970-01-01T00:02/c"), ("write", "wake/1970-01-01T00:00/c"), ("delete", "wake/1970-01-01T00:02/c")]


@pytest.mark.parametrize("resident_ms", [3_600_000, 5_000])
def test_a_stale_entry_costs_one_spurious_wake_and_no_lateness(celld, resident_ms):
    sim, c = celld(resident_ms=resident_ms)
    sim.call(c.arm(30_000))
    sim.run(until=10_000)
    sim.call(c.arm(200_000))  # moved later: the minute-0 entry still covers it, and is now stale
    sim.evict(c)
    sim.run()
    wakes = [(t, d["spurious"], d.get("reason")) for t, _, d in kinds(sim, "wake")]
    if resident_ms == 5_000:  # dormant again at 65 s; the moved entry's bucket (minute 3) wakes it at 180 s
        assert wakes == [(60_000, True, "alarm is in a later minute"), (180_000, False, None)]
    else:  # resident from the spurious wake on: its millisecond timer fires it
        assert wakes == [(60_000, True, "alarm is in a later minute")]
    assert fires(sim) == [(200_002, 0)]


def test_after_a_restart_alarms_wait_for_the_waker_with_their_counters(celld):
    sim, c = celld()
    sim.env.FAILS = 1
    sim.call(c.arm(1_000))
    sim.run(until=2_000)  # failed once at 1 002; the retry is due at 3 002
    sim.restart(500)
    sim.run()
    assert fires(sim) == [(1_002, 0), (60_002, 1)]
    assert [(t, d["cause"]) for t, _, d in kinds(sim, "revive")] == [(2_500, "restart")]


def test_residency_is_a_celld_setting(celld):
    with pytest.raises(ak.AlarmkitError, match=r"^resident_ms is a celld setting; profile 'workerd'"):
        set_residency(ak.Simulation(), 5_000)
    sim, _ = celld()
    with pytest.raises(ak.AlarmkitError, match=r"^resident_ms must be a positive int of ms, got 0"):
        set_residency(sim, 0)
    set_residency(sim, 5_000)
    assert sim.profile.idle_evict_ms == 5_000 and isinstance(sim.scheduler, CelldScheduler)
    assert ak.Simulation(profile="celld", resident_ms=7_000).profile.idle_evict_ms == 7_000


def test_keepalive_on_celld_is_late_by_minute_buckets_and_on_time_on_workerd():
    journal = ak.Journal()
    r = ak.run_scenario("keepalive-celld-vs-workerd", seed=1, journal=journal)
    rows = [(c["cell"], c["woken_by"], c["armed_at_ms"], c["fired_at_ms"], c["late_ms"]) for c in r["celld"]]
    assert rows == [
        ("cell-0", "bucket", 15_000, 60_002, 45_002),
        ("resident", "timer", 21_500, 21_502, 2),  # failed, stayed resident: its millisecond timer
        ("cell-1", "bucket", 28_000, 60_002, 32_002),
        ("cell-2", "bucket", 41_000, 60_002, 19_002),
        ("cell-3", "bucket", 54_000, 60_002, 6_002),
        ("cell-4", "bucket", 67_000, 67_002, 2),  # its minute's bucket was due at 60 s: woken ahead
    ]
    # workerd's lateness: seed 1's first six draws of the measured default (2, 1, 2, 1, 2, 1 ms), in arming order
    assert [(w["cell"], w["fired_at_ms"], w["late_ms"]) for w in r["workerd"]] == [
        ("cell-0", 15_002, 2), ("resident", 21_501, 1), ("cell-1", 28_002, 2), ("cell-2", 41_001, 1),
        ("cell-3", 54_002, 2), ("cell-4", 67_001, 1)]
    assert r["max_late_ms"] == {"celld": 45_002, "workerd": 2} and r["rung_ms"] == 10_000
    runs = journal.runs()
    assert list(zip(runs["scenario"], runs["profile"])) == [
        ("keepalive-celld-vs-workerd", "celld"), ("keepalive-celld-vs-workerd", "workerd")]
    assert r["compare_run_id"] == 2


def test_with_short_residency_even_the_surviving_cell_goes_dormant():
    r = ak.run_scenario("keepalive-celld-vs-workerd", seed=1, resident_ms=5_000)
    resident = next(c for c in r["celld"] if c["cell"] == "resident")
    assert (resident["woken_by"], resident["fired_at_ms"], resident["late_ms"]) == ("bucket", 60_002, 38_502)
