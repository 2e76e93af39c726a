"""Trace events into the journal as one run, with a summary and the anomalies found.

Each alarm invocation becomes ``fire`` (``scheduled_ms`` = the event's scheduledTime, ``late_ms``)
and ``handler_ok`` / ``handler_error`` (at the event time plus its wall time). ``retry_count`` comes
from the object's own ``alarm_start`` log line when there is one, else it is inferred: the n-th
invocation for one scheduledTime on one object is retry n - 1 (``detail.retry_count_inferred``).
After the seventh failure for one scheduled time (workerd: first run + 6 retries) an ``abandoned``
event is added, marked inferred. Arms, moves, deletes, calls and effects come from the log-line
convention (``logline.py``) and, for streaming tail events, from workerd's ``setAlarm`` spans.
Times stay epoch milliseconds. Nothing a format does not carry is made up: ``summary.cannot``
says what it lacks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AlarmkitError
from .logline import parse_line
from .traces import Invocation, invocations, read_records

__all__ = ["ImportResult", "Anomaly", "import_records", "import_file", "LATE_MS", "GRACE_MS", "LADDER"]

LATE_MS = 1_000  # a first attempt later than this after its scheduled time is a late fire
GRACE_MS = 60_000  # the docs: alarms "can be delayed by up to a minute during maintenance or failover"
LADDER = 7  # workerd: ALARM_RETRY_MAX_TRIES = 6 retries after the first run


@dataclass(frozen=True)
class Anomaly:
    kind: str  # late_fire | retries | ladder_exhausted | duplicate_fire | arm_without_fire
    object: str
    t_ms: int
    message: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "object": self.object, "t_ms": self.t_ms, "message": self.message}

    def __str__(self) -> str:
        return f"{self.kind} · {self.object} at {_utc(self.t_ms)}: {self.message}"


@dataclass
class ImportResult:
    rows: list[tuple]  # journal rows (seq, t_ms, namespace, object, kind, scheduled, prev, retry, detail)
    anomalies: list[Anomaly]
    summary: dict[str, Any]
    cannot: list[str]
    pending: list[str] = field(default_factory=list)
    run_id: int | None = None

    def report(self) -> str:
        s = self.summary
        lines = [f"imported {s['file']}: {s['invocations']} invocations ({s['formats']}), "
                 f"{s['alarm_invocations']} alarm() runs on {len(s['objects'])} object(s), {len(self.rows)} journal events"
                 + (f", run {self.run_id}" if self.run_id is not None else "")]
        if s["first_ms"] is not None:
            lines.append(f"  from {_utc(s['first_ms'])} to {_utc(s['last_ms'])}")
        lines.append(f"  anomalies: {len(self.anomalies) or 'none'}")
        lines += [f"    {a}" for a in self.anomalies]
        lines += [f"  still pending at the end of the trace: {p}" for p in self.pending]
        lines += [f"  not in this trace: {c}" for c in self.cannot]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"summary": self.summary, "anomalies": [a.to_dict() for a in self.anomalies], "cannot": self.cannot,
                "pending": self.pending, "run_id": self.run_id, "events": len(self.rows)}


def _utc(ms: int | None) -> str:
    from datetime import datetime, timezone

    if ms is None:
        return "?"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def import_records(records: list[dict], name: str = "trace", *, late_ms: int = LATE_MS,
                   grace_ms: int = GRACE_MS) -> ImportResult:
    """Map trace records (see ``traces``) to journal rows and find the anomalies; writes nothing."""
    for label, v in (("late_ms", late_ms), ("grace_ms", grace_ms)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise AlarmkitError(f"{label} must be a whole number of ms >= 0, got {v!r}")
    invs, counts = invocations(records)
    formats = [f for f in ("tail", "logpush", "stream") if counts[f]]
    if len(formats) > 1:
        raise AlarmkitError(f"{name} mixes {' and '.join(formats)} records; the same invocations would count twice: "
                            "import one format per file")
    fmt = formats[0]
    names: dict[str, str] = {}  # hex id -> name, from log lines carrying both
    parsed: list[list[dict]] = []
    for inv in invs:
        lines = []
        for log in inv.logs:
            rec = parse_line(log["message"])
            if rec is not None:
                rec = {**rec, "_t": rec.get("t") if isinstance(rec.get("t"), (int, float)) else log["t_ms"]}
                lines.append(rec)
                if rec.get("id") and rec.get("obj"):
                    names[str(rec["id"])] = str(rec["obj"])
        parsed.append(lines)
    have_lines = any(parsed)
    b = _Builder(late_ms, grace_ms)
    order = sorted(range(len(invs)), key=lambda i: (invs[i].t_ms if invs[i].t_ms is not None else 0, invs[i].order))
    for i in order:
        inv, lines = invs[i], parsed[i]
        obj = next((str(r["obj"]) for r in lines if r.get("obj")), None)
        if obj is None and inv.object_hex:
            obj = names.get(inv.object_hex, inv.object_hex)
        if obj is None and inv.kind == "alarm":
            obj = inv.entrypoint or inv.script or "unknown object"
        ns = inv.entrypoint or inv.script
        b.invocation(inv, lines, ns, obj)
    end = max((r[1] for r in b.rows), default=None)
    b.finish(end)
    # in time order (a stable sort keeps each invocation's own order), numbered again
    rows = [(i, *r[1:]) for i, r in enumerate(sorted(b.rows, key=lambda r: r[1]), 1)]
    cannot = []
    if fmt == "logpush" and not have_lines:
        cannot.append("object ids: Logpush workers_trace_events has no Durable Object id field; "
                      "alarm invocations are grouped by Entrypoint/ScriptName")
    if not have_lines and not any(inv.span_arms for inv in invs):
        cannot.append("arms, moves, deletes and effects: no alarmkit log lines (docs/real-runs.md); "
                      "the arm-without-fire check was not made")
    if b.inferred:
        cannot.append(f"retry counts: {b.inferred} alarm() run(s) without an alarm_start log line; "
                      "retry_count inferred from repeated scheduledTime on one object")
    ends = {id(inv) for inv, lines in zip(invs, parsed) if any(r["ev"] in ("alarm_end", "alarm_throw") for r in lines)}
    if any(inv.kind == "alarm" and not inv.wall_ms and id(inv) not in ends for inv in invs):
        cannot.append("handler durations: wallTime is 0 or missing, so handler_ok/handler_error sit at the fire time "
                      "unless an alarm_end/alarm_throw log line says when")
    if b.no_outcome:
        cannot.append(f"outcomes: {b.no_outcome} alarm() run(s) have no outcome in the trace (it ended first) and no "
                      "alarm_end/alarm_throw line; no handler_ok/handler_error was made for them")
    times = [inv.t_ms for inv in invs if inv.t_ms is not None]
    summary = {"file": name, "format": fmt, "formats": ", ".join(f"{counts[f]} {f}" for f in formats)
               + (f", {counts['unrecognised']} unrecognised" if counts["unrecognised"] else ""),
               "invocations": len(invs), "alarm_invocations": sum(inv.kind == "alarm" for inv in invs),
               "objects": sorted(b.objects), "first_ms": min(times, default=None), "last_ms": max(times, default=None),
               "log_lines": sum(len(p) for p in parsed), "late_ms": late_ms, "grace_ms": grace_ms}
    return ImportResult(rows, b.anomalies, summary, cannot, b.pending)


class _Builder:
    def __init__(self, late_ms: int, grace_ms: int) -> None:
        self.late_ms, self.grace_ms = late_ms, grace_ms
        self.rows: list[tuple] = []
        self.anomalies: list[Anomaly] = []
        self.pending: list[str] = []
        self.objects: set[str] = set()
        self.current: dict[str, int | None] = {}  # object -> alarm it has armed (as far as the trace tells)
        self.armed_at: dict[str, tuple[int, int]] = {}  # object -> (scheduled, arm time) not yet fired
        self.attempts: dict[tuple[str, int], list[tuple[int, str | None]]] = {}  # (obj, scheduled) -> [(t, outcome)]
        self.inferred = 0
        self.no_outcome = 0

    def add(self, t, ns, obj, kind, sched=None, prev=None, retry=None, detail=None) -> None:
        self.rows.append((len(self.rows) + 1, int(t), ns, obj, kind, sched, prev, retry, detail))
        if obj is not None:
            self.objects.add(obj)

    def line(self, r: dict, ns: str | None, obj: str | None, in_alarm: bool) -> None:
        t, ev = int(r["_t"]), r["ev"]
        obj = str(r.get("obj") or obj)
        if ev == "construct":
            self.add(t, ns, obj, "construct", detail={"source": "log"})
        elif ev == "arm":
            at = r.get("at")
            at = int(at) if isinstance(at, (int, float)) else None
            self._arm(t, ns, obj, at, "log", in_alarm)
        elif ev == "disarm":
            self.add(t, ns, obj, "disarm", prev=self.current.get(obj), detail={"cause": "user", "source": "log"})
            self.current[obj] = None
            self._consumed(obj, t, "deleted")
        elif ev in ("get", "call"):
            d = {"method": "getAlarm", "value": r.get("value")} if ev == "get" else {"method": r.get("method")}
            self.add(t, ns, obj, "call", detail=d)
        elif ev == "effect":
            self.add(t, ns, obj, "effect", detail={"name": r.get("name"), "key": r.get("key")})

    def _arm(self, t: int, ns, obj: str, at: int | None, source: str, in_alarm: bool) -> None:
        from ..journal import direction

        prev = self.current.get(obj)
        self.add(t, ns, obj, "arm", at, prev, None,
                 {"direction": direction(prev, at), "cause": "user", "source": source, "in_alarm": in_alarm})
        self.current[obj] = at
        self._consumed(obj, t, "replaced")
        if at is not None:
            self.armed_at[obj] = (at, t)

    def _consumed(self, obj: str, t: int, how: str) -> None:
        self.armed_at.pop(obj, None)

    def invocation(self, inv: Invocation, lines: list[dict], ns, obj) -> None:
        if inv.kind != "alarm":
            for r in lines:
                self.line(r, ns, obj, False)
            self._span_arms(inv, ns, obj, lines, False)
            return
        t, s = inv.t_ms, inv.scheduled_ms
        start = next((r for r in lines if r["ev"] == "alarm_start"), None)
        tried = self.attempts.setdefault((obj, s), [])
        if start is not None and isinstance(start.get("retryCount"), int):
            rc, inferred = start["retryCount"], False
        else:
            rc, inferred = len(tried), True
            self.inferred += 1
        end_line = next((r for r in lines if r["ev"] in ("alarm_end", "alarm_throw")), None)
        outcome = inv.outcome or (None if end_line is None else "ok" if end_line["ev"] == "alarm_end" else "exception")
        ok_before = any(o == "ok" for _, o in tried)
        self.armed_at.pop(obj, None)
        for r in lines:  # a constructor run before alarm() logs first
            if r["ev"] == "construct":
                self.line(r, ns, obj, False)
        late = t - s if s is not None else None
        self.add(t, ns, obj, "fire", s, None, rc, {"attempt": len(tried) + 1, "late_ms": late, "retry_count_inferred":
                                                   inferred, "source": inv.source, "outcome": outcome})
        tried.append((t, outcome))
        armed_inside = False
        for r in lines:
            if r["ev"] not in ("construct", "alarm_start", "alarm_end", "alarm_throw"):
                self.line(r, ns, obj, True)
                armed_inside |= r["ev"] == "arm"
        armed_inside |= self._span_arms(inv, ns, obj, lines, True)
        end = max(t + int(inv.wall_ms or 0), int(end_line["_t"]) if end_line else t)
        if outcome is None:  # the trace ended before the invocation's outcome arrived: no end is made up
            self.no_outcome += 1
        elif outcome == "ok":
            self.add(end, ns, obj, "handler_ok", s, None, rc, {"next_ms": self.current.get(obj) if armed_inside else None})
            if not armed_inside:
                self.current[obj] = None
        else:
            exc = inv.exceptions[0] if inv.exceptions else {}
            self.add(end, ns, obj, "handler_error", s, None, rc,
                     {"error": exc.get("name") or (end_line or {}).get("error") or inv.outcome,
                      "message": exc.get("message") or (end_line or {}).get("message"), "outcome": outcome})
        self._check_fire(obj, t, end, s, rc, tried, ok_before, ns, armed_inside)

    def _span_arms(self, inv: Invocation, ns, obj, lines, in_alarm: bool) -> bool:
        if any(r["ev"] in ("arm", "disarm") for r in lines) or obj is None:
            return False  # the object's own lines already say it
        for t, what, at in inv.span_arms:
            if what == "set":
                self._arm(t, ns, obj, at, "setAlarm span", in_alarm)
            else:
                self.add(t, ns, obj, "disarm", prev=self.current.get(obj), detail={"cause": "user", "source": "span"})
                self.current[obj] = None
        return any(w == "set" for _, w, _ in inv.span_arms)

    def _check_fire(self, obj, t, end, s, rc, tried, ok_before, ns, armed_inside) -> None:
        if s is None:
            return
        if ok_before:
            self.anomalies.append(Anomaly("duplicate_fire", obj, t, f"alarm() ran again for scheduled time {_utc(s)} "
                                          f"after a successful run (run {len(tried)} for that time)"))
        elif len(tried) == 1 and t - s > self.late_ms:
            self.anomalies.append(Anomaly("late_fire", obj, t, f"fired {t - s} ms after its scheduled time {_utc(s)} "
                                          f"(threshold {self.late_ms} ms)"))
        failures = [x for x in tried if x[1] not in ("ok", None)]
        if len(failures) == LADDER and len(tried) == LADDER and not armed_inside:
            self.add(end, ns, obj, "abandoned", None, s, rc, {"attempts": LADDER, "inferred": True})
            self.current[obj] = None
            waits = ", ".join(f"+{(a - tried[0][0]) / 1000:.1f}" for a, _ in tried)
            self.anomalies.append(Anomaly("ladder_exhausted", obj, t, f"{LADDER} failed runs for scheduled time {_utc(s)} "
                                          f"(at {waits} s), then silence: the alarm is abandoned"))

    def finish(self, end: int | None) -> None:
        # retries, one line per scheduled time that needed them
        for (obj, s), tried in self.attempts.items():
            if len(tried) > 1 and not any(o == "ok" for _, o in tried[:-1]):
                n = len(tried) - 1
                ok = "then ok" if tried[-1][1] == "ok" else "last failed"
                self.anomalies.append(Anomaly("retries", obj, tried[1][0],
                                              f"{n} {'retry' if n == 1 else 'retries'} for scheduled time {_utc(s)} ({ok})"))
        for obj, (at, armed) in self.armed_at.items():
            if end is not None and end >= at + self.grace_ms:
                self.anomalies.append(Anomaly("arm_without_fire", obj, at, f"armed at {_utc(armed)} for {_utc(at)}; "
                                              f"no alarm() by {self.grace_ms} ms after that (trace ends {_utc(end)})"))
            else:
                self.pending.append(f"{obj}: armed for {_utc(at)}, the trace ends before that plus {self.grace_ms} ms")
        self.anomalies.sort(key=lambda a: (a.t_ms, a.object, a.kind))


def import_file(path: str | Path, journal: Any = None, *, late_ms: int = LATE_MS, grace_ms: int = GRACE_MS,
                scenario: str | None = None) -> ImportResult:
    """Read ``path``, map it, and (with ``journal``) write it as one run; profile ``real:<format>``."""
    p = Path(path)
    result = import_records(read_records(p), p.name, late_ms=late_ms, grace_ms=grace_ms)
    if journal is not None:
        params = {"imported": {"file": p.name, "format": result.summary["format"], "late_ms": late_ms,
                               "grace_ms": grace_ms, "anomalies": [str(a) for a in result.anomalies],
                               "cannot": result.cannot, "pending": result.pending,
                               "first_ms": result.summary["first_ms"]}}
        run_id = journal.start_run(scenario or f"import:{p.name}", f"real:{result.summary['format']}", 0, params)
        journal.write_events(run_id, result.rows)
        result.run_id = run_id
    return result
