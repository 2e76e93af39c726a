"""Libraries made visible: the schedules a Durable Object library keeps for itself, as journal rows.

The Agents SDK, Actors and PartyServer run their own schedules inside the object's one alarm: a
``schedule(60, "send")`` is a row in the library's SQL table, and ``alarm()`` runs the rows that are
due. alarmkit's own rows only see the alarm (``fire``, ``handler_ok``): a callback the library ran,
retried inside that one ``alarm()`` and dropped is invisible there. This module is the one builder
of the rows that show them, read from the library's own table and console lines
(``schedule_rows``), and the one reader of those rows (``library_schedules``).

Tables, as the libraries write them (read from the packages, not copied):

==========================  =========================================================================
table                       library, and what a row is
==========================  =========================================================================
``cf_agents_jobs``          Agents SDK 0.32 (``src/lifecycle``): ``id``, ``capability`` (``scheduler``
                            for ``schedule()``), ``fn`` (the callback), ``time`` (due, epoch ms),
                            ``payload`` (JSON: ``type`` delayed/scheduled/cron/interval, ``cron``), ``running``
``cf_agents_schedules``     Agents SDK before the job queue (0.32 migrates it into ``cf_agents_jobs``
                            and drops it): ``id``, ``callback``, ``type``, ``time`` (epoch **seconds**), ``cron``
``_actor_alarms``           Actors (``@cloudflare/actors`` ``alarms``): the same columns as
                            ``cf_agents_schedules``
==========================  =========================================================================

PartyServer keeps no schedules of its own: its ``onAlarm()`` is the object's alarm, drawn as any alarm.

Console lines that say a callback failed (the libraries' own wording):
``error executing callback "NAME" after N attempts`` (Agents SDK 0.32: three attempts inside one
``alarm()``, 100 ms to 3 s apart, then the job is dropped, or a cron moved on) and
``error executing callback "NAME"`` (Actors: one attempt, caught, dropped). A row that leaves the
table after such a line was dropped; one that leaves it at or after its due time without one ran; one
that leaves before its due time was cancelled.

Kinds written (``_kinds.LIBRARY_KINDS``); each row's ``scheduled_ms`` is the schedule's due time and
its detail names ``library``, ``id``, ``callback`` and ``type``:

- ``lib_schedule``: a schedule appeared in the table, or its due time moved (``prev_scheduled_ms``);
- ``lib_ran``: it ran (``attempts`` when the library said);
- ``lib_failed``: a recurring (cron, interval) schedule failed and the library moved it on;
- ``lib_dropped``: the library dropped it after it failed (``attempts``, ``error``): the verdict's
  ``library_dropped``;
- ``lib_cancelled``: it left the table before it was due.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, NamedTuple

import pandas as pd

__all__ = ["TABLES", "LIBRARY_NAMES", "Schedule", "table_rows", "read_schedules", "library_failure", "schedule_rows",
           "library_schedules", "mentions_library_table", "drop_message"]

# table -> (library, the query reading its schedules as id, callback, type, due_ms, cron, capability)
TABLES: dict[str, tuple[str, str]] = {
    "cf_agents_jobs": ("Agents SDK", "SELECT id, fn, payload, time, capability FROM cf_agents_jobs"),
    "cf_agents_schedules": ("Agents SDK", "SELECT id, callback, type, time, cron FROM cf_agents_schedules"),
    "_actor_alarms": ("Actors", "SELECT id, callback, type, time, cron FROM _actor_alarms"),
}
LIBRARY_NAMES = ("Agents SDK", "Actors", "PartyServer")
_FAILED = re.compile(r'error executing callback "(?P<cb>[^"]*)"(?: after (?P<n>\d+) attempts)?\s*(?P<err>.*)', re.S)
_NOT_FOUND = re.compile(r"callback (?P<cb>\S+) not found")
_RECURRING = ("cron", "interval")


class Schedule(NamedTuple):
    """One schedule as its library keeps it."""

    library: str
    table: str
    id: str
    callback: str
    type: str
    due_ms: int
    cron: str | None
    capability: str | None


def mentions_library_table(query: str) -> bool:
    """Whether a SQL statement touches one of the tables above (cheap: checked on every ``sql.exec``)."""
    return "cf_agents_" in query or "_actor_alarms" in query


def table_rows(table: str, rows: Iterable[tuple]) -> dict[str, Schedule]:
    """The schedules of one table's rows (as its ``TABLES`` query returns them), by id."""
    lib = TABLES[table][0]
    out: dict[str, Schedule] = {}
    for r in rows:
        if table == "cf_agents_jobs":
            sid, fn, payload, t, cap = r
            try:
                p = json.loads(payload) if isinstance(payload, str) else {}
            except ValueError:
                p = {}
            p = p if isinstance(p, dict) else {}
            kind = p.get("type") if isinstance(p.get("type"), str) else "job"
            cron = p.get("cron") if isinstance(p.get("cron"), str) else None
            due = int(t) if isinstance(t, (int, float)) else 0
            out[str(sid)] = Schedule(lib, table, str(sid), str(fn), kind, due, cron, None if cap is None else str(cap))
        else:
            sid, cb, kind, t, cron = r
            due = int(t) * 1000 if isinstance(t, (int, float)) else 0  # these tables keep epoch seconds
            out[str(sid)] = Schedule(lib, table, str(sid), str(cb), str(kind), due, cron, None)
    return out


_TABLES_SQL = ("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ("
               + ", ".join(f"'{t}'" for t in TABLES) + ")")


def read_schedules(conn: Any) -> dict[str, Schedule]:
    """Every library schedule in an object's SQLite database (``sqlite3.Connection``), by ``table:id``."""
    out: dict[str, Schedule] = {}
    for (table,) in conn.execute(_TABLES_SQL).fetchall():
        try:
            rows = conn.execute(TABLES[table][1]).fetchall()
        except Exception:  # noqa: BLE001 - a table of that name in another shape: not the library's
            continue
        for sid, s in table_rows(table, rows).items():
            out[f"{table}:{sid}"] = s
    return out


def drop_message(d: dict, due_ms: int | None, t_ms: int) -> str:
    """The verdict's line for a ``lib_dropped`` row (its detail ``d``)."""
    n = d.get("attempts")
    tries = ("its callback was not found" if n == 0 else f"after {n} failed attempt{'s' if n != 1 else ''}"
             if isinstance(n, int) else "after it failed")
    due = f", due at {due_ms / 1000:.3f} s" if due_ms is not None else ""
    err = f": {d['error']}" if d.get("error") else ""
    return (f"{d.get('library', 'a library')} dropped schedule {d.get('id')!s} ({d.get('callback')}{due}) at "
            f"{t_ms / 1000:.3f} s {tries}{err}")


def library_failure(text: str) -> tuple[str, int | None, str] | None:
    """``(callback, attempts, error)`` of a console line saying a library's callback failed, else None.
    ``attempts`` is None when the line does not say (Actors makes one attempt)."""
    m = _FAILED.search(text)
    if m:
        return m["cb"], int(m["n"]) if m["n"] else None, m["err"].strip()[:300]
    m = _NOT_FOUND.search(text)
    if m and "callback" in text[:m.start() + 9]:
        return m["cb"], 0, f"callback {m['cb']} not found"
    return None


Row = tuple[str, int | None, int | None, int | None, dict]  # kind, scheduled_ms, prev_scheduled_ms, retry_count, detail


def schedule_rows(before: dict[str, Schedule], after: dict[str, Schedule], failures: list[tuple[str, int | None, str]],
                  now: int) -> list[Row]:
    """The journal rows for one object's schedules between two reads of its tables: ``failures`` are
    the ``library_failure`` lines it wrote since the first read (consumed: a failure explains the first
    schedule of its callback that left or moved on). The one builder of ``lib_*`` rows."""
    rows: list[Row] = []

    def base(s: Schedule, **more: Any) -> dict:
        d = {"library": s.library, "id": s.id, "callback": s.callback, "type": s.type}
        if s.cron:
            d["cron"] = s.cron
        if s.capability and s.capability != "scheduler":
            d["capability"] = s.capability
        return {**d, **more}

    def failure(cb: str) -> tuple[int | None, str] | None:
        for i, (name, n, err) in enumerate(failures):
            if name == cb:
                del failures[i]
                return (1 if n is None else n), err
        return None

    for sid, s in before.items():
        new = after.get(sid)
        if new is not None and new.due_ms == s.due_ms:
            continue
        if new is None or (new.due_ms > s.due_ms and s.due_ms <= now):  # it left, or a recurring one moved on
            failed = failure(s.callback) if s.due_ms <= now else None
            if failed is not None and (new is None or s.type not in _RECURRING):
                rows.append(("lib_dropped", s.due_ms, None, None, base(s, attempts=failed[0], error=failed[1])))
            elif failed is not None:
                rows.append(("lib_failed", s.due_ms, None, None, base(s, attempts=failed[0], error=failed[1],
                                                                        next_ms=new.due_ms)))
            elif s.due_ms <= now:
                rows.append(("lib_ran", s.due_ms, None, None, base(s)))
            else:
                rows.append(("lib_cancelled", s.due_ms, None, None, base(s)))
            if new is not None:
                rows.append(("lib_schedule", new.due_ms, None, None, base(new)))
        else:  # moved before it was due (a re-schedule of the same id)
            rows.append(("lib_schedule", new.due_ms, s.due_ms, None, base(new)))
    for sid, s in after.items():
        if sid not in before:
            rows.append(("lib_schedule", s.due_ms, None, None, base(s)))
    return rows


_OUTCOMES = {"lib_ran": "ran", "lib_failed": "failed, moved on", "lib_dropped": "dropped", "lib_cancelled": "cancelled"}


def library_schedules(events: pd.DataFrame) -> pd.DataFrame:
    """One row per schedule occurrence a library kept, read from a run's ``lib_*`` events: ``object``,
    ``library``, ``id``, ``callback``, ``type``, ``created_ms``, ``due_ms``, ``ended_ms``, ``outcome``
    (``ran``, ``failed, moved on``, ``dropped``, ``cancelled`` or ``pending``), ``attempts``, ``error``."""
    cols = ["object", "library", "id", "callback", "type", "created_ms", "due_ms", "ended_ms", "outcome", "attempts",
            "error"]
    if events is None or not len(events):
        return pd.DataFrame(columns=cols)
    ev = events[events["kind"].astype(str).str.startswith("lib_")].sort_values("seq")
    open_: dict[tuple, dict] = {}
    out: list[dict] = []
    for kind, t, obj, sched, det in zip(ev["kind"], ev["t_ms"], ev["object_id"], ev["scheduled_ms"], ev["detail"]):
        try:
            d = json.loads(det) if isinstance(det, str) else {}
        except ValueError:
            d = {}
        d = d if isinstance(d, dict) else {}
        key = (obj, d.get("library"), d.get("id"))
        due = None if pd.isna(sched) else int(sched)
        if kind == "lib_schedule":
            prev = open_.get(key)
            created = prev["created_ms"] if prev is not None else int(t)
            open_[key] = {"object": obj, "library": d.get("library"), "id": d.get("id"), "callback": d.get("callback"),
                          "type": d.get("type"), "created_ms": created, "due_ms": due, "ended_ms": None,
                          "outcome": "pending", "attempts": None, "error": None}
        elif kind in _OUTCOMES:
            row = open_.pop(key, None) or {"object": obj, "library": d.get("library"), "id": d.get("id"),
                                           "callback": d.get("callback"), "type": d.get("type"), "created_ms": None}
            row.update(due_ms=due, ended_ms=int(t), outcome=_OUTCOMES[kind], attempts=d.get("attempts"),
                       error=d.get("error"))
            out.append(row)
    out += list(open_.values())
    df = pd.DataFrame(out, columns=cols)
    for c in ("created_ms", "due_ms", "ended_ms", "attempts"):
        df[c] = pd.array([None if v is None or pd.isna(v) else int(v) for v in df[c]], dtype="Int64")
    return df.sort_values(["due_ms", "object"], kind="stable", na_position="last").reset_index(drop=True)
