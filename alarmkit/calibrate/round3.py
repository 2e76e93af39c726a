"""The round-3 fidelity probes: ``twin/round3.js`` (transactions, RPC errors, stored values, setAlarm's
argument, a CPU loop) run unchanged on real workerd and recorded.

``record(port, tag)`` drives a workerd already serving ``round3.js`` (class ``R3`` bound as ``R3``, compatibility
date 2026-09-01) and returns what each probe saw; ``write(port, dest)`` records two runs into the JSON file
committed as ``data/round3-workerd-1.20261117.1.json``. ``load()`` reads that file; the tests run the
module in alarmkit's JavaScript host and compares (tests/workers/js/test_js_round3.py)."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "round3-workerd-1.20261117.1.json"
MODULE = Path(__file__).resolve().parent / "twin" / "round3.js"


def load() -> dict:
    """The committed real run."""
    return json.loads(DATA.read_text())


def _get(port: int, op: str, name: str, arg: Any = None) -> Any:
    q = {"op": op, "name": name}
    if arg is not None:
        q["arg"] = json.dumps(arg)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/?{urllib.parse.urlencode(q)}", timeout=30) as r:
        return json.loads(r.read())


def record(port: int, tag: str) -> dict:
    """Every probe once against the workerd on ``port``; object names carry ``tag`` (fresh objects per run)."""
    now = lambda: int(time.time() * 1000)  # noqa: E731
    out: dict[str, Any] = {"set_alarm_values": _get(port, "badAlarms", f"bad-{tag}")["ok"],
                           "set_alarm_rejects": _get(port, "syncOrAsync", f"sa-{tag}")["ok"]}
    at = now() + 1500
    out["tx_throw"] = _get(port, "txThrow", f"tx1-{tag}", at)["ok"]
    out["tx_rollback"] = _get(port, "txRollback", f"tx2-{tag}", at)["ok"]
    out["rpc_errors"] = {m: _get(port, "callOther", f"e-{tag}", m)["ok"] for m in ("throwRange", "throwCustom", "throwType")}
    out["kv_values"] = _get(port, "values", f"v-{tag}")["ok"]
    _get(port, "setSpin", f"spinA-{tag}", 650)
    t = now() + 1000
    _get(port, "arm", f"spinA-{tag}", t)
    _get(port, "arm", f"spinB-{tag}", t + 100)
    time.sleep(3.5)  # the tx alarms' time (1.5 s) has passed too: they must not have fired
    log = _get(port, "log", "x")
    mine = [r for r in log if str(r.get("obj", "")).endswith(tag)]
    out["tx_alarm_fires"] = sum(1 for r in mine if r["ev"] == "alarm" and r["obj"].startswith(("tx1", "tx2")))
    out["cpu_loop"] = [r for r in mine if r["obj"].startswith("spin") and r["ev"] in ("alarm", "spun")]
    return out


def write(port: int, dest: Path) -> None:  # pragma: no cover - run by hand against a workerd serving round3.js
    """Record two runs (fresh objects each) into ``dest``."""
    runs = [record(port, f"r{i}") for i in range(2)]
    dest.write_text(json.dumps({"workerd": "1.20261117.1", "compat_date": "2026-09-01", "module": "twin/round3.js",
                                "runs": runs}, indent=1, sort_keys=True) + "\n")
