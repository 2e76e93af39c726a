"""Simulation(start_ms=...): a clock that starts at a real epoch; figures count from the start."""

import pytest

import alarmkit as ak
from alarmkit.viz import plots
from alarmkit.viz._align import since_clock_start

# these tests are about the clock's start, not fire lateness:
# every simulation here takes fire_latency="exact" (each fire 2 ms late) so that the times read as
# round numbers; tests/runtime/test_latency_measured.py covers the workerd profile's measured default

EPOCH = 1_767_225_600_000  # 2026-01-01T00:00:00Z


class Past(ak.DurableObject):
    async def arm_past(self, ago):
        await self.ctx.storage.set_alarm(self.ctx.now() - ago)
        return await self.ctx.storage.get_alarm()

    async def alarm(self, info):
        self.ctx.journal_event("ran", scheduled_ms=info.scheduled_time)


def test_a_clock_at_a_real_epoch_takes_a_past_alarm_time():
    sim = ak.Simulation(start_ms=EPOCH, seed=0, fire_latency="exact")
    assert sim.now == EPOCH
    p = sim.namespace("P", Past).get("p")
    assert sim.call(p.arm_past(1_000)) == EPOCH  # stored as max(t, now), as workerd does
    sim.run()
    ev = sim.events()
    assert ev["kind"].iloc[0] == "clock_start" and ev["t_ms"].iloc[0] == EPOCH
    ran = ev[ev["kind"] == "ran"]
    assert list(ran["t_ms"]) == [EPOCH + 2] and list(ran["scheduled_ms"]) == [EPOCH]


def test_at_zero_the_same_call_is_refused_as_before_and_no_clock_start_is_journaled():
    sim = ak.Simulation(seed=0, fire_latency="exact")
    p = sim.namespace("P", Past).get("p")
    with pytest.raises(ak.AlarmTimeError):
        sim.call(p.arm_past(1_000))
    assert "clock_start" not in set(sim.events()["kind"])


def test_figures_show_time_since_the_start():
    def run(start):
        sim = ak.Simulation(start_ms=start, seed=0, fire_latency="exact")
        p = sim.namespace("P", Past).get("p")
        sim.call_at(start + 500, lambda: sim.spawn(p.arm_past(0)))
        sim.run()
        return sim.events()

    at_epoch, at_zero = run(EPOCH), run(0)
    shifted = since_clock_start(at_epoch)
    assert list(shifted["t_ms"][shifted["kind"] == "ran"]) == [502]
    cols = ["t_ms", "kind", "scheduled_ms"]
    assert shifted[shifted["kind"] != "clock_start"][cols].reset_index(drop=True).equals(at_zero[cols].reset_index(drop=True))
    xs = lambda fig: sorted(x for tr in fig.data if tr.x is not None for x in tr.x if x is not None)  # noqa: E731
    assert xs(plots.timeline(at_epoch, kinds=["fire"])) == xs(plots.timeline(at_zero, kinds=["fire"])) == [502]
    both = {"epoch": at_epoch, "zero": at_zero}
    assert xs(plots.compare(both, kinds=["fire"])) == [502, 502]
    assert xs(plots.compare(both, kinds=["fire"], align="first_request")) == [2, 2]  # the call came at 500


def test_configure_still_works_after_the_clock_start_row():
    sim = ak.Simulation(start_ms=EPOCH, seed=0, fire_latency="exact")
    sim.configure(fire_latency=0)
    assert sim.profile.fire_latency.ms == 0


@pytest.mark.parametrize("bad", [-1, 2**53 + 1, 1.5, True, "0"])
def test_a_bad_start_is_refused_naming_the_value_and_the_range(bad):
    with pytest.raises(ak.InvalidValue, match=r"Simulation\(start_ms=\.\.\.\) must be"):
        ak.Simulation(start_ms=bad)
