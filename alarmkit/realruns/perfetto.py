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

__all__ = ["trace_events", "write_trace", "export_perfetto"]

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


def trace_events(events: pd.DataFrame, runs: dict[int, dict] | None = None) -> dict:
    """The Trace Event JSON object (a dict) for the runs in ``events`` (``Journal.events()`` rows).

    ``runs`` maps run id -> ``Journal.run(id)`` for the process names. Raises ``AlarmkitError`` for a
    frame that is not a journal's or holds no events.
    """
    from ..journal import check_frame

    df = check_frame(events)
    if df.empty:
        raise AlarmkitError("no events to export; Journal.events(run_id) of this run is empty")
    runs = runs or {}
    out: list[dict] = []
    flow_id = 0
    for run_id, rdf in df.groupby(df["run_id"].fillna(-1).astype(int), sort=True):
        pid = int(run_id) if run_id >= 0 else 0
        out.append({"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0,
                    "args": {"name": _process_name(runs.get(int(run_id)), int(run_id))}})
        tids: dict[tuple, int] = {}
        open_fire: dict[int, tuple[int, dict]] = {}  # tid -> (index in out of its X event, fire row)
        last_arm: dict[int, tuple[int, int, int]] = {}  # tid -> (ts, flow id, index in out) of an arm not fired yet
        last_ts: dict[int, int] = {}
        rdf = rdf.sort_values("seq")
        for row in rdf.itertuples(index=False):
            key = (row.namespace, row.object_id)
            if row.object_id is None:
                tid = 0
            elif key not in tids:
                tid = tids[key] = len(tids) + 1
                label = f"{row.namespace}:{row.object_id}" if row.namespace else str(row.object_id)
                out.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": {"name": label}})
                out.append({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": pid, "tid": tid,
                            "args": {"sort_index": tid}})
            else:
                tid = tids[key]
            ts = int(row.t_ms) * 1000
            kind = str(row.kind)
            detail = _detail(row.detail)
            args = {k: v for k, v in (("seq", int(row.seq)), ("scheduled_ms", _int(row.scheduled_ms)),
                                      ("prev_scheduled_ms", _int(row.prev_scheduled_ms)),
                                      ("retry_count", _int(row.retry_count))) if v is not None}
            args.update({f"detail.{k}": v for k, v in detail.items()})
            name = kind
            if kind == "arm" and row.prev_scheduled_ms is not None and not pd.isna(row.prev_scheduled_ms):
                name = f"move ({detail.get('direction', 'moved')})"
            if tid in open_fire and kind != "effect" and kind not in ("arm", "disarm", "retry_scheduled", "call"):
                _close(out, open_fire, tid, ts, kind)
            out.append({"name": name, "cat": kind, "ph": "i", "s": "t", "ts": ts, "pid": pid, "tid": tid, "args": args})
            if kind == "arm" and tid:
                flow_id += 1
                _drop_flow(out, last_arm.get(tid))  # replaced before it fired: the new arm causes the fire
                last_arm[tid] = (ts, flow_id, len(out))
                out.append({"name": "arm → fire", "cat": "flow", "ph": "s", "id": flow_id, "ts": ts, "pid": pid,
                            "tid": tid})
            elif kind == "disarm":
                _drop_flow(out, last_arm.pop(tid, None))
            elif kind == "fire":
                out.append({"name": "alarm()", "cat": "alarm", "ph": "X", "ts": ts, "dur": 0, "pid": pid, "tid": tid,
                            "args": {**args, "outcome": None}})
                open_fire[tid] = (len(out) - 1, args)
                arm = last_arm.pop(tid, None)
                if arm is not None:
                    out.append({"name": "arm → fire", "cat": "flow", "ph": "f", "bp": "e", "id": arm[1], "ts": ts,
                                "pid": pid, "tid": tid})
            last_ts[tid] = ts
        for tid in list(open_fire):
            _close(out, open_fire, tid, last_ts[tid], None)
        # an arm that never fired starts no arrow
        for arm in last_arm.values():
            _drop_flow(out, arm)
    return {"traceEvents": [e for e in out if e is not None], "displayTimeUnit": "ms",
            "otherData": {"producer": "alarmkit", "time_unit": "ts and dur in microseconds (journal ms x 1000)"}}


def _close(out: list, open_fire: dict, tid: int, ts: int, kind: str | None) -> None:
    i, _ = open_fire.pop(tid)
    x = out[i]
    x["dur"] = max(0, ts - x["ts"])
    if kind is None or kind not in _ENDS:
        x["args"]["unterminated"] = True
    x["args"]["outcome"] = kind


def _drop_flow(out: list, arm: tuple[int, int, int] | None) -> None:
    if arm is not None:
        out[arm[2]] = None


def write_trace(trace: dict, path: str | Path) -> Path:
    out = Path(path)
    if not out.parent.exists():
        raise AlarmkitError(f"folder {out.parent} does not exist; create it or pass another --out path")
    out.write_text(json.dumps(trace, separators=(",", ":"), default=str), encoding="utf-8")
    return out


def export_perfetto(journal: Any, run_ids: Iterable[int], path: str | Path) -> Path:
    """Write runs ``run_ids`` of ``journal`` as one Trace Event JSON file; returns its path."""
    run_ids = [int(r) for r in run_ids]
    runs = {r: journal.run(r) for r in run_ids}  # raises for a run not in the journal
    frames = [journal.events(r) for r in run_ids]
    return write_trace(trace_events(pd.concat(frames, ignore_index=True), runs), path)
