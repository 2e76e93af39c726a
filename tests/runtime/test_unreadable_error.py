"""An object's ``alarm()`` that raises an exception whose text cannot be read (its ``__str__`` raises, or
returns what is not text) is a counted failure like any other, journaled with a stand-in for its text, and
the run goes on: alarmkit's own journaling never lets the ``__str__``'s error out of ``sim.run()``."""

from __future__ import annotations

import json

import pytest

import alarmkit as ak


class RaisingStr(Exception):
    def __str__(self):
        raise ValueError("no text")


class NotText(Exception):
    def __str__(self):
        return 5  # str() of it raises TypeError


class Obj(ak.DurableObject):
    ERR: type = RaisingStr

    async def arm(self):
        await self.ctx.storage.set_alarm(10)

    async def alarm(self, info=None):
        raise self.ERR()


@pytest.mark.parametrize("cls, inner", [(RaisingStr, "ValueError"), (NotText, "TypeError")])
def test_an_unreadable_exception_in_alarm_is_a_counted_failure_and_the_run_goes_on(cls, inner):
    sim = ak.Simulation(seed=3, fire_latency="exact")
    Kind = type(f"Obj{cls.__name__}", (Obj,), {"ERR": cls})
    stub = sim.namespace("NS", Kind).get("a")
    sim.call(stub.arm())
    sim.run(until=1_000)  # raised the __str__'s own error before
    ev = sim.events()
    errors = ev[ev["kind"] == "handler_error"]
    assert [int(t) for t in errors["t_ms"]] == [12]  # due at 10 ms, fired 2 ms later (seed 3)
    detail = json.loads(errors["detail"].iloc[0])
    assert detail == {"error": cls.__name__, "message": f"<its text cannot be read: its __str__ raised {inner}>",
                      "counted": True}
    retry = ev[ev["kind"] == "retry_scheduled"]  # the ladder's first rung, as for any counted failure
    assert [(int(t), int(s), int(r)) for t, s, r in zip(retry["t_ms"], retry["scheduled_ms"], retry["retry_count"])] \
        == [(12, 2_133, 1)]
    sim.run(until=300_000)  # to the ladder's end: abandoned after 7 attempts, never a traceback
    ev = sim.events()
    assert [int(t) for t in ev[ev["kind"] == "abandoned"]["t_ms"]] == [146_435]
    assert (ev["kind"] == "handler_error").sum() == 7


class Opaque:
    def __repr__(self):
        raise ValueError("no repr")

    def __str__(self):
        raise ValueError("no text")


class Noter(ak.DurableObject):
    async def note(self):
        self.ctx.journal_event("noted", detail={"what": Opaque(), "n": 1})
        return "noted"


def test_an_unreadable_value_in_a_custom_events_detail_is_journaled_as_a_stand_in(tmp_path):
    with ak.Journal(tmp_path / "j.duckdb") as j:
        sim = ak.Simulation(seed=3, journal=j)
        assert sim.call(sim.namespace("NS", Noter).get("a").note()) == "noted"  # a TypeError out of the journal before
        sim.close()
        ev = j.events()
    detail = json.loads(ev[ev["kind"] == "noted"]["detail"].iloc[0])
    assert detail == {"what": "<an object of class Opaque whose text cannot be read>", "n": 1}
