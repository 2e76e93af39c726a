"""The round-3 behaviours in the Python host: setAlarm's argument, transactions that roll back the alarm, same-instant
delivery and the clock while code runs, each against the figure real workerd 1.20261117.1 gave
(alarmkit/calibrate/data/round3-workerd-1.20261117.1.json, fidelity-workerd-1.20261117.1.json)."""

from __future__ import annotations

import time

import pytest

import alarmkit as ak
from alarmkit.calibrate import SimWorkerd, round3, run_probe
from alarmkit.errors import AlarmTimeError

REAL = round3.load()["runs"][0]


class Obj(ak.DurableObject):
    async def arm(self, t):
        await self.ctx.storage.set_alarm(t)
        return await self.ctx.storage.get_alarm()

    async def tx_throw(self, at):
        async def body(txn):
            txn.put("k", "v")
            txn.set_alarm(at)
            raise RangeError("body refuses")

        try:
            await self.ctx.storage.transaction(body)
        except RangeError as err:
            caught = str(err)
        return caught, await self.ctx.storage.get("k"), await self.ctx.storage.get_alarm()

    async def tx_rollback(self, at):
        async def body(txn):
            txn.put("k2", "v")
            txn.set_alarm(at)
            txn.rollback()
            txn.rollback()  # again: returns, as workerd's does
            with pytest.raises(ak.AlarmkitError, match="^Cannot put on rolled back transaction$"):
                txn.put("k3", 1)
            return "body value"

        out = await self.ctx.storage.transaction(body)
        return out, await self.ctx.storage.get("k2"), await self.ctx.storage.get_alarm()

    async def tx_sync_throw(self, at):
        def body():
            self.ctx.storage.put("s", 1)
            self.ctx.storage.set_alarm(at)
            raise ValueError("sync body refuses")

        with pytest.raises(ValueError):
            self.ctx.storage.transaction_sync(body)
        return await self.ctx.storage.get("s"), await self.ctx.storage.get_alarm()

    async def tx_ok(self, at):
        async def body(txn):
            txn.put("k", 7)
            txn.set_alarm(at)
            await self.ctx.sleep(5)  # across turns: nothing commits until the transaction ends
            return await txn.get("k")

        return await self.ctx.storage.transaction(body), await self.ctx.storage.get_alarm()

    async def alarm(self, info):
        self.ctx.journal_event("ran")


class RangeError(Exception):
    pass


def _obj(**kw):
    sim = ak.Simulation(seed=0, fire_latency="exact", **kw)
    return sim, sim.namespace("NS", Obj)


# -- 6. setAlarm's argument ----------------------------------------------------------------------------------
@pytest.mark.parametrize("value, real_key", [(float("nan"), "nan"), (float("inf"), "inf"), (1e300, "big"),
                                             (8.64e15, "max_date"), (9.3e12, "after"), (-5, "neg"), (0, "zero"),
                                             (0.5, "half"), (-0.5, "neg_half"), ("123", "str"), (None, "nul"),
                                             (True, "t"), ({}, "obj"), (-1e13, "neg_big")])
def test_set_alarm_refuses_what_workerd_refuses_with_its_text(value, real_key):
    sim, ns = _obj()
    real = REAL["set_alarm_values"][real_key]
    assert real["ctor"] == "TypeError"
    with pytest.raises(AlarmTimeError) as err:
        sim.call(ns.get("a").arm(value))
    assert isinstance(err.value, TypeError) and str(err.value).startswith(real["message"])  # then alarmkit's hint


def test_set_alarm_truncates_fractions_and_takes_the_last_time_workerd_takes():
    sim, ns = _obj()
    assert REAL["set_alarm_values"]["before"] == {"ok": 9_200_000_000_000}
    assert sim.call(ns.get("a").arm(9_200_000_000_000.7)) == 9_200_000_000_000
    assert sim.call(ns.get("b").arm(1.9)) == 1  # truncated toward zero
    sim.advance(50)
    assert sim.call(ns.get("c").arm(1.9)) == 50  # in the past: stored as now, workerd's max(t, now)


# -- 1. transactions roll back the alarm too -------------------------------------------------------------------
def test_a_transaction_that_throws_rolls_back_the_key_and_the_alarm_and_nothing_fires():
    sim, ns = _obj()
    assert REAL["tx_throw"]["k"] is None and REAL["tx_throw"]["alarm"] is None and REAL["tx_alarm_fires"] == 0
    assert sim.call(ns.get("a").tx_throw(500)) == ("body refuses", None, None)
    assert sim.call(ns.get("b").tx_rollback(500)) == ("body value", None, None)
    assert sim.call(ns.get("c").tx_sync_throw(500)) == (None, None)
    sim.run()
    assert [r for r in sim.rows if r[4] in ("fire", "arm")] == []


def test_a_committed_transaction_keeps_its_writes_and_its_alarm():
    sim, ns = _obj()
    assert sim.call(ns.get("a").tx_ok(700)) == (7, 700)
    sim.run()
    ev = sim.events()
    assert ev[ev.kind == "fire"]["t_ms"].tolist() == [702]


# -- 9. same-instant delivery ----------------------------------------------------------------------------------
def test_same_instant_fires_share_the_instant_and_spread_over_2_to_7_ms():
    # real: 40 fires 2-8 ms late, spread 6 ms (probe same_instant); 2-11 ms late, spread 2-7 ms over several runs
    spreads = {}
    for seed in range(12):
        r = run_probe(SimWorkerd(seed=seed), "same_instant")
        assert r["fired"] == 40 and not r["arming_order"]
        assert 1 <= r["first_late_ms"] and max(r["late_ms"]) <= 11
        spreads[seed] = r["spread_ms"]
    assert set(spreads.values()) <= set(range(2, 8)) and len(set(spreads.values())) >= 4  # varies per seed
    a, b = (run_probe(SimWorkerd(seed=3), "same_instant") for _ in range(2))
    assert (a["late_ms"], a["order"]) == (b["late_ms"], b["order"])  # one seed, one delivery


# -- 4. the clock while code runs ------------------------------------------------------------------------------
class Spin(ak.DurableObject):
    async def arm(self, at, spin_ms=0):
        await self.ctx.storage.put("spin", spin_ms)
        await self.ctx.storage.set_alarm(at)

    async def alarm(self, info):
        end = time.perf_counter() + await self.ctx.storage.get("spin") / 1000
        while time.perf_counter() < end:
            pass


def _spin(cpu_time):
    sim = ak.Simulation(seed=0, fire_latency="exact", cpu_time=cpu_time)
    ns = sim.namespace("S", Spin)
    sim.call(ns.get("a").arm(1_000, 200))
    sim.call(ns.get("b").arm(1_100))
    sim.run()
    ev = sim.events()
    return {o: ev[(ev.kind == "fire") & (ev.object_id == o)]["t_ms"].tolist()[0] for o in "ab"}, ev[ev.kind == "cpu"]


def test_by_default_code_costs_no_time():
    fires, cpu = _spin(None)
    assert fires == {"a": 1_002, "b": 1_102} and cpu.empty


def test_a_fixed_charge_is_deterministic_and_delays_the_alarm_due_meanwhile():
    fires, cpu = _spin(650)
    # a's run costs 650 ms: b, due at 1,100, waits for the isolate (real: a 650 ms loop delayed b by ~550 ms)
    assert fires == {"a": 1_002, "b": 1_652}
    assert cpu["t_ms"].tolist() == [1_652, 2_302] and cpu["object_id"].tolist() == ["a", "b"]
    assert cpu["detail"].iloc[0] == '{"ms":650,"mode":"fixed","what":"alarm()"}'


def test_a_measured_charge_takes_the_handlers_real_time():
    fires, cpu = _spin("measured")
    assert fires["a"] == 1_002 and 1_100 + 90 <= fires["b"] <= 1_100 + 2_000  # a's 200 ms loop (on a loaded machine, more)
    first = cpu[cpu.object_id == "a"]
    assert len(first) == 1 and '"mode":"measured"' in first["detail"].iloc[0] and "task 'alarm'" in first["detail"].iloc[0]


@pytest.mark.parametrize("bad", [-1, "fast", 1.5, True, 900_001])
def test_cpu_time_is_checked(bad):
    with pytest.raises(ak.InvalidValue, match=r"^Simulation\(cpu_time=\.\.\.\) takes None"):
        ak.Simulation(cpu_time=bad)


def test_the_cli_takes_cpu_time_and_refuses_bad_values_in_one_line(tmp_path):
    import json
    import subprocess
    import sys

    def run(*args):
        return subprocess.run([sys.executable, "-m", "alarmkit", "run", "prod-set-early-throw-later", *args],
                              capture_output=True, text=True, timeout=300, cwd=tmp_path)

    for bad in ("fast", "-1", "900001", "1.5"):
        p = run("--cpu-time", bad)
        assert p.returncode == 2 and "Traceback" not in p.stderr
        assert p.stderr.strip().splitlines()[-1] == (
            "alarmkit: error: argument --cpu-time: takes \"measured\" or whole ms per alarm() run in 0..900,000, "
            f"got {bad if bad.lstrip('-').isdigit() else repr(bad)}")
    fixed = json.loads(run("--cpu-time", "500", "--json").stdout)
    plain = json.loads(run("--json").stdout)
    assert fixed["attempts"][0]["t_ms"] == plain["attempts"][0]["t_ms"] == 60_001
    # the second object's first run waits for the first object's 500 ms run
    assert [a["t_ms"] for a in fixed["attempts"][:2]] == [60_001, 60_501]
