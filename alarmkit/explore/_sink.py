"""Where an exploration's finished runs go as they arrive: its journal and its own output folder.

Each chunk goes to the journal, then to the folder as one Parquet file, then into the folder's
``progress.json`` (``state``: running, complete, interrupted or failed; the runs, chunk files and
journal run ids both hold). A process killed between two of those steps leaves ``state: running``:
the runs listed are in both; at most the one chunk after them is in the journal alone.
"""

from __future__ import annotations

import json
import re
import signal
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from .._files import write_text
from ..errors import AlarmkitError
from ._sweep import SweepRun, write_rows

PROGRESS = "progress.json"

__all__ = ["Sink"]


class Sink:
    """Where finished runs go as they arrive: the journal (opened now, so a bad or locked path fails
    before any run) and a new subfolder of ``out`` that only this call writes to."""

    def __init__(self, journal: Any, out: Any, scenario: str, profile: str, params: dict) -> None:
        from ..journal import Journal

        self.scenario, self.profile, self.params = scenario, profile, params
        self.out = _new_out_dir(out, scenario) if out is not None else None
        self.own = journal is not None and not isinstance(journal, Journal)
        self.journal = Journal(journal) if self.own else journal
        self.run_ids: dict[int, int] = {}  # run idx -> journal run id
        self.runs = 0
        self.files: list[str] = []
        self.state = "running"
        self._progress()

    def add(self, results: list[SweepRun], name: str) -> None:
        """Keep one finished chunk (``name``: its Parquet file's stem): journal, folder, progress."""
        with _interrupt_deferred():  # Ctrl-C waits for whole chunks: none half kept
            self._journal(results)
            if self.out is not None:
                write_rows(self.out / f"{name}.parquet", [r.row for r in results])
                self.files.append(f"{name}.parquet")
            self.runs += len(results)
            self._progress()

    def _journal(self, results: list[SweepRun]) -> None:
        j = self.journal
        if j is None:
            return
        ids = j.add_runs([{"scenario": self.scenario, "profile": self.profile, "seed": r.row["seed"],
                           "params": self.params, "faults": r.plan, "events": r.events or [],
                           "complete": not r.row["error"], "applied": json.loads(r.row["faults_applied"]),
                           "unapplied": json.loads(r.row["unapplied_why"])} for r in results])
        for r, run_id in zip(results, ids):
            self.run_ids[r.row["idx"]] = run_id
            r.events = None  # written: the journal holds them now, not this process's memory

    def _progress(self) -> None:
        if self.out is None:
            return
        ids = sorted(self.run_ids.values())
        note = {"running": "if no alarmkit process is running this exploration now, it was killed: the runs "
                           "listed here are in both the journal and these files; at most the next chunk is in "
                           "the journal alone",
                "complete": "every run is in these files (and in the journal, when one was given)",
                "interrupted": "stopped by Ctrl-C: the runs listed here are in both; the queued runs were not run",
                "failed": "stopped by an error: the runs listed here are in both; the rest were not run"}[self.state]
        data = {"written_by": "alarmkit explore", "scenario": self.scenario, "state": self.state, "note": note,
                "runs": self.runs, "files": self.files,
                "journal": None if self.journal is None else str(self.journal.path or ":memory:"),
                "journal_run_ids": [ids[0], ids[-1]] if ids else []}
        write_text(self.out / PROGRESS, json.dumps(data, indent=1) + "\n", ours=_is_progress, what="progress file")

    def kept(self) -> str:
        where = []
        if self.journal is not None:
            ids = sorted(self.run_ids.values())
            span = f" (run ids {ids[0]}-{ids[-1]})" if ids else ""
            where.append(f"journal {self.journal.path or ':memory:'}{span}")
        if self.out is not None:
            where.append(str(self.out))
        return f"{self.runs:,} finished run{'' if self.runs == 1 else 's'} kept" + (f" in {' and '.join(where)}" if where else "") + \
            "; queued runs cancelled"

    def close(self, state: str = "complete") -> None:
        """Mark the folder's progress (``complete``, ``interrupted``, ``failed``) and close an own journal."""
        try:
            if self.state == "running":
                self.state = state
                self._progress()
        finally:
            if self.own and self.journal is not None:
                self.journal.close()


def _is_progress(path: Path) -> bool:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("written_by") == "alarmkit explore"
    except (OSError, ValueError, AttributeError):
        return False


@contextmanager
def _interrupt_deferred() -> Iterator[None]:
    """Hold SIGINT until the block ends, then raise ``KeyboardInterrupt`` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    old = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if caught:
        if callable(old) and old is not signal.default_int_handler:
            old(signal.SIGINT, None)  # the handler it stood in for (the CLI's notes a real Ctrl-C), then raise
        raise KeyboardInterrupt


def _new_out_dir(out: Any, scenario: str) -> Path:
    """``out/<scenario>-<UTC time>[-n]``, made here: this call's files never mix with (or replace)
    anything already in ``out``, which is only ever added to."""
    base = Path(out)
    if base.exists() and not base.is_dir():
        raise AlarmkitError(f"--out {str(base)!r} is a file; pass a folder (it is created if missing)")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", scenario)
    try:
        base.mkdir(parents=True, exist_ok=True)
        for n in range(1000):
            path = base / (f"{name}-{stamp}" + (f"-{n}" if n else ""))
            try:
                path.mkdir()
                return path
            except FileExistsError:
                continue
    except OSError as err:
        raise AlarmkitError(f"cannot write results under --out {str(base)!r}: {err.strerror}; pass a folder "
                            "you can write to") from None
    raise AlarmkitError(f"--out {str(base)!r} already holds 1000 explorations of {scenario} from this second")
