"""``event_limit`` stops a run on its N-th journal event exactly, whatever the journal's batch size (the
runtime looks ahead to that event: ``kernel/_budget.next_look``), not at the next batch or after the next
65,536 events as it did (10,000 asked, 10,997 journaled). Exact counts and virtual times."""

from __future__ import annotations

import pytest

import alarmkit as ak
from alarmkit.journal import WIDTH, Journal
from alarmkit.kernel import next_look


class Storm(ak.DurableObject):
    async def start(self):
        await self.ctx.storage.set_alarm(self.ctx.now() + 10)

    async def alarm(self, info):
        await self.ctx.storage.set_alarm(self.ctx.now() + 5)


def _storm(tmp_path, batch, limit, flush_at=None):
    journal = None if batch is None else Journal(tmp_path / "j.duckdb", batch_size=batch)
    sim = ak.Simulation(seed=0, journal=journal, event_limit=limit)
    sim.call(sim.namespace("S", Storm).get("a").start())  # 3 events: construct, call, arm
    if flush_at is not None:
        sim.call_at(flush_at, sim.flush)  # a flush inside the run: the buffer starts again
    with pytest.raises(ak.RunawayError) as err:
        sim.run()
    ev = sim.events()
    if journal is not None:
        sim.close(complete=False)
        journal.close()
    return sim, ev, str(err.value)


@pytest.mark.parametrize("batch, flush_at", [(None, None), (1_000, None), (7, None), (100_000, None), (1_000, 2_000),
                                             (None, 2_000)])
def test_the_run_stops_on_its_nth_event_whatever_the_batch(tmp_path, batch, flush_at):
    sim, ev, text = _storm(tmp_path, batch, 2_500, flush_at)
    assert len(ev) == 3 + 2_500 and sim.now == 5_372
    # fire, arm, handler_ok a lifecycle (the last one's fire is the 2,500th event: its alarm() did not run)
    assert ev[["seq", "t_ms", "kind"]].tail(4).values.tolist() == [
        [2_500, 5_366, "fire"], [2_501, 5_366, "arm"], [2_502, 5_366, "handler_ok"], [2_503, 5_372, "fire"]]
    assert text.startswith("stopped at virtual time 5,372 ms after 2,500 journal events in this run "
                           "(event_limit=2,500): object S:a (")
    assert "alarm() fires, each re-arming 5 ms ahead" in text and text.endswith("(alarmkit worker --event-limit N)")


def test_a_limit_of_one_stops_after_the_first_event_and_the_next_run_counts_afresh():
    sim = ak.Simulation(seed=0)
    sim.call(sim.namespace("S", Storm).get("a").start())
    sim.event_limit = 1
    with pytest.raises(ak.RunawayError, match=r"^stopped at virtual time 11 ms after 1 journal events in this run "
                                              r"\(event_limit=1\): object S:a"):
        sim.run()
    assert len(sim.events()) == 3 + 1 and sim.now == 11 and sim.events()["kind"].iloc[-1] == "fire"
    sim.event_limit = 4
    with pytest.raises(ak.RunawayError, match=r"^stopped at virtual time 17 ms after 4 journal events"):
        sim.run()
    # the 4th is the arm of the alarm() that fired at 17 ms; that step finishes with its handler_ok (an alarm
    # is never half delivered), and the kernel takes no step after it: not the next fire at 23 ms
    assert sim.now == 17 and sim.events()[["seq", "t_ms", "kind"]].values.tolist()[3:] == [
        [4, 11, "fire"], [5, 11, "arm"], [6, 11, "handler_ok"], [7, 17, "fire"], [8, 17, "arm"], [9, 17, "handler_ok"]]


def test_next_look_is_the_batch_or_the_limits_event_whichever_comes_first():
    assert next_look(1_000 * WIDTH, 1, 1 + 250, WIDTH) == 250 * WIDTH  # the 250th event before the batch's end
    assert next_look(1_000 * WIDTH, 1, 1 + 5_000, WIDTH) == 1_000 * WIDTH  # the batch first
    assert next_look(1_000 * WIDTH, 4_001, 1 + 5_000, WIDTH) == 1_000 * WIDTH  # the 5,000th is the batch's last
    assert next_look(1_000 * WIDTH, 4_002, 1 + 5_000, WIDTH) == 999 * WIDTH
    assert next_look(1_000 * WIDTH, 1, 1 << 62, WIDTH) == 1_000 * WIDTH  # no limit
