"""Edges of a run: objects of two namespaces that share a name stay two objects where a run is
summed up (``Simulation.alarms()`` keys them ``BINDING:name``, the report's objects row names both),
and the clock stops at its end, 2**53 ms, naming what was due past it."""

import pytest

import alarmkit as ak
from alarmkit.viz.report import summary_rows


class Timer(ak.DurableObject):
    async def go(self, t):
        await self.ctx.storage.set_alarm(t)

    async def alarm(self, info):
        pass


def two_namespaces():
    sim = ak.Simulation(seed=0, fire_latency="exact")
    x, y = sim.namespace("X", Timer), sim.namespace("Y", Timer)
    sim.call(x.get("a").go(30_000))
    sim.call(y.get("a").go(10_000))
    sim.call(x.get("b").go(5_000))
    return sim


def test_alarms_keeps_both_objects_of_one_name():
    sim = two_namespaces()
    assert sim.alarms() == {"X:a": 30_000, "Y:a": 10_000, "b": 5_000}
    sim.run(until=20_000)
    assert sim.alarms() == {"X:a": 30_000, "Y:a": None, "b": None}


def test_the_report_counts_both_objects_of_one_name():
    sim = two_namespaces()
    sim.run()
    rows = dict((k, v) for k, v, _ in summary_rows(sim.events()))
    assert rows["objects"] == "3: X:a, Y:a, b"


class Failing(ak.DurableObject):
    async def go(self):
        await self.ctx.storage.set_alarm(self.ctx.now() + 1_000)

    async def alarm(self, info):
        raise RuntimeError("down")


def test_the_clock_stops_at_2_53_ms_naming_what_was_due_past_it():
    sim = ak.Simulation(start_ms=2**53 - 3_000, fire_latency="exact")
    sim.call(sim.namespace("T", Failing).get("a").go())
    with pytest.raises(ak.RunawayError) as err:
        sim.run()
    assert sim.now <= 2**53 and sim.events()["t_ms"].max() <= 2**53
    assert str(err.value).startswith("the virtual clock ends at 2**53 ms (9,007,199,254,740,992), and the next alarm() "
                                     "delivery of object T:a")
    assert str(err.value).endswith("start the simulation earlier (start_ms) or stop it sooner (run(until=...))")
