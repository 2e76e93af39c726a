"""Objects of two namespaces that share a name stay two objects everywhere a run is summed up:
``Simulation.alarms()`` keys them ``BINDING:name`` and the report's objects row names both."""

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
