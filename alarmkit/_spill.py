"""Events a journal could not write, kept in a file beside it, and ``alarmkit journal recover``.

When a batch cannot be written (a full disk, a value no column holds), the journal keeps its
events in ``journal.unwritten``: memory, gone when the process ends. So it also spills them to
``<journal>.unwritten-<UTC time>-<pid>.jsonl`` beside the journal: a header line (what wrote it,
the journal, the columns, the runs rows of the runs concerned) and one JSON array per event. Only
when that file is written does the error say "nothing is lost"; otherwise it says what is lost.
``alarmkit journal recover SPILL --db J`` reads the file back into ``J``.
"""

from __future__ import annotations

import argparse
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from ._files import atomic_output
from .errors import AlarmkitError

__all__ = ["spill_path", "write_spill", "read_spill", "recover", "add_arguments", "run_command", "HEADER"]

HEADER = "alarmkit unwritten events"  # the header line's "written_by"; a file without it is not a spill
MAX_LINE = 16 * 1024 * 1024  # one event's line: far above any event alarmkit writes


def spill_path(journal: Path) -> Path:
    """A new file name beside ``journal`` for its unwritten events (never an existing file's)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1000):
        path = journal.with_name(f"{journal.name}.unwritten-{stamp}-{os.getpid()}" + (f"-{n}" if n else "") + ".jsonl")
        if not path.exists():
            return path
    raise AlarmkitError(f"1000 spill files of {journal} from this second already exist; recover or move them")


def is_spill(path: Path) -> bool:
    """Whether ``path`` starts with a spill header (so a later spill of the same journal may replace it)."""
    try:
        with open(path, "rb") as f:
            head = json.loads(f.readline(MAX_LINE))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(head, dict) and head.get("written_by") == HEADER


def write_spill(path: Path, journal: Path, columns: list[str], rows: Iterable[tuple], runs: dict[int, dict]) -> int:
    """Write the events ``rows`` (tuples in ``columns`` order) to ``path``; returns how many."""
    n = 0
    with atomic_output(path, ours=is_spill, flag="spill", what="spill file") as f:
        f.write(json.dumps({"written_by": HEADER, "journal": str(journal.resolve()), "columns": columns,
                            "runs": {str(k): v for k, v in runs.items()}}, default=str) + "\n")
        for row in rows:
            f.write(json.dumps(list(row)) + "\n")  # ASCII: a lone surrogate survives as \ud800
            n += 1
    return n


def read_spill(path: str | os.PathLike) -> tuple[dict, list[list]]:
    """The header and the event rows of a spill file; ``AlarmkitError`` naming what is wrong."""
    p = Path(path)
    if not p.is_file():
        raise AlarmkitError(f"no spill file {str(p)!r}; the journal's error message names the file it wrote")
    rows: list[list] = []
    with open(p, "rb") as f:
        try:
            head = json.loads(f.readline(MAX_LINE))
        except (ValueError, RecursionError):
            head = None
        if not isinstance(head, dict) or head.get("written_by") != HEADER or not isinstance(head.get("columns"), list):
            raise AlarmkitError(f"{str(p)!r} is not a spill file alarmkit wrote (its first line is not a spill "
                                "header); pass the file the journal's error message named")
        width = len(head["columns"])
        for number, line in enumerate(f, start=2):
            try:
                row = json.loads(line)
            except (ValueError, RecursionError) as err:
                why = "nested too deeply" if isinstance(err, RecursionError) else str(err)
                raise AlarmkitError(f"{str(p)!r} line {number} is not JSON ({why}); the file was cut or changed "
                                    "after alarmkit wrote it") from None
            if not isinstance(row, list) or len(row) != width:
                raise AlarmkitError(f"{str(p)!r} line {number} is not an event of {width} columns; the file was "
                                    "changed after alarmkit wrote it")
            rows.append(row)
    return head, rows


def recover(spill: str | os.PathLike, db: str | os.PathLike) -> dict[str, Any]:
    """Write the events of ``spill`` into the journal ``db``; returns counts. Events the journal already
    holds (the same run and seq) are skipped; a run the journal does not hold is added from the
    spill's header; a run id held by a different run (another scenario or seed) is refused."""
    from .journal import EVENT_COLUMNS, Journal

    head, rows = read_spill(spill)
    if head["columns"] != EVENT_COLUMNS:
        raise AlarmkitError(f"{str(spill)!r} holds columns {head['columns']}, not this alarmkit's {EVENT_COLUMNS}; "
                            "recover it with the alarmkit version that wrote it")
    runs = head.get("runs") if isinstance(head.get("runs"), dict) else {}
    with Journal(db) as j:
        con = j.con
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
            if new:
                con.executemany(f"INSERT INTO events ({', '.join(EVENT_COLUMNS)}) VALUES "
                                f"({', '.join('?' * len(EVENT_COLUMNS))})", new)
        except Exception as err:  # noqa: BLE001 - DuckDB's conversion errors have many classes
            raise AlarmkitError(f"the spill's events do not fit the journal ({type(err).__name__}: "
                                f"{str(err).splitlines()[0][:200]}); the value that failed the first write is "
                                "still in it: the file is kept, nothing was written") from None
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
