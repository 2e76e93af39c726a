"""Concurrent calls through the public API: sim.spawn, sim.gather, ctx.gather, ctx.wait_until; the
input gate (a storage read in flight holds new deliveries); storage.sync()."""

import json

import pytest

import alarmkit as ak


class Counter(ak.DurableObject):
    async def bump(self, tag):
        """The read-modify-write that workerd's input gate makes safe without a transaction."""
        self.ctx.journal_event("read", detail={"tag": tag})
        n = (await self.ctx.storage.get("n")) or 0
        await self.ctx.storage.put("n", n + 1)
        self.ctx.journal_event("wrote", detail={"tag": tag, "n": n + 1})
        return n + 1

    async def slow(self, tag, ms):
        """An external wait: other calls run meanwhile."""
        self.ctx.journal_event("start", detail={"tag": tag})
        await self.ctx.sleep(ms)
        self.ctx.journal_event("end", detail={"tag": tag})
        return tag

    async def boom(self, ms):
        await self.ctx.sleep(ms)
        raise ValueError(f"boom at {self.ctx.now()}")

    async def fan_out(self, other_names):
        return await self.ctx.gather(*(self.env.C.get(n).slow(n, 10 * (i + 1)) for i, n in enumerate(other_names)))

    async def later(self, ms):
        self.ctx.wait_until(self._save_after(ms))
        return "returned"

    async def _save_after(self, ms):
        await self.ctx.sleep(ms)
        await self.ctx.storage.put("saved_at", self.ctx.now())

    async def get_v(self):
        return await self.ctx.storage.get("v")

    async def save_and_sync(self, value):
        self.ctx.storage.put("v", value)  # not awaited, as JavaScript code often writes: sync() is the commit
        await self.ctx.storage.sync()
        return self.ctx.now()


def rows(sim, kinds=("read", "wrote", "start", "end", "call", "evict", "crash")):
    ev = sim.events()
    ev = ev[ev["kind"].isin(kinds)]
    out = []
    for r in ev.itertuples():
        d = json.loads(r.detail) if isinstance(r.detail, str) else (r.detail or {})
        out.append((int(r.t_ms), r.kind, d.get("tag", d.get("method"))))
    return out


def counter():
    sim = ak.Simulation(seed=0)
    return sim, sim.namespace("C", Counter).get("c")


def test_two_overlapping_calls_interleave_at_an_external_wait_at_exact_times():
    sim, c = counter()
    a = sim.spawn(c.slow("a", 100), "a")
    sim.call_at(30, lambda: sim.spawn(c.slow("b", 20), "b"))
    sim.run()
    assert (a.result(), a.done()) == ("a", True)
    assert rows(sim) == [
        (0, "call", "slow"), (0, "start", "a"), (30, "call", "slow"), (30, "start", "b"), (50, "end", "b"),
        (100, "end", "a"), (70_100, "evict", None),
    ]


def test_the_input_gate_holds_a_second_call_while_a_read_is_in_flight():
    sim, c = counter()
    assert sim.call(sim.gather(c.bump("a"), c.bump("b"))) == [1, 2]  # no lost update
    # b's call is delivered only once a's read resolved; a's awaited write does not suspend (the turn
    # model), so a finishes before b starts
    assert rows(sim) == [(0, "call", "bump"), (0, "read", "a"), (0, "wrote", "a"), (0, "call", "bump"),
                         (0, "read", "b"), (0, "wrote", "b")]


def test_an_alarm_waits_for_a_read_in_flight():
    class Slow(Counter):
        async def arm_then_read(self):
            await self.ctx.storage.set_alarm(10)
            await self.ctx.sleep(8)
            self.ctx.journal_event("read", detail={"tag": "x"})
            n = await self.ctx.storage.get("n")  # the read is in flight at t=10
            self.ctx.journal_event("wrote", detail={"tag": "x", "n": n})

        async def alarm(self, info):
            self.ctx.journal_event("start", detail={"tag": "alarm"})

    sim = ak.Simulation(seed=0, fire_latency=0)
    s = sim.namespace("S", Slow).get("s")
    sim.spawn(s.arm_then_read())
    sim.run()
    assert rows(sim)[:4] == [(0, "call", "arm_then_read"), (8, "read", "x"), (8, "wrote", "x"), (10, "start", "alarm")]


def test_sim_gather_fails_with_the_first_failure_and_spawn_takes_any_awaitable():
    sim, c = counter()
    with pytest.raises(ValueError, match="boom at 3"):
        sim.call(sim.gather(c.slow("a", 5), c.boom(3)))
    assert sim.now == 3  # the first failure fails the gather at once
    fut = ak.Future()
    task = sim.spawn(fut, "waits")
    sim.call_at(7, fut.set_result, "x")
    sim.run(until=7)
    assert task.result() == "x"


def test_ctx_gather_runs_calls_to_other_objects_concurrently():
    sim, c = counter()
    assert sim.call(c.fan_out(["x", "y"])) == ["x", "y"]
    assert sim.now == 20  # both ran at once: 10 ms and 20 ms, not 30 ms
    assert [r for r in rows(sim) if r[1] == "end"] == [(10, "end", "x"), (20, "end", "y")]


def test_wait_until_keeps_the_object_alive_until_its_work_settles():
    sim, c = counter()
    assert sim.call(c.later(100_000)) == "returned"
    assert sim.now == 0
    sim.run()
    ev = sim.events()
    evicted = ev[ev["kind"] == "evict"]["t_ms"].tolist()
    assert evicted == [170_000]  # idle 70 s after the background work ended at 100 s, not at 70 s
    assert sim.call(c.bump("after")) == 1  # woken again: saved_at was written at 100 s


def test_sync_resolves_with_the_write_committed():
    sim, c = counter()
    assert sim.call(c.save_and_sync("x")) == 0
    sim.evict(c)
    assert sim.call(c.bump("after")) == 1
    assert sim.call(c.save_and_sync("y")) == 0


def test_an_object_torn_down_while_awaiting_sync_loses_the_unsynced_write():
    plan = ak.FaultPlan(crashes=[{"task": "rpc:save_and_sync", "invocation": 2, "at_await": 1}])
    sim = ak.Simulation(seed=0, faults=plan)
    c = sim.namespace("C", Counter).get("c")
    sim.call(c.save_and_sync("first"))
    with pytest.raises(ak.ObjectCrashed):
        sim.call(c.save_and_sync("second"))
    assert rows(sim, ("crash",)) == [(0, "crash", None)]
    assert sim.call(c.get_v()) == "first"  # the write awaiting sync() when the object died was lost


def test_a_facet_torn_down_while_awaiting_sync_loses_its_unsynced_write_and_the_parent_lives():
    class Holder(ak.DurableObject):
        async def save(self, value):
            return await self.ctx.facets.get("f", lambda: Counter).save_and_sync(value)

        async def read(self):
            return await self.ctx.facets.get("f", lambda: Counter).get_v()

    plan = ak.FaultPlan(crashes=[{"task": "rpc:save_and_sync", "invocation": 1, "at_await": 1}])
    sim = ak.Simulation(seed=0, faults=plan)
    h = sim.namespace("H", Holder).get("h")
    with pytest.raises(ak.ObjectCrashed):
        sim.call(h.save("lost"))
    ev = sim.events()
    crashes = ev[ev["kind"] == "crash"]
    assert list(zip(crashes["t_ms"], crashes["object_id"])) == [(0, "h/f")]  # the facet only
    assert sim.call(h.read()) is None  # the put before sync() never became durable
    assert sim.call(h.save("kept")) == 0 and sim.call(h.read()) == "kept"  # invocation 2: not crashed
