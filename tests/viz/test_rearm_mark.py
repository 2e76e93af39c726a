"""A ``set_alarm`` inside ``alarm()`` (a re-arm, queued after the running alarm) is journaled with
``"in_alarm": true`` and drawn as a re-arm of its own (green dash-dot, "re-armed in alarm()"),
not as an ordinary arm or move. Exact virtual times: fire latency "exact" (each fire 2 ms late)."""

import json

from alarmkit import DurableObject, Journal, Simulation
from alarmkit.runtime.profiles import PROFILES
from alarmkit.viz.plots import timeline

EXACT = PROFILES["workerd"].replace(fire_latency="exact")


class Ticker(DurableObject):
    async def start(self):
        await self.ctx.storage.set_alarm(self.ctx.now() + 1_000)  # an ordinary arm, from a request

    async def alarm(self, info):
        n = (await self.ctx.storage.get("n")) or 0
        await self.ctx.storage.put("n", n + 1)
        if n < 2:
            await self.ctx.storage.set_alarm(self.ctx.now() + 3_000)  # the re-arm


def run():
    with Journal() as j:
        sim = Simulation(seed=1, journal=j, scenario="rearm", profile=EXACT)
        sim.call(sim.namespace("T", Ticker).get("t").start())
        sim.run()
        sim.close()
        return j.events(sim.run_id)


def arms(ev):
    a = ev[ev.kind == "arm"]
    return [(int(t), int(s), json.loads(d).get("in_alarm", False)) for t, s, d in zip(a.t_ms, a.scheduled_ms, a.detail)]


def test_the_journal_marks_an_arm_made_inside_alarm_and_only_that_one():
    # armed at 0 for 1 s; fires at 1,002 (2 ms late), re-arms for 4,002; fires at 4,004, re-arms for 7,004
    assert arms(run()) == [(0, 1_000, False), (1_002, 4_002, True), (4_004, 7_004, True)]


def test_the_timeline_draws_a_re_arm_apart_from_arms_and_moves():
    fig = timeline(run())
    moves = {t.meta["kind"]: t for t in fig.data if t.meta and t.meta.get("role") == "move"}
    re = moves["rearm"]
    assert (re.name, re.line.color, re.line.dash, re.showlegend) == ("re-armed in alarm()", "#009E73", "dashdot", True)
    xs = list(re.x)
    assert [(xs[i], xs[i + 1]) for i in range(0, len(xs), 3)] == [(1.002, 4.002), (4.004, 7.004)]  # seconds
    lead = list(moves["lead"].x)
    assert [(lead[i], lead[i + 1]) for i in range(0, len(lead), 3)] == [(0.0, 1.0)]  # only the request's arm
    assert "re-armed in alarm() at 1.002 s: 1.002 s → 4.002 s" in re.hovertext[0]
    assert "later" not in moves and "earlier" not in moves
