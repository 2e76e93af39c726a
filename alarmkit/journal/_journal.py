"""The DuckDB writer and reader behind ``alarmkit.journal.Journal`` (see the wing's face for the layout)."""


from __future__ import annotations

import json
import os
import re
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from ._events import PACKED_SQL, ROWS_SCHEMA, ROWS_TABLE, EventBatch, EventRow, render_packed
from ._events import dump as _dump
from ..errors import AlarmkitError, JournalClosed, JournalLocked, JournalWriteError
from ._filecheck import check_duckdb_file

from ._frames import (
    _ARROW, _INT_FIELDS, _RUNS, _SCHEMA, BATCH_SIZE, EVENT_COLUMNS, _arrow, _frame, _half_made, _holder, _insert_into,
    _raw_rows,
    _table, rows_to_frame,
)

__all__ = ["Journal", "check_duckdb_file"]


class Journal:
    """A DuckDB journal, in a file (``Journal("journal.duckdb")``) or in memory (``Journal()``)."""

    def __init__(self, path: str | os.PathLike | None = None, batch_size: int = BATCH_SIZE,
                 read_only: bool = False) -> None:
        """Open (or create) the journal at ``path``; in memory without one.

        A file must be a DuckDB file holding alarmkit's ``runs`` and ``events`` tables (or a new
        path): any other file is refused and left as it is. ``read_only=True`` opens an existing
        journal for reading only, so it works on a read-only file and beside other readers.
        Raises ``JournalLocked`` when another process holds the file, ``AlarmkitError`` otherwise.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise AlarmkitError(f"batch_size must be a positive int of events, got {batch_size!r}")
        if isinstance(path, str) and not path:  # Path("") would be the current folder
            raise AlarmkitError("the journal path is empty; pass a file path, e.g. --db journal.duckdb")
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise AlarmkitError(f"the journal path is a str or a Path, got {type(path).__name__}; "
                                "e.g. Journal('journal.duckdb')")
        if path is not None and "\x00" in str(path):  # DuckDB would cut the name there and make another file
            raise AlarmkitError(f"journal path {str(path)!r} holds a NUL character, which no file name may; "
                                "pass another path")
        self.path = None if path in (None, ":memory:") else Path(path)
        self._given = path  # as typed: Path() drops the trailing "/" of a folder
        self.read_only = bool(read_only)
        self.batch_size = batch_size
        self._pending: tuple[threading.Thread, pa.Table, list] | None = None  # the batch being inserted
        # batches that could not be written, kept for the user: Arrow tables, or for a batch that
        # could not even become Arrow, its rows in EVENT_COLUMNS order (unwritten_rows() reads both)
        self.unwritten: list[pa.Table | list[tuple]] = []
        self._wcon: duckdb.DuckDBPyConnection | None = None  # the writer thread's cursor
        self._spill: Path | None = None  # where unwritten events are spilled, chosen at the first failure
        self._closed = False
        if self.path is None and self.read_only:
            raise AlarmkitError("read_only=True needs a journal file: Journal('journal.duckdb', read_only=True)")
        self._con = self._connect()
        try:
            self._check_tables()
        except BaseException:
            self._con.close()  # a refused file is left as it was, and not held open
            raise
        try:  # FSST's analysis cost ~0.25 us per inserted row, and without it the file of 600k
            # benchmark events came out the same size (dictionary compression does the work)
            self._con.execute("SET disabled_compression_methods='fsst'")
        except duckdb.Error:  # pragma: no cover - an older DuckDB without the setting
            pass

    def _connect(self) -> duckdb.DuckDBPyConnection:
        p = self.path
        if p is None:
            return duckdb.connect(":memory:")
        try:
            str(p).encode("utf-8")
        except UnicodeEncodeError:  # DuckDB takes only UTF-8 paths (bytes from a non-UTF-8 command line)
            raise AlarmkitError(f"journal path {str(p)!r} is not valid UTF-8 text; pass another path") from None
        if p.is_dir():
            raise AlarmkitError(f"journal path {str(p)!r} is a folder; pass a file path, e.g. --db {p / 'journal.duckdb'}")
        if self.read_only and not p.exists():
            raise AlarmkitError(f"no journal file {str(p)!r}; write one with `alarmkit demo --db {p}` "
                                f"or `alarmkit run SCENARIO --db {p}`")
        if not p.exists() and not p.parent.is_dir():
            raise AlarmkitError(f"folder {str(p.parent)!r} does not exist; create it or pass another --db path")
        if not p.exists() and not self.read_only:
            from .._files import check_output

            check_output(self._given, ours=None, flag="--db", what="journal")  # "j/" names a folder; a read-only folder
        check_duckdb_file(p, self.read_only)  # a file whose creation was cut short: made again, or refused
        try:
            return duckdb.connect(str(p), read_only=self.read_only)
        except duckdb.IOException as err:
            if "lock" in str(err).lower():
                raise JournalLocked(
                    f"journal file {p} is held open by another process ({_holder(err)}); "
                    "close that process (a notebook kernel?) or pass another path, e.g. --db other.duckdb; "
                    "readers can share a journal when each opens it with Journal(path, read_only=True)"
                ) from None
            if "not a valid DuckDB database" in str(err):
                raise AlarmkitError(f"{str(p)!r} is not an alarmkit journal (not a DuckDB file); alarmkit leaves it "
                                    "alone: pass a new path or a journal file, e.g. --db journal.duckdb") from None
            raise AlarmkitError(f"cannot open journal {p}: {err}") from None
        except duckdb.Error as err:
            raise AlarmkitError(f"{p} is not a DuckDB journal ({err}); pass a new path or a journal file") from None

    def _check_tables(self) -> None:
        """A file holding tables but not alarmkit's is someone else's: refuse it, change nothing."""
        cols: dict[str, set[str]] = {}
        for table, column in self._con.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_catalog = current_database() AND table_schema = 'main'"
        ).fetchall():
            cols.setdefault(table, set()).add(column)
        where = self.path or ":memory:"
        if not cols and self.read_only:
            raise AlarmkitError(f"{str(where)!r} holds no alarmkit journal (an empty DuckDB file); "
                                "write runs into it with `alarmkit run SCENARIO --db FILE`")
        whole = (set(EVENT_COLUMNS) <= cols.get("events", set())
                 and {"run_id", "scenario", "profile", "seed"} <= cols.get("runs", set()))
        if cols and not whole and not _half_made(cols):
            raise AlarmkitError(
                f"{str(where)!r} is a DuckDB file but not an alarmkit journal (its tables: {sorted(cols)[:8]}); "
                "alarmkit leaves it alone: pass a new path or a journal file, e.g. --db journal.duckdb")
        if cols and not whole and self.read_only:  # made by an alarmkit killed while it created the tables
            raise AlarmkitError(
                f"{str(where)!r} is an alarmkit journal whose creation was cut short (it has {sorted(cols)} of its "
                "tables, no events); open it once for writing to complete it, e.g. `alarmkit run SCENARIO --db "
                f"{where}`, or pass another journal")
        if not self.read_only:  # every table in one transaction: a kill leaves all of them or none
            self._con.execute(f"BEGIN TRANSACTION; {_SCHEMA} COMMIT")
        self._layout = self._find_layout()

    def _find_layout(self) -> str | None:
        """``packed`` (rows in ``event_rows``, ``events`` a view), ``rendered`` (an ``events`` table
        holding rows), or None: no events yet, the layout is chosen at the first write."""
        kinds = dict(self._con.execute(
            "SELECT table_name, table_type FROM information_schema.tables WHERE table_catalog = current_database() "
            f"AND table_schema = 'main' AND table_name IN ('events', '{ROWS_TABLE}')").fetchall())
        if ROWS_TABLE in kinds:
            return "packed"
        if kinds.get("events") == "BASE TABLE" and self._con.execute("SELECT count(*) FROM events").fetchone()[0]:
            return "rendered"
        return None

    def _target(self) -> str:
        """The table a batch goes into; on a journal without events yet, the packed layout is made first
        (its empty ``events`` table replaced by ``event_rows`` and the view, in one transaction)."""
        if self._layout is None:
            self._layout = self._find_layout()
        if self._layout is None:
            self._con.execute(f"BEGIN TRANSACTION; DROP TABLE events; {ROWS_SCHEMA} COMMIT")
            self._layout = "packed"
        return ROWS_TABLE if self._layout == "packed" else "events"

    def clear(self) -> int:
        """Drop every run and event in this journal (the file stays, and so do tables that are not
        alarmkit's); returns how many runs were dropped."""
        self._writable("clear")
        dropped = self.con.execute("SELECT count(*) FROM runs").fetchone()[0]
        if self._find_layout() == "packed":
            self._con.execute(f"DROP VIEW events; DROP TABLE {ROWS_TABLE}")
        for table in re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", _SCHEMA):
            self._con.execute(f"DROP TABLE IF EXISTS {table}")
        self._con.execute(f"BEGIN TRANSACTION; {_SCHEMA} COMMIT")
        self._con.execute("CHECKPOINT")
        self._layout = None
        return int(dropped)

    def _writable(self, action: str) -> None:
        self._open()
        if self.read_only:
            raise AlarmkitError(f"journal {self.path} was opened read-only, so it cannot {action}; "
                                "open it with Journal(path) to write")

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection, once every batch handed to the writer thread is in; ``JournalClosed``
        after ``close()`` (DuckDB's own ``ConnectionException`` named neither the file nor the way out)."""
        self._open()
        self._wait()
        return self._con

    def _open(self) -> None:
        if self._closed:
            where = "an in-memory journal" if self.path is None else f"journal {self.path}"
            again = ("an in-memory journal's events are gone with it: read them before it closes, or journal to a "
                     "file") if self.path is None else f"open it again to read it: Journal({str(self.path)!r}, read_only=True)"
            raise JournalClosed(f"{where} is closed (its `with` block ended or close() was called); {again}")

    def start_run(self, scenario: str, profile: str, seed: int, params: dict, faults: dict | None = None) -> int:
        self._writable("start a run")
        run_id = self.con.execute("SELECT coalesce(max(run_id), 0) + 1 FROM runs").fetchone()[0]
        self.con.execute(
            "INSERT INTO runs (run_id, scenario, profile, seed, params, faults, started_at, complete) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, false)",
            [run_id, scenario, profile, seed, json.dumps(params, default=str), _dump(faults),
             datetime.now(timezone.utc).replace(tzinfo=None)],
        )
        return run_id

    def end_run(self, run_id: int, complete: bool = True, applied: dict | None = None,
                unapplied: dict | None = None) -> None:
        """Mark a run as ended (``complete``: it ran to its end, not cut short by an error) and
        record how many faults each plan entry injected (``applied``) and why some did not."""
        self.con.execute(
            "UPDATE runs SET complete = ?, ended_at = ?, faults_applied = ?, faults_unapplied = ? WHERE run_id = ?",
            [bool(complete), datetime.now(timezone.utc).replace(tzinfo=None),
             None if applied is None else _dump(applied), None if unapplied is None else _dump(unapplied),
             int(run_id)],
        )

    def add_runs(self, runs: list[dict]) -> list[int]:
        """Several finished runs at once (an exploration's chunk): each a dict of ``start_run``'s and
        ``end_run``'s arguments plus ``events`` (``EventRow`` values). Their runs rows and events go in
        one transaction and one insert: per run, the four statements of start_run, write_events and
        end_run cost ~5 ms in a file, 3x the lease ledger's runs themselves in ``explore --db``.
        Returns the run ids. A batch that fails is rolled back and written run by run, so a failure
        keeps its events in ``unwritten`` as ``write_events`` does."""
        self._writable("start a run")
        if not runs:
            return []
        con = self.con  # the batch in flight, if any, is in first
        first = con.execute("SELECT coalesce(max(run_id), 0) + 1 FROM runs").fetchone()[0]
        ids = list(range(first, first + len(runs)))
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        rows = [[i, r["scenario"], r["profile"], r["seed"], json.dumps(r["params"], default=str), _dump(r.get("faults")),
                 now, bool(r.get("complete", True)), now,
                 None if r.get("applied") is None else _dump(r["applied"]),
                 None if r.get("unapplied") is None else _dump(r["unapplied"])] for i, r in zip(ids, runs)]
        try:
            tables = [_arrow(i, r["events"]) for i, r in zip(ids, runs) if r.get("events")]
            # the runs rows as one Arrow insert: executemany took ~100 ms for 50 rows, 2 ms this way
            # (a third of `explore --db`'s wall time on the lease ledger; bench_core.py benchmark 4)
            new_runs = pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(zip(*rows), _RUNS)], schema=_RUNS)
            target = self._target()
            con.execute("BEGIN TRANSACTION")
            try:
                con.register("alarmkit_new_runs", new_runs)
                try:
                    con.execute("INSERT INTO runs BY NAME SELECT * FROM alarmkit_new_runs")
                finally:
                    con.unregister("alarmkit_new_runs")
                if tables:
                    _insert_into(con.from_arrow(pa.concat_tables(tables)), target)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        except (duckdb.Error, pa.ArrowException, TypeError, ValueError, OverflowError):
            ids = []
            for r in runs:  # one by one: the same rows, or the same kept events and error as write_events
                ids.append(self.start_run(r["scenario"], r["profile"], r["seed"], r["params"], r.get("faults")))
                self.write_events(ids[-1], r.get("events") or [])
                self.end_run(ids[-1], r.get("complete", True), r.get("applied"), r.get("unapplied"))
        return ids

    def write_events(self, run_id: int | None, rows: list[EventRow] | EventBatch) -> None:
        """Append one batch: a simulation's buffered events, or ``EventRow`` values.

        Raises ``JournalWriteError`` when this batch (or the one before it, written on another thread)
        could not be written; every event of a failed batch is kept in ``unwritten``, in order.
        """
        if not len(rows):
            return
        self._writable("take events")
        # Convert while the batch before is still being inserted (conversion holds the GIL, DuckDB's
        # insert does not), then wait for it: at most one batch in flight and one being converted,
        # so memory stays bounded and order is kept. Waiting first added the two: 1M events went in
        # 1.00-1.22x faster this way (bench_core.py benchmark 2). The packed layout stores the hot kinds
        # without their text: 0.96 -> 0.79 CPU seconds per 1M events, both threads (docs/performance.md).
        try:
            table = _table(run_id, rows, packed=True)  # packed events stay packed (rendered on read or by _insert)
        except Exception as err:  # a value no column can hold got past the checks at the API's entries
            failed = self._join()  # the batch before goes first, in order, written or kept
            self.unwritten.append(_raw_rows(run_id, rows))
            if failed is not None:
                raise self._kept(*failed) from failed[1]
            raise self._kept(f"a batch of {len(rows):,} events could not be converted for DuckDB", err,
                             "a value got past alarmkit's checks (sim.log writes what it is given): fix where it entered") from err
        failed = self._join()
        if failed is not None:
            self._keep(table)  # not sent after a failure: kept, in order, with it
            raise self._kept(*failed) from failed[1]
        target = self._target()
        if self._wcon is None:
            self._wcon = self._con.cursor()  # DuckDB's way to use one database from another thread
        # DuckDB inserts without holding the GIL, so the simulation runs on meanwhile. A thread per
        # batch (245,760 events) costs nothing measurable and leaves no idle thread behind, which
        # matters to a process pool that forks later.
        result: list[BaseException] = []
        thread = threading.Thread(target=self._insert, args=(table, target, result), name="alarmkit-journal")
        thread.start()
        self._pending = (thread, table, result)

    def _insert(self, table: pa.Table, target: str, result: list) -> None:
        try:
            _insert_into(self._wcon.from_arrow(table), target)
        except BaseException as err:  # noqa: BLE001 - handed to the caller's thread by _wait
            result.append(err)

    def _keep(self, table: pa.Table) -> None:
        """Keep a batch that could not be written, as the journal would have held it (packed events rendered)."""
        self.unwritten.append(render_packed(table) if "packed" in table.column_names else table)

    def _wait(self) -> None:
        failed = self._join()
        if failed is not None:
            raise self._kept(*failed) from failed[1]

    def _join(self) -> tuple[str, BaseException] | None:
        """Wait for the batch in flight; if its insert failed, keep it and say what happened."""
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        thread, table, result = pending
        thread.join()
        if not result:
            return None
        self._keep(table)
        return f"a batch of {len(table):,} events could not be written", result[0]

    def _kept(self, what: str, cause: Any, way_out: str = "free disk space or pass another --db and run again") -> JournalWriteError:
        """The error for a failed write, saying only what is true of the events not written: spilled to a
        file beside the journal (nothing is lost), or kept in this process only (lost when it ends)."""
        n = sum(map(len, self.unwritten))
        kept = f"{n:,} events are kept in journal.unwritten ({len(self.unwritten)} batches; journal.unwritten_rows() lists them)"
        where = f"journal {self.path or ':memory:'}: {what} ({cause}); earlier batches are in"
        if self.path is None:
            return JournalWriteError(f"{where}; {kept}, in this process only (an in-memory journal has no file "
                                     f"to spill them to); {way_out}")
        spilled, failure = self.spill()
        if spilled is None:
            return JournalWriteError(f"{where}; {kept}, in this process only: spilling them beside the journal "
                                     f"failed ({failure}), so they are lost when this process ends; {way_out}")
        return JournalWriteError(f"{where}, and nothing is lost: {kept} and in {spilled} (`alarmkit journal recover "
                                 f"{spilled} --db {self.path}` writes them in); {way_out}")

    def spill(self) -> tuple[Path | None, str]:
        """Write every event in ``unwritten`` to a file beside the journal (one file per Journal,
        rewritten whole as more batches fail): ``(path, "")``, or ``(None, why)`` when it could not be
        written. ``alarmkit journal recover PATH --db JOURNAL`` reads it back."""
        from ._spill import spill_unwritten

        return spill_unwritten(self, EVENT_COLUMNS)

    def unwritten_rows(self) -> list[tuple]:
        """Every event kept in ``unwritten``, as tuples in ``EVENT_COLUMNS`` order (detail as JSON text)."""
        out: list[tuple] = []
        for batch in self.unwritten:
            if isinstance(batch, pa.Table):
                out.extend(zip(*(batch.column(c).to_pylist() for c in EVENT_COLUMNS)))
            else:
                out.extend(batch)
        return out

    def events(self, run_id: int | None = None) -> pd.DataFrame:
        where = "" if run_id is None else f"WHERE run_id = {int(run_id)}"
        return _frame(self.con.execute(f"SELECT * FROM events {where} ORDER BY run_id, seq").df())

    def runs(self) -> pd.DataFrame:
        return self.con.execute("SELECT * FROM runs ORDER BY run_id").df()

    def run(self, run_id: int) -> dict:
        df = self.con.execute("SELECT * FROM runs WHERE run_id = ?", [int(run_id)]).df()
        if df.empty:
            n, lo, hi = self.con.execute("SELECT count(*), min(run_id), max(run_id) FROM runs").fetchone()
            if n <= 12:  # a few: name them; many (an explore's hundreds): the range, not a wall of ids
                known = self.con.execute("SELECT list(run_id ORDER BY run_id) FROM runs").fetchone()[0]
                raise AlarmkitError(f"no run {run_id!r} in the journal; runs here: {known or []}")
            raise AlarmkitError(f"no run {run_id!r} in the journal; it holds {n:,} runs, ids {lo}..{hi} "
                                "(journal.runs() lists them)")
        row = df.iloc[0].to_dict()
        row["params"] = json.loads(row["params"]) if row["params"] else {}
        row["faults"] = json.loads(row["faults"]) if row["faults"] else None
        return row

    def sql(self, query: str, *params: Any) -> pd.DataFrame:
        return self.con.execute(query, list(params)).df()

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._wait()
        finally:
            if self._wcon is not None:
                self._wcon.close()
                self._wcon = None
            self._con.close()
            self._closed = True

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
