"""The round-3 fidelity probe: ``twin/round3.js`` (transactions, RPC errors, stored values, setAlarm's
argument, a CPU loop) run unchanged on real workerd and in the simulator.

``probe_round3(wd)`` is a catalogue probe (``round3``): on real workerd it talks to the twin's ``/r3`` route
(``R3``, exported by ``worker.js`` from ``round3.js``); on the simulated side the module runs in alarmkit's
JavaScript host inside the probe's simulation (with ``cpu_time=650``, a deterministic charge for the loop),
and without Node.js the probe is reported as not run. Its recorded real result is in
``data/fidelity-workerd-1.20261117.1.json`` (``results.round3``); two earlier runs, made against a workerd
serving ``round3.js`` alone, are ``data/round3-workerd-1.20261117.1.json`` (``load()``), which the tests
compare the JavaScript host with (tests/workers/js/test_js_round3.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

__all__ = ["DATA", "MODULE", "load", "probe_round3", "record", "round3_facts", "round3_info"]

DATA = Path(__file__).resolve().parent / "data" / "round3-workerd-1.20261117.1.json"
MODULE = Path(__file__).resolve().parent / "twin" / "round3.js"
SPIN_MS = 650  # the CPU loop's size (iterations of round3.js's loop: SPIN_MS * 250,000)


def load() -> dict:
    """The two runs recorded against a workerd serving round3.js alone."""
    return json.loads(DATA.read_text())


def record(call: Callable[[str, str, Any], Any], sleep: Callable[[float], None], now_ms: Callable[[], int],
           tag: str) -> dict:
    """Every part of the probe once; ``call(op, name, arg)`` is an RPC to ``R3`` ``name`` and returns its answer
    ({"ok": value} or {"err": error}); object names carry ``tag`` (fresh objects)."""
    ok = lambda op, name, arg=None: call(op, f"{name}-{tag}", arg)["ok"]  # noqa: E731
    out: dict[str, Any] = {"set_alarm_values": ok("badAlarms", "bad"), "set_alarm_rejects": ok("syncOrAsync", "sa")}
    at = now_ms() + 1500
    out["tx_throw"] = ok("txThrow", "tx1", at)
    out["tx_rollback"] = ok("txRollback", "tx2", at)
    out["rpc_errors"] = {m: ok("callOther", "e", m) for m in ("throwRange", "throwCustom", "throwType")}
    out["kv_values"] = ok("values", "v")
    ok("setSpin", "spinA", SPIN_MS)
    t = now_ms() + 1000
    ok("arm", "spinA", t)
    ok("arm", "spinB", t + 100)
    sleep(3.5)  # the transactions' alarm time (1.5 s) has passed too: they must not have fired
    log = call("log", "x", None)  # the route answers the isolate's log as a bare list
    mine = [r for r in (log["ok"] if isinstance(log, dict) else log) if str(r.get("obj", "")).endswith(tag)]
    out["tx_alarm_fires"] = sum(1 for r in mine if r["ev"] == "alarm" and r["obj"].startswith(("tx1", "tx2")))
    out["cpu_loop"] = [r for r in mine if r["obj"].startswith("spin") and r["ev"] in ("alarm", "spun")]
    return out


def probe_round3(wd: Any) -> dict:
    """The catalogue probe ``round3`` on any backend (see the module docstring)."""
    if hasattr(wd, "port"):  # a real WorkerdProcess: the twin's /r3 route
        def call(op: str, name: str, arg: Any) -> Any:
            q = {"op": op, "name": name}
            if arg is not None:
                q["arg"] = json.dumps(arg)
            return wd.get("/r3", q, timeout=60.0)
    else:
        worker = _simulated(wd)
        if isinstance(worker, str):
            return {"probe": "round3", "not_run": worker}

        def call(op: str, name: str, arg: Any) -> Any:
            stub = worker.stub("R3", name)
            try:
                return {"ok": wd.sim.call(getattr(stub, op)() if arg is None else getattr(stub, op)(arg))}
            except Exception as err:  # noqa: BLE001 - an answer, as the route gives it
                return {"err": {"name": getattr(err, "js_name", type(err).__name__), "message": str(err)}}
    tag = wd.new_name("r3")
    return {"probe": "round3", "t0_ms": int(wd.time() * 1000), "t0_is": "the probe's start",
            **record(call, wd.sleep, lambda: int(wd.time() * 1000), tag)}


def _simulated(wd: Any) -> Any:
    """The JavaScript worker serving ``R3`` in the backend's simulation, or why it cannot run."""
    worker = getattr(wd, "worker", None)  # the JavaScript twin (JsHostWorkerd): worker.js exports R3
    if worker is not None and "R3" in worker.classes:
        return worker
    from ..workers.js import available, load as load_js

    reason = available()
    if reason is not None:
        return f"the JavaScript host cannot run here ({reason})"
    return load_js(wd.sim, MODULE, {"R3": "R3"})


def _loop(r: dict) -> dict:
    rows = {(x["obj"].split("-")[0], x["ev"]): x for x in r["cpu_loop"]}
    a, spun, b = rows.get(("spinA", "alarm")), rows.get(("spinA", "spun")), rows.get(("spinB", "alarm"))
    if not (a and spun and b):
        return {"ran": False}
    return {"ran": True, "B started after A's loop": b["t"] >= spun["t"], "B late (ms)": b["t"] - b["scheduledTime"],
            "Date.now() moved in the loop (ms)": spun["dDate"]}


def round3_facts(r: dict) -> dict:
    """What must be equal on both sides (the stored Error's custom name and fields are a known difference)."""
    values = dict(r["set_alarm_values"])
    values.pop("one_point_nine", None)  # stored as Date.now(): a different ms on each side
    kv = {k: v for k, v in r["kv_values"].items() if k != "err"}
    loop = _loop(r)
    return {"setAlarm(bad value): each TypeError": values, "setAlarm(NaN) returns a rejected promise": r["set_alarm_rejects"],
            "transaction throws: caught, key, alarm": r["tx_throw"],
            "txn.rollback(): result, key, alarm": r["tx_rollback"],
            "alarms of the rolled-back transactions that fired": r["tx_alarm_fires"],
            "errors across RPC": r["rpc_errors"], "stored values come back as": kv,
            "the CPU loop ran, B after it": (loop["ran"], loop.get("B started after A's loop"))}


def round3_info(r: dict) -> dict:
    loop = _loop(r)
    return {"B's lateness behind A's loop (ms)": loop.get("B late (ms)"),
            "Date.now() moved inside the loop (ms)": loop.get("Date.now() moved in the loop (ms)"),
            "stored Error (a known difference)": r["kv_values"].get("err")}
