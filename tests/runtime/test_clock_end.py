"""The clock's end, 2**53 ms (the kernel's run() and a call alike): a run that would journal a time past it stops, naming what was due past it, and no
journal row holds a later time (a retry's arm and retry_scheduled name their due time, so they are
not journaled past the end either). Runs that never come near the end are unchanged
(benchmarks/journal_identity.py)."""

import pytest

import alarmkit as ak
from alarmkit.kernel import Kernel

END = 2**53
# workerd refuses an alarm past 9,223,372,036,854 ms (year 2262, "dates after 2189"), far below 2**53: alarms
# meet a clock's end only when the kernel's end is lower, as these tests set it (sim.kernel.end_ms)
LOW = 10_000_000
TIME_COLUMNS = ("t_ms", "scheduled_ms", "prev_scheduled_ms")


class Failing(ak.DurableObject):
    async def go(self, due_in):
        await self.ctx.storage.set_alarm(self.ctx.now() + due_in)

    async def alarm(self, info):
        raise RuntimeError("down")


class Fine(ak.DurableObject):
    async def go(self, at):
        await self.ctx.storage.set_alarm(at)

    async def alarm(self, info):
        pass


def _latest(sim):
    ev = sim.events()
    return max(int(ev[c].max()) for c in TIME_COLUMNS if ev[c].notna().any())


@pytest.mark.parametrize("profile", ["workerd"])  # celld's wake keys are dates, which end at year 9999
@pytest.mark.parametrize("until", [None, LOW])
def test_a_retry_due_past_the_end_stops_the_run_naming_it_and_nothing_past_it_is_journaled(profile, until):
    sim = ak.Simulation(start_ms=LOW - 3_000, fire_latency="exact", profile=profile)
    sim.kernel.end_ms = LOW
    sim.call(sim.namespace("T", Failing).get("a").go(1_000))
    with pytest.raises(ak.RunawayError) as err:
        sim.run(until=until)
    text = str(err.value)
    assert text.startswith("the virtual clock ends at 10,000,000 ms (10,000,000), and the next alarm() delivery "
                           "of object T:a (alarm() attempts so far: 1) is due at 10,00")
    assert text.endswith("ms past it; nothing past the end ran or was journaled: start the simulation earlier "
                         "(Simulation(start_ms=...)) or stop it sooner (run(until=...))")
    assert sim.now <= LOW and _latest(sim) <= LOW
    ev = sim.events()
    assert list(ev["kind"][-2:]) == ["fire", "handler_error"]  # the failure is journaled, its retry past the end not


def test_a_fire_late_past_the_end_stops_the_run():
    sim = ak.Simulation(start_ms=LOW - 10, fire_latency="exact")
    sim.kernel.end_ms = LOW
    sim.call(sim.namespace("T", Fine).get("a").go(LOW))  # allowed: the end itself; the fire comes 2 ms later
    with pytest.raises(ak.RunawayError, match=r"is due at 10,000,002 ms, 2 ms past it"):
        sim.run()
    assert _latest(sim) == LOW


def test_an_alarm_due_before_the_end_runs_and_what_comes_after_the_end_is_named():
    sim = ak.Simulation(start_ms=LOW - 20_000, fire_latency="exact")
    sim.kernel.end_ms = LOW
    sim.call(sim.namespace("T", Fine).get("a").go(LOW - 15_000))
    sim.run(until=LOW - 10_000)  # the alarm ran; the idle eviction is due past the end
    assert list(sim.events()["kind"][-2:]) == ["fire", "handler_ok"]
    with pytest.raises(ak.RunawayError, match=r"and the idle eviction \(profile.idle_evict_ms after the last request\) "
                                              r"of object T:a .* is due at 10,050,000 ms, 50,000 ms past it"):
        sim.run()
    assert sim.events()["kind"].iloc[-1] == "handler_ok" and _latest(sim) <= LOW


class Idle(ak.DurableObject):
    async def touch(self):
        await self.ctx.storage.put("k", 1)


def test_at_the_real_end_2_53_an_idle_eviction_due_past_it_stops_the_run_naming_it():
    sim = ak.Simulation(start_ms=END - 20_000, fire_latency="exact")
    sim.call(sim.namespace("T", Idle).get("a").touch())  # no alarm can be set this late; the eviction timer still runs
    with pytest.raises(ak.RunawayError, match=r"the virtual clock ends at 2\*\*53 ms \(9,007,199,254,740,992\), and the idle "
                                              r"eviction .* of object T:a.* is due at 9,007,199,254,790,992 ms, 50,000 ms past it"):
        sim.run()
    assert _latest(sim) <= END


def test_a_call_waiting_past_the_kernels_end_stops_naming_what_was_due():
    from alarmkit.kernel import Future

    k = Kernel(0)
    k.end_ms = 1_000
    fut = Future()
    k.call_at(1_500, fut.set_result, 1)
    with pytest.raises(ak.RunawayError, match=r"the virtual clock ends at 1,000 ms \(1,000\), and .* is due at 1,500 ms, "
                                              r"500 ms past it"):
        k.run_until_complete(fut)
    assert k.now == 0
