"""The alignment of two runs, in DuckDB: one pass of window functions keys every alarm event of each
run, one full outer join pairs them, and only the differences come back to Python.

Each event that matters to alarms gets a key: its object, its class, a group and an ordinal.

- ``arm`` (a user or constructor arm), ``disarm``, ``revive``, ``crash``, ``aborted``, ``restart``:
  the n-th of its kind on the object.
- ``fire``, ``fire_skipped`` and the handler's end (``handler_ok`` / ``handler_error`` are one
  class, so an alarm that ends otherwise is a *changed* outcome, not two missing events): the arm
  that caused it (the object's n-th arm at or before the fire; an end takes its fire's), its
  ``retry_count``, and the n-th such delivery (an uncounted retry keeps retry_count 0: workerd
  ``alarm-scheduler.cc`` retries without counting a failure it does not hold against the handler).
- ``abandoned``: the arm whose retries were spent.
- ``effect``: its name and key, and the n-th run of it (the second is a duplicate).

The platform's own arms (cause ``retry``, ``reload``, ``duplicate``) and ``retry_scheduled`` are
left out of the keys: a real trace cannot see them (workerd schedules a retry inside the alarm
manager, not through ``setAlarm``), and the fires that follow carry the same fact as their
retry_count. They stay in each run's chain of events.
"""

from __future__ import annotations

from typing import Any

import duckdb

from ..errors import AlarmkitError

__all__ = ["ALIGNED_KINDS", "PLATFORM_CAUSES", "base_ms", "key_events", "pair_objects", "join_pairs",
           "per_object", "EPOCH_MS"]

ALIGNED_KINDS = ("arm", "disarm", "fire", "fire_skipped", "handler_ok", "handler_error", "abandoned", "revive",
                 "effect", "crash", "aborted", "restart")
PLATFORM_CAUSES = ("retry", "reload", "duplicate")
EPOCH_MS = 10**12  # times above this (2001-09-09) are epoch milliseconds, not virtual time from 0
_KINDS = ", ".join(f"'{k}'" for k in ALIGNED_KINDS)
_PLATFORM = ", ".join(f"'{c}'" for c in PLATFORM_CAUSES)


def base_ms(con: duckdb.DuckDBPyConnection, side: str, align: str) -> tuple[int, int | None]:
    """(the time counted as 0 in run ``side``, its first event's time or None when it has none)."""
    if align == "first_request":
        q = f"SELECT coalesce(min(t_ms) FILTER (WHERE kind = 'call'), min(t_ms)), min(t_ms) FROM ev_{side}"
    else:  # exact: from the clock's start, as the figures count (alarmkit._align.since_clock_start)
        q = f"SELECT coalesce(min(t_ms) FILTER (WHERE kind = 'clock_start'), 0), min(t_ms) FROM ev_{side}"
    t0, first = con.execute(q).fetchone()
    return int(t0 or 0), first


def key_events(con: duckdb.DuckDBPyConnection, side: str, t0: int) -> None:
    """Table ``k_<side>``: every aligned event of the run with its key, times counted from ``t0``."""
    con.execute(f"""
    CREATE OR REPLACE TEMP TABLE k_{side} AS
    WITH e AS (
        SELECT seq, t_ms - {int(t0)} AS t, coalesce(object_id, '') AS obj, kind,
               scheduled_ms - {int(t0)} AS sched, retry_count AS rc,
               CASE kind WHEN 'arm' THEN json_extract_string(detail, '$.cause')
                         WHEN 'effect' THEN coalesce(json_extract_string(detail, '$.name'), '?') || '('
                              || coalesce(CAST(json_extract(detail, '$.key') AS VARCHAR), 'null') || ')'
               END AS what,
               CASE WHEN kind = 'fire' THEN TRY_CAST(json_extract(detail, '$.late_ms') AS BIGINT) END AS late
        FROM ev_{side} WHERE kind IN ({_KINDS})
    ), f AS (
        SELECT *, sum(CASE WHEN kind = 'arm' THEN 1 ELSE 0 END)
                      OVER (PARTITION BY obj ORDER BY seq ROWS UNBOUNDED PRECEDING) AS arm_no
        FROM e WHERE NOT (kind = 'arm' AND coalesce(what, '') IN ({_PLATFORM}))
    ), g AS (
        SELECT *, CASE WHEN kind IN ('handler_ok', 'handler_error', 'abandoned')
                       THEN coalesce(last_value(CASE WHEN kind = 'fire' THEN arm_no END IGNORE NULLS)
                                     OVER (PARTITION BY obj ORDER BY seq ROWS UNBOUNDED PRECEDING), arm_no)
                       ELSE arm_no END AS alarm_no
        FROM f
    ), h AS (
        SELECT seq, t, obj, kind, sched, rc, what, late, alarm_no,
               CASE WHEN kind IN ('handler_ok', 'handler_error') THEN 'end' ELSE kind END AS cls,
               CASE WHEN kind IN ('fire', 'fire_skipped', 'handler_ok', 'handler_error')
                        THEN CAST(alarm_no AS VARCHAR) || '/' || CAST(coalesce(rc, 0) AS VARCHAR)
                    WHEN kind = 'abandoned' THEN CAST(alarm_no AS VARCHAR)
                    WHEN kind = 'effect' THEN what ELSE '' END AS grp
        FROM g
    )
    SELECT *, row_number() OVER (PARTITION BY obj, cls, grp ORDER BY seq) AS n FROM h
    """)


def pair_objects(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, Any, str]]:
    """Table ``objmap(a_obj, b_obj, pair)``: objects of one name pair by name; the rest pair in the
    order they first appear (a real object named by ``ctx.id.name`` beside a simulated label);
    returns the pairs made by order, for the summary to say so."""
    con.execute("""
    CREATE OR REPLACE TEMP TABLE objmap AS
    WITH oa AS (SELECT coalesce(object_id, '') AS obj, min(seq) AS first FROM ev_a GROUP BY 1),
         ob AS (SELECT coalesce(object_id, '') AS obj, min(seq) AS first FROM ev_b GROUP BY 1),
         same AS (SELECT oa.obj FROM oa JOIN ob ON oa.obj = ob.obj),
         ra AS (SELECT obj, row_number() OVER (ORDER BY first, obj) AS r FROM oa WHERE obj NOT IN (SELECT obj FROM same)),
         rb AS (SELECT obj, row_number() OVER (ORDER BY first, obj) AS r FROM ob WHERE obj NOT IN (SELECT obj FROM same))
    SELECT obj AS a_obj, obj AS b_obj, obj AS pair, false AS by_order FROM same
    UNION ALL
    SELECT ra.obj, rb.obj,
           CASE WHEN ra.obj IS NULL THEN rb.obj WHEN rb.obj IS NULL THEN ra.obj ELSE ra.obj || ' ~ ' || rb.obj END,
           ra.obj IS NOT NULL AND rb.obj IS NOT NULL
    FROM ra FULL OUTER JOIN rb ON ra.r = rb.r
    """)
    return [tuple(r) for r in con.execute(
        "SELECT a_obj, b_obj, pair FROM objmap WHERE by_order ORDER BY pair").fetchall()]


def join_pairs(con: duckdb.DuckDBPyConnection, tolerance_ms: int) -> None:
    """Table ``pairs``: the full outer join of the two keyed runs, one row per event of either, with
    ``status``: ``same``; ``only_a`` / ``only_b`` (present in one run only); ``changed`` (another
    outcome: ok against error, or an arm of another cause); ``moved`` (an arm or fire for a time
    further than ``tolerance_ms`` from its counterpart's); ``late`` (the same fire, another lateness)."""
    tol = int(tolerance_ms)
    con.execute(f"""
    CREATE OR REPLACE TEMP TABLE pairs AS
    SELECT coalesce(a.pair, b.pair) AS object, coalesce(a.cls, b.cls) AS cls, coalesce(a.grp, b.grp) AS grp,
           coalesce(a.n, b.n) AS n, a.obj AS obj_a, b.obj AS obj_b,
           a.seq AS seq_a, b.seq AS seq_b, a.t AS t_a, b.t AS t_b, a.kind AS kind_a, b.kind AS kind_b,
           a.sched AS sched_a, b.sched AS sched_b, a.rc AS rc_a, b.rc AS rc_b, a.what AS what_a, b.what AS what_b,
           a.late AS late_a, b.late AS late_b, coalesce(a.alarm_no, b.alarm_no) AS alarm_no,
           CASE WHEN a.seq IS NULL THEN 'only_b' WHEN b.seq IS NULL THEN 'only_a'
                WHEN a.kind <> b.kind OR (a.cls = 'arm' AND a.what IS DISTINCT FROM b.what) THEN 'changed'
                WHEN a.cls IN ('arm', 'fire', 'fire_skipped') AND abs(a.sched - b.sched) > {tol} THEN 'moved'
                WHEN a.cls = 'fire' AND a.late IS DISTINCT FROM b.late THEN 'late'
                ELSE 'same' END AS status
    FROM (SELECT k.*, m.pair FROM k_a k JOIN objmap m ON k.obj = m.a_obj) a
    FULL OUTER JOIN (SELECT k.*, m.pair FROM k_b k JOIN objmap m ON k.obj = m.b_obj) b
      ON a.pair = b.pair AND a.cls = b.cls AND a.grp = b.grp AND a.n = b.n
    """)


def per_object(con: duckdb.DuckDBPyConnection):
    """Fires, retries, abandonments, effects and duplicates per object pair in each run (a DataFrame)."""
    def counts(side: str) -> str:
        return f"""SELECT m.pair AS object,
            count(*) FILTER (WHERE kind = 'fire') AS fires,
            count(*) FILTER (WHERE kind = 'fire' AND (coalesce(rc, 0) > 0 OR n > 1)) AS retries,
            count(*) FILTER (WHERE kind = 'abandoned') AS abandonments,
            count(*) FILTER (WHERE kind = 'effect') AS effects,
            count(*) FILTER (WHERE kind = 'effect' AND n > 1) AS duplicates
            FROM k_{side} k JOIN objmap m ON k.obj = m.{side}_obj GROUP BY 1"""
    cols = ("fires", "retries", "abandonments", "effects", "duplicates")
    sel = ", ".join(f"coalesce(a.{c}, 0) AS {c}_a, coalesce(b.{c}, 0) AS {c}_b" for c in cols)
    return con.execute(f"""
        WITH a AS ({counts('a')}), b AS ({counts('b')})
        SELECT m.pair AS object, {sel}
        FROM (SELECT DISTINCT pair FROM objmap) m LEFT JOIN a ON a.object = m.pair LEFT JOIN b ON b.object = m.pair
        ORDER BY m.pair""").df()


def check_bases(first: dict[str, int | None], t0: dict[str, int], names: dict[str, str]) -> None:
    """Refuse to compare a run in epoch time with one in virtual time from 0 under exact alignment."""
    epoch = {s: first[s] is not None and first[s] - t0[s] > EPOCH_MS for s in ("a", "b")}
    if epoch["a"] != epoch["b"]:
        real = names["a"] if epoch["a"] else names["b"]
        raise AlarmkitError(f"run {real} counts epoch milliseconds and the other virtual time from 0, so exact "
                            "times cannot match; pass align='first_request' (each run counted from its first call)")
