"""Counting a run's times from its first request, so a real run (epoch milliseconds) lines up with
a simulated one (virtual time from 0). Low in the layers: ``plots.compare`` and ``realruns`` both use it."""

from __future__ import annotations

import pandas as pd

from ..errors import AlarmkitError

__all__ = ["TIME_COLS", "first_request_ms", "align", "since_clock_start"]

TIME_COLS = ("t_ms", "scheduled_ms", "prev_scheduled_ms")


def first_request_ms(events: pd.DataFrame) -> int:
    """The time of the run's first outside call (its first event if it has none)."""
    calls = events.loc[events["kind"] == "call", "t_ms"]
    return int(calls.min()) if len(calls) else int(events["t_ms"].min())


def align(events: pd.DataFrame) -> pd.DataFrame:
    """The events with every time counted from the run's first request."""
    if events.empty:
        raise AlarmkitError("no events to align; Journal.events(run_id) of this run is empty")
    t0 = first_request_ms(events)
    out = events[events["kind"] != "clock_start"].copy()  # counted from the first request now, not the clock's start
    for col in TIME_COLS:
        out[col] = out[col] - t0
    return out


def since_clock_start(events: pd.DataFrame) -> pd.DataFrame:
    """The events with each run's times counted from its ``clock_start`` event (a ``Simulation(start_ms=...)``
    at a real epoch journals one); runs without one (a clock from 0) are returned as they are."""
    starts = events["kind"] == "clock_start"
    if not starts.any():
        return events
    runs = events["run_id"].astype("Float64").fillna(-1)
    offset = runs.map(events.loc[starts, "t_ms"].groupby(runs[starts]).first()).fillna(0).astype("int64")
    out = events.copy()
    for col in TIME_COLS:
        out[col] = out[col] - offset
    return out
