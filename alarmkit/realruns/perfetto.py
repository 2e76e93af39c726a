"""Runs as Chrome Trace Event JSON, which Perfetto UI (ui.perfetto.dev) and chrome://tracing open.

The format is Google's "Trace Event Format" document: a JSON object ``{"traceEvents": [...]}``, every
event with ``name``, ``ph`` (phase), ``ts`` in microseconds, ``pid`` and ``tid``. Here:

* one process per run (``M`` metadata ``process_name``: scenario, run, profile, seed), one thread
  (track) per object (``thread_name``: ``namespace:object``), thread 0 for events with no object;
* each ``alarm()`` run is a complete event (``ph: "X"``, ``dur``) from its ``fire`` to the
  ``handler_ok``/``handler_error``/``crash`` that ended it (an end never seen: ``dur`` to the object's
  next event, ``args.unterminated``);
* every journal event, the fire included, is also an instant event (``ph: "i"``, ``s: "t"``) named by
  its kind (an arm that moves an alarm is named ``move (earlier|later)``);
* a flow arrow (``ph: "s"`` then ``ph: "f"``, one ``id``, ``bp: "e"``) joins each arm to the fire it
  caused: the object's last arm (not disarmed since) before a fire.

Virtual milliseconds become microseconds (``t_ms * 1000``); an imported run keeps its epoch times.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from ..errors import AlarmkitError

__all__ = ["trace_events", "export_perfetto"]

_ENDS = ("handler_ok", "handler_error", "crash")


def _detail(text: Any) -> dict:
    if not isinstance(text, str):
        return {}
    try:
        v = json.loads(text)
    except ValueError:
        return {"detail": text}
    return v if isinstance(v, dict) else {"detail": v}


def _int(v: Any) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def _process_name(run: dict | None, run_id: int) -> str:
    if not run:
        return f"run {run_id}"
    parts = [str(run.get("scenario") or "run"), f"run {run_id}", f"profile {run.get('profile')}"]
    if run.get("seed") is not None:
        parts.append(f"seed {run.get('seed')}")
    return " · ".join(parts)


class _Trace:
    """Journal rows in, Trace Event dicts out (to ``emit``), holding only per-object state.

    An arm's flow start is held until its fire (then written just before the finish) and dropped
    when a disarm or a newer arm replaces it; an alarm() slice is written when its end is seen.
    So memory grows with the objects of a run, not with its events, and the export can stream.
    """

    def __init__(self, emit, runs: dict[int, dict]) -> None:
        self.emit, self.runs = emit, runs
        self.flow_id = 0
        self.run_id: int | None = None

    def start_run(self, run_id: int) -> None:
        self.end_run()
        self.run_id = run_id
        self.pid = run_id if run_id >= 0 else 0
        self.emit({"name": "process_name", "ph": "M", "ts": 0, "pid": self.pid, "tid": 0,
                   "args": {"name": _process_name(self.runs.get(run_id), run_id)}})
        self.tids: dict[tuple, int] = {}
        self.open_fire: dict[int, dict] = {}  # tid -> its X event, not written yet
        self.last_arm: dict[int, dict] = {}  # tid -> flow start of an arm not fired yet, not written yet
        self.last_ts: dict[int, int] = {}

    def row(self, seq, t_ms, namespace, object_id, kind, scheduled, prev, retry, detail_text) -> None:
        pid, emit = self.pid, self.emit
        key = (namespace, object_id)
        if object_id is None:
            tid = 0
        elif key not in self.tids:
            tid = self.tids[key] = len(self.tids) + 1
            label = f"{namespace}:{object_id}" if namespace else str(object_id)
            emit({"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": {"name": label}})
            emit({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": {"sort_index": tid}})
        else:
            tid = self.tids[key]
        ts = int(t_ms) * 1000
        kind = str(kind)
        detail = _detail(detail_text)
        args = {k: v for k, v in (("seq", int(seq)), ("scheduled_ms", _int(scheduled)),
                                  ("prev_scheduled_ms", _int(prev)), ("retry_count", _int(retry))) if v is not None}
        args.update({f"detail.{k}": v for k, v in detail.items()})
        name = kind
        if kind == "arm" and _int(prev) is not None:
            name = f"move ({detail.get('direction', 'moved')})"
        if tid in self.open_fire and kind not in ("effect", "arm", "disarm", "retry_scheduled", "call"):
            self._close(tid, ts, kind)
        emit({"name": name, "cat": kind, "ph": "i", "s": "t", "ts": ts, "pid": pid, "tid": tid, "args": args})
        if kind == "arm" and tid:
            self.flow_id += 1  # an arm replaced before it fired draws nothing: the new arm causes the fire
            self.last_arm[tid] = {"name": "arm → fire", "cat": "flow", "ph": "s", "id": self.flow_id, "ts": ts,
                                  "pid": pid, "tid": tid}
        elif kind == "disarm":
            self.last_arm.pop(tid, None)
        elif kind == "fire":
            self.open_fire[tid] = {"name": "alarm()", "cat": "alarm", "ph": "X", "ts": ts, "dur": 0, "pid": pid,
                                   "tid": tid, "args": {**args, "outcome": None}}
            arm = self.last_arm.pop(tid, None)
            if arm is not None:
                emit(arm)
                emit({"name": "arm → fire", "cat": "flow", "ph": "f", "bp": "e", "id": arm["id"], "ts": ts,
                      "pid": pid, "tid": tid})
        self.last_ts[tid] = ts

    def _close(self, tid: int, ts: int, kind: str | None) -> None:
        x = self.open_fire.pop(tid)
        x["dur"] = max(0, ts - x["ts"])
        if kind is None or kind not in _ENDS:
            x["args"]["unterminated"] = True
        x["args"]["outcome"] = kind
        self.emit(x)

    def end_run(self) -> None:
        if self.run_id is None:
            return
        for tid in list(self.open_fire):
            self._close(tid, self.last_ts[tid], None)
        self.run_id = None  # an arm that never fired starts no arrow: its held flow start is dropped


_COLS = ("seq", "t_ms", "namespace", "object_id", "kind", "scheduled_ms", "prev_scheduled_ms", "retry_count", "detail")
_HEAD = {"otherData": {"producer": "alarmkit", "time_unit": "ts and dur in microseconds (journal ms x 1000)"},
         "displayTimeUnit": "ms"}


def trace_events(events: pd.DataFrame, runs: dict[int, dict] | None = None) -> dict:
    """The Trace Event JSON object (a dict) for the runs in ``events`` (``Journal.events()`` rows).

    ``runs`` maps run id -> ``Journal.run(id)`` for the process names. Raises ``AlarmkitError`` for a
    frame that is not a journal's or holds no events.
    """
    from ..journal import check_frame

    df = check_frame(events)
    if df.empty:
        raise AlarmkitError("no events to export; Journal.events(run_id) of this run is empty")
    out: list[dict] = []
    tr = _Trace(out.append, runs or {})
    for run_id, rdf in df.groupby(df["run_id"].fillna(-1).astype(int), sort=True):
        tr.start_run(int(run_id))
        for row in rdf.sort_values("seq")[list(_COLS)].itertuples(index=False, name=None):
            tr.row(*row)
    tr.end_run()
    return {"traceEvents": out, **_HEAD}


def _ours(path: Path) -> bool:
    """A trace alarmkit wrote: it opens with alarmkit's producer field (older exports: with traceEvents
    and alarmkit's producer in the last 200 bytes)."""
    from .._files import starts_with

    if starts_with('{"otherData":{"producer":"alarmkit"')(path):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(16)
            f.seek(max(0, path.stat().st_size - 200))
            tail = f.read()
    except OSError:
        return False
    return head.startswith(b'{"traceEvents":[') and b'"producer":"alarmkit"' in tail


BATCH = 65_536  # journal rows fetched at a time: the export's memory is a batch, not the run


def export_perfetto(journal: Any, run_ids: Iterable[int], path: str | Path) -> Path:
    """Write runs ``run_ids`` of ``journal`` as one Trace Event JSON file; returns its path.

    The rows stream from DuckDB in batches of ``BATCH`` and the JSON streams to a temporary file
    renamed over ``path`` when complete (``_files.atomic_output``). Refused before anything is
    written: a path that is the journal (or its WAL), a file alarmkit did not write, a run not in
    the journal, a run with no events.
    """
    from .._files import atomic_output

    run_ids = [int(r) for r in run_ids]
    if not run_ids:
        raise AlarmkitError("no run to export; pass --run N (journal.runs() lists them)")
    runs = {r: journal.run(r) for r in run_ids}  # raises for a run not in the journal
    for r in run_ids:
        if not journal.con.execute("SELECT count(*) FROM events WHERE run_id = ?", [r]).fetchone()[0]:
            raise AlarmkitError(f"no events to export; run {r} of the journal holds none")
    reading = () if journal.path is None else (journal.path, Path(str(journal.path) + ".wal"))
    with atomic_output(path, ours=_ours, what="Perfetto trace", reading=reading) as f:
        f.write(json.dumps(_HEAD, separators=(",", ":"))[:-1] + ',"traceEvents":[')
        first = [True]

        def emit(e: dict) -> None:
            f.write(("" if first[0] else ",") + json.dumps(e, separators=(",", ":"), default=str))
            first[0] = False

        tr = _Trace(emit, runs)
        for r in sorted(set(run_ids)):
            tr.start_run(r)
            cur = journal.con.cursor()
            try:
                reader = cur.sql(f"SELECT {', '.join(_COLS)} FROM events WHERE run_id = $r ORDER BY seq",
                                 params={"r": r}).to_arrow_reader(BATCH)
                for batch in reader:
                    cols = [batch.column(i).to_pylist() for i in range(len(_COLS))]
                    for row in zip(*cols):
                        tr.row(*row)
            finally:
                cur.close()
        tr.end_run()
        f.write("]}")
    return Path(path)
