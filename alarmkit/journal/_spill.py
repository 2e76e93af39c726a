"""Events a journal could not write, kept in a file beside it, and ``alarmkit journal recover``.

When a batch cannot be written (a full disk, a value no column holds), the journal keeps its
events in ``journal.unwritten``: memory, gone when the process ends. So it also spills them to
``<journal>.unwritten-<UTC time>-<pid>.jsonl`` beside the journal: a header line (what wrote it,
the journal, the columns, the runs rows of the runs concerned) and one JSON array per event. Only
when that file is written does the error say "nothing is lost"; otherwise it says what is lost.
``alarmkit journal recover SPILL --db J`` (``_recover.py``) reads the file back into ``J``.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from .._files import atomic_output
from ._events import dump
from ..errors import AlarmkitError

__all__ = ["spill_path", "write_spill", "read_spill", "spill_unwritten", "is_spill", "HEADER"]

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
            # ASCII: a lone surrogate survives as \ud800; a value JSON has no form for (the one that failed
            # the write, say) as its text, so the other events still reach the file
            f.write(json.dumps(list(row), default=str) + "\n")
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
            if "detail" in head["columns"]:  # an earlier alarmkit spilled a batch that failed conversion with its
                i = head["columns"].index("detail")  # detail as a JSON object, not the journal's text: read it back
                if isinstance(row[i], (dict, list)):
                    row[i] = dump(row[i])
            why = _bad_event(head["columns"], row)
            if why:
                raise AlarmkitError(f"{str(p)!r} line {number} is not an event alarmkit wrote ({why}); the file was "
                                    "changed after alarmkit wrote it: nothing was written")
            rows.append(row)
    return head, rows


def spill_unwritten(journal: Any, columns: list[str]) -> tuple[Path | None, str]:
    """``Journal.spill``: its ``unwritten`` events to its spill file (named at the first failure), with
    the runs rows of the runs concerned when the journal can still be read."""
    import duckdb

    if journal.path is None:
        return None, "an in-memory journal has no folder"
    try:
        if journal._spill is None:
            journal._spill = spill_path(journal.path)
        rows = journal.unwritten_rows()
        ids = sorted({r[0] for r in rows if r[0] is not None})
        runs = {}
        try:
            for row in journal._con.execute("SELECT run_id, scenario, profile, seed, params, faults FROM runs "
                                            "WHERE run_id IN (SELECT unnest(?::INTEGER[]))", [ids]).fetchall():
                runs[row[0]] = dict(zip(("scenario", "profile", "seed", "params", "faults"), row[1:]))
        except duckdb.Error:
            pass  # the journal itself may be what failed: the events are spilled without their runs rows
        write_spill(journal._spill, journal.path, columns, rows, runs)
    except (OSError, AlarmkitError, ValueError, TypeError) as err:
        return None, f"{type(err).__name__}: {err}"
    return journal._spill, ""


_INTS = {"run_id": False, "seq": False, "t_ms": False, "scheduled_ms": True, "prev_scheduled_ms": True,
         "retry_count": True}  # column -> may be null
_TEXTS = {"kind": False, "namespace": True, "object_id": True, "detail": True}


def _bad_event(columns: list, row: list) -> str:
    """Why ``row`` is not a journal row as the journal wrote it (an empty string when it is one)."""
    for name, value in zip(columns, row):
        if name in _INTS:
            if value is None:
                if not _INTS[name]:
                    return f"{name} is null"
            elif isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**62:
                return f"{name} is {value!r:.40}, not a whole number in 0..2**62"
        elif name in _TEXTS:
            if value is None:
                if not _TEXTS[name]:
                    return f"{name} is null"
            elif not isinstance(value, str):
                return f"{name} is {type(value).__name__}, not text"
    return ""
