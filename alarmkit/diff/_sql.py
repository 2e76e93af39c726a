"""The alignment of two runs, in DuckDB: window functions key every alarm event of each run, one full
outer join pairs them, a second pass pairs what is left, and only the differences come back to Python.

Each event that matters to alarms gets a key: its object, its class, a group and an ordinal.

- ``fire``, ``fire_skipped`` and the handler's end (``handler_ok`` / ``handler_error`` are one
  class, so an alarm that ends otherwise is a *changed* outcome, not two missing events): the time
  the alarm was set for (``scheduled_ms``: the arm that caused the fire; workerd keeps it across
  retries, ``alarmInfo.scheduledTime``), its ``retry_count``, and the n-th such delivery (an
  uncounted failure retries without incrementing ``retryCount``, workerd
  ``src/workerd/server/alarm-scheduler.c++``, so its retry is the same key's second delivery).
- ``arm`` (a user or constructor arm) and ``revive``: the time armed for, then the n-th.
- ``disarm``, ``abandoned``: the alarm time they ended.
- ``effect``: its name and key, and the n-th run of it (the second is a duplicate).
- ``crash``, ``aborted``, ``restart``: the n-th of its kind on the object.

What the exact keys leave unpaired is paired again in order per object, class and retry_count
(arms and alarm deliveries only; an arm only with an arm of the same cause): an arm for another
time is then *moved*, not one missing and one
extra, and one missing arm costs one row, not every alarm after it.

The platform's own arms (cause ``retry``, ``reload``, ``duplicate``) and ``retry_scheduled`` are
left out of the keys: a real trace cannot see them (workerd's alarm scheduler queues a retry
itself, not through ``setAlarm``), and the fires that follow carry the same fact as their
retry_count. They stay in each run's chain of events.
"""

from __future__ import annotations

from typing import Any

import duckdb

from ..errors import AlarmkitError

__all__ = ["ALIGNED_KINDS", "PLATFORM_CAUSES", "PAIR_COLUMNS", "base_ms", "key_events", "pair_objects",
           "join_pairs", "per_object", "check_bases", "EPOCH_MS", "ALIGNMENTS"]

ALIGNED_KINDS = ("arm", "disarm", "fire", "fire_skipped", "handler_ok", "handler_error", "abandoned", "revive",
                 "effect", "crash", "aborted", "restart")
PLATFORM_CAUSES = ("retry", "reload", "duplicate")
# How each run's times are counted before they are compared (the summary names the one used).
ALIGNMENTS = {"exact": "times as journaled", "clock_start": "each counted from its clock's start",
              "first_request": "each counted from its first request"}
EPOCH_MS = 10**12  # times above this (2001-09-09) are epoch milliseconds, not virtual time from 0
_KINDS = ", ".join(f"'{k}'" for k in ALIGNED_KINDS)
_PLATFORM = ", ".join(f"'{c}'" for c in PLATFORM_CAUSES)


def base_ms(con: duckdb.DuckDBPyConnection, side: str, align: str) -> tuple[int, int | None]:
    """(the time counted as 0 in run ``side``, its first event's time or None when it has none)."""
    if align == "exact":  # times as journaled
        first = con.execute(f"SELECT min(t_ms) FROM ev_{side}").fetchone()[0]
        return 0, first
    if align == "first_request":
        q = f"SELECT coalesce(min(t_ms) FILTER (WHERE kind = 'call'), min(t_ms)), min(t_ms) FROM ev_{side}"
    else:  # clock_start: from the clock's start, as the figures count (alarmkit._align.since_clock_start)
        q = f"SELECT coalesce(min(t_ms) FILTER (WHERE kind = 'clock_start'), 0), min(t_ms) FROM ev_{side}"
    t0, first = con.execute(q).fetchone()
    return int(t0 or 0), first


def key_events(con: duckdb.DuckDBPyConnection, side: str, t0: int, kinds: tuple[str, ...] = ALIGNED_KINDS) -> None:
    """Table ``k_<side>``: every aligned event of the run with its key, times counted from ``t0``.
    A detail that is not JSON (a hand-made DataFrame) reads as holding nothing (``TRY``).

    Keys are integers where they can be (the object pair's id, the alarm's time, retry_count): a
    1,000,000-event run keys in about half the time it took with text keys (bench_diff.py)."""
    con.execute(f"""
    CREATE OR REPLACE TEMP TABLE k_{side} AS
    WITH e AS (
        SELECT x.seq, x.t_ms - {int(t0)} AS t, m.pid, x.kind,
               x.scheduled_ms - {int(t0)} AS sched, x.prev_scheduled_ms - {int(t0)} AS prev, x.retry_count AS rc,
               CASE x.kind WHEN 'arm' THEN TRY(json_extract_string(x.detail, '$.cause'))
                           WHEN 'effect' THEN coalesce(TRY(json_extract_string(x.detail, '$.name')), '?') || '('
                                || coalesce(TRY(CAST(json_extract(x.detail, '$.key') AS VARCHAR)), 'null') || ')'
               END AS what,
               CASE WHEN x.kind = 'fire' THEN coalesce(x.t_ms - x.scheduled_ms,
                                                       TRY(CAST(json_extract(x.detail, '$.late_ms') AS BIGINT)))
               END AS late
        FROM ev_{side} x JOIN objmap m ON coalesce(x.object_id, '') = m.{side}_obj
        WHERE x.kind IN ({", ".join(f"'{k}'" for k in kinds if k in ALIGNED_KINDS)})
    ), h AS (
        SELECT seq, t, pid, kind, sched, rc, what, late,
               CASE WHEN kind IN ('handler_ok', 'handler_error') THEN 'end' ELSE kind END AS cls,
               CASE WHEN kind IN ('fire', 'fire_skipped', 'handler_ok', 'handler_error') THEN coalesce(rc, 0)
                    ELSE 0 END AS rcg,
               coalesce(CASE WHEN kind IN ('fire', 'fire_skipped', 'handler_ok', 'handler_error', 'arm', 'revive')
                                 THEN sched
                             WHEN kind IN ('disarm', 'abandoned') THEN coalesce(prev, sched) END, -1) AS gt,
               CASE WHEN kind = 'effect' THEN what ELSE '' END AS gw,
               CASE WHEN kind = 'arm' THEN coalesce(what, '') ELSE '' END AS gc
        FROM e WHERE NOT (kind = 'arm' AND coalesce(what, '') IN ({_PLATFORM}))
    )
    SELECT *, row_number() OVER (PARTITION BY pid, cls, gt, rcg, gw ORDER BY seq) AS n FROM h
    """)


def pair_objects(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, Any, str]]:
    """Table ``objmap(pid, a_obj, b_obj, pair)``: objects of one name pair by name; the rest pair in
    the order they first appear (a real object named by ``ctx.id.name`` beside a simulated label);
    returns the pairs made by order, for the summary to say so."""
    con.execute("""
    CREATE OR REPLACE TEMP TABLE objmap AS
    WITH oa AS (SELECT coalesce(object_id, '') AS obj, min(seq) AS first FROM ev_a GROUP BY 1),
         ob AS (SELECT coalesce(object_id, '') AS obj, min(seq) AS first FROM ev_b GROUP BY 1),
         same AS (SELECT oa.obj FROM oa JOIN ob ON oa.obj = ob.obj),
         ra AS (SELECT obj, row_number() OVER (ORDER BY first, obj) AS r FROM oa
                WHERE obj NOT IN (SELECT obj FROM same)),
         rb AS (SELECT obj, row_number() OVER (ORDER BY first, obj) AS r FROM ob
                WHERE obj NOT IN (SELECT obj FROM same)),
         m AS (
            SELECT obj AS a_obj, obj AS b_obj, obj AS pair, false AS by_order FROM same
            UNION ALL
            SELECT ra.obj, rb.obj,
                   CASE WHEN ra.obj IS NULL THEN rb.obj WHEN rb.obj IS NULL THEN ra.obj
                        ELSE ra.obj || ' ~ ' || rb.obj END,
                   ra.obj IS NOT NULL AND rb.obj IS NOT NULL
            FROM ra FULL OUTER JOIN rb ON ra.r = rb.r)
    SELECT CAST(row_number() OVER (ORDER BY pair) AS INTEGER) AS pid, * FROM m
    """)
    return [tuple(r) for r in con.execute(
        "SELECT a_obj, b_obj, pair FROM objmap WHERE by_order ORDER BY pair").fetchall()]


# Classes a second pass may pair across alarm times: an arm for another time is a *moved* arm, a fire
# of an alarm set for another time a moved fire. An effect of another name or key is another effect.
_SECOND = "('arm', 'disarm', 'fire', 'fire_skipped', 'end', 'abandoned', 'revive')"


_SIDE = ("seq", "t", "pid", "kind", "cls", "sched", "rc", "rcg", "gc", "what", "late", "n")


def _cols(alias: str, suffix: str) -> str:
    return ", ".join(f"{alias}.{c} AS {c}_{suffix}" for c in _SIDE)


def _back(suffix: str) -> str:
    return ", ".join(f"{c}_{suffix} AS {c}" for c in _SIDE)


def join_pairs(con: duckdb.DuckDBPyConnection, tolerance_ms: int) -> None:
    """Table ``pairs``: one row per event of either run, paired in two passes.

    First on the exact key (object, class, the alarm's time and retry_count, ordinal), one full outer
    join; then what is left of the alarm classes, in order per object, class and retry_count, so one
    missing arm costs one row, not every alarm after it. ``status``: ``same``; ``only_a`` / ``only_b``
    (present in one run only); ``changed`` (another outcome: ok against error, or an arm of another
    cause); ``moved`` (an arm or fire for a time further than ``tolerance_ms`` from its
    counterpart's, or any other event that happens further than ``tolerance_ms`` from its
    counterpart's time); ``late`` (the same fire, another lateness or a fire time further than
    ``tolerance_ms`` from its counterpart's). ``delta`` is B's time minus A's."""
    tol = int(tolerance_ms)
    con.execute(f"""
    CREATE OR REPLACE TEMP TABLE f1 AS
    SELECT {_cols('a', 'a')}, {_cols('b', 'b')} FROM k_a a FULL OUTER JOIN k_b b
        ON a.pid = b.pid AND a.cls = b.cls AND a.gt = b.gt AND a.rcg = b.rcg AND a.gw = b.gw AND a.n = b.n
    """)
    status = f"""CASE WHEN seq_a IS NULL THEN 'only_b' WHEN seq_b IS NULL THEN 'only_a'
                WHEN kind_a <> kind_b OR (cls_a = 'arm' AND what_a IS DISTINCT FROM what_b) THEN 'changed'
                WHEN cls_a IN ('arm', 'fire', 'fire_skipped') AND abs(sched_a - sched_b) > {tol} THEN 'moved'
                WHEN cls_a = 'fire' AND (late_a IS DISTINCT FROM late_b OR abs(t_b - t_a) > {tol}) THEN 'late'
                WHEN abs(t_b - t_a) > {tol} THEN 'moved'
                ELSE 'same' END AS status"""
    con.execute(f"""
    CREATE OR REPLACE TEMP TABLE pairs AS
    WITH la AS (SELECT {_back('a')}, row_number() OVER (PARTITION BY pid_a, cls_a, rcg_a, gc_a ORDER BY seq_a) AS n2
                FROM f1 WHERE seq_b IS NULL),
         lb AS (SELECT {_back('b')}, row_number() OVER (PARTITION BY pid_b, cls_b, rcg_b, gc_b ORDER BY seq_b) AS n2
                FROM f1 WHERE seq_a IS NULL),
         p2 AS (SELECT {_cols('la', 'a')}, {_cols('lb', 'b')} FROM la FULL OUTER JOIN lb
                ON la.pid = lb.pid AND la.cls = lb.cls AND la.rcg = lb.rcg AND la.gc = lb.gc AND la.n2 = lb.n2
                   AND la.cls IN {_SECOND}),
         p AS (SELECT * FROM f1 WHERE seq_a IS NOT NULL AND seq_b IS NOT NULL UNION ALL SELECT * FROM p2)
    SELECT coalesce(pid_a, pid_b) AS pid, coalesce(cls_a, cls_b) AS cls, coalesce(n_a, n_b) AS n,
           seq_a, seq_b, t_a, t_b, t_b - t_a AS delta, kind_a, kind_b, sched_a, sched_b, rc_a, rc_b, what_a, what_b,
           late_a, late_b, {status}
    FROM p
    """)
    con.execute("DROP TABLE f1")


PAIR_COLUMNS = ("m.pair AS object, m.a_obj AS obj_a, m.b_obj AS obj_b, p.cls, p.n, p.seq_a, p.seq_b, p.t_a, p.t_b, "
                "p.delta, "
                "p.kind_a, p.kind_b, p.sched_a, p.sched_b, p.rc_a, p.rc_b, p.what_a, p.what_b, p.late_a, p.late_b, "
                "p.status")


def per_object(con: duckdb.DuckDBPyConnection):
    """Fires, retries, abandonments, effects and duplicates per object pair in each run (a DataFrame)."""
    def counts(side: str) -> str:
        return f"""SELECT pid,
            count(*) FILTER (WHERE kind = 'fire') AS fires,
            count(*) FILTER (WHERE kind = 'fire' AND (coalesce(rc, 0) > 0 OR n > 1)) AS retries,
            count(*) FILTER (WHERE kind = 'abandoned') AS abandonments,
            count(*) FILTER (WHERE kind = 'effect') AS effects,
            count(*) FILTER (WHERE kind = 'effect' AND n > 1) AS duplicates
            FROM k_{side} GROUP BY 1"""
    cols = ("fires", "retries", "abandonments", "effects", "duplicates")
    sel = ", ".join(f"coalesce(a.{c}, 0) AS {c}_a, coalesce(b.{c}, 0) AS {c}_b" for c in cols)
    return con.execute(f"""
        WITH a AS ({counts('a')}), b AS ({counts('b')})
        SELECT m.pair AS object, {sel}
        FROM objmap m LEFT JOIN a ON a.pid = m.pid LEFT JOIN b ON b.pid = m.pid
        ORDER BY m.pair""").df()


def check_bases(first: dict[str, int | None], t0: dict[str, int], names: dict[str, str]) -> None:
    """Refuse to compare a run in epoch time with one in virtual time from 0 under exact alignment."""
    epoch = {s: first[s] is not None and first[s] - t0[s] > EPOCH_MS for s in ("a", "b")}
    if epoch["a"] != epoch["b"]:
        real = names["a"] if epoch["a"] else names["b"]
        raise AlarmkitError(f"run {real} counts epoch milliseconds and the other virtual time from 0, so exact "
                            "times cannot match; pass align='first_request' (each run counted from its first call) or "
                            "align='clock_start' (each from its clock's start)")
