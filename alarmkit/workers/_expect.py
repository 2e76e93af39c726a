"""A drive script's ``expect``: what must hold when the drive ends, checked on the objects' committed state
(read without waking them, ``sim.inspect``). Each failure is journaled as an ``expect_failed`` event, which
the ``expect`` invariant turns into a violation, so ``explore`` finds and shrinks the fault plans that break it.

    "expect": [
        {"object": "SINK:sink", "kv": "count", "equals": 3},
        {"object": "SINK:sink", "sql": "SELECT COUNT(*) AS n FROM delivered", "equals": [{"n": 3}]},
        {"object": "JOBS:j1", "alarm": null},
        {"requests": "ok"}
    ]

``kv``: the value stored under that key (``None`` when absent); ``sql``: the rows of one read-only query
(``SELECT``/``WITH``); ``alarm``: the stored alarm (ms since the simulation's start, or ``null``);
``requests: "ok"``: every request and call of the drive finished without an error, and no answer had a
status of 500 or more (a client sees those as failures, as the drive's own ``retries`` do).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import AlarmkitError, DriveError

__all__ = ["parse_expect", "check_expect"]

_READ = re.compile(r"^\s*(SELECT|WITH)\b", re.I)
FIELDS = {"object", "kv", "sql", "alarm", "equals", "requests"}


def parse_expect(raw: Any, source: str) -> list[dict]:
    """Validated expectations (``DriveError`` naming the entry and the field)."""
    if not isinstance(raw, list):
        raise DriveError(f"{source}: \"expect\" must be a list of expectations (see docs/workers.md)")
    out = []
    for i, e in enumerate(raw):
        where = f"{source}: expect {i + 1}"
        if not isinstance(e, dict):
            raise DriveError(f"{where} is a {type(e).__name__}, not a table")
        unknown = sorted(set(map(str, e)) - FIELDS)
        if unknown:
            raise DriveError(f"{where}: unknown field {unknown[0]!r}; an expectation has {sorted(FIELDS)}")
        if "requests" in e:
            if e["requests"] != "ok" or len(e) != 1:
                raise DriveError(f"{where}: the requests expectation is exactly {{\"requests\": \"ok\"}}")
            out.append({"what": "requests"})
            continue
        obj = e.get("object")
        if not isinstance(obj, str) or obj.count(":") < 1 or not all(obj.partition(":")[::2]):
            raise DriveError(f"{where}: object must be \"BINDING:name\", got {json.dumps(obj, default=repr)[:60]}")
        kinds = [k for k in ("kv", "sql", "alarm") if k in e]
        if len(kinds) != 1:
            raise DriveError(f"{where}: give exactly one of kv, sql, alarm")
        kind = kinds[0]
        binding, _, name = obj.partition(":")
        item = {"what": kind, "binding": binding, "name": name, "object": obj}
        if kind == "alarm":
            v = e["alarm"]
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 2**53):
                raise DriveError(f"{where}: alarm must be null or ms in 0..2**53, got {json.dumps(v, default=repr)[:40]}")
            item["equals"] = v
        else:
            arg = e[kind]
            if not isinstance(arg, str) or not arg:
                raise DriveError(f"{where}: {kind} must be non-empty text")
            if kind == "sql" and (not _READ.match(arg) or ";" in arg.strip().rstrip(";")):
                raise DriveError(f"{where}: sql must be one read-only query (SELECT or WITH), got {arg[:60]!r}")
            if "equals" not in e:
                raise DriveError(f"{where}: a {kind} expectation needs equals (the value it must have)")
            item[kind] = arg
            item["equals"] = e["equals"]
        out.append(item)
    return out


def _inspector(worker: Any, binding: str, name: str) -> Any:
    stub = worker.stub(binding, name)
    return worker.sim.inspect(stub)


def check_expect(worker: Any, expect: list[dict], result: Any, after: str = "") -> list[str]:
    """Check every expectation; journal each failure (``expect_failed``) and return their messages, each
    followed by ``after`` (what the run's end left undone)."""
    sim = worker.sim
    failures: list[str] = []
    for e in expect:
        if e["what"] == "requests":
            bad = [o for o in result.outcomes if "error" in o or o.get("pending") or (o.get("status") or 0) >= 500]
            if bad:
                o = bad[0]
                why = o.get("error") or (f"answered {o['status']}" if "status" in o else "still running when the drive ended")
                msg = f"{len(bad)} request(s) did not finish ok, first step {o['step']} ({o['what']}): {why}{after}"
                failures.append(msg)
                sim.journal_event("expect_failed", detail={"message": msg[:500]})
            continue
        ins = _inspector(worker, e["binding"], e["name"])
        try:
            if e["what"] == "alarm":
                got = ins.alarm
                got = None if got is None else got - sim.start_ms
            elif e["what"] == "kv":
                try:
                    rows = ins.sql("SELECT value FROM _cf_KV WHERE key = ?", e["kv"])
                except AlarmkitError:  # no KV table: nothing was ever put
                    rows = []
                got = json.loads(rows[0]["value"]) if rows else None
            else:
                got = ins.sql(e["sql"])
        except AlarmkitError as err:
            got = f"error: {err}"
        if got != e["equals"]:
            target = e.get("kv") or e.get("sql") or "alarm"
            said = got if isinstance(got, str) and got.startswith("error: ") else _cut(json.dumps(got, default=str), 120)
            msg = (f"{e['object']} {e['what']} {_cut(repr(target), 80)}: expected "
                   f"{_cut(json.dumps(e['equals'], default=str), 120)}, got {said}{after}")  # an error whole: the way out
            failures.append(msg)
            sim.journal_event("expect_failed", worker.stub(e["binding"], e["name"]), detail={"message": msg[:500]})
    return failures


def _cut(text: str, n: int) -> str:
    """``text`` shortened to ``n`` characters, saying so."""
    return text if len(text) <= n else text[:n - 1] + "…"
