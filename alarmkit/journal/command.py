"""``alarmkit journal recover SPILL --db J``: the events a failed journal write spilled (``_spill.py``)
written back into a journal. ``alarmkit journal runs --db J``: the journal's runs, one line each (id,
scenario, profile, seed, events, complete), the ids ``alarmkit export --run ID`` and ``alarmkit diff`` take."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import pyarrow as pa

from ._frames import _ARROW, _insert_into
from ._spill import read_spill
from ..errors import AlarmkitError
from . import EVENT_COLUMNS, Journal

__all__ = ["recover", "add_arguments", "run_command", "list_runs"]


def recover(spill: str | os.PathLike, db: str | os.PathLike) -> dict[str, Any]:
    """Write the events of ``spill`` into the journal ``db``; returns counts. Events the journal already
    holds (the same run and seq, the same event) are skipped, and an event the spill holds twice is
    written once, so recovering a spill again writes nothing; an event at a run and seq held as a
    different event is refused (``_unheld``); a run the journal does not hold is added from the spill's
    header; a run id held by a different run (another scenario or seed) is refused."""
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
            new, skipped = _unheld(con, rows, db, head)
            try:
                if new:  # into the journal's own table (event_rows, packed = false; or events) as one Arrow
                    # insert, as the journal writes a batch: executemany took 75 s for 20,000 events
                    _insert_into(con.from_arrow(pa.Table.from_arrays(
                        [pa.array(list(c), f.type) for c, f in zip(zip(*new), _ARROW)], schema=_ARROW)), table)
            except Exception as err:  # noqa: BLE001 - DuckDB's and Arrow's conversion errors have many classes
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
    return {"events": len(new), "skipped": skipped, "runs_added": added_runs}


_DETAIL = EVENT_COLUMNS.index("detail")


def _differs(a: list | tuple, b: list | tuple) -> str:
    """The first column in which two events (``EVENT_COLUMNS`` order) differ, or "" when they are the
    same event (details compared as JSON: a spill's text and the journal's may space it differently)."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x == y:
            continue
        if i == _DETAIL and isinstance(x, str) and isinstance(y, str):
            try:
                if json.loads(x) == json.loads(y):
                    continue
            except (ValueError, RecursionError):
                pass
        return EVENT_COLUMNS[i]
    return ""


def _conflict(head: dict, where: str, theirs: list | tuple, ours: list | tuple) -> AlarmkitError:
    col = _differs(theirs, ours)
    i = EVENT_COLUMNS.index(col)
    return AlarmkitError(
        f"run {ours[0]} seq {ours[1]} of the spill ({ours[5]} at {ours[2]:,} ms) is not the event {where} at that "
        f"run and seq ({theirs[5]} at {theirs[2]:,} ms; {col} {str(ours[i])!r:.80} vs {str(theirs[i])!r:.80}): an "
        f"event is never overwritten or dropped, so nothing was written; pass the journal the spill was written for "
        f"({head.get('journal')}), or the spill it wrote")


def _unheld(con: Any, rows: list[list], db: Any, head: dict) -> tuple[list[list], int]:
    """The spill's ``rows`` the journal does not hold yet, each once, and how many were skipped (held
    already, or the same event twice in the spill). A row at a run and seq the journal (or the spill,
    earlier) holds as a different event is refused by name (``AlarmkitError``): never overwritten, never
    dropped. Recovering the same spill twice writes nothing the second time."""
    seen: dict[tuple, list] = {}
    for row in rows:
        key = (row[0], row[1])
        if key in seen:
            if _differs(seen[key], row):
                raise _conflict(head, "the spill holds earlier", seen[key], row)
            continue
        seen[key] = row
    keys = list(seen)
    held: dict[tuple, tuple] = {}
    if keys:
        cols = ", ".join(f"e.{c}" for c in EVENT_COLUMNS)
        for row in con.execute(f"SELECT {cols} FROM events e JOIN (SELECT unnest(?::BIGINT[]) AS run_id, "
                               "unnest(?::BIGINT[]) AS seq) k ON e.run_id = k.run_id AND e.seq = k.seq",
                               [[k[0] for k in keys], [k[1] for k in keys]]).fetchall():
            held[(row[0], row[1])] = row
    for key, row in held.items():
        if _differs(row, seen[key]):
            raise _conflict(head, f"{str(db)!r} already holds", row, seen[key])
    new = [row for key, row in seen.items() if key not in held]
    return new, len(rows) - len(new)


# -- alarmkit journal recover ------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    jsub = p.add_subparsers(dest="journal_command", required=True, parser_class=type(p))
    rec = jsub.add_parser("recover", help="write events a failed journal write spilled to a file back into a journal",
                          description="Read the events a journal could not write (the spill file its error "
                                      "message named) back into a journal. Events already there are skipped; "
                                      "the spill file is left for you to delete.")
    rec.add_argument("spill", help="the spill file, e.g. journal.duckdb.unwritten-20260101T000000Z-123.jsonl")
    rec.add_argument("--db", required=True, help="the journal to write them into (the one the spill names)")
    runs = jsub.add_parser("runs", help="list the journal's runs: id, scenario, profile, seed, events, complete",
                           description="List the runs of a journal, one line each (read-only: the journal is not "
                                       "changed), newest last; --json prints one JSON list.")
    runs.add_argument("--db", required=True, help="the journal to read, e.g. journal.duckdb")
    runs.add_argument("--json", action="store_true", help="print one JSON list")


def list_runs(db: str | os.PathLike) -> list[dict[str, Any]]:
    """The journal's runs (read-only), each with its event count."""
    from pathlib import Path

    if not Path(db).is_file():
        raise AlarmkitError(f"no journal file {str(db)!r}; write one with `alarmkit demo --db FILE` or "
                            "`alarmkit run SCENARIO --db FILE`")
    j = Journal(db, read_only=True)
    try:
        counts = dict(j.con.execute("SELECT run_id, count(*) FROM events GROUP BY run_id").fetchall())
        df = j.runs()
    finally:
        j.close()
    out = []
    for row in df.to_dict("records"):
        rid = int(row["run_id"])
        out.append({"run_id": rid, "scenario": row.get("scenario"), "profile": row.get("profile"),
                    "seed": None if row.get("seed") is None else int(row["seed"]), "events": int(counts.get(rid, 0)),
                    "complete": None if row.get("complete") is None else bool(row["complete"])})
    return out


def run_command(args: argparse.Namespace) -> int:
    if args.journal_command == "runs":
        import json

        runs = list_runs(args.db)
        if args.json:
            print(json.dumps(runs, default=str))
            return 0
        if not runs:
            print(f"{args.db}: no runs")
            return 0
        width = max(len(str(r["scenario"])) for r in runs)
        print(f"{'run':>5}  {'scenario':<{width}}  {'profile':<14} {'seed':>6} {'events':>9}  complete")
        for r in runs:
            done = {True: "yes", False: "no (cut short)", None: "?"}[r["complete"]]
            print(f"{r['run_id']:>5}  {str(r['scenario']):<{width}}  {str(r['profile']):<14} {str(r['seed']):>6} "
                  f"{r['events']:>9,}  {done}")
        print(f"{len(runs)} run(s); `alarmkit export --db {args.db} --run ID` writes one as a report")
        return 0
    done = recover(args.spill, args.db)
    added = f"; added run(s) {done['runs_added']} from the spill's header" if done["runs_added"] else ""
    print(f"wrote {done['events']:,} events from {args.spill} into {args.db} ({done['skipped']:,} already there{added}); "
          "the spill file is kept: delete it when you no longer need it")
    return 0
