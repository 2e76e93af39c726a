"""The journal's columns, kinds and tables: the DuckDB schema, the Arrow conversion of buffered rows,
and the checks and conversions between events frames and ``EventRow``s."""

from __future__ import annotations

import json
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from ._events import PACKED_SQL, ROWS_TABLE, EventBatch, EventRow
from ._events import dump as _dump
from ..errors import AlarmkitError

__all__ = ["EVENT_COLUMNS", "EVENT_KINDS", "BATCH_SIZE", "rows_to_frame", "frame_rows", "check_frame", "effect_idents"]

EVENT_COLUMNS = ["run_id", *EventRow._fields]
# What each kind means is documented in the README's journal section.
EVENT_KINDS = [
    "construct", "evict", "restart", "call", "arm", "disarm", "fire", "fire_skipped", "handler_ok",
    "handler_error", "retry_scheduled", "abandoned", "revive", "effect", "crash", "fault",
    # facets, the alarm proxy, the guestbook keepalive, celld (docs/readme-parts/facets-celld.md)
    "facet_broken", "actor_broken", "proxy_arm", "proxy_deliver", "keepalive_arm", "keepalive_disarm",
    "keepalive_fire", "revival", "deploy", "wake", "bucket",
    # Simulation(start_ms=...) at a real epoch; ctx.abort(reason, retry_alarm=...) (docs/runtime.md)
    "clock_start", "aborted",
    # Simulation(cpu_time=...): code ran for ``detail.ms`` and the clock moved on (docs/runtime.md, "The clock while code runs")
    "cpu",
]

# DuckDB's row group is 122,880 rows. Appends smaller than one cost about 3x more per row (duckdb
# 2.0, 604k events in memory: 0.55 s in 50,000-row batches, 0.14 s in 122,880-row ones); two row
# groups per batch let DuckDB insert on both cores.
BATCH_SIZE = 2 * 122_880

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY, scenario TEXT, profile TEXT, seed BIGINT,
    params TEXT, faults TEXT, started_at TIMESTAMP
);
-- a run killed part-way keeps complete = false and ended_at NULL; journals from before these
-- columns get them here (their runs read as not known to be complete)
ALTER TABLE runs ADD COLUMN IF NOT EXISTS complete BOOLEAN DEFAULT false;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS ended_at TIMESTAMP;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS faults_applied TEXT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS faults_unapplied TEXT;
CREATE TABLE IF NOT EXISTS events (
    run_id INTEGER, seq BIGINT, t_ms BIGINT, namespace TEXT, object_id TEXT, kind TEXT,
    scheduled_ms BIGINT, prev_scheduled_ms BIGINT, retry_count INTEGER, detail TEXT
);
"""
def _half_made(cols: dict[str, set[str]]) -> bool:
    """Whether the tables of a DuckDB file are some of alarmkit's own and nothing else, with none of
    the events table's rows: a journal an earlier alarmkit was killed while creating (it made the
    tables one statement at a time). It is completed (or, read-only, refused as such), not called
    someone else's file."""
    own = {"runs": {"run_id", "scenario", "profile", "seed", "params", "faults", "started_at", "complete",
                    "ended_at", "faults_applied", "faults_unapplied"},
           "events": {"run_id", *EVENT_COLUMNS}}
    return bool(cols) and set(cols) <= set(own) and all(c <= own[t] for t, c in cols.items()) \
        and "run_id" in cols.get("runs", {"run_id"})


_ARROW = pa.schema([
    ("run_id", pa.int32()), ("seq", pa.int64()), ("t_ms", pa.int64()), ("namespace", pa.string()),
    ("object_id", pa.string()), ("kind", pa.string()), ("scheduled_ms", pa.int64()),
    ("prev_scheduled_ms", pa.int64()), ("retry_count", pa.int32()), ("detail", pa.string()),
])


def _arrow(run_id: int | None, rows: list[EventRow]) -> pa.Table:
    cols = dict(zip(EventRow._fields, zip(*rows) if rows else [()] * len(EventRow._fields)))
    arrays = [pa.array([run_id] * len(rows), pa.int32())]
    for name in EventRow._fields:
        col = cols[name] if name != "detail" else [_dump(d) for d in cols[name]]
        arrays.append(pa.array(col, _ARROW.field(name).type))
    return pa.Table.from_arrays(arrays, schema=_ARROW)


_RUNS = pa.schema([  # the runs columns add_runs writes
    ("run_id", pa.int32()), ("scenario", pa.string()), ("profile", pa.string()), ("seed", pa.int64()),
    ("params", pa.string()), ("faults", pa.string()), ("started_at", pa.timestamp("us")), ("complete", pa.bool_()),
    ("ended_at", pa.timestamp("us")), ("faults_applied", pa.string()), ("faults_unapplied", pa.string()),
])
_INT_FIELDS = {"seq", "t_ms", "scheduled_ms", "prev_scheduled_ms", "retry_count"}


def check_frame(events: Any, what: str = "events") -> pd.DataFrame:
    """``events`` if it is a DataFrame with the journal's columns; else ``AlarmkitError`` naming what is missing."""
    if not isinstance(events, pd.DataFrame):
        raise AlarmkitError(f"{what} must be a DataFrame from Journal.events(run_id), got {type(events).__name__}")
    missing = [c for c in EVENT_COLUMNS if c not in events.columns]
    if missing:
        raise AlarmkitError(f"{what} lack column(s) {missing}; pass Journal.events(run_id) (columns: {EVENT_COLUMNS})")
    return events


def frame_rows(df: pd.DataFrame) -> list[EventRow]:
    """A ``Journal.events`` DataFrame as ``EventRow`` values (ints as ints, NULL as None, detail parsed)."""
    columns = []
    for name in EventRow._fields[:-1]:
        values = df[name].astype(object).where(df[name].notna(), None)
        columns.append([None if v is None else int(v) for v in values] if name in _INT_FIELDS else list(values))
    columns.append([json.loads(d) if isinstance(d, str) else None for d in df["detail"]])
    return [EventRow(*rec) for rec in zip(*columns)]


def rows_to_frame(run_id: int | None, rows: list[EventRow] | EventBatch) -> pd.DataFrame:
    """Rows (or a simulation's buffered events) as the same DataFrame ``Journal.events`` returns."""
    return _frame(_table(run_id, rows).cast(_ARROW).to_pandas())


def _table(run_id: int | None, rows: list[EventRow] | EventBatch, packed: bool = False) -> pa.Table:
    if isinstance(rows, EventBatch):
        return rows.to_arrow(run_id, _ARROW, packed)
    return _arrow(run_id, rows)


def _frame(df: pd.DataFrame) -> pd.DataFrame:
    for col in ("scheduled_ms", "prev_scheduled_ms", "retry_count", "run_id"):
        df[col] = df[col].astype("Int64")
    for col in ("namespace", "object_id", "detail"):  # missing text is None, from DuckDB as from Arrow
        df[col] = df[col].astype(object).where(df[col].notna(), None)
    return df



def _insert_into(rel: duckdb.DuckDBPyRelation, target: str) -> None:
    """Insert a batch (its ``packed`` column, if any, last) into ``event_rows`` as it is, or into an
    ``events`` table with the packed events rendered (``PACKED_SQL``), on the thread that calls it."""
    packed = "packed" in rel.columns
    if target == ROWS_TABLE:
        rel = rel if packed else rel.project("*, false AS packed")
    elif packed:
        rel = rel.project(PACKED_SQL)
    rel.insert_into(target)


def _raw_rows(run_id: int | None, rows: list[tuple] | EventBatch) -> list[tuple]:
    """A batch that cannot become Arrow, as plain rows in EVENT_COLUMNS order: nothing lost, and each
    detail as the journal's JSON text (``dump``), as every other kept batch holds it, so its spill
    file reads back (``alarmkit journal recover``): an ``EventRow``'s detail is a dict."""
    if not isinstance(rows, EventBatch):
        return [(run_id, *r[:-1], _text_detail(r[-1])) if len(r) else (run_id, *r) for r in rows]
    return rows.plain(run_id)


def _text_detail(detail: Any) -> Any:
    if detail is None or isinstance(detail, str):
        return detail
    try:
        return _dump(detail)
    except Exception:  # noqa: BLE001 - kept as given: the spill writes what it can, nothing dropped
        return detail


def _holder(err: Exception) -> str:
    text = str(err)
    i = text.find("PID")
    return text[i:].split(")")[0] if i >= 0 else "another process"

def effect_idents(df: pd.DataFrame) -> pd.Series:
    """``name`` NUL ``key as JSON`` of each effect row (DuckDB's JSON functions: one vectorised pass): what makes
    two effects the same one, for the timeline's duplicate marks, the report and the verdict alike."""
    detail = df.loc[df["kind"] == "effect", ["detail"]].astype(object)  # noqa: F841 - DuckDB reads it by name
    ident = duckdb.sql("SELECT coalesce(json_extract_string(detail, '$.name'), '') || chr(0) || "
                       "coalesce(CAST(json_extract(detail, '$.key') AS VARCHAR), 'null') AS i FROM detail").df()["i"]
    return pd.Series(ident.to_numpy(), index=detail.index, dtype=object)
