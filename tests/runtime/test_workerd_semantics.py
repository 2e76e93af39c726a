"""Every workerd alarm fact the runtime models, with exact virtual times.

Every simulation here takes fire_latency="exact" (each fire 2 ms late, so an alarm for t fires at
t + 2): the subject is the scheduler's logic, not fire lateness (the workerd profile's default, seeded
draws from measured fires, is tested in test_latency_measured.py).
"""

import math
import random

import pytest

from alarmkit import DurableObject, Faults, HandlerTimeout, Latency, Simulation, UncountedFailure
from alarmkit.runtime._object import SET_ALARM_NONPOSITIVE
from alarmkit.errors import SqlError

LAT = 2


class Probe(DurableObject):
    """An object whose handler does what the test asks; it records what it saw."""

    seen: list  # class-level log, reset per test

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.seen = Probe.seen
        self.plan = Probe.plan

    async def arm(self, t):
        await self.ctx.storage.set_alarm(t)

    async def disarm(self):
        await self.ctx.storage.delete_alarm()

    async def alarm_now(self):
        return await self.ctx.storage.get_alarm()

    async def alarm(self, info):
        self.seen.append(("start", self.ctx.now(), info.retry_count, info.is_retry, info.scheduled_time,
                          await self.ctx.storage.get_alarm()))
        await self.plan(self, info)
        self.seen.append(("end", self.ctx.now()))


def make(plan, **kw):
    async def default(obj, info):
        return None

    Probe.seen = []
    Probe.plan = plan or default
    sim = Simulation(seed=kw.pop("seed", 1), **{"fire_latency": "exact", **kw})
    return sim, sim.namespace("P", Probe).get("p")


def starts(sim=None):
    return [s[1:3] for s in Probe.seen if s[0] == "start"]


def kinds(sim, kind):
    ev = sim.events()
    return ev[ev["kind"] == kind]


async def always_throw(obj, info):
    raise RuntimeError("boom")


def test_retry_ladder_is_2_shl_n_seconds_plus_seeded_jitter_then_abandoned():
    sim, p = make(always_throw, seed=1)
    sim.call(p.arm(1000))
    sim.run()
    rs = kinds(sim, "retry_scheduled")
    detail = [eval_json(d) for d in rs["detail"]]
    bases = [d["base_ms"] for d in detail]
    assert bases == [2000, 4000, 8000, 16000, 32000, 64000]
    # the jitter comes from the one seeded source: replay it
    rng = random.Random(1)
    assert [d["jitter_ms"] for d in detail] == [rng.randint(0, math.floor(0.25 * b)) for b in bases]
    t = [s[0] for s in starts()]
    assert t[0] == 1000 + LAT
    for i, d in enumerate(detail):
        assert t[i + 1] == t[i] + d["delay_ms"] + LAT
    assert [s[1] for s in starts()] == [0, 1, 2, 3, 4, 5, 6]
    assert [s[3] for s in Probe.seen if s[0] == "start"] == [False] + [True] * 6
    assert all(s[4] == 1000 for s in Probe.seen if s[0] == "start")  # scheduledTime stays the original
    ab = kinds(sim, "abandoned")
    assert list(ab["t_ms"]) == [t[-1]] and list(ab["retry_count"]) == [6]
    assert sim.call(p.alarm_now()) is None
    assert sim.inspect(p).alarm is None


def test_uncounted_failures_retry_without_using_the_budget():
    failures = {"left": 9}

    async def flaky(obj, info):
        if failures["left"]:
            failures["left"] -= 1
            raise UncountedFailure("output gate broke (not the worker's fault)")

    sim, p = make(flaky)
    sim.call(p.arm(1000))
    sim.run()
    assert len(starts()) == 10  # more than 7: not bounded by the 6 counted retries
    assert {s[1] for s in starts()} == {0}
    assert {s[3] for s in Probe.seen if s[0] == "start"} == {False}
    bases = [eval_json(d)["base_ms"] for d in kinds(sim, "retry_scheduled")["detail"]]
    # backoff climbs and caps at shift 9 (2 << 9 s = 1024 s)
    assert bases == [2000 << min(n, 9) for n in range(9)]
    assert len(kinds(sim, "handler_ok")) == 1


def test_a_counted_failure_after_uncounted_ones_resets_the_backoff():
    outcomes = iter(["uncounted", "uncounted", "counted", "ok"])

    async def mixed(obj, info):
        o = next(outcomes)
        if o == "uncounted":
            raise UncountedFailure("internal")
        if o == "counted":
            raise RuntimeError("user bug")

    sim, p = make(mixed)
    sim.call(p.arm(1000))
    sim.run()
    bases = [eval_json(d)["base_ms"] for d in kinds(sim, "retry_scheduled")["detail"]]
    assert bases == [2000, 4000, 2000]
    assert [s[1] for s in starts()] == [0, 0, 0, 1]


def test_alarm_set_during_a_failing_handler_runs_instead_of_the_retry():
    async def set_then_throw(obj, info):
        if info.scheduled_time == 1000:
            await obj.ctx.storage.set_alarm(50_000)
            raise RuntimeError("after set")

    sim, p = make(set_then_throw)
    sim.call(p.arm(1000))
    sim.run()
    assert starts() == [(1000 + LAT, 0), (50_000 + LAT, 0)]
    assert kinds(sim, "retry_scheduled").empty


def test_get_alarm_is_none_in_the_handler_until_set_since_it_started():
    async def look(obj, info):
        before = await obj.ctx.storage.get_alarm()
        await obj.ctx.storage.set_alarm(9_000)
        after = await obj.ctx.storage.get_alarm()
        obj.seen.append(("looked", before, after))

    sim, p = make(look)
    sim.call(p.arm(1000))
    sim.run(until=5_000)
    assert Probe.seen[0][5] is None  # at handler start
    assert ("looked", None, 9_000) in Probe.seen
    assert sim.call(p.alarm_now()) == 9_000


def test_delete_alarm_inside_the_handler_does_not_stop_it():
    async def delete_then_work(obj, info):
        await obj.ctx.storage.delete_alarm()
        await obj.ctx.sleep(10)

    sim, p = make(delete_then_work)
    sim.call(p.arm(1000))
    sim.run()
    assert Probe.seen[-1] == ("end", 1000 + LAT + 10)
    assert len(starts()) == 1


def test_delete_alarm_then_throw_cancels_the_retry_best_effort():
    async def delete_then_throw(obj, info):
        await obj.ctx.storage.delete_alarm()
        raise RuntimeError("boom")

    sim, p = make(delete_then_throw)
    sim.call(p.arm(1000))
    sim.run()
    # the scheduler still queues a retry (it cannot remove a running alarm), but the object's stored
    # alarm is gone, so the retry is cancelled instead of run (actor-sqlite armAlarmHandler)
    assert len(starts()) == 1
    assert len(kinds(sim, "retry_scheduled")) == 1
    assert len(kinds(sim, "fire_skipped")) == 1
    assert sim.inspect(p).alarm is None


@pytest.mark.parametrize("bad", [0, -5, -0.5])
def test_set_alarm_at_or_before_zero_raises_workerds_type_error(bad):
    sim, p = make(None)
    with pytest.raises(TypeError, match=f"^{SET_ALARM_NONPOSITIVE.replace('(', r'[(]').replace(')', r'[)]')}$"):
        sim.call(p.arm(bad))


@pytest.mark.parametrize("bad", ["1000", None, float("nan"), float("inf"), True, [1]])
def test_set_alarm_rejects_non_numbers_naming_the_value(bad):
    sim, p = make(None)
    with pytest.raises(TypeError, match="set_alarm\\(\\)") as err:
        sim.call(p.arm(bad))
    assert repr(bad) in str(err.value)
    assert sim.events()["kind"].tolist()[:2] == ["construct", "call"]  # nothing recorded was lost


def test_alarm_in_the_past_is_stored_as_now_and_never_fires_early():
    sim, p = make(None)
    sim.advance(5_000)
    sim.call(p.arm(10))
    assert sim.inspect(p).alarm == 5_000
    sim.run()
    assert starts() == [(5_000 + LAT, 0)]
    fires = kinds(sim, "fire")
    assert (fires["t_ms"] >= fires["scheduled_ms"]).all()


def test_float_times_are_floored_to_ms():
    sim, p = make(None)
    sim.call(p.arm(1234.9))
    assert sim.inspect(p).alarm == 1234


def test_success_clears_the_alarm_unless_the_handler_set_a_new_one():
    async def rearm_once(obj, info):
        if info.scheduled_time == 1000:
            await obj.ctx.storage.set_alarm(3000)

    sim, p = make(rearm_once)
    sim.call(p.arm(1000))
    sim.run()
    assert starts() == [(1000 + LAT, 0), (3000 + LAT, 0)]
    assert sim.inspect(p).alarm is None


def test_the_15_minute_limit_is_a_counted_failure():
    async def hangs_first_time(obj, info):
        if info.retry_count == 0:
            await obj.ctx.sleep(20 * 60 * 1000)

    sim, p = make(hangs_first_time)
    sim.call(p.arm(1000))
    sim.run()
    err = kinds(sim, "handler_error")
    assert list(err["t_ms"]) == [1000 + LAT + 900_000]
    assert eval_json(err["detail"].iloc[0])["error"] == HandlerTimeout.__name__
    assert [s[1] for s in starts()] == [0, 1]


def test_a_handler_ending_in_its_first_instant_leaves_no_watchdog_behind():
    """The watchdog is armed at the end of the instant only for a handler still running:
    one that ends at once leaves nothing for run() to wait for, so the clock stops at the last alarm."""
    async def rearm_twice(obj, info):
        if info.scheduled_time < 3000:
            await obj.ctx.storage.set_alarm(info.scheduled_time + 1000)

    sim, p = make(rearm_twice)
    sim.call(p.arm(1000))
    sim.run()
    assert starts() == [(1000 + LAT, 0), (2000 + LAT, 0), (3000 + LAT, 0)]
    last = sim.events().iloc[-1]
    assert (last.kind, last.t_ms) == ("evict", 3000 + LAT + sim.profile.idle_evict_ms)  # then nothing was left
    assert sim.now == last.t_ms and sim.kernel.peek() == math.inf


def test_the_watchdog_kills_at_the_deadline_before_a_timer_armed_later_in_the_same_instant():
    """A hung handler's deadline is ordered among timers at that ms as if its watchdog were armed when
    the handler started (Kernel.reserve): before an alarm another handler set later in that instant."""
    deadline = 1000 + LAT + 900_000
    order = []

    class Hangs(DurableObject):
        async def arm(self, t):
            await self.ctx.storage.set_alarm(t)

        async def alarm(self, info):
            order.append(("hangs", self.ctx.now()))
            if info.retry_count == 0:
                await self.ctx.sleep(20 * 60 * 1000)

    class Quick(Hangs):
        async def alarm(self, info):
            order.append(("quick", self.ctx.now()))
            if info.scheduled_time == 1000:  # in the same instant, after Hangs started: fires at its deadline
                await self.ctx.storage.set_alarm(deadline - LAT)

    # hangs' alarm first at 1002 (the order is seeded by default)
    sim = Simulation(seed=1, same_instant_order="arming", fire_latency="exact")
    hangs, quick = sim.namespace("H", Hangs).get("h"), sim.namespace("Q", Quick).get("q")
    sim.call(hangs.arm(1000))
    sim.call(quick.arm(1000))
    sim.run(until=deadline + 1)
    ev = sim.events()
    at = ev[ev.t_ms == deadline][["object_id", "kind"]].values.tolist()
    assert at.index(["h", "handler_error"]) < at.index(["q", "fire"])  # the kill (and its retry's arm) first
    assert order[:3] == [("hangs", 1000 + LAT), ("quick", 1000 + LAT), ("quick", deadline)]


def test_at_most_one_alarm_at_a_time_the_new_one_queues_behind():
    async def slow(obj, info):
        await obj.ctx.sleep(5_000)

    sim, p = make(slow)
    sim.call(p.arm(1000))
    sim.run(until=2_000)  # handler running until 6002
    sim.call(p.arm(1500))  # earlier than now: due at once, but one is running
    sim.run()
    spans = [(s[1], e[1]) for s, e in zip(Probe.seen[0::2], Probe.seen[1::2])]
    assert spans == [(1002, 6002), (6002 + LAT, 11_004)]
    assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:]))  # never overlapping


def test_set_alarm_replaces_the_one_alarm():
    sim, p = make(None)
    sim.call(p.arm(5_000))
    sim.call(p.arm(2_000))
    sim.run()
    assert starts() == [(2_000 + LAT, 0)]
    arms = kinds(sim, "arm")
    assert [eval_json(d)["direction"] for d in arms["detail"]] == ["new", "earlier"]


def test_outside_set_while_a_retry_is_pending_replaces_the_retry():
    async def fail_first(obj, info):
        if info.scheduled_time == 1000:
            raise RuntimeError("first fails")

    sim, p = make(fail_first)
    sim.call(p.arm(1000))
    sim.run(until=1500)  # retry pending at ~3000+
    sim.call(p.arm(40_000))
    sim.run()
    assert [s[0] for s in starts()][0] == 1002
    # the pending retry is cancelled when it comes due (stored alarm changed); the new alarm runs
    assert len(kinds(sim, "fire_skipped")) == 1
    assert starts()[-1] == (40_000 + LAT, 0)


def test_outside_set_earlier_than_a_pending_retry_runs_once_as_the_retry():
    """Calibrated on workerd 2026-11-17: the retry runs at its time with retry_count 1 and the
    original scheduled time (actor-sqlite runs an overdue stored alarm), and its success clears
    the alarm set from outside: in effect the alarm runs at max(T, retry time)."""
    async def fail_first(obj, info):
        if info.retry_count == 0 and info.scheduled_time == 1000:
            raise RuntimeError("first fails")

    sim, p = make(fail_first)
    sim.call(p.arm(1000))
    sim.run(until=1500)
    retry_at = int(kinds(sim, "retry_scheduled")["scheduled_ms"].iloc[0])
    sim.call(p.arm(1800))  # earlier than the retry
    assert sim.call(p.alarm_now()) == 1800
    sim.run()
    assert starts() == [(1002, 0), (retry_at + LAT, 1)]
    assert [s[4] for s in Probe.seen if s[0] == "start"] == [1000, 1000]
    assert sim.inspect(p).alarm is None and kinds(sim, "fire_skipped").empty


def test_fire_latency_is_configurable_and_never_early():
    sim, p = make(None, fire_latency=Latency.uniform(10, 60_000))
    for i in range(20):
        sim.call(p.arm(sim.now + 1_000))
        sim.run()
    late = kinds(sim, "fire")["t_ms"] - kinds(sim, "fire")["scheduled_ms"]
    assert late.between(10, 60_000).all() and late.nunique() > 10


def test_failover_latency_makes_rare_fires_up_to_a_minute_late():
    lat = Latency.failover(p=0.5, max_ms=60_000)
    rng = random.Random(3)
    samples = [lat.sample(rng) for _ in range(400)]
    assert max(samples) <= 60_000 and min(samples) >= 1
    assert sum(s > 5 for s in samples) in range(150, 250)


class CrashAt(Faults):
    def __init__(self, name, k):
        self.name, self.k = name, k

    def crash_at_suspend(self, host, task):
        hit = task.name == self.name and task.awaits == self.k
        if hit:
            self.name = None  # once
        return hit


class Writer(DurableObject):
    async def write_two(self):
        sql = self.ctx.storage.sql
        sql.exec("CREATE TABLE IF NOT EXISTS t (v TEXT)")
        sql.exec("INSERT INTO t VALUES ('a')")
        sql.exec("INSERT INTO t VALUES ('b')")
        await self.ctx.storage.put("k", 1)  # await 1: settled, the turn goes on
        sql.exec("INSERT INTO t VALUES ('c')")
        await self.ctx.sleep(5)  # await 2: the turn ends while it sleeps and a, b, c, k commit together
        sql.exec("INSERT INTO t VALUES ('d')")
        await self.ctx.storage.put("k", 2)  # await 3: a crash here loses d and k=2 (their turn never ended)


def test_writes_of_one_turn_commit_together_and_a_crash_drops_the_open_turn():
    sim = Simulation(faults=CrashAt("rpc:write_two", 3), fire_latency="exact")
    w = sim.namespace("W", Writer).get("w")
    with pytest.raises(Exception, match="crashed"):
        sim.call(w.write_two())
    assert sim.now == 5
    assert sim.inspect(w).sql("SELECT v FROM t") == [{"v": "a"}, {"v": "b"}, {"v": "c"}]
    assert sim.inspect(w).sql("SELECT value FROM _cf_KV") == [{"value": "1"}]


def test_a_crash_at_an_await_inside_the_first_turn_loses_the_whole_turn():
    # turn model: awaiting put (await 1) does not end the turn, so a crash at the sleep (await 2, before the
    # turn could end) loses a, b, c, k and the table; before it, each awaited write was a commit point
    sim = Simulation(faults=CrashAt("rpc:write_two", 2), fire_latency="exact")
    w = sim.namespace("W", Writer).get("w")
    with pytest.raises(Exception, match="crashed"):
        sim.call(w.write_two())
    assert sim.now == 0
    with pytest.raises(SqlError, match="no such table"):
        sim.inspect(w).sql("SELECT v FROM t")
    assert "crash" in sim.events()["kind"].tolist()


class Counter(DurableObject):
    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.in_memory = 0
        ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS c (n INTEGER)")

    async def bump(self):
        self.in_memory += 1
        self.ctx.storage.sql.exec("INSERT INTO c VALUES (1)")
        return self.in_memory, self.ctx.storage.sql.exec("SELECT count(*) AS n FROM c").one()["n"]

    async def arm(self, t):
        await self.ctx.storage.set_alarm(t)

    async def alarm(self, info):
        self.ctx.storage.sql.exec("INSERT INTO c VALUES (2)")


def test_eviction_and_restart_keep_storage_and_alarm_but_not_memory():
    sim = Simulation(idle_evict_ms=1_000, fire_latency="exact")
    c = sim.namespace("C", Counter).get("c")
    assert sim.call(c.bump()) == (1, 1)
    assert sim.call(c.bump()) == (2, 2)
    sim.call(c.arm(60_000))
    sim.advance(1_500)  # idle for 1 s: evicted
    assert not sim.inspect(c).awake
    assert sim.call(c.bump()) == (1, 3)
    sim.restart(downtime_ms=10_000)
    assert not sim.inspect(c).awake
    sim.advance(10_000)
    assert sim.inspect(c).alarm == 60_000  # reloaded
    sim.run()
    ev = sim.events()
    assert ev[ev.kind == "revive"]["t_ms"].tolist() == [1_500 + 10_000]
    fire = ev[ev.kind == "fire"]
    assert fire["t_ms"].tolist() == [60_000 + LAT]
    # the object was asleep: the constructor ran right before alarm()
    i = ev.index[ev.kind == "fire"][0]
    assert ev.loc[i + 1, "kind"] == "construct"


def test_restart_reloads_an_overdue_alarm_and_fires_it_at_once():
    sim = Simulation(fire_latency="exact")
    c = sim.namespace("C", Counter).get("c")
    sim.call(c.arm(5_000))
    sim.advance(1_000)
    sim.restart(downtime_ms=20_000)
    sim.run()
    ev = sim.events()
    assert ev[ev.kind == "fire"]["t_ms"].tolist() == [21_000 + LAT]
    assert ev[ev.kind == "fire"]["retry_count"].tolist() == [0]


def test_a_handler_running_during_restart_is_rerun_from_the_start():
    async def slow(obj, info):
        await obj.ctx.sleep(10_000)

    sim, p = make(slow)
    sim.call(p.arm(1_000))
    sim.advance(3_000)  # handler running
    sim.restart(downtime_ms=1_000)
    sim.run()
    assert starts() == [(1_002, 0), (4_000 + LAT, 0)]
    assert Probe.seen[-1] == ("end", 14_002)


class Gated(DurableObject):
    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.log = []
        ctx.block_concurrency_while(self.warm_up)

    async def warm_up(self):
        await self.ctx.sleep(500)
        self.log.append(("warm", self.ctx.now()))

    async def hello(self):
        self.log.append(("hello", self.ctx.now()))
        return list(self.log)


def test_block_concurrency_while_holds_events_until_it_finishes():
    sim = Simulation(fire_latency="exact")
    g = sim.namespace("G", Gated).get("g")
    assert sim.call(g.hello()) == [("warm", 500), ("hello", 500)]


class SqlBug(DurableObject):
    async def arm(self):
        await self.ctx.storage.set_alarm(1_000)

    async def alarm(self, info):
        self.ctx.storage.sql.exec("SELEC nonsense")


def test_sql_error_in_a_handler_is_a_counted_failure_not_a_simulator_crash():
    sim = Simulation(fire_latency="exact")
    s = sim.namespace("S", SqlBug).get("s")
    sim.call(s.arm())
    sim.run()
    err = sim.events().query("kind == 'handler_error'")
    assert len(err) == 7
    d = eval_json(err["detail"].iloc[0])
    assert d["error"] == "SqlError" and d["counted"] and "syntax error" in d["message"]


def test_unknown_stub_method_names_the_methods_there_are():
    sim = Simulation(fire_latency="exact")
    s = sim.namespace("S", SqlBug).get("s")
    with pytest.raises(Exception, match=r"^SqlBug has no method 'arn'; its methods: \['alarm', 'arm'\]$"):
        s.arn()


def eval_json(text):
    import json

    return json.loads(text)
