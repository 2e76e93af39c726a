"""Checks over a finished run: was work lost, done twice, done early, or left without a wake-up?

A scenario declares what it owes as *obligations*: an effect (``ctx.effect(name, key)``) that
must run for ``key`` on ``object`` at or after ``due_ms`` (the lease ledger: every granted lease
must be revoked). ``check`` reads the run's journal (and the objects' final alarms) and returns
a ``Report``: one row per obligation (done when, how late, how many times, or why not) and
the violations of these invariants:

``lost``
    An obligation whose effect never ran by the horizon *although the object had the chance*:
    after it was due and after the last injected fault, the object was woken (its constructor
    ran, or an alarm() succeeded) with at least ``grace_ms`` left before the horizon. An
    obligation not done without such a chance is reported *stuck* (overdue, with why), which is
    not a violation: the faults never stopped, or nothing woke the object.
``early_effect``
    An obligation's effect ran before it was due (a lease revoked while still valid).
``early_fire``
    alarm() started before its scheduled time.
``concurrent_alarm``
    Two alarm() runs overlapped on one object.
``alarm_pushed_past_due``
    User code (not the platform's retries) armed the alarm later than an owed obligation's due
    time: the work will run late even if nothing fails.
``dropped_wakeup``
    alarm() succeeded while the object still owed work and left no alarm at or before it.
``late``
    Done later than ``max_late_ms`` after due (only checked when a bound is given).
``runaway_retries``
    One alarm was retried more than ``max_uncounted_retries`` times (default 10) for failures that
    were not counted against its retry limit (workerd ``alarm-scheduler.h``: such failures retry
    forever, the backoff capped at 1024 s). Reported once per alarm with its cost: the alarm()
    invocations it took and the time it kept the object waking. Needs no obligation.

``library_dropped``
    A library (Agents SDK, Actors) dropped its own schedule after its callback failed (``lib_dropped``). Needs no obligation.

Duplicates (an effect that ran more than once for one obligation) are reported, not violations:
at-least-once delivery makes them expected; the effect must tolerate them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ..errors import AlarmkitError, InvalidValue
from ._events import EventRow
from ._frames import frame_rows
from ._library import drop_message

__all__ = ["Obligation", "Violation", "Report", "check", "check_run", "INVARIANTS", "DEFAULT_GRACE_MS",
           "DEFAULT_MAX_UNCOUNTED_RETRIES"]

INVARIANTS = {
    "lost": "an obligation's effect never ran although the object had the chance",
    "early_effect": "an obligation's effect ran before it was due",
    "early_fire": "alarm() started before its scheduled time",
    "concurrent_alarm": "two alarm() runs overlapped on one object",
    "alarm_pushed_past_due": "user code armed the alarm later than an owed obligation's due time",
    "dropped_wakeup": "alarm() succeeded, left work owed, and no alarm at or before it",
    "late": "an obligation was done more than max_late_ms after it was due",
    "runaway_retries": "one alarm was retried more than max_uncounted_retries times for uncounted failures",
    "expect": "a stated expectation about the end state did not hold (an expect_failed event: a worker drive's expect)",
    "library_dropped": "a library (Agents SDK, Actors) dropped one of its own schedules after its callback failed",
}
# After the last fault, how long the platform may take before the object's work is done:
# the longest retry backoff (2 << 9 s plus 25 % jitter, alarm-scheduler.h) plus the documented
# minute of fire latency, rounded up.
DEFAULT_GRACE_MS = 25 * 60_000
# How many uncounted retries of one alarm before ``runaway_retries``: the 10th retry is the first to wait
# the capped 1024 s (2 << 9 s, alarm-scheduler.h RETRY_BACKOFF_MAX = 9), about 34 minutes after the first
# failure; from there on the object wakes every 17 to 21 minutes for as long as the failure lasts.
DEFAULT_MAX_UNCOUNTED_RETRIES = 10
_PLATFORM_ARMS = ("retry", "reload", "duplicate")


@dataclass(frozen=True)
class Obligation:
    """Effect ``effect`` must run for ``key`` on ``object`` at or after ``due_ms``.

    ``since_ms`` is when the obligation was promised (a grant's time); the checks that ask
    "was work owed at this moment?" only count obligations promised strictly before it.
    ``max_late_ms`` bounds lateness for this obligation (None: reported, not checked).
    """

    object: str
    effect: str
    key: Any
    due_ms: int
    since_ms: int | None = None
    max_late_ms: int | None = None

    @classmethod
    def from_value(cls, value: Any) -> Obligation:
        if isinstance(value, Obligation):
            return value
        if isinstance(value, dict):
            try:
                return cls(**value)
            except TypeError as err:
                raise AlarmkitError(
                    f"bad obligation {value!r} ({err}); an obligation has object, effect, key, due_ms "
                    "and optionally since_ms, max_late_ms"
                ) from None
        raise AlarmkitError(f"an obligation is a dict or an Obligation, got {value!r}")


@dataclass(frozen=True)
class Violation:
    invariant: str
    object: str | None
    t_ms: int | None
    message: str
    key: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"invariant": self.invariant, "object": self.object, "t_ms": self.t_ms,
                "key": self.key, "message": self.message}


@dataclass
class Report:
    """What ``check`` found. ``ok`` when there is no violation (stuck and duplicates are not)."""

    violations: list[Violation]
    obligations: list[dict[str, Any]]
    effects: dict[tuple[str, str, str], int]
    horizon_ms: int
    fault_events: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def duplicates(self) -> list[dict[str, Any]]:
        """Obligations whose effect ran more than once (reported, never a violation)."""
        return [{k: o[k] for k in ("object", "effect", "key", "count")} for o in self.obligations if o["count"] > 1]

    @property
    def stuck(self) -> list[dict[str, Any]]:
        return [o for o in self.obligations if o["status"] == "stuck"]

    @property
    def lost(self) -> list[dict[str, Any]]:
        return [o for o in self.obligations if o["status"] == "lost"]

    def table(self):
        """One row per obligation as a DataFrame."""
        import pandas as pd

        cols = ["object", "effect", "key", "since_ms", "due_ms", "done_ms", "late_ms", "count", "status", "why"]
        return pd.DataFrame(self.obligations, columns=cols)

    def summary(self) -> dict[str, Any]:
        """Flat numbers for one row of an exploration table."""
        lates = [o["late_ms"] for o in self.obligations if o["late_ms"] is not None]
        return {
            "obligations": len(self.obligations),
            "done": sum(o["status"] == "done" for o in self.obligations),
            "lost": len(self.lost),
            "stuck": len(self.stuck),
            "duplicates": len(self.duplicates),
            "extra_effects": sum(o["count"] - 1 for o in self.obligations if o["count"] > 1),
            "max_late_ms": max(lates) if lates else None,
            "violations": len(self.violations),
            "invariants": ",".join(sorted({v.invariant for v in self.violations})),
            "faults_injected": self.fault_events,
        }

    def __repr__(self) -> str:
        s = self.summary()
        head = "ok" if self.ok else f"{s['violations']} violation(s): {s['invariants']}"
        return (f"<Report {head}; {s['done']}/{s['obligations']} done, {s['lost']} lost, {s['stuck']} stuck, "
                f"{s['duplicates']} duplicated>")


def check(result: Any, invariants: Iterable[str] | None = None, grace_ms: int | None = None,
          max_late_ms: int | None = None, max_uncounted_retries: int = DEFAULT_MAX_UNCOUNTED_RETRIES) -> Report:
    """Check a ``run_scenario`` result (its journal, obligations, horizon and final alarms)."""
    sim = getattr(result, "sim", None)
    if sim is None:
        raise AlarmkitError(f"check() needs the RunResult run_scenario returns, got {type(result).__name__}; "
                            "for a journal use check_run(events, obligations, horizon_ms)")
    return check_run(
        sim_rows(sim), result.obligations, sim.now if result.horizon_ms is None else result.horizon_ms,
        final=final_alarms(sim), invariants=invariants,
        grace_ms=(DEFAULT_GRACE_MS if result.grace_ms is None else result.grace_ms) if grace_ms is None else grace_ms,
        max_late_ms=max_late_ms, max_uncounted_retries=max_uncounted_retries,
    )


def sim_rows(sim) -> list[EventRow]:
    """The run's events as ``EventRow`` values."""
    if sim.journal is None:
        return sim.rows
    return frame_rows(sim.events())


def final_alarms(sim) -> dict[str, int | None]:
    """Each object's stored alarm at the end of the run, by label (``Simulation.alarms()``)."""
    return sim.alarms()


def check_run(events: Any, obligations: Iterable[Any] = (), horizon_ms: int | None = None, *,
              final: dict[str, int | None] | None = None, invariants: Iterable[str] | None = None,
              grace_ms: int = DEFAULT_GRACE_MS, max_late_ms: int | None = None,
              max_uncounted_retries: int = DEFAULT_MAX_UNCOUNTED_RETRIES) -> Report:
    """Check one run's events (a journal DataFrame or the simulation's rows) against obligations.
    ``max_uncounted_retries`` (an int >= 0) is the ``runaway_retries`` bound; InvalidValue otherwise."""
    if isinstance(max_uncounted_retries, bool) or not isinstance(max_uncounted_retries, int) or max_uncounted_retries < 0:
        raise InvalidValue(f"max_uncounted_retries must be an int >= 0 (uncounted retries of one alarm allowed "
                           f"before runaway_retries), got {max_uncounted_retries!r}")
    if isinstance(events, list):  # EventRow values, or plain 9-tuples in the same order
        rows = [r if r.__class__ is EventRow else EventRow(*r) for r in events]
    else:  # in seq order, the order they happened in, whatever order the frame was sorted in
        if "seq" in getattr(events, "columns", ()) and not events["seq"].is_monotonic_increasing:
            events = events.sort_values("seq", kind="stable")
        rows = frame_rows(events)
    wanted = set(INVARIANTS) if invariants is None else set(invariants)
    unknown = sorted(wanted - set(INVARIANTS))
    if unknown:
        raise AlarmkitError(f"unknown invariant {unknown[0]!r}; known: {sorted(INVARIANTS)}")
    obs = [Obligation.from_value(o) for o in obligations]
    horizon = horizon_ms if horizon_ms is not None else (rows[-1].t_ms if rows else 0)
    run = _Run(rows)
    violations: list[Violation] = []
    if "early_fire" in wanted:
        violations += run.early_fires()
    if "concurrent_alarm" in wanted:
        violations += run.overlaps()
    table = [run.obligation_row(o, horizon, grace_ms, final or {}) for o in obs]
    for o, row in zip(obs, table):
        bound = o.max_late_ms if o.max_late_ms is not None else max_late_ms
        if row["status"] == "lost" and "lost" in wanted:
            violations.append(Violation("lost", o.object, horizon, row["why"], o.key))
        if row["early"] and "early_effect" in wanted:
            violations.append(Violation(
                "early_effect", o.object, row["done_ms"],
                f"{o.effect}({o.key!r}) ran at {_s(row['done_ms'])}, {_s(o.due_ms - row['done_ms'])} before it was due "
                f"at {_s(o.due_ms)}", o.key))
        if bound is not None and row["late_ms"] is not None and row["late_ms"] > bound and "late" in wanted:
            violations.append(Violation(
                "late", o.object, row["done_ms"],
                f"{o.effect}({o.key!r}) ran {_s(row['late_ms'])} after it was due (bound {_s(bound)})", o.key))
    if "alarm_pushed_past_due" in wanted:
        violations += run.pushed_past_due(obs)
    if "dropped_wakeup" in wanted:
        violations += run.dropped_wakeups(obs)
    if "runaway_retries" in wanted:
        violations += run.runaway_retries(max_uncounted_retries)
    if "expect" in wanted:  # journaled by whoever checked the end state (alarmkit.workers.drive)
        violations += [Violation("expect", r.object_id, r.t_ms, (r.detail or {}).get("message", "an expectation failed"))
                       for r in rows if r.kind == "expect_failed"]
    if "library_dropped" in wanted:  # journaled by alarmkit.workers._libs from the library's own table
        violations += [Violation("library_dropped", r.object_id, r.t_ms, drop_message(d, r.scheduled_ms, r.t_ms), d.get("id"))
                       for r in rows if r.kind == "lib_dropped" for d in [r.detail or {}]]
    for row in table:
        del row["early"]
    violations.sort(key=lambda v: (v.t_ms if v.t_ms is not None else -1, v.invariant))
    return Report(violations, table, run.effect_counts(), horizon, run.fault_count)


class _Run:
    """One run's events, indexed the ways the checks need."""

    def __init__(self, rows: list[EventRow]) -> None:
        self.rows = rows
        self.effects: dict[tuple[str, str, str], list[tuple[int, int]]] = {}  # -> [(seq, t)]
        self.faults: dict[str | None, list[int]] = {}  # object (None: global) -> fault end times
        self.wakes: dict[str, list[int]] = {}  # construct / successful alarm() times
        self.abandoned: dict[str, list[int]] = {}
        self.fault_count = 0
        for r in rows:
            kind, obj = r.kind, r.object_id
            if kind == "effect":
                self.effects.setdefault((obj, r.detail.get("name"), str(r.detail.get("key"))), []).append((r.seq, r.t_ms))
            elif kind == "fault":
                self.fault_count += 1
                end = r.t_ms + int((r.detail or {}).get("downtime_ms", 0) or 0)
                self.faults.setdefault(obj, []).append(end)
            elif kind in ("construct", "handler_ok"):
                self.wakes.setdefault(obj, []).append(r.t_ms)
            elif kind == "abandoned":
                self.abandoned.setdefault(obj, []).append(r.t_ms)

    def effect_counts(self) -> dict[tuple[str, str, str], int]:
        return {k: len(v) for k, v in self.effects.items()}

    def _times(self, o: Obligation) -> list[tuple[int, int]]:
        runs = self.effects.get((o.object, o.effect, str(o.key)), [])
        if o.since_ms is not None:
            runs = [r for r in runs if r[1] >= o.since_ms]
        return runs

    def _done_seq(self, o: Obligation) -> int | None:
        runs = self._times(o)
        return runs[0][0] if runs else None

    def obligation_row(self, o: Obligation, horizon: int, grace: int, final: dict) -> dict[str, Any]:
        runs = self._times(o)
        row = {"object": o.object, "effect": o.effect, "key": o.key, "since_ms": o.since_ms, "due_ms": o.due_ms,
               "done_ms": None, "late_ms": None, "count": len(runs), "status": "done", "why": "", "early": False}
        if runs:
            done = runs[0][1]
            row.update(done_ms=done, late_ms=max(0, done - o.due_ms), early=done < o.due_ms)
            return row
        if o.due_ms > horizon:
            row.update(status="pending", why=f"due at {_s(o.due_ms)}, after the horizon {_s(horizon)}")
            return row
        last_fault = max(self.faults.get(o.object, []) + self.faults.get(None, []), default=None)
        after = max(o.due_ms, last_fault if last_fault is not None else o.due_ms)
        chance = next((w for w in self.wakes.get(o.object, []) if w >= after), None)
        alarm = final.get(o.object)
        state = "no alarm pending at the end" if alarm is None else f"an alarm pending for {_s(alarm)}"
        gave_up = [t for t in self.abandoned.get(o.object, []) if t >= o.due_ms - 1]
        if gave_up:
            state += f"; the platform abandoned its alarm at {_s(gave_up[0])} after the last retry"
        faults = "no fault was injected" if last_fault is None else f"the last fault ended at {_s(last_fault)}"
        if chance is not None and chance + grace <= horizon:
            row.update(status="lost", why=(
                f"{o.effect}({o.key!r}) due at {_s(o.due_ms)} never ran by the horizon {_s(horizon)}: {faults}, "
                f"the object was woken at {_s(chance)} and still did not do it; {state}"))
        else:
            if chance is not None:
                reason = f"its first chance ({_s(chance)}) came less than {_s(grace)} before the horizon"
            elif last_fault is not None and last_fault > o.due_ms:
                reason = "nothing woke the object after the last fault"
            else:
                reason = "nothing woke the object after it was due"
            row.update(status="stuck", why=(
                f"{o.effect}({o.key!r}) overdue since {_s(o.due_ms)} at the horizon {_s(horizon)}: {reason} "
                f"({faults}); {state}"))
        return row

    def early_fires(self) -> list[Violation]:
        return [Violation("early_fire", r.object_id, r.t_ms,
                          f"alarm() started at {_s(r.t_ms)}, before its scheduled time {_s(r.scheduled_ms)}")
                for r in self.rows if r.kind == "fire" and r.scheduled_ms is not None and r.t_ms < r.scheduled_ms]

    def overlaps(self) -> list[Violation]:
        out, running = [], {}
        for r in self.rows:
            kind, obj, t = r.kind, r.object_id, r.t_ms
            if kind == "fire":
                if obj in running:
                    out.append(Violation("concurrent_alarm", obj, t,
                                         f"alarm() started at {_s(t)} while the one started at {_s(running[obj])} ran"))
                running[obj] = t
            elif kind in ("handler_ok", "handler_error"):
                running.pop(obj, None)
        return out

    def _owed(self, obs: list[Obligation], obj: str, seq: int, t: int) -> list[Obligation]:
        out = []
        for o in obs:
            if o.object != obj or o.since_ms is None or o.since_ms >= t:
                continue
            done = self._done_seq(o)
            if done is None or done > seq:
                out.append(o)
        return out

    def pushed_past_due(self, obs: list[Obligation]) -> list[Violation]:
        out = []
        for r in self.rows:
            if r.kind != "arm" or (r.detail or {}).get("cause") in _PLATFORM_ARMS:
                continue
            seq, t, obj, sched, detail = r.seq, r.t_ms, r.object_id, r.scheduled_ms, r.detail
            owed = self._owed(obs, obj, seq, t)
            if owed:
                first = min(owed, key=lambda o: o.due_ms)
                if sched > max(first.due_ms, t):
                    out.append(Violation(
                        "alarm_pushed_past_due", obj, t,
                        f"at {_s(t)} the {detail.get('cause', 'user')} code armed the alarm for {_s(sched)}, "
                        f"{_s(sched - max(first.due_ms, t))} after {first.effect}({first.key!r}) was due "
                        f"({_s(first.due_ms)})", first.key))
        return out

    def runaway_retries(self, limit: int) -> list[Violation]:
        """Streaks of uncounted retries of one alarm, per object: a streak ends when the handler
        succeeds, the alarm is abandoned, or user code sets a new alarm (the platform's own re-arms,
        a reload after a restart included, do not end it)."""
        out: list[Violation] = []
        streaks: dict[str, dict] = {}  # object -> {n, fires, first_t, over_t, scheduled, last_t}
        fires: dict[str, int] = {}

        def close(obj: str) -> None:
            st = streaks.pop(obj, None)
            fires[obj] = 0
            if st is None or st["n"] <= limit:
                return
            out.append(Violation(
                "runaway_retries", obj, st["over_t"],
                f"the alarm scheduled at {_s(st['scheduled'])} failed without the failures counting and was "
                f"retried {st['n']} times (more than {limit}) from {_s(st['first_t'])} to {_s(st['last_t'])}: "
                f"{st['fires']} alarm() invocations over {_hours(st['last_t'] - st['first_t'])}, "
                f"and retry_count never moved"))

        for r in self.rows:
            kind, obj = r.kind, r.object_id
            if kind == "fire":
                fires[obj] = fires.get(obj, 0) + 1
                if obj in streaks:
                    streaks[obj]["fires"] = fires[obj]
            elif kind == "retry_scheduled" and (r.detail or {}).get("counted") is False:
                st = streaks.get(obj)
                if st is None:
                    st = streaks[obj] = {"n": 0, "fires": fires.get(obj, 0), "first_t": r.t_ms, "over_t": None,
                                         "scheduled": r.prev_scheduled_ms}
                st["n"] += 1
                st["last_t"] = r.t_ms
                if st["n"] == limit + 1:
                    st["over_t"] = r.t_ms
            elif kind in ("handler_ok", "abandoned") or (
                    kind == "arm" and (r.detail or {}).get("cause") not in _PLATFORM_ARMS):
                close(obj)
        for obj in list(streaks):
            close(obj)
        return out

    def dropped_wakeups(self, obs: list[Obligation]) -> list[Violation]:
        out = []
        for r in self.rows:
            if r.kind != "handler_ok":
                continue
            seq, t, obj, detail = r.seq, r.t_ms, r.object_id, r.detail
            owed = self._owed(obs, obj, seq, t)
            if not owed:
                continue
            first = min(owed, key=lambda o: o.due_ms)
            nxt = (detail or {}).get("next_ms")
            if nxt is None or nxt > max(first.due_ms, t):
                left = "no alarm" if nxt is None else f"the alarm at {_s(nxt)}"
                out.append(Violation(
                    "dropped_wakeup", obj, t,
                    f"alarm() finished at {_s(t)} with {len(owed)} obligation(s) owed, the first "
                    f"{first.effect}({first.key!r}) due at {_s(first.due_ms)}, and left {left}", first.key))
        return out


def _hours(ms: int) -> str:
    return f"{ms / 3_600_000:.1f} h" if ms >= 3_600_000 else _s(ms)


def _s(ms: int | None) -> str:
    """Milliseconds as seconds for messages: ``31.002 s``."""
    return "?" if ms is None else f"{ms / 1000:.3f} s"
