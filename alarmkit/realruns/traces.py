"""Readers for the trace formats people have, each into one plain shape: ``Invocation``.

Formats (JSON Lines, a JSON array, or lines holding arrays; detected per record):

* Tail Worker ``TraceItem`` (what ``tail(events)`` receives; workerd ``types/defines/trace.d.ts`` and
  ``src/workerd/api/trace.h``): ``eventTimestamp``, ``outcome``, ``event.scheduledTime`` (alarm),
  ``scriptName``, ``entrypoint``, ``durableObjectId``, ``exceptions[]`` (``timestamp``, ``name``,
  ``message``), ``logs[]`` (``timestamp``, ``level``, ``message``: the console arguments),
  ``wallTime``, ``cpuTime``, ``executionModel``.
* Logpush ``workers_trace_events`` (Cloudflare's published dataset fields): ``EventType``
  (``alarm``, ...), ``EventTimestampMs``, ``Outcome``, ``Event``, ``ScriptName``, ``Entrypoint``,
  ``Exceptions``, ``Logs``, ``WallTimeMs``, ``CPUTimeMs``. The dataset has no Durable Object id field.
* workerd streaming tail events (``TailStream.TailEvent``: ``invocationId``, ``timestamp``,
  ``sequence``, ``event.type`` = ``onset`` (``info.type`` ``alarm`` with ``scheduledTime``,
  ``durableObjectId``, ``entrypoint``), ``outcome`` (``outcome``, ``wallTime``, ``cpuTime``),
  ``log``, ``exception``, ``spanOpen``/``spanClose``/``attributes``): local workerd opens a span
  ``durable_object_storage_setAlarm`` with attribute ``cloudflare.durable_object.alarm.scheduled_time``
  for every ``setAlarm``, which this reader turns into arms.

Times may be epoch milliseconds or ISO-8601 text (``JSON.stringify`` of a ``Date``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

from ..errors import AlarmkitError

__all__ = ["Invocation", "read_records", "invocations", "parse_ms", "to_logpush", "FORMATS"]

FORMATS = ("tail", "logpush", "stream")
SET_ALARM_SPAN = "durable_object_storage_setAlarm"
DELETE_ALARM_SPAN = "durable_object_storage_deleteAlarm"
SCHEDULED_ATTR = "cloudflare.durable_object.alarm.scheduled_time"


@dataclass
class Invocation:
    """One invocation of a Worker or Durable Object, whatever format it came from."""

    source: str  # tail | logpush | stream
    kind: str  # alarm | fetch | jsrpc | scheduled | ... | unknown
    t_ms: int | None  # when the event was received (eventTimestamp / EventTimestampMs / onset timestamp)
    scheduled_ms: int | None = None  # alarm: event.scheduledTime
    outcome: str | None = None
    object_hex: str | None = None  # durableObjectId (not in Logpush)
    entrypoint: str | None = None
    script: str | None = None
    wall_ms: int | None = None
    cpu_ms: int | None = None
    exceptions: list[dict] = field(default_factory=list)  # {t_ms, name, message}
    logs: list[dict] = field(default_factory=list)  # {t_ms, message: list}
    span_arms: list[tuple[int, str, int | None]] = field(default_factory=list)  # (t_ms, set|delete, scheduled)
    order: int = 0


def parse_ms(v: Any) -> int | None:
    """Epoch milliseconds from a number or ISO-8601 text; None stays None."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise AlarmkitError(f"a time must be epoch ms or ISO-8601 text, got {v!r}")
    if isinstance(v, (int, float)):
        return int(v)
    if isinstance(v, str):
        try:
            return int(float(v))
        except ValueError:
            pass
        try:
            return int(round(datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp() * 1000))
        except ValueError:
            raise AlarmkitError(f"a time must be epoch ms or ISO-8601 text, got {v!r}") from None
    raise AlarmkitError(f"a time must be epoch ms or ISO-8601 text, got {v!r}")


def read_records(path: str | Path) -> list[dict]:
    """Every JSON object in a file: a JSON array, JSON Lines, or lines that are arrays."""
    p = Path(path)
    if not p.is_file():
        raise AlarmkitError(f"no trace file {p}; pass a JSON Lines or JSON array file of tail or Logpush events")
    text = p.read_text(encoding="utf-8")
    stripped = text.lstrip()
    values: list[Any] = []
    if stripped.startswith("["):
        try:
            values = [json.loads(text)]
        except ValueError:
            values = []  # maybe JSON Lines whose lines are arrays
    if not values:
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                values.append(json.loads(line))
            except ValueError as err:
                raise AlarmkitError(f"{p}:{n} is not JSON ({err.msg}); the file must be JSON Lines or one JSON array") from None
    out: list[dict] = []
    for v in values:
        for item in (v if isinstance(v, list) else [v]):
            if not isinstance(item, dict):
                raise AlarmkitError(f"{p}: found {type(item).__name__} where a trace event object was expected")
            out.append(item)
    return out


def detect(rec: dict) -> str | None:
    if "EventTimestampMs" in rec or "EventType" in rec:
        return "logpush"
    if "invocationId" in rec and isinstance(rec.get("event"), dict) and "type" in rec["event"]:
        return "stream"
    if "eventTimestamp" in rec:
        return "tail"
    return None


def _exc(items: Iterable[Any], t: str, name: str, msg: str) -> list[dict]:
    return [{"t_ms": parse_ms(e.get(t)), "name": e.get(name), "message": e.get(msg)} for e in items or []
            if isinstance(e, dict)]


def _logs(items: Iterable[Any], t: str, msg: str) -> list[dict]:
    out = []
    for e in items or []:
        if isinstance(e, dict):
            m = e.get(msg)
            out.append({"t_ms": parse_ms(e.get(t)), "message": m if isinstance(m, list) else [m]})
    return out


def _from_tail(rec: dict) -> Invocation:
    ev = rec.get("event") or {}
    scheduled = ev.get("scheduledTime") if isinstance(ev, dict) else None
    kind = ("alarm" if scheduled is not None and "cron" not in ev else "scheduled" if "cron" in ev
            else "fetch" if "request" in ev else "jsrpc" if "rpcMethod" in ev else "unknown")
    return Invocation("tail", kind, parse_ms(rec.get("eventTimestamp")), parse_ms(scheduled), rec.get("outcome"),
                      rec.get("durableObjectId"), rec.get("entrypoint"), rec.get("scriptName"),
                      rec.get("wallTime"), rec.get("cpuTime"),
                      _exc(rec.get("exceptions"), "timestamp", "name", "message"),
                      _logs(rec.get("logs"), "timestamp", "message"))


def _from_logpush(rec: dict) -> Invocation:
    ev = rec.get("Event") or {}
    scheduled = None
    if isinstance(ev, dict):  # the dataset documents Event only as "details about the source event"
        for k in ("scheduledTime", "ScheduledTime", "ScheduledTimeMs", "scheduledTimeMs"):
            if ev.get(k) is not None:
                scheduled = ev[k]
                break
    kind = str(rec.get("EventType") or "unknown")
    return Invocation("logpush", kind, parse_ms(rec.get("EventTimestampMs")), parse_ms(scheduled), rec.get("Outcome"),
                      None, rec.get("Entrypoint"), rec.get("ScriptName"), rec.get("WallTimeMs"), rec.get("CPUTimeMs"),
                      _exc(rec.get("Exceptions"), "TimestampMs", "Name", "Message"),
                      _logs(rec.get("Logs"), "TimestampMs", "Message"))


def _from_stream(events: list[dict]) -> Invocation:
    events = sorted(events, key=lambda e: e.get("sequence", 0))
    inv = Invocation("stream", "unknown", None)
    spans: dict[str, tuple[str, int | None]] = {}
    for e in events:
        ev, t = e["event"], parse_ms(e.get("timestamp"))
        typ = ev.get("type")
        if typ == "onset":
            info = ev.get("info") or {}
            inv.kind = info.get("type", "unknown")
            inv.t_ms = t
            inv.scheduled_ms = parse_ms(info.get("scheduledTime")) if inv.kind == "alarm" else None
            inv.object_hex, inv.entrypoint, inv.script = ev.get("durableObjectId"), ev.get("entrypoint"), ev.get("scriptName")
        elif typ == "outcome":
            inv.outcome, inv.wall_ms, inv.cpu_ms = ev.get("outcome"), ev.get("wallTime"), ev.get("cpuTime")
        elif typ == "log":
            m = ev.get("message")
            inv.logs.append({"t_ms": t, "message": m if isinstance(m, list) else [m]})
        elif typ == "exception":
            inv.exceptions.append({"t_ms": t, "name": ev.get("name"), "message": ev.get("message")})
        elif typ == "spanOpen":
            spans[ev.get("spanId")] = (ev.get("name"), t)
        elif typ == "attributes":
            span = (e.get("spanContext") or {}).get("spanId")
            name, opened = spans.get(span, (None, None))
            if name == SET_ALARM_SPAN:
                for a in ev.get("info") or []:
                    if a.get("name") == SCHEDULED_ATTR:
                        inv.span_arms.append((opened if opened is not None else t, "set", parse_ms(a.get("value"))))
    for name, t in spans.values():
        if name == DELETE_ALARM_SPAN:
            inv.span_arms.append((t, "delete", None))
    inv.span_arms.sort(key=lambda a: a[0])
    return inv


def invocations(records: list[dict]) -> tuple[list[Invocation], dict[str, int]]:
    """The invocations in ``records`` (in the order their records appear) and a count per format."""
    out: list[Invocation] = []
    counts = {f: 0 for f in FORMATS}
    streams: dict[str, list[dict]] = {}
    unknown = 0
    for rec in records:
        fmt = detect(rec)
        if fmt is None:
            unknown += 1
            continue
        counts[fmt] += 1
        if fmt == "stream":
            streams.setdefault(rec["invocationId"], []).append(rec)
        else:
            out.append(_from_tail(rec) if fmt == "tail" else _from_logpush(rec))
    out.extend(_from_stream(evs) for evs in streams.values())
    if not out:
        raise AlarmkitError(f"no tail, Logpush or streaming tail events among {len(records)} records; "
                            "expected objects with eventTimestamp (TraceItem), EventTimestampMs (Logpush) "
                            "or invocationId + event.type (streaming tail)")
    counts["unrecognised"] = unknown
    for i, inv in enumerate(out):
        inv.order = i
    return out, counts


def to_logpush(item: dict) -> dict:
    """One tail ``TraceItem`` as a Logpush ``workers_trace_events`` record, field by field.

    Top-level names are the dataset's published fields. The dataset documents ``Event``,
    ``Exceptions`` and ``Logs`` only as objects: their inner keys here (``Event`` = the TraceItem's
    event as is; ``Name``/``Message``/``TimestampMs``, ``Level``/``Message``/``TimestampMs``) are this
    converter's choice, and ``durableObjectId`` has no field to go to.
    """
    ev = item.get("event") or {}
    typ = ("alarm" if "scheduledTime" in ev and "cron" not in ev else "scheduled" if "cron" in ev
           else "fetch" if "request" in ev else "worker_rpc" if "rpcMethod" in ev else "unknown")
    return {
        "CPUTimeMs": item.get("cpuTime"), "DispatchNamespace": item.get("dispatchNamespace"),
        "Entrypoint": item.get("entrypoint"), "Event": ev, "EventTimestampMs": item.get("eventTimestamp"),
        "EventType": typ,
        "Exceptions": [{"Name": e.get("name"), "Message": e.get("message"), "TimestampMs": e.get("timestamp")}
                       for e in item.get("exceptions") or []],
        "Logs": [{"Level": g.get("level"), "Message": g.get("message"), "TimestampMs": g.get("timestamp")}
                 for g in item.get("logs") or []],
        "Outcome": item.get("outcome"), "ScriptName": item.get("scriptName"), "ScriptTags": item.get("scriptTags") or [],
        "ScriptVersion": item.get("scriptVersion"), "WallTimeMs": item.get("wallTime"),
    }
