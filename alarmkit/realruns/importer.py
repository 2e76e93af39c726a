"""Trace events into the journal as one run, with a summary and the anomalies found.

Each alarm invocation becomes ``fire`` (``scheduled_ms`` = the event's scheduledTime, ``late_ms``)
and ``handler_ok`` / ``handler_error`` (at the event time plus its wall time). ``retry_count`` comes
from the object's own ``alarm_start`` log line when there is one, else it is inferred: the n-th
invocation for one scheduledTime on one object is retry n - 1 (``detail.retry_count_inferred``).
After the seventh failure for one scheduled time (workerd: first run + 6 retries) an ``abandoned``
event is added, marked inferred. Arms, moves, deletes, calls and effects come from the log-line
convention (``logline.py``) and, for streaming tail events, from workerd's ``setAlarm`` spans.
Times stay epoch milliseconds. Nothing a format does not carry is made up: ``summary.cannot``
says what it lacks, and ``checks`` counts what each anomaly check looked at (``checks.py``).

The file is streamed (``reader.TraceFile``): memory grows with the invocations and journal events
kept, not with the file's bytes (ordinary log text is dropped as it is read).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import AlarmkitError
from .checks import Checks, Anomaly, utc
from .reader import TraceFile
from .._text import clean
from .traces import FAILED, OUTCOMES, Invocation, Records, iter_records, _trace_path

__all__ = ["ImportResult", "Anomaly", "import_records", "import_file", "journal_run", "LATE_MS", "GRACE_MS", "LADDER"]

LATE_MS = 1_000  # a first attempt later than this after its scheduled time is a late fire
GRACE_MS = 60_000  # the docs: alarms "can be delayed by up to a minute during maintenance or failover"
LADDER = 7  # workerd: ALARM_RETRY_MAX_TRIES = 6 retries after the first run
# workerd's first retry waits 2 s (alarm-scheduler.h: 2 << retry s, jittered up by at most 25 %), so two
# runs of one scheduled time less than a second apart cannot be one object's retries
MIN_RETRY_GAP_MS = 1_000
WRITE_CHUNK = 20_000  # journal rows converted and written at a time (memory: docs/real-runs.md)
PENDING_EACH = 10  # up to this many pending arms get a line each; more are summarised one line per 100


@dataclass
class ImportResult:
    rows: list[tuple]  # journal rows (seq, t_ms, namespace, object, kind, scheduled, prev, retry, detail)
    anomalies: list[Anomaly]
    summary: dict[str, Any]
    cannot: list[str]
    pending: list[str] = field(default_factory=list)
    run_id: int | None = None
    checks: Checks = field(default_factory=Checks)

    def report(self) -> str:
        """The readable summary; every line is safe for a terminal (``text.clean``)."""
        s = self.summary
        lines = [f"imported {s['file']}: {s['invocations']} invocations ({s['formats']}), "
                 f"{s['alarm_invocations']} alarm() runs on {len(s['objects'])} object(s), {len(self.rows)} journal events"
                 + (f", run {self.run_id}" if self.run_id is not None else "")]
        if s.get("again_of"):
            lines.append(f"  the same file was imported before as run(s) {s['again_of']}; this run is marked again_of")
        if s["first_ms"] is not None:
            lines.append(f"  from {utc(s['first_ms'])} to {utc(s['last_ms'])}")
        lines.append(f"  anomalies: {self.checks.verdict(len(self.anomalies))}")
        lines += [f"    {a}" for a in self.anomalies]
        lines += [f"  still pending at the end of the trace: {p}" for p in self.pending]
        lines += [f"  not in this trace: {c}" for c in self.cannot]
        return "\n".join(clean(line) for line in lines)

    def to_dict(self) -> dict:
        return {"summary": self.summary, "anomalies": [a.to_dict() for a in self.anomalies], "cannot": self.cannot,
                "pending": self.pending, "run_id": self.run_id, "events": len(self.rows), "checks": self.checks.to_dict()}


def import_records(records: Iterable[dict] | Records, name: str = "trace", *, late_ms: int = LATE_MS,
                   grace_ms: int = GRACE_MS) -> ImportResult:
    """Map trace records (see ``traces``) to journal rows and find the anomalies; writes nothing."""
    for label, v in (("late_ms", late_ms), ("grace_ms", grace_ms)):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 10**12:
            raise AlarmkitError(f"{label} must be a whole number of ms >= 0, got {v!r}")
    if not isinstance(records, Records):
        acc = Records(name)
        for rec in records:
            if not isinstance(rec, dict):
                raise AlarmkitError(f"{name}: found {type(rec).__name__} where a trace event object was expected")
            acc.add(rec)
        records = acc
    invs, counts = records.finish()
    formats = [f for f in ("tail", "logpush", "stream") if counts[f]]
    if len(formats) > 1:
        raise AlarmkitError(f"{name} mixes {' and '.join(formats)} records; the same invocations would count twice: "
                            "import one format per file")
    fmt = formats[0]
    names: dict[str, str] = {}  # hex id -> name, from log lines carrying both
    for inv in invs:
        for rec in inv.logs:
            if rec.get("id") and rec.get("obj"):
                names[str(rec["id"])] = str(rec["obj"])
    have_lines = any(inv.logs for inv in invs)
    b = _Builder(late_ms, grace_ms)
    b.checks.duplicates = records.duplicates
    order = sorted(range(len(invs)), key=lambda i: (invs[i].t_ms if invs[i].t_ms is not None else 0, invs[i].order))
    for i in order:
        inv = invs[i]
        lines = inv.logs
        obj = next((str(r["obj"]) for r in lines if r.get("obj")), None)
        guess = False
        if obj is None and inv.object_hex:
            obj = names.get(inv.object_hex, inv.object_hex)
        if obj is None and inv.kind == "alarm":
            obj, guess = inv.entrypoint or inv.script or "unknown object", True
        ns = inv.entrypoint or inv.script
        b.invocation(inv, lines, ns, obj, guess)
    times = [inv.t_ms for inv in invs if inv.t_ms is not None]
    end = max([r[1] for r in b.rows] + times, default=None)  # the trace ends at its last event, a row or not
    b.finish(end)
    # in time order (a stable sort keeps each invocation's own order), numbered again
    rows = [(i, *r[1:]) for i, r in enumerate(sorted(b.rows, key=lambda r: r[1]), 1)]
    cannot = []
    if b.checks.guessed_runs:
        why = ("Logpush workers_trace_events has no Durable Object id field" if fmt == "logpush"
               else "these records carry no durableObjectId")
        cannot.append(f"object ids: {why}, and no log line names the object of {b.checks.guessed_runs} alarm() "
                      "run(s): they are grouped by Entrypoint/ScriptName and their anomalies are entrypoint-level "
                      "guesses")
    if not have_lines and not any(inv.span_arms for inv in invs):
        cannot.append("arms, moves, deletes and effects: no alarmkit log lines (docs/real-runs.md); "
                      "the arm-without-fire check was not made")
    if b.inferred:
        cannot.append(f"retry counts: {b.inferred} alarm() run(s) without an alarm_start log line; "
                      "retry_count inferred from repeated scheduledTime on one object")
    if any(inv.kind == "alarm" and not inv.wall_ms and not b.ended.get(id(inv)) for inv in invs):
        cannot.append("handler durations: wallTime is 0 or missing, so handler_ok/handler_error sit at the fire time "
                      "unless an alarm_end/alarm_throw log line says when")
    if b.no_outcome:
        cannot.append(f"outcomes: {b.no_outcome} alarm() run(s) have no outcome in the trace (it ended first) and no "
                      "alarm_end/alarm_throw line; no handler_ok/handler_error was made for them")
    cannot += b.checks.cannot()
    extra = [f"{counts['unrecognised']} unrecognised"] if counts["unrecognised"] else []
    if records.duplicates:
        extra.append(f"{records.duplicates} duplicate record(s) dropped")
    summary = {"file": name, "format": fmt, "formats": ", ".join([f"{counts[f]} {f}" for f in formats] + extra),
               "records": records.records, "duplicates": records.duplicates,
               "invocations": len(invs), "alarm_invocations": sum(inv.kind == "alarm" for inv in invs),
               "objects": sorted(b.objects), "first_ms": min(times, default=None), "last_ms": max(times, default=None),
               "log_lines": sum(len(inv.logs) for inv in invs), "late_ms": late_ms, "grace_ms": grace_ms,
               "pending_arms": len(b.pending_arms)}
    return ImportResult(rows, b.anomalies, summary, cannot, _pending_lines(b.pending_arms, grace_ms), checks=b.checks)


def _pending_lines(arms: list[tuple[str, int, int]], grace_ms: int) -> list[str]:
    """One line per pending arm when there are few; else one line per 100 (the terminal stays readable)."""
    if len(arms) <= PENDING_EACH:
        return [f"{obj}: armed for {utc(at)}, the trace ends before that plus {grace_ms} ms" for obj, at, _ in arms]
    arms = sorted(arms, key=lambda a: (a[1], a[0]))
    out = []
    for i in range(0, len(arms), 100):
        part = arms[i:i + 100]
        out.append(f"arms {i + 1}-{i + len(part)} of {len(arms)}: {len(part)} object(s) ({part[0][0]} ... "
                   f"{part[-1][0]}) armed for {utc(part[0][1])} to {utc(part[-1][1])}; the trace ends before "
                   f"those plus {grace_ms} ms")
    return out


class _Builder:
    def __init__(self, late_ms: int, grace_ms: int) -> None:
        self.late_ms, self.grace_ms = late_ms, grace_ms
        self.rows: list[tuple] = []
        self.anomalies: list[Anomaly] = []
        self.pending_arms: list[tuple[str, int, int]] = []
        self.objects: set[str] = set()
        self.current: dict[str, int | None] = {}  # object -> alarm it has armed (as far as the trace tells)
        self.armed_at: dict[str, tuple[int, int]] = {}  # object -> (scheduled, arm time) not yet fired
        self.attempts: dict[tuple[str, int], list[tuple[int, str | None]]] = {}  # (obj, scheduled) -> [(t, outcome)]
        self.mixed: set[tuple[str, int]] = set()  # entrypoint groups holding runs of several objects
        self.guessed: set[str] = set()
        self.ended: dict[int, bool] = {}
        self.inferred = 0
        self.no_outcome = 0
        self.checks = Checks()

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
            self._arm(t, ns, obj, r.get("at"), "log", in_alarm)
        elif ev == "disarm":
            self.add(t, ns, obj, "disarm", prev=self.current.get(obj), detail={"cause": "user", "source": "log"})
            self.current[obj] = None
            self.armed_at.pop(obj, None)
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
        self.armed_at.pop(obj, None)
        if at is not None:
            self.armed_at[obj] = (at, t)
            self.checks.arms += 1

    def invocation(self, inv: Invocation, lines: list[dict], ns, obj, guess: bool = False) -> None:
        if inv.kind != "alarm":
            for r in lines:
                self.line(r, ns, obj, False)
            self._span_arms(inv, ns, obj, lines, False)
            return
        self.checks.runs += 1
        if inv.t_ms is None:  # an alarm invocation with no time at all (a stream whose onset never came)
            self.checks.no_time += 1
            return
        if guess:
            self.checks.guessed_runs += 1
            self.guessed.add(obj)
        t, s = inv.t_ms, inv.scheduled_ms
        start = next((r for r in lines if r["ev"] == "alarm_start"), None)
        tried = self.attempts.setdefault((obj, s), []) if s is not None else []
        if s is None:
            self.checks.no_scheduled += 1
        rc0 = start.get("retryCount") if start is not None else None
        if isinstance(rc0, int) and not isinstance(rc0, bool) and 0 <= rc0 <= 10**6:
            rc, inferred = rc0, False
        else:
            rc, inferred = len(tried), True
            self.inferred += 1
        if guess and tried and t - tried[-1][0] < MIN_RETRY_GAP_MS:
            self.mixed.add((obj, s))
        end_line = next((r for r in lines if r["ev"] in ("alarm_end", "alarm_throw")), None)
        self.ended[id(inv)] = end_line is not None
        outcome = inv.outcome
        if outcome is not None and (outcome not in OUTCOMES or outcome == "unknown"):
            self.checks.unjudged[outcome] = self.checks.unjudged.get(outcome, 0) + 1
        elif outcome is None and end_line is not None:
            outcome = "ok" if end_line["ev"] == "alarm_end" else "exception"
        ok_before = any(o == "ok" for _, o in tried)
        self.armed_at.pop(obj, None)
        for r in lines:  # a constructor run before alarm() logs first
            if r["ev"] == "construct":
                self.line(r, ns, obj, False)
        late = t - s if s is not None else None
        detail = {"attempt": len(tried) + 1, "late_ms": late, "retry_count_inferred": inferred, "source": inv.source,
                  "outcome": outcome}
        if guess:
            detail["object_guess"] = "entrypoint"
        self.add(t, ns, obj, "fire", s, None, rc, detail)
        if s is not None:
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
        elif outcome in FAILED:
            exc = inv.exceptions[0] if inv.exceptions else {}
            self.add(end, ns, obj, "handler_error", s, None, rc,
                     {"error": exc.get("name") or (end_line or {}).get("error") or inv.outcome,
                      "message": exc.get("message") or (end_line or {}).get("message"), "outcome": outcome})
        if s is not None:
            self._check_fire(obj, t, end, s, rc, tried, ok_before, ns, armed_inside, guess)

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

    def _check_fire(self, obj, t, end, s, rc, tried, ok_before, ns, armed_inside, guess) -> None:
        label = f"entrypoint {obj}" if guess else obj
        if ok_before:
            if not guess:  # a run after a success is another object's as likely as a duplicate
                self.checks.duplicate_checked += 1
                self.anomalies.append(Anomaly("duplicate_fire", label, t, f"alarm() ran again for scheduled time "
                                              f"{utc(s)} after a successful run (run {len(tried)} for that time)"))
        elif len(tried) == 1:
            self.checks.late_checked += 1
            if t - s > self.late_ms:
                self.anomalies.append(Anomaly("late_fire", label, t, f"fired {t - s} ms after its scheduled time "
                                              f"{utc(s)} (threshold {self.late_ms} ms)", guess))
        failures = [x for x in tried if x[1] in FAILED]
        if (len(failures) == LADDER and len(tried) == LADDER and not armed_inside
                and not (guess and (obj, s) in self.mixed)):
            self.add(end, ns, obj, "abandoned", None, s, rc, {"attempts": LADDER, "inferred": True})
            self.current[obj] = None
            waits = ", ".join(f"+{(a - tried[0][0]) / 1000:.1f}" for a, _ in tried)
            self.anomalies.append(Anomaly("ladder_exhausted", label, t, f"{LADDER} failed runs for scheduled time "
                                          f"{utc(s)} (at {waits} s), then silence: the alarm is abandoned", guess,
                                          group=(obj, s)))

    def finish(self, end: int | None) -> None:
        c = self.checks
        # anomalies of an entrypoint group that holds runs of several objects are not claimed
        before = len(self.anomalies)
        self.anomalies = [a for a in self.anomalies if a.group not in self.mixed]
        c.mixed_dropped += before - len(self.anomalies)
        c.mixed_groups = len(self.mixed)
        for (obj, s), tried in self.attempts.items():
            if (obj, s) in self.mixed:
                continue
            c.sequences += 1
            if len(tried) > 1 and not any(o == "ok" for _, o in tried[:-1]):
                n = len(tried) - 1
                ok = "then ok" if tried[-1][1] == "ok" else "last failed"
                guess = obj in self.guessed
                self.anomalies.append(Anomaly("retries", f"entrypoint {obj}" if guess else obj, tried[1][0],
                                              f"{n} {'retry' if n == 1 else 'retries'} for scheduled time {utc(s)} ({ok})",
                                              guess))
        for obj, (at, armed) in self.armed_at.items():
            if end is not None and end >= at + self.grace_ms:
                self.anomalies.append(Anomaly("arm_without_fire", obj, at, f"armed at {utc(armed)} for {utc(at)}; "
                                              f"no alarm() by {self.grace_ms} ms after that (trace ends {utc(end)})"))
            else:
                self.pending_arms.append((obj, at, armed))
        c.pending = len(self.pending_arms)
        self.anomalies.sort(key=lambda a: (a.t_ms, a.object, a.kind))


def import_file(path: str | Path, journal: Any = None, *, late_ms: int = LATE_MS, grace_ms: int = GRACE_MS,
                scenario: str | None = None, again: bool | None = None) -> ImportResult:
    """Read ``path`` (streamed), map it, and (with ``journal``) write it as one run; profile ``real:<format>``.

    A file whose bytes (SHA-256) were imported into ``journal`` before is refused with
    ``again=False`` (the CLI without ``--again``); otherwise it is added, and the new run's params
    and summary name the earlier runs (``again_of``) and the report says so. The run ends
    ``complete = true`` once every event is in. Raises ``AlarmkitError`` for a file it cannot read.
    """
    p = _trace_path(path)
    tf = TraceFile(p)
    acc = Records(p.name)
    for line, rec in iter_records(tf):
        acc.add(rec, line)
    result = import_records(acc, p.name, late_ms=late_ms, grace_ms=grace_ms)
    del acc  # the invocations and their log lines: the rows carry what the journal needs
    sha = tf.sha.hexdigest()
    result.summary["sha256"] = sha
    if journal is not None:
        earlier = [int(r) for r in journal.sql("SELECT run_id FROM runs WHERE params LIKE ? ORDER BY run_id",
                                                f'%"sha256": "{sha}"%')["run_id"]]
        if earlier and again is False:
            raise AlarmkitError(f"{p.name} was imported into this journal before (same bytes) as run(s) {earlier}; "
                                "pass --again (again=True) to add it once more")
        if earlier:
            result.summary["again_of"] = earlier
        params = {"imported": {"file": p.name, "format": result.summary["format"], "late_ms": late_ms,
                               "grace_ms": grace_ms, "anomalies": [str(a) for a in result.anomalies],
                               "cannot": result.cannot, "pending": result.pending,
                               "first_ms": result.summary["first_ms"], "sha256": sha,
                               "duplicates": result.summary["duplicates"], "checks": result.checks.to_dict(),
                               "again_of": earlier or None}}
        result.run_id = journal_run(journal, scenario or f"import:{p.name}", f"real:{result.summary['format']}",
                                    params, result.rows)
    return result


def journal_run(journal: Any, scenario: str, profile: str, params: dict, rows: list[tuple]) -> int:
    """One run with its events, ended ``complete = true`` once every event is in; on any failure
    (Ctrl-C included) the half-written run is taken out again, so no partial run is left behind."""
    import contextlib

    run_id = journal.start_run(scenario, profile, 0, params)
    try:
        for i in range(0, len(rows), WRITE_CHUNK):  # a chunk at a time: one Arrow copy of a chunk, not of them all
            journal.write_events(run_id, rows[i:i + WRITE_CHUNK])
        journal.end_run(run_id, True)  # waits for the events: complete only once they are in
    except BaseException:
        with contextlib.suppress(Exception):
            journal.con.execute("DELETE FROM events WHERE run_id = ?", [run_id])
            journal.con.execute("DELETE FROM runs WHERE run_id = ?", [run_id])
        raise
    return run_id
