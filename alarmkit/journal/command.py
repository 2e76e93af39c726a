"""``alarmkit journal recover SPILL --db J``: the events a failed journal write spilled (``_spill.py``)
written back into a journal."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ._spill import read_spill
from ..errors import AlarmkitError
from . import EVENT_COLUMNS, Journal

__all__ = ["recover", "add_arguments", "run_command"]


def recover(spill: str | os.PathLike, db: str | os.PathLike) -> dict[str, Any]:
    """Write the events of ``spill`` into the journal ``db``; returns counts. Events the journal already
    holds (the same run and seq) are skipped; a run the journal does not hold is added from the
    spill's header; a run id held by a different run (another scenario or seed) is refused."""
    head, rows = read_spill(spill)
    if head["columns"] != EVENT_COLUMNS:
        raise AlarmkitError(f"{str(spill)!r} holds columns {head['columns']}, not this alarmkit's {EVENT_COLUMNS}; "
                            "recover it with the alarmkit version that wrote it")
    runs = head.get("runs") if isinstance(head.get("runs"), dict) else {}
    with Journal(db) as j:
        con = j.con
        table = j._target()  # the journal's own event table (it may make the packed layout: before the transaction)
        con.execute("BEGIN TRANSACTION")  # all of the spill or nothing: a refused row leaves the journal as it was
        try:
            added_runs = []
            for run_id in sorted({r[0] for r in rows if r[0] is not None}):
                have = con.execute("SELECT scenario, seed FROM runs WHERE run_id = ?", [int(run_id)]).fetchone()
                meta = runs.get(str(run_id))
                if have is None:
                    if not isinstance(meta, dict):
                        raise AlarmkitError(f"run {run_id} of the spill is not in {str(db)!r} and the spill does not "
                                            f"describe it; pass the journal it was written for ({head.get('journal')})")
                    con.execute("INSERT INTO runs (run_id, scenario, profile, seed, params, faults, complete) "
                                "VALUES (?, ?, ?, ?, ?, ?, false)",
                                [int(run_id), meta.get("scenario"), meta.get("profile"), meta.get("seed"),
                                 meta.get("params"), meta.get("faults")])
                    added_runs.append(run_id)
                elif isinstance(meta, dict) and (have[0], have[1]) != (meta.get("scenario"), meta.get("seed")):
                    raise AlarmkitError(f"run {run_id} in {str(db)!r} is {have[0]} seed {have[1]}, but the spill's run "
                                        f"{run_id} is {meta.get('scenario')} seed {meta.get('seed')}; pass the journal "
                                        f"it was written for ({head.get('journal')})")
            held = {tuple(k) for k in con.execute("SELECT run_id, seq FROM events WHERE run_id IN "
                                                  "(SELECT DISTINCT unnest(?::INTEGER[]))",
                                                  [sorted({r[0] for r in rows if r[0] is not None})]).fetchall()}
            new = [r for r in rows if (r[0], r[1]) not in held]
            try:
                if new:  # into the journal's own table: event_rows (rendered rows, packed = false) or events
                    cols, extra = list(EVENT_COLUMNS), []
                    if table != "events":
                        cols, extra = [*cols, "packed"], [False]
                    con.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                    [[*r, *extra] for r in new])
            except Exception as err:  # noqa: BLE001 - DuckDB's conversion errors have many classes
                raise AlarmkitError(f"the spill's events do not fit the journal ({type(err).__name__}: "
                                    f"{str(err).splitlines()[0][:200]}); the value that failed the first write is "
                                    "still in it: the file is kept, nothing was written") from None
        except AlarmkitError:
            con.execute("ROLLBACK")
            raise
        except Exception as err:  # noqa: BLE001 - DuckDB's conversion errors have many classes
            con.execute("ROLLBACK")
            raise AlarmkitError(f"the spill does not fit the journal ({type(err).__name__}: "
                                f"{str(err).splitlines()[0][:200]}); nothing was written") from None
        con.execute("COMMIT")
    return {"events": len(new), "skipped": len(rows) - len(new), "runs_added": added_runs}


# -- alarmkit journal recover ------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    jsub = p.add_subparsers(dest="journal_command", required=True, parser_class=type(p))
    rec = jsub.add_parser("recover", help="write events a failed journal write spilled to a file back into a journal",
                          description="Read the events a journal could not write (the spill file its error "
                                      "message named) back into a journal. Events already there are skipped; "
                                      "the spill file is left for you to delete.")
    rec.add_argument("spill", help="the spill file, e.g. journal.duckdb.unwritten-20260101T000000Z-123.jsonl")
    rec.add_argument("--db", required=True, help="the journal to write them into (the one the spill names)")


def run_command(args: argparse.Namespace) -> int:
    done = recover(args.spill, args.db)
    added = f"; added run(s) {done['runs_added']} from the spill's header" if done["runs_added"] else ""
    print(f"wrote {done['events']:,} events from {args.spill} into {args.db} ({done['skipped']:,} already there{added}); "
          "the spill file is kept: delete it when you no longer need it")
    return 0
