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

import hashlib
import json
import math
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import AlarmkitError
from .logline import parse_line
from .reader import TraceFile

__all__ = ["Invocation", "Records", "read_records", "iter_records", "invocations", "parse_ms", "to_logpush",
           "FORMATS", "OUTCOMES", "FAILED"]

FORMATS = ("tail", "logpush", "stream")
SET_ALARM_SPAN = "durable_object_storage_setAlarm"
DELETE_ALARM_SPAN = "durable_object_storage_deleteAlarm"
SCHEDULED_ATTR = "cloudflare.durable_object.alarm.scheduled_time"


@dataclass(slots=True)  # one per invocation of a trace: slots keep a 50 MB trace's few hundred thousand small
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
    logs: list[dict] = field(default_factory=list)  # the log-line convention's records, with _t (ms)
    span_arms: list[tuple[int, str, int | None]] = field(default_factory=list)  # (t_ms, set|delete, scheduled)
    order: int = 0


MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: the last time a report can print
OUTCOMES = ("unknown", "ok", "exception", "exceededCpu", "killSwitch", "daemonDown", "scriptNotFound", "canceled",
            "exceededMemory", "loadShed", "responseStreamDisconnected")  # workerd src/workerd/io/outcome.capnp
FAILED = frozenset(OUTCOMES) - {"ok", "unknown"}  # outcomes that are a failed run (workerd retries the alarm)


def parse_ms(v: Any, what: str = "a time") -> int | None:
    """Epoch milliseconds from a number or ISO-8601 text (naive text is UTC); None stays None.

    Refused (``AlarmkitError``): booleans, NaN and infinities, times before 1970 or after 9999, text
    that is neither a number nor ISO-8601, any other type.
    """
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise AlarmkitError(f"{what} must be epoch ms or ISO-8601 text, got {_show(v)}")
    ms: float | None = None
    if isinstance(v, str):
        try:
            ms = float(v)
        except ValueError:
            try:
                d = datetime.fromisoformat(v.replace("Z", "+00:00"))
            except ValueError:
                raise AlarmkitError(f"{what} must be epoch ms or ISO-8601 text, got {_show(v)}") from None
            if d.tzinfo is None:
                d = d.replace(tzinfo=timezone.utc)
            ms = round(d.timestamp() * 1000)
    else:
        ms = v
    if not math.isfinite(ms) or not 0 <= ms <= MAX_MS:
        raise AlarmkitError(f"{what} must be epoch ms in 0..{MAX_MS} (1970 to 9999), got {_show(v)}")
    return int(ms)


def _num(v: Any, what: str) -> int | None:
    """A duration or count in ms: None, or a finite number in 0..MAX_MS."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= MAX_MS:
        raise AlarmkitError(f"{what} must be a number of ms in 0..{MAX_MS}, got {_show(v)}")
    return int(v)


def _text(v: Any) -> str | None:
    return None if v is None else v if isinstance(v, str) else json.dumps(v, default=str)[:200]


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _list(v: Any, what: str) -> list:
    if v is None:
        return []
    if not isinstance(v, list):
        raise AlarmkitError(f"{what} must be a list, got {_show(v)}")
    return v


def _dict(v: Any, what: str) -> dict:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise AlarmkitError(f"{what} must be an object, got {_show(v)}")
    return v


def read_records(path: str | Path) -> list[dict]:
    """Every trace record in a file (a JSON array, JSON Lines, or lines that are arrays), as a list.

    For tests and small files; ``import_file`` streams instead (``iter_records``).
    """
    return [rec for _, rec in iter_records(TraceFile(_trace_path(path)))]


def _trace_path(path: str | Path) -> Path:
    p = Path(path)
    if not p.is_file():
        raise AlarmkitError(f"no trace file {p}; pass a JSON Lines or JSON array file of tail or Logpush events")
    return p


def iter_records(tf: TraceFile) -> Iterator[tuple[int, dict]]:
    """(line, record) for each trace record of an open ``TraceFile``; a non-object is refused."""
    for line, item in tf.values():
        if not isinstance(item, dict):
            raise AlarmkitError(f"{tf.name}:{line}: found {type(item).__name__} where a trace event object was "
                                "expected")
        yield line, item


def detect(rec: dict) -> str | None:
    if "EventTimestampMs" in rec or "EventType" in rec:
        return "logpush"
    if "invocationId" in rec and isinstance(rec.get("event"), dict) and "type" in rec["event"]:
        return "stream"
    if "eventTimestamp" in rec:
        return "tail"
    return None


def _exc(items: Any, t: str, name: str, msg: str, what: str) -> list[dict]:
    out = []
    for e in _list(items, what):
        if isinstance(e, dict):
            out.append({"t_ms": parse_ms(e.get(t), f"{what}[].{t}"), "name": _text(e.get(name)),
                        "message": _text(e.get(msg))})
    return out


def _logs(items: Any, t: str, msg: str, what: str) -> list[dict]:
    """The log-line convention's records among the logs (ordinary log text is not kept), with their time."""
    out = []
    for e in _list(items, what):
        if isinstance(e, dict):
            m = e.get(msg)
            _keep_line(out, m if isinstance(m, list) else [m], parse_ms(e.get(t), f"{what}[].{t}"))
    return out


def _keep_line(out: list, message: list, t_ms: int | None) -> None:
    rec = parse_line(message)
    if rec is None:
        return
    t = rec.get("t")
    t = parse_ms(t, "a log line's t") if isinstance(t, (int, float)) and not isinstance(t, bool) else t_ms
    if t is None:
        return  # a convention line with no time anywhere: nothing to place it at
    # the keys as the constants below, not the decoder's fresh strings, and repeated names (the event,
    # the object, its id) shared: a trace's log lines are most of what an import keeps in memory
    rec = {k: rec[k] for k in _LINE_KEYS if k in rec}
    for k in ("ev", "obj", "id", "method", "name"):
        if isinstance(rec.get(k), str) and len(rec[k]) <= 200:
            rec[k] = sys.intern(rec[k])
    at = rec.get("at")  # recorded.js writes String(t) for a value setAlarm would refuse: no time then
    rec["at"] = parse_ms(at, "a log line's at") if isinstance(at, (int, float)) and not isinstance(at, bool) else None
    if rec.get("obj") is not None and not isinstance(rec["obj"], str):
        rec["obj"] = _text(rec["obj"])
    rec["_t"] = t
    out.append(rec)


_LINE_KEYS = ("ev", "obj", "id", "at", "value", "method", "name", "key", "retryCount", "error", "message")


def _shared(v: Any) -> str | None:
    """``_text``, one copy per distinct value (outcomes, names and ids repeat on every record)."""
    t = _text(v)
    return sys.intern(t) if t is not None and len(t) <= 200 else t


def _from_tail(rec: dict) -> Invocation:
    ev = rec.get("event")
    ev = ev if isinstance(ev, dict) else {}
    scheduled = ev.get("scheduledTime")
    kind = ("alarm" if scheduled is not None and "cron" not in ev else "scheduled" if "cron" in ev
            else "fetch" if "request" in ev else "jsrpc" if "rpcMethod" in ev else "unknown")
    return Invocation("tail", kind, parse_ms(rec.get("eventTimestamp"), "eventTimestamp"),
                      parse_ms(scheduled, "event.scheduledTime"), _shared(rec.get("outcome")),
                      _shared(rec.get("durableObjectId")), _shared(rec.get("entrypoint")), _shared(rec.get("scriptName")),
                      _num(rec.get("wallTime"), "wallTime"), _num(rec.get("cpuTime"), "cpuTime"),
                      _exc(rec.get("exceptions"), "timestamp", "name", "message", "exceptions"),
                      _logs(rec.get("logs"), "timestamp", "message", "logs"))


def _from_logpush(rec: dict) -> Invocation:
    ev = rec.get("Event")
    scheduled = None
    if isinstance(ev, dict):  # the dataset documents Event only as "details about the source event"
        for k in ("scheduledTime", "ScheduledTime", "ScheduledTimeMs", "scheduledTimeMs"):
            if ev.get(k) is not None:
                scheduled = ev[k]
                break
    kind = _text(rec.get("EventType")) or "unknown"
    return Invocation("logpush", kind, parse_ms(rec.get("EventTimestampMs"), "EventTimestampMs"),
                      parse_ms(scheduled, "Event.scheduledTime"), _shared(rec.get("Outcome")),
                      None, _shared(rec.get("Entrypoint")), _shared(rec.get("ScriptName")),
                      _num(rec.get("WallTimeMs"), "WallTimeMs"), _num(rec.get("CPUTimeMs"), "CPUTimeMs"),
                      _exc(rec.get("Exceptions"), "TimestampMs", "Name", "Message", "Exceptions"),
                      _logs(rec.get("Logs"), "TimestampMs", "Message", "Logs"))


def _stream_keep(rec: dict) -> tuple | None:
    """What a streaming tail event contributes, checked and compact: (sequence, timestamp, type, fields)."""
    ev = rec["event"]
    seq = rec.get("sequence", 0)
    if isinstance(seq, bool) or not isinstance(seq, (int, float)) or not math.isfinite(seq):
        raise AlarmkitError(f"sequence must be a number, got {_show(seq)}")
    t = parse_ms(rec.get("timestamp"), "timestamp")
    typ = ev.get("type")
    if typ == "onset":
        info = _dict(ev.get("info"), "event.info")
        kind = _text(info.get("type")) or "unknown"
        sched = parse_ms(info.get("scheduledTime"), "event.info.scheduledTime") if kind == "alarm" else None
        return (seq, t, "onset", (kind, sched, _text(ev.get("durableObjectId")), _text(ev.get("entrypoint")),
                                  _text(ev.get("scriptName"))))
    if typ == "outcome":
        return (seq, t, "outcome", (_text(ev.get("outcome")), _num(ev.get("wallTime"), "event.wallTime"),
                                    _num(ev.get("cpuTime"), "event.cpuTime")))
    if typ == "log":
        m = ev.get("message")
        lines: list = []
        _keep_line(lines, m if isinstance(m, list) else [m], t)
        return (seq, t, "log", lines) if lines else None
    if typ == "exception":
        return (seq, t, "exception", {"t_ms": t, "name": _text(ev.get("name")), "message": _text(ev.get("message"))})
    if typ == "spanOpen":
        name = _text(ev.get("name"))
        if name in (SET_ALARM_SPAN, DELETE_ALARM_SPAN):
            return (seq, t, "spanOpen", (_text(ev.get("spanId")), name))
        return None
    if typ == "attributes":
        span = _text(_dict(rec.get("spanContext"), "spanContext").get("spanId"))
        at = None
        for a in _list(ev.get("info"), "event.info"):
            if not isinstance(a, dict):
                raise AlarmkitError(f"a span attribute must be an object, got {_show(a)}")
            if a.get("name") == SCHEDULED_ATTR:
                at = parse_ms(a.get("value"), SCHEDULED_ATTR)
        return (seq, t, "attributes", (span, at)) if at is not None else None
    return None


def _from_stream(events: list[tuple]) -> Invocation:
    events = sorted(events, key=lambda e: e[0])
    inv = Invocation("stream", "unknown", None)
    spans: dict[str | None, tuple[str, int | None]] = {}
    for _, t, typ, v in events:
        if typ == "onset":
            inv.kind, inv.scheduled_ms, inv.object_hex, inv.entrypoint, inv.script = v
            inv.t_ms = t
        elif typ == "outcome":
            inv.outcome, inv.wall_ms, inv.cpu_ms = v
        elif typ == "log":
            inv.logs.extend(v)
        elif typ == "exception":
            inv.exceptions.append(v)
        elif typ == "spanOpen":
            spans[v[0]] = (v[1], t)
        elif typ == "attributes":
            name, opened = spans.get(v[0], (None, None))
            if name == SET_ALARM_SPAN:
                inv.span_arms.append((opened if opened is not None else t, "set", v[1]))
    for name, t in spans.values():
        if name == DELETE_ALARM_SPAN and t is not None:
            inv.span_arms.append((t, "delete", None))
    inv.span_arms.sort(key=lambda a: a[0])
    return inv


class Records:
    """Trace records turned into invocations as they stream in, identical records dropped.

    Logpush delivers at least once, and a tail consumer may store a batch twice: a record equal,
    field for field, to one already read is counted in ``duplicates`` and skipped (its digest is
    kept, 16 bytes a record, not the record).
    """

    def __init__(self, name: str = "trace") -> None:
        self.name = name
        self.out: list[Invocation] = []
        self.counts = {f: 0 for f in FORMATS}
        self.counts["unrecognised"] = 0
        self.streams: dict[str, list[tuple]] = {}
        self.seen: set[bytes] = set()
        self.records = 0
        self.duplicates = 0

    def add(self, rec: dict, line: int | None = None) -> None:
        self.records += 1
        digest = hashlib.blake2b(json.dumps(rec, sort_keys=True, separators=(",", ":"), default=str).encode(),
                                 digest_size=16).digest()
        if digest in self.seen:
            self.duplicates += 1
            return
        self.seen.add(digest)
        fmt = detect(rec)
        if fmt is None:
            self.counts["unrecognised"] += 1
            return
        self.counts[fmt] += 1
        try:
            if fmt == "stream":
                kept = _stream_keep(rec)
                if kept is not None:
                    self.streams.setdefault(_text(rec["invocationId"]) or "", []).append(kept)
                else:
                    self.streams.setdefault(_text(rec["invocationId"]) or "", [])
            else:
                self.out.append(_from_tail(rec) if fmt == "tail" else _from_logpush(rec))
        except AlarmkitError as err:
            where = f"{self.name}:{line}" if line is not None else f"{self.name}, record {self.records}"
            raise AlarmkitError(f"{where}: {err}") from None

    def finish(self) -> tuple[list[Invocation], dict[str, int]]:
        out = self.out + [_from_stream(evs) for evs in self.streams.values()]
        if not out:
            raise AlarmkitError(f"no tail, Logpush or streaming tail events among {self.records} records; "
                                "expected objects with eventTimestamp (TraceItem), EventTimestampMs (Logpush) "
                                "or invocationId + event.type (streaming tail)")
        for i, inv in enumerate(out):
            inv.order = i
        return out, dict(self.counts)


def invocations(records: Iterable[dict], name: str = "trace") -> tuple[list[Invocation], dict[str, int]]:
    """The invocations in ``records`` (in the order their records appear) and a count per format
    (``duplicates``: identical records dropped)."""
    r = Records(name)
    for rec in records:
        r.add(rec)
    out, counts = r.finish()
    counts["duplicates"] = r.duplicates
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
