"""The turn model (docs/runtime.md, "Turns and commits"): an awaited storage call does not suspend,
a turn's writes commit together when it ends, and a reset drops what the turn had not committed.
Real workerd showed each (calibration probes turn_abort_*)."""

import pytest

import alarmkit as ak
from alarmkit import FaultPlan
from alarmkit.errors import Aborted, RunawayError

# the turn model's tests are about commits, not fire lateness:
# every simulation here takes fire_latency="exact" (each fire 2 ms late) so that the times read as
# round numbers; tests/runtime/test_latency_measured.py covers the workerd profile's measured default


class Turns(ak.DurableObject):
    async def arm_then_abort(self, at, how):
        if how == "await":
            await self.ctx.storage.set_alarm(at)
        elif how == "no-await":
            self.ctx.storage.set_alarm(at)
        elif how == "sync":
            await self.ctx.storage.set_alarm(at)
            await self.ctx.storage.sync()
        self.ctx.abort("probe")

    async def write(self, key, value):
        await self.ctx.storage.put(key, value)
        return value

    async def abort_now(self):
        self.ctx.abort("later in the same turn")

    async def read(self, key):
        return await self.ctx.storage.get(key)

    async def spin(self):
        n = 0
        while True:  # a runaway loop of storage calls that never suspend
            await self.ctx.storage.put("n", n)
            n += 1

    async def put_effect_put(self):
        await self.ctx.storage.put("a", 1)
        await self.ctx.effect("send", "x")  # external I/O: the turn ends, a commits
        await self.ctx.storage.put("b", 2)  # await 3 (the effect is await 2): a crash here loses b only

    async def alarm(self, info):
        self.ctx.journal_event("ran", retry_count=info.retry_count)


def kinds(sim, *names):
    ev = sim.events()
    ev = ev[ev["kind"].isin(names)]
    return [(int(r.t_ms), r.kind) for r in ev.itertuples()]


def make(**kw):
    sim = ak.Simulation(seed=0, **kw, fire_latency="exact")
    return sim, sim.namespace("T", Turns).get("t")


@pytest.mark.parametrize("how", ["await", "no-await"])
def test_an_abort_in_the_turn_of_set_alarm_loses_the_alarm(how):
    sim, t = make()
    with pytest.raises(Aborted):
        sim.call(t.arm_then_abort(800, how))
    sim.run()
    assert sim.alarms() == {"t": None}
    assert kinds(sim, "arm", "fire", "ran") == []


def test_sync_before_abort_keeps_the_alarm_and_it_fires_in_a_new_instance():
    sim, t = make()
    with pytest.raises(Aborted):
        sim.call(t.arm_then_abort(800, "sync"))
    assert sim.now == 0 and sim.alarms() == {"t": 800}
    sim.run()
    # the arm commits at 0 (the sync ended the turn), the abort comes after; 802: the exact 2 ms latency
    assert kinds(sim, "construct", "arm", "aborted", "fire", "ran") == [
        (0, "construct"), (0, "arm"), (0, "aborted"), (802, "fire"), (802, "construct"), (802, "ran")]


def test_a_call_that_returned_loses_its_writes_to_an_abort_later_in_the_same_turn():
    sim, t = make()
    w = sim.spawn(t.write("k", 1))
    a = sim.spawn(t.abort_now())
    sim.run()
    # write() returned 1, but its result waited on the commit (the output gate) and the abort came first
    assert isinstance(w.exception(), Aborted) and isinstance(a.exception(), Aborted)
    assert sim.call(t.read("k")) is None


def test_a_call_in_a_turn_of_its_own_keeps_its_writes():
    sim, t = make()
    assert sim.call(t.write("k", 1)) == 1
    with pytest.raises(Aborted):
        sim.call(t.abort_now())
    assert sim.call(t.read("k")) == 1


def test_an_awaited_write_does_not_suspend():
    sim, t = make()
    a = sim.spawn(t.write("k", "a"))
    b = sim.spawn(t.write("k", "b"))
    sim.kernel.step()  # a's first step runs to its end: the awaited put did not yield
    assert not sim.kernel.current and a.done() is False  # its result waits for the commit
    sim.run()
    assert (a.result(), b.result()) == ("a", "b")
    assert sim.call(t.read("k")) == "b"


def test_a_runaway_loop_of_storage_calls_hits_the_step_limit():
    sim, t = make(step_limit=500)
    with pytest.raises(RunawayError, match=r"after 500 steps .*task 'rpc:spin'"):
        sim.call(t.spin())
    assert sim.now == 0


def test_an_effect_ends_the_turn_and_commits_what_came_before():
    plan = FaultPlan(crashes=[{"task": "rpc:put_effect_put", "invocation": 1, "at_await": 3}])
    sim, t = make(faults=plan)
    with pytest.raises(Exception, match="injected at await 3 of rpc:put_effect_put"):
        sim.call(t.put_effect_put())
    view = sim.inspect(t)
    assert view.sql("SELECT key, value FROM _cf_KV ORDER BY key") == [{"key": "a", "value": "1"}]


def test_a_crash_point_at_a_settled_await_still_fires_and_loses_the_turn():
    plan = FaultPlan(crashes=[{"task": "rpc:write", "invocation": 1, "at_await": 1}])
    sim, t = make(faults=plan)
    with pytest.raises(Exception, match="injected at await 1 of rpc:write"):
        sim.call(t.write("k", 1))
    assert sim.now == 0
    assert sim.call(t.write("k", 2)) == 2  # invocation 2 goes through
    assert sim.call(t.read("k")) == 2
