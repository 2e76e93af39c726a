"""What a JavaScript object throws that is not an Error is journaled as the failure it is, named:
a Proxy whose traps throw left the handler's promise unsettled, so the alarm was
journaled as a 15-minute timeout and its retry ladder started at 900 s instead of ~2 s; a thrown
Symbol read "Uncaught undefined"."""

import json

import pytest

import alarmkit as ak
from alarmkit.workers.js import load


def _fail(js_host, kind):
    sim = ak.Simulation(seed=3, fire_latency="exact")
    w = load(sim, js_host / "thrown.js", {"NS": "Thrower"})
    sim.call(w.env.NS.getByName("t").arm(kind))
    sim.run(until=4_000)
    ev = sim.events()
    rows = ev[ev["kind"].isin(["handler_error", "retry_scheduled"])]
    return [(int(t), k, json.loads(d)) for t, k, d in zip(rows["t_ms"], rows["kind"], rows["detail"])], sim, w


@pytest.mark.parametrize("kind, text", [
    ("proxy", "Error: Uncaught a Proxy that throws when read"),
    ("revoked", "Error: Uncaught a Proxy that throws when read"),
    ("symbol", "Error: Uncaught Symbol(boom)"),
    ("bare-symbol", "Error: Uncaught Symbol()"),
    ("undefined", "Error: Uncaught undefined"),
])
def test_a_thrown_value_that_is_not_an_error_is_a_failure_named_at_once(js_host, kind, text):
    rows, _, _ = _fail(js_host, kind)
    (t_err, _, err), (t_retry, _, retry) = rows[:2]
    assert (t_err, err["error"], err["message"]) == (1_002, "JsError", text)
    # the first rung of the ladder (~2 s), not a 15-minute timeout's
    assert t_retry == 1_002 and retry["rung"] == 0 and retry["base_ms"] == 2_000


def test_a_call_that_throws_a_hostile_proxy_or_a_symbol_reaches_the_caller(js_host):
    sim = ak.Simulation(seed=3)
    w = load(sim, js_host / "thrown.js", {"NS": "Thrower"})
    t = w.env.NS.getByName("t")
    with pytest.raises(ak.JsError, match="Uncaught a Proxy that throws when read"):
        sim.call(t.throwNow("proxy"))
    with pytest.raises(ak.JsError, match=r"Uncaught Symbol\(now\)"):
        sim.call(t.throwNow("symbol"))
