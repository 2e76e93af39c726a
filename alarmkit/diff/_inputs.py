"""What ``diff`` accepts as a run, turned into one shape: the run's events as an Arrow table, a
label, and what ``check`` needs (obligations and horizon when the run carries them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa

from ..errors import AlarmkitError, InvalidValue

__all__ = ["Side", "side_of", "COLUMNS", "TIME_MAX"]

TIME_MAX = 2**53  # as the runtime refuses times (alarmkit.errors.InvalidValue)

COLUMNS = ["seq", "t_ms", "namespace", "object_id", "kind", "scheduled_ms", "prev_scheduled_ms", "retry_count",
           "detail"]
_SCHEMA = pa.schema([("seq", pa.int64()), ("t_ms", pa.int64()), ("namespace", pa.string()),
                     ("object_id", pa.string()), ("kind", pa.string()), ("scheduled_ms", pa.int64()),
                     ("prev_scheduled_ms", pa.int64()), ("retry_count", pa.int64()), ("detail", pa.string())])
_HOW = ("a run is a RunResult, a run id with journal=, a (Journal, run id) pair, an imported or recorded real "
        "run, or an events DataFrame")


@dataclass
class Side:
    """One run of a diff: its events (Arrow), a name for sentences, and what checking it needs."""

    events: pa.Table
    name: str
    run: dict = field(default_factory=dict)
    obligations: list | None = None  # None: not known (a journal run), so only invariants needing none run
    horizon_ms: int | None = None
    grace_ms: int | None = None
    result: Any = None  # a RunResult: ak.check reads its simulation's final alarms too

    @property
    def real(self) -> bool:
        params = self.run.get("params") or {}
        return isinstance(params, dict) and "imported" in params


def _from_frame(df: pd.DataFrame) -> pa.Table:
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise AlarmkitError(f"these events have no column {missing[0]!r}; pass Journal.events(run_id) or "
                            f"RunResult.events (columns {COLUMNS})")
    df = df[COLUMNS].copy()
    for c in ("seq", "t_ms", "scheduled_ms", "prev_scheduled_ms", "retry_count"):
        _whole_numbers(df, c)
    for c in ("scheduled_ms", "prev_scheduled_ms", "retry_count"):
        df[c] = df[c].astype("Int64")
    for c in ("namespace", "object_id", "kind", "detail"):
        df[c] = df[c].astype(object).where(df[c].notna(), None)
        _utf8(df, c)
    try:
        tbl = pa.Table.from_pandas(df, schema=_SCHEMA, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as err:
        raise AlarmkitError(f"these events do not fit the journal's columns ({str(err)[:200]}); "
                            "pass Journal.events(run_id)") from None
    _check_frame(tbl)
    return tbl.sort_by("seq")  # the order events happened in, not the frame's (one sorted by kind)


def _where(df: pd.DataFrame, i: Any) -> str:
    seq = df.at[i, "seq"]
    return f"event seq {seq}" if isinstance(seq, int) or (hasattr(seq, "is_integer") and seq.is_integer()) else f"row {i}"


def _whole_numbers(df: pd.DataFrame, col: str) -> None:
    """A float, text or other value in an integer column is refused naming it (Arrow's cast said
    only "cannot safely cast non-equivalent object to int64")."""
    for i, v in df[col].items():
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            continue
        if isinstance(v, bool) or not (isinstance(v, int) or (hasattr(v, "is_integer") and hasattr(v, "__index__"))):
            if isinstance(v, float) and v.is_integer() and abs(v) <= TIME_MAX:
                continue  # 3.0: a column pandas made float by a missing value
            what = "out of range" if isinstance(v, float) and v.is_integer() else "not a whole number"
            raise InvalidValue(f"{col} of {_where(df, i)} is {v!r:.40}, {what}; times, seq and retry_count are "
                               "ints within ±2**53 (pass events as Journal.events(run_id) gives them)")


def _utf8(df: pd.DataFrame, col: str) -> None:
    """Text that is not valid UTF-8 (a lone surrogate, ``\\ud800``) is refused naming where it sits:
    no journal column can hold it (it was a raw UnicodeEncodeError)."""
    for i, v in df[col].items():
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as err:
                raise InvalidValue(f"{col} of {_where(df, i)} holds {v[err.start]!r} (a lone surrogate), which no "
                                   "journal text can; these events did not come from a journal: fix the value or "
                                   "pass Journal.events(run_id)") from None
            continue
        if v is not None:
            raise InvalidValue(f"{col} of {_where(df, i)} is {type(v).__name__} {v!r:.40}, not text; "
                               "pass events as Journal.events(run_id) gives them")


def _check_frame(tbl: pa.Table) -> None:
    """Refuse what no journal holds: a missing seq or time, a time beyond 2**53 ms, a repeated seq."""
    import pyarrow.compute as pc

    for col in ("seq", "t_ms"):
        if tbl[col].null_count:
            raise InvalidValue(f"these events have a missing {col}; every event has one (Journal.events gives them)")
    for col in ("seq", "t_ms", "scheduled_ms", "prev_scheduled_ms", "retry_count"):
        mm = pc.min_max(tbl[col]).as_py()
        for v in (mm["min"], mm["max"]):
            if v is not None and abs(v) > TIME_MAX:
                raise InvalidValue(f"{col} {v} is out of range: times and counts are ints within ±2**53; "
                                   "pass events as Journal.events(run_id) gives them")
    if tbl.num_rows and pc.count_distinct(tbl["seq"]).as_py() != tbl.num_rows:
        raise InvalidValue("these events repeat a seq; seq is each event's place in its run, one per event")
    import duckdb

    con = duckdb.connect()
    try:
        con.register("t", tbl.select(["seq", "detail"]))
        bad = con.execute("SELECT seq FROM t WHERE detail IS NOT NULL AND (NOT json_valid(detail) "
                          "OR json_type(detail) <> 'OBJECT') ORDER BY seq LIMIT 1").fetchone()
    finally:
        con.close()
    if bad:
        raise InvalidValue(f"the detail of event seq {bad[0]} is not a JSON object; a journal's detail is JSON "
                           "object text or null (pass Journal.events(run_id))")


def _from_journal(journal: Any, run_id: Any, name: str) -> Side:
    if isinstance(run_id, bool) or not isinstance(run_id, int):
        raise InvalidValue(f"a run id is an int, got {run_id!r}; journal.runs() lists them")
    run = journal.run(run_id)  # AlarmkitError naming the runs there when it is not
    con = journal.con
    tbl = con.sql(f"SELECT {', '.join(COLUMNS)} FROM events WHERE run_id = {int(run_id)} ORDER BY seq").to_arrow_table()
    return Side(tbl.cast(_SCHEMA), name, run)


def side_of(value: Any, journal: Any, name: str) -> Side:
    """``value`` as a ``Side``; ``AlarmkitError`` naming what is accepted otherwise."""
    from ..journal import Journal, rows_to_frame

    if isinstance(value, Side):
        return value
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], Journal):
        return _from_journal(value[0], value[1], name)
    if isinstance(value, int) and not isinstance(value, bool):
        if journal is None:
            raise AlarmkitError(f"run {value} needs journal=Journal(path) to read it from; {_HOW}")
        return _from_journal(journal, value, name)
    if isinstance(value, pd.DataFrame):
        return Side(_from_frame(value), name)
    if hasattr(value, "imported") and hasattr(value, "obligations"):  # a RecordResult of alarmkit record
        side = side_of(value.imported, journal, name)
        side.obligations, side.horizon_ms = list(value.obligations), value.horizon_ms
        return side
    if hasattr(value, "rows") and hasattr(value, "anomalies"):  # an ImportResult
        side = Side(_from_frame(rows_to_frame(value.run_id, value.rows)), name,
                    {"params": {"imported": value.summary}, "run_id": value.run_id, "scenario": "import"})
        return side
    if hasattr(value, "sim") and hasattr(value, "obligations"):  # a RunResult
        if value.sim is None:
            if value.run_id is None or journal is None:
                raise AlarmkitError(f"this RunResult has no simulation; pass journal= and its run id; {_HOW}")
            return _from_journal(journal, value.run_id, name)
        info = {"scenario": value.scenario, "profile": value.profile, "seed": value.seed, "run_id": value.run_id,
                "params": value.params}
        return Side(_from_frame(value.events), name, info, list(value.obligations), value.horizon_ms,
                    value.grace_ms, value)
    raise AlarmkitError(f"cannot diff a {type(value).__name__}; {_HOW}")
