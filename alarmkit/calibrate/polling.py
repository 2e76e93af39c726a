"""What every probe uses: bounded polls of a backend's object journal, and event lists made relative
to a probe's anchor. A backend is a real ``WorkerdProcess`` or the simulated ``SimWorkerd``."""

from __future__ import annotations

from typing import Callable, Optional

from .workerd import WorkerdProcess

__all__ = ["POLL_S", "new_name", "rel_events", "wait_events", "count_kind", "of_kind", "attempt_rows", "gaps_ms",
           "rel_ms", "probe_events", "probe_wait", "anchor_t", "run_spans"]

# 10 polls a second per probe: four probes polling at 20 Hz on 2 cores made workerd itself late
POLL_S = 0.1


def new_name(wd: WorkerdProcess, prefix: str) -> str:
    """A fresh object name: ``prefix-<10 hex>`` (the backend may make it deterministic)."""
    return wd.new_name(prefix)


def rel_events(events: list[dict], t0: int) -> list[dict]:
    """Journal rows with ``t`` and ``scheduled`` made relative to ``t0`` (ms)."""
    out = []
    for e in events:
        sch = e.get("scheduled_ms")
        out.append({
            "t": e["t_ms"] - t0,
            "kind": e["kind"],
            "scheduled": None if sch is None else sch - t0,
            "retry_count": e.get("retry_count"),
            "is_retry": e.get("is_retry"),
            "detail": e.get("detail") or {},
        })
    return out


def wait_events(wd: WorkerdProcess, obj: str, pred: Callable[[list[dict]], bool], timeout: float,
                cls: Optional[str] = None, interval: float = POLL_S) -> tuple[list[dict], bool]:
    """Poll ``/events`` until ``pred(events)`` or ``timeout`` seconds; returns (events, satisfied)."""
    deadline = wd.monotonic() + timeout
    while True:
        ev = wd.events(obj, cls)
        if pred(ev):
            return ev, True
        if wd.monotonic() >= deadline:
            return ev, False
        wd.sleep(interval)


def count_kind(kind: str, n: int) -> Callable[[list[dict]], bool]:
    return lambda ev: sum(1 for e in ev if e["kind"] == kind) >= n


def of_kind(ev: list[dict], kind: str) -> list[dict]:
    return [e for e in ev if e["kind"] == kind]


def attempt_rows(rel: list[dict]) -> list[dict]:
    """alarm_start rows as attempts: t, retry_count, is_retry, scheduled, get_alarm at start (relative)."""
    out = []
    for e in of_kind(rel, "alarm_start"):
        out.append({
            "t": e["t"],
            "retry_count": e["retry_count"],
            "is_retry": e["is_retry"],
            "scheduled": e["scheduled"],
            "get_alarm_at_start": e["detail"].get("get_alarm"),
            "run": e["detail"].get("run"),
        })
    return out


def gaps_ms(ts: list[int]) -> list[int]:
    return [b - a for a, b in zip(ts, ts[1:])]


def rel_ms(v: Optional[int], t0: int) -> Optional[int]:
    return None if v is None else v - t0


def probe_events(wd: WorkerdProcess, obj: str) -> list[dict]:
    return wd.events(obj, "probe")


def probe_wait(wd, obj, pred, timeout, interval=POLL_S):
    return wait_events(wd, obj, pred, timeout, cls="probe", interval=interval)


def anchor_t(ev: list[dict], kind: str = "set_alarm") -> int:
    for e in ev:
        if e["kind"] == kind:
            return e["t_ms"]
    return ev[0]["t_ms"]


def run_spans(rel: list[dict]) -> list[dict]:
    runs: dict[int, dict] = {}
    for e in rel:
        r = e["detail"].get("run")
        if r is None:
            continue
        if e["kind"] == "alarm_start":
            runs[r] = {"run": r, "start": e["t"], "end": None, "retry_count": e["retry_count"],
                       "scheduled": e["scheduled"]}
        elif e["kind"] == "alarm_end" and r in runs:
            runs[r]["end"] = e["t"]
    return [runs[k] for k in sorted(runs)]
