"""Round 3: transactions, errors, stored values and setAlarm's argument as real workerd has them.

The module ``alarmkit/calibrate/twin/round3.js`` ran unchanged on workerd 1.20261117.1 (compatibility date
2026-09-01, two runs, committed as ``alarmkit/calibrate/data/round3-workerd-1.20261117.1.json``); here the same
module runs in alarmkit's JavaScript host and each answer must equal workerd's."""

from __future__ import annotations

import copy
import json

import pytest

import alarmkit as ak
from alarmkit.calibrate import round3
from alarmkit.workers import js

START = 1_796_000_000_000
REAL = round3.load()["runs"]  # (tests take copies: REAL stays as recorded)


@pytest.fixture(scope="module")
def sim(js_host):
    sim = ak.Simulation(seed=0, start_ms=START)
    js.load(sim, round3.MODULE, bindings={"R3": "R3"})
    yield sim
    sim.close()


def call(sim, name, op, *args):
    return sim.call(getattr(sim.namespaces["R3"].get(name), op)(*args))


def test_the_two_real_runs_agree_with_each_other():
    a, b = copy.deepcopy(REAL)
    for key in ("set_alarm_values", "set_alarm_rejects", "tx_throw", "tx_rollback", "rpc_errors", "kv_values"):
        if key == "set_alarm_values":  # 1.9 is stored as Date.now(), a different ms in each run
            assert a[key].pop("one_point_nine")["ok"] > 1_796_000_000_000 < b[key].pop("one_point_nine")["ok"]
        assert a[key] == b[key], key
    assert a["tx_alarm_fires"] == b["tx_alarm_fires"] == 0


def test_set_alarm_takes_its_argument_as_workerd_with_its_four_texts(sim):
    got = call(sim, "bad", "badAlarms")
    real = copy.deepcopy(REAL[0]["set_alarm_values"])
    # the accepted ones: a time in the past is stored as now; 9.2e12 (2261) is accepted, 9.3e12 is "after 2189"
    for key in ("one_point_nine", "before"):
        real.pop(key), got.pop(key)
    assert got == real
    assert real["half"]["message"] == "setAlarm() cannot be called with an alarm time <= 0"  # 0.5 truncates to 0
    assert real["big"]["message"] == "This API doesn't support dates after 2189."  # 1e300: a catchable TypeError
    assert real["str"]["message"] == ("Failed to execute 'setAlarm' on 'DurableObjectStorage': parameter 1 is not of "
                                      "type 'date'.")
    assert call(sim, "sa", "syncOrAsync") == REAL[0]["set_alarm_rejects"] == "returned true"  # a rejected promise


def test_a_transaction_that_throws_rolls_back_the_key_and_the_alarm(sim):
    at = sim.now + 1500
    assert call(sim, "tx1", "txThrow", at) == REAL[0]["tx_throw"]
    assert call(sim, "tx2", "txRollback", at) == REAL[0]["tx_rollback"]
    assert REAL[0]["tx_rollback"] == {"alarm": None, "caught": None, "k2": None, "out": "body value", "rb": "returned"}
    sim.run(until=at + 3000)
    fires = [r for r in sim.rows if r[4] == "fire" and r[3] in ("tx1", "tx2")]
    assert fires == [] and REAL[0]["tx_alarm_fires"] == 0
    # the object is not broken afterwards (alarmkit used to fail with "no such table: _cf_KV")
    assert call(sim, "tx1", "txOk", START + 600_000) == {"out": 7, "k3": 7, "alarm": START + 600_000}


def test_errors_cross_rpc_with_their_class_name_and_own_fields(sim):
    for method, real in REAL[0]["rpc_errors"].items():
        assert call(sim, "e", "callOther", method) == real, method
    assert REAL[0]["rpc_errors"]["throwCustom"] == {"ctor": "Error", "name": "CodeError", "message": "custom refuses",
                                                    "code": 42, "isErr": True, "isRange": False, "isType": False}


def test_stored_values_are_structured_clones(sim):
    got = call(sim, "v", "values")
    real = dict(REAL[0]["kv_values"])
    # known difference: workerd keeps a stored Error's custom name and own fields; Node's V8 serializer does not
    assert real.pop("err") == {"ctor": "Error", "name": "CodeError", "message": "x", "code": 42}
    assert got.pop("err") == {"ctor": "Error", "name": "Error", "message": "x"}
    assert got == real
    assert real["d"] == {"type": "[object Date]", "ctor": "Date", "show": "Date:1700000000000"}
    assert real["big"]["show"] == "bigint:12345678901234567890" and real["o"]["show"] == "{a:undefined,b:1}"


def test_a_plain_json_value_is_stored_as_json_and_a_date_as_a_clone(js_host, tmp_path):
    mod = tmp_path / "kv.js"
    mod.write_text('import { DurableObject } from "cloudflare:workers";\n'
                   "export class K extends DurableObject {\n"
                   "  async put() { await this.ctx.storage.put('plain', {a: [1, 'x']}); await this.ctx.storage.put('d', new Date(5)); }\n"
                   "  async back() { const d = await this.ctx.storage.get('d'); return [d instanceof Date, d.getTime()]; }\n"
                   "}\n")
    sim = ak.Simulation(seed=0)
    js.load(sim, mod, bindings={"K": "K"})
    k = sim.namespaces["K"].get("k")
    sim.call(k.put())
    kv = {r["key"]: json.loads(r["value"]) for r in sim.inspect(k).sql("SELECT key, value FROM _cf_KV")}
    assert kv["plain"] == {"a": [1, "x"]}  # Python reads a JSON value as before
    assert set(kv["d"]) == {"$v8"}  # a structured clone: V8's bytes, base64
    assert sim.call(k.back()) == [True, 5]
    sim.close()
