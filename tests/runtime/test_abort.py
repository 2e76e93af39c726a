"""ctx.abort(reason, retry_alarm=...): the object resets; an alarm() that aborts is retried (counted)
or, with retry_alarm=False, not retried. Local workerd 1.20261117.1 showed both (calibration probes
abort_retry and abort_no_retry)."""

import json

import pandas as pd
import pytest

import alarmkit as ak


class Aborter(ak.DurableObject):
    async def arm(self, at, retry):
        await self.ctx.storage.put("retry", retry)
        await self.ctx.storage.set_alarm(at)

    async def nap(self, ms):
        await self.ctx.sleep(ms)
        return "woke"

    async def alarm(self, info):
        retry = await self.ctx.storage.get("retry")
        self.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS lost (n INTEGER)")
        self.ctx.storage.sql.exec("INSERT INTO lost VALUES (1)")  # uncommitted when abort() comes
        if info.retry_count < 2:
            self.ctx.abort("operator reset", retry_alarm=retry)
        self.ctx.journal_event("done", retry_count=info.retry_count)


def events(sim):
    ev = sim.events()
    ev = ev[ev["kind"].isin(["fire", "handler_error", "aborted", "retry_scheduled", "handler_ok", "done", "call"])]
    return [(int(r.t_ms), r.kind, None if pd.isna(r.retry_count) else int(r.retry_count)) for r in ev.itertuples()]


def test_abort_in_alarm_retries_as_a_counted_failure_by_default():
    sim = ak.Simulation(seed=0, fire_latency=0)
    a = sim.namespace("A", Aborter).get("a")
    sim.call(a.arm(1_000, True))
    sim.run()
    # retries 2 s << n plus seeded jitter (432 and 394 ms at seed 0), as after a thrown error
    assert events(sim) == [
        (0, "call", None), (1_000, "fire", 0), (1_000, "aborted", None), (1_000, "handler_error", 0),
        (1_000, "retry_scheduled", 1), (3_432, "fire", 1), (3_432, "aborted", None), (3_432, "handler_error", 1),
        (3_432, "retry_scheduled", 2), (7_826, "fire", 2), (7_826, "done", 2), (7_826, "handler_ok", 2),
    ]
    assert sim.alarms() == {"a": None}


def test_abort_without_retry_clears_the_alarm_and_never_retries():
    sim = ak.Simulation(seed=0, fire_latency=0)
    a = sim.namespace("A", Aborter).get("a")
    sim.call(a.arm(1_000, False))
    sim.run()
    assert events(sim)[-3:] == [(1_000, "fire", 0), (1_000, "aborted", None), (1_000, "handler_error", 0)]
    err = sim.events()
    detail = json.loads(err[err["kind"] == "handler_error"]["detail"].iloc[0])
    assert detail == {"error": "Aborted", "message": "object a was aborted: operator reset", "counted": False, "retry": False}
    assert sim.alarms() == {"a": None}
    assert sim.inspect(a).sql("SELECT name FROM sqlite_master WHERE name = 'lost'") == []  # the write was lost


def test_abort_fails_calls_in_flight_and_the_caller():
    class Resetter(Aborter):
        async def reset(self):
            self.ctx.abort("bad state")
            return "unreachable"

    sim = ak.Simulation(seed=0)
    r = sim.namespace("R", Resetter).get("r")
    napping = sim.spawn(r.nap(500))
    sim.run(until=100)
    with pytest.raises(ak.Aborted, match="^object r was aborted: bad state$"):
        sim.call(r.reset())
    sim.run(until=200)
    assert isinstance(napping.exception(), ak.Aborted)
    assert sim.call(r.nap(1)) == "woke"  # a new instance answers the next call


@pytest.mark.parametrize("bad", ["no", None, 1])
def test_a_bad_retry_alarm_is_refused(bad):
    class Bad(Aborter):
        async def go(self):
            self.ctx.abort("x", retry_alarm=bad)

    sim = ak.Simulation(seed=0)
    with pytest.raises(ak.AlarmkitError, match=r"retry_alarm=\.\.\.\) must be True or False"):
        sim.call(sim.namespace("B", Bad).get("b").go())
