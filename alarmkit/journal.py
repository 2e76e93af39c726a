"""The journal: every event of every run, in DuckDB. The only bridge to the plots.

Events are buffered by the simulation and written here in batches through Arrow, never row
by row. ``events(run_id)`` and ``runs()`` return pandas DataFrames.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from .errors import AlarmkitError, JournalLocked

__all__ = ["Journal", "EVENT_COLUMNS", "EVENT_KINDS", "rows_to_frame"]

EVENT_COLUMNS = [
    "run_id", "seq", "t_ms", "namespace", "object_id", "kind",
    "scheduled_ms", "prev_scheduled_ms", "retry_count", "detail",
]
# What each kind means is documented in the README's journal section.
EVENT_KINDS = [
    "construct", "evict", "restart", "call", "arm", "disarm", "fire", "fire_skipped", "handler_ok",
    "handler_error", "retry_scheduled", "abandoned", "revive", "effect", "crash", "fault",
    # facets, the alarm proxy, the guestbook keepalive, celld (docs/readme-parts/facets-celld.md)
    "facet_broken", "actor_broken", "proxy_arm", "proxy_deliver", "keepalive_arm", "keepalive_disarm",
    "keepalive_fire", "revival", "deploy", "wake", "bucket",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY, scenario TEXT, profile TEXT, seed BIGINT,
    params TEXT, faults TEXT, started_at TIMESTAMP
);
CREATE TABLE IF NOT EXISTS events (
    run_id INTEGER, seq BIGINT, t_ms BIGINT, namespace TEXT, object_id TEXT, kind TEXT,
    scheduled_ms BIGINT, prev_scheduled_ms BIGINT, retry_count INTEGER, detail TEXT
);
"""
_ARROW = pa.schema([
    ("run_id", pa.int32()), ("seq", pa.int64()), ("t_ms", pa.int64()), ("namespace", pa.string()),
    ("object_id", pa.string()), ("kind", pa.string()), ("scheduled_ms", pa.int64()),
    ("prev_scheduled_ms", pa.int64()), ("retry_count", pa.int32()), ("detail", pa.string()),
])


try:  # orjson is ~10x faster than json for the many small detail dicts of a big run
    import orjson

    def _dump(detail: Any) -> str | None:
        if detail is None:
            return None
        return orjson.dumps(detail, default=str, option=orjson.OPT_NON_STR_KEYS).decode()

except ImportError:  # pragma: no cover - orjson is a declared dependency
    _encode = json.JSONEncoder(separators=(",", ":"), default=str).encode

    def _dump(detail: Any) -> str | None:
        return None if detail is None else _encode(detail)


def _arrow(run_id: int | None, rows: list[tuple]) -> pa.Table:
    cols = list(zip(*rows)) if rows else [()] * 9
    arrays = [pa.array([run_id] * len(rows), pa.int32())]
    for (name, typ), col in zip(list(zip(_ARROW.names, _ARROW.types))[1:9], cols[:8]):
        arrays.append(pa.array(col, typ))
    arrays.append(pa.array([_dump(d) for d in cols[8]], pa.string()))
    return pa.Table.from_arrays(arrays, schema=_ARROW)


def rows_to_frame(run_id: int | None, rows: list[tuple]) -> pd.DataFrame:
    """Buffered simulation rows as the same DataFrame ``Journal.events`` returns."""
    return _frame(_arrow(run_id, rows).to_pandas())


def _frame(df: pd.DataFrame) -> pd.DataFrame:
    for col in ("scheduled_ms", "prev_scheduled_ms", "retry_count", "run_id"):
        df[col] = df[col].astype("Int64")
    return df


class Journal:
    """A DuckDB journal, in a file (``Journal("journal.duckdb")``) or in memory (``Journal()``)."""

    def __init__(self, path: str | os.PathLike | None = None, batch_size: int = 50_000) -> None:
        self.path = None if path in (None, ":memory:") else Path(path)
        self.batch_size = batch_size
        try:
            self.con = duckdb.connect(str(self.path) if self.path else ":memory:")
        except duckdb.IOException as err:
            if "lock" in str(err).lower():
                raise JournalLocked(
                    f"journal file {self.path} is held open by another process ({_holder(err)}); "
                    "close that process (a notebook kernel?) or pass another path, e.g. --db other.duckdb"
                ) from None
            raise AlarmkitError(f"cannot open journal {self.path}: {err}") from None
        except duckdb.Error as err:
            raise AlarmkitError(f"{self.path} is not a DuckDB journal ({err}); pass a new path or a journal file") from None
        self.con.execute(_SCHEMA)

    def start_run(self, scenario: str, profile: str, seed: int, params: dict, faults: dict | None = None) -> int:
        run_id = self.con.execute("SELECT coalesce(max(run_id), 0) + 1 FROM runs").fetchone()[0]
        self.con.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)",
            [run_id, scenario, profile, seed, json.dumps(params, default=str), _dump(faults),
             datetime.now(timezone.utc).replace(tzinfo=None)],
        )
        return run_id

    def write_events(self, run_id: int | None, rows: list[tuple]) -> None:
        """Append one batch of buffered rows (``(seq, t, ns, obj, kind, sched, prev, retry, detail)``)."""
        if not rows:
            return
        batch = _arrow(run_id, rows)  # noqa: F841 - read by name in the SQL below
        self.con.execute("INSERT INTO events SELECT * FROM batch")

    def events(self, run_id: int | None = None) -> pd.DataFrame:
        where = "" if run_id is None else f"WHERE run_id = {int(run_id)}"
        return _frame(self.con.execute(f"SELECT * FROM events {where} ORDER BY run_id, seq").df())

    def runs(self) -> pd.DataFrame:
        return self.con.execute("SELECT * FROM runs ORDER BY run_id").df()

    def run(self, run_id: int) -> dict:
        df = self.con.execute("SELECT * FROM runs WHERE run_id = ?", [int(run_id)]).df()
        if df.empty:
            known = self.con.execute("SELECT list(run_id ORDER BY run_id) FROM runs").fetchone()[0]
            raise AlarmkitError(f"no run {run_id!r} in the journal; runs here: {known or []}")
        row = df.iloc[0].to_dict()
        row["params"] = json.loads(row["params"]) if row["params"] else {}
        row["faults"] = json.loads(row["faults"]) if row["faults"] else None
        return row

    def sql(self, query: str, *params: Any) -> pd.DataFrame:
        return self.con.execute(query, list(params)).df()

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _holder(err: Exception) -> str:
    text = str(err)
    i = text.find("PID")
    return text[i:].split(")")[0] if i >= 0 else "another process"
