"""The storage operations a JS object's turn sends (host.mjs ``report.ops`` and ``syncOp``), applied
to the object's storage in the simulation: the same SQLite database, implicit transaction and alarm
staging a Python object's ``ctx.storage`` uses, so commits, crashes, restarts and the alarm
scheduler treat a JS object exactly as a Python one.

Writes (``put``, ``setAlarm``, ``deleteAlarm``) go through the public ``ctx.storage``. Reads must
answer in the middle of a JS turn, synchronously, so they read the object's database directly
(``ctx.storage.get`` returns a Future that resolves a microtask later, for Python's input gate;
in the JS host the whole turn runs inside one Python step, so no other event can interleave anyway).
"""

from __future__ import annotations

import json
import weakref
from typing import Any

from ...errors import AlarmkitError, SqlError
from ...runtime import Savepoint
from .._base import journal_refusal
from ._facet_ops import facet_op

__all__ = ["apply_op", "MAX_LOGS"]

MAX_LOGS = 100_000  # console lines a worker's ``logs`` keeps (the journal keeps all)


def _db(obj: Any) -> Any:
    host = obj.ctx._host  # the object's Host: its Database (private; see the module docstring)
    host.check_alive()
    return host.db


def _list(db: Any, opts: dict) -> list[list]:
    prefix = opts.get("prefix") or ""
    items = list(db.kv_list(prefix).items())
    start, after, end = opts.get("start"), opts.get("startAfter"), opts.get("end")
    items = [(k, v) for k, v in items if (start is None or k >= start) and (after is None or k > after)
             and (end is None or k < end)]
    if opts.get("reverse"):
        items.reverse()
    limit = opts.get("limit")
    if limit is not None:
        if not isinstance(limit, int) or limit < 1:
            raise AlarmkitError(f"list({{limit}}) must be a positive integer, got {limit!r}")
        items = items[:limit]
    return [list(kv) for kv in items]


# A Worker's isolate has 128 MiB of memory (workerd: "Exceeded memory limit"); a result past it would not
# survive the trip to JavaScript either (a string that long ends Node with ERR_STRING_TOO_LONG)
RESULT_LIMIT = 128 * 1024 * 1024


def _sql(obj: Any, query: str, params: list) -> dict:
    cur = obj.ctx.storage.sql.exec(query, *params)
    raw = cur.raw()
    size = 0
    for r in raw:
        for v in r:
            if isinstance(v, (bytes, bytearray, str)):
                size += len(v)
        if size > RESULT_LIMIT:
            raise SqlError(f"the result of this query holds more than {RESULT_LIMIT:,} bytes, a Worker's 128 MiB of "
                           "memory (workerd ends such an isolate: Exceeded memory limit); read it in parts "
                           "(substr(), LIMIT/OFFSET)")
    rows = [[list(v) if isinstance(v, (bytes, bytearray)) else v for v in r] for r in raw]
    # rowsRead: Python's sqlite3 does not expose SQLite's scan count; rows returned is the stand-in
    return {"cols": cur.column_names, "rows": rows, "read": len(rows), "written": cur.rows_written}


_SAVEPOINTS: "weakref.WeakKeyDictionary[Any, list[Savepoint]]" = weakref.WeakKeyDictionary()


def _tx(obj: Any, what: str) -> None:
    """An explicit transaction of the JS object: the runtime's ``Savepoint`` (rows, KV and the alarm roll back together)."""
    stack = _SAVEPOINTS.setdefault(obj, [])
    if what == "begin":
        stack.append(Savepoint(obj.ctx._host))
    elif not stack:
        raise AlarmkitError(f"the JavaScript host ended a transaction that is not open ({what})")
    elif what == "commit":
        stack.pop().commit()
    else:
        stack.pop().rollback()


def _recorded_effect(obj: Any, text: Any) -> None:
    """``effect(ctx, name, key)`` of ``recorded.js`` (a log line ``{"alarmkit":1,"ev":"effect",...}``): on real
    workerd ``alarmkit record`` journals it as an ``effect``; here too, beside its console line, so a diff of
    one module real against simulated sees the same effects (faults do not strike at it: it is a log line)."""
    if not isinstance(text, str) or not text.startswith('{"alarmkit":1,"ev":"effect"'):
        return
    try:
        line = json.loads(text)
    except ValueError:
        return
    if isinstance(line, dict) and isinstance(line.get("name"), str):
        host = obj.ctx._host
        host.sim.log("effect", host, None, None, None, {"name": line["name"], "key": line.get("key")})


def apply_op(bridge: Any, op: list) -> Any:  # bridge: a _bridge.Bridge (not imported: no cycle)
    """Apply one operation; returns the answer a read needs (None for a write)."""
    kind, iid = op[0], op[1]
    if kind == "console":
        detail = {"level": op[2], "text": op[3]}
        if len(bridge.logs) < MAX_LOGS:  # every line is in the journal too; this list is for a quick look
            bridge.logs.append((bridge.sim.now, op[2], op[3]))
        obj = None if iid is None else bridge.instances.get(iid)
        if obj is not None and obj.ctx._host.ctx is obj.ctx:
            obj.ctx.journal_event("console", detail=detail)
            _recorded_effect(obj, op[3])
            bridge.libs.console(obj.ctx._host, op[3])
        else:
            bridge.sim.journal_event("console", detail=detail)
        return None
    if kind == "refused":  # a WorkerUnsupported made in the host (refused.mjs) or by Python answering it, caught or not
        obj = bridge.instances.get(iid) if isinstance(iid, int) else None
        live = obj is not None and obj.ctx._host.ctx is obj.ctx
        journal_refusal(bridge.sim, obj.ctx._host if live else None, op[2])
        return None
    obj = bridge.instances.get(iid)
    if obj is None:
        raise AlarmkitError(f"object instance {iid} is no longer running (it crashed or was evicted)")
    if kind.startswith("facet"):
        return facet_op(bridge, obj, op)
    storage = obj.ctx.storage
    if kind == "put":
        storage.put(op[2], op[3])
    elif kind == "setAlarm":
        storage.set_alarm(op[2])
    elif kind == "deleteAlarm":
        storage.delete_alarm()
    elif kind == "get":
        db = _db(obj)
        if isinstance(op[2], list):
            return {k: v for k in op[2] if (v := db.kv_get(k)) is not None}
        return db.kv_get(op[2])
    elif kind == "delete":
        db = _db(obj)
        obj.ctx._host.wrote()  # the write joins the turn: it commits when the turn ends, as a put does
        if isinstance(op[2], list):
            return sum(db.kv_delete(k) for k in op[2])
        return db.kv_delete(op[2])
    elif kind == "list":
        return _list(_db(obj), op[2] or {})
    elif kind == "deleteAll":
        storage.delete_all()  # the runtime's: keys, tables, and the alarm where the compatibility date says so
    elif kind == "sql":
        out = _sql(obj, op[2], op[3])
        bridge.libs.sql(obj.ctx._host, op[2])  # a write to a library's own schedule table: read it now
        return out
    elif kind == "dbsize":
        return obj.ctx.storage.sql.database_size
    elif kind == "getAlarm":
        return obj.ctx._host.visible_alarm()
    elif kind == "tx":
        _tx(obj, op[2])
    elif kind == "abort":
        obj.ctx.abort(op[2], retry_alarm=bool(op[3]))
    else:
        raise AlarmkitError(f"the JavaScript host sent an unknown storage operation {kind!r}")
    return None
