"""Values JSON would change on their way out of JavaScript (NaN to null, a Date to a string, a typed
array to a bag of keys, a Set to {}) are refused with a TypeError naming the value and where it sits;
what JSON carries arrives as it was."""

import json

import pytest

import alarmkit as ak
from alarmkit.workers.js import load

VALUES = """import { DurableObject } from "cloudflare:workers";
export class V extends DurableObject {
  async nan() { return NaN; }
  async date() { return { at: [new Date(5)] }; }
  async bytes() { return new Uint8Array([1, 2]); }
  async set() { return new Set([1]); }
  async big() { return 1n; }
  async ok() { return { a: [1, "x", null, true, undefined], m: new Map([["k", 1]]) }; }
  async put() {
    try { await this.ctx.storage.put("k", [1, Infinity]); return "stored"; } catch (e) { return `${e.name}: ${e.message}`; }
  }
  async stored() { const v = await this.ctx.storage.get("k"); return v === undefined ? "nothing" : String(v); }
}
"""
HEAD = "values cross between JavaScript and Python as JSON, and this one cannot ("
TAIL = "); pass strings, finite numbers, booleans, null, arrays, Maps and plain objects"


@pytest.fixture(scope="module")
def stub(tmp_path_factory, js_host):
    path = tmp_path_factory.mktemp("values") / "v.js"
    path.write_text(VALUES)
    sim = ak.Simulation()
    return sim, load(sim, path, {"V": "V"}).env.V.getByName("a")


@pytest.mark.parametrize("method, what", [("nan", "NaN in the value"), ("date", "a Date in the value.at[0]"),
                                          ("bytes", "a Uint8Array in the value"), ("set", "a Set in the value"),
                                          ("big", "a bigint in the value")])
def test_a_result_json_would_change_is_a_type_error_naming_it(stub, method, what):
    sim, s = stub
    with pytest.raises(ak.JsError) as err:
        sim.call(getattr(s, method)())
    assert err.value.js_name == "TypeError" and str(err.value) == f"TypeError: {HEAD}{what}{TAIL}"


def test_what_json_carries_arrives_as_it_was(stub):
    sim, s = stub
    assert sim.call(s.ok()) == {"a": [1, "x", None, True, None], "m": {"k": 1}}


def test_a_put_of_infinity_is_stored_as_a_structured_clone(stub):
    # storage values are structured clones, as on workerd (tests/workers/js/test_js_round3.py): Infinity is
    # kept; only values crossing to Python (results, RPC arguments) are JSON
    sim, s = stub
    assert sim.call(s.stored()) == "nothing"
    assert sim.call(s.put()) == "stored"
    assert sim.call(s.stored()) == "1,Infinity"


KEYS = """import { DurableObject } from "cloudflare:workers";
export class H extends DurableObject {
  slow() { return new Promise((res) => setTimeout(() => { res(7); this.ctx.storage.kv.put("k\\ud800", 1); }, 10)); }
  badKey() { this.ctx.storage.kv.put("ok", 1); this.ctx.storage.kv.put("k\\ud800", 1); return 1; }
  readOk() { return this.ctx.storage.kv.get("ok") ?? null; }
}
"""
BAD_PUT = ("the JavaScript object's put('k\\ud800') could not be applied (UnicodeEncodeError: 'utf-8' codec can't "
           "encode character '\\ud800' in position 1: surrogates not allowed); the rest of its turn was")


def test_a_write_that_cannot_be_applied_loses_nothing_else_of_its_turn(tmp_path, js_host):
    # a lone surrogate as a key: the promise settled in that turn still reaches its caller, and the
    # error is said (journaled where nothing awaits it, raised where a caller does)
    (tmp_path / "h.js").write_text(KEYS)
    sim = ak.Simulation()
    h = load(sim, tmp_path / "h.js", {"H": "H"}).env.H.getByName("a")
    assert sim.call(h.slow()) == 7  # it was a deadlock: the report's settled promise was dropped with the error
    console = sim.events().query("kind == 'console'")
    assert console["t_ms"].tolist() == [10]
    assert json.loads(console["detail"].iloc[0]) == {"level": "error", "text": f"alarmkit: {BAD_PUT}"}
    with pytest.raises(ak.AlarmkitError) as err:
        sim.call(h.badKey())
    assert str(err.value) == BAD_PUT
    assert sim.call(h.readOk()) == 1
