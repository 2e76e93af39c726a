"""Behaviour probes and the seed-003 lab scenarios, run on a real workerd.

Every probe takes a running backend and returns a plain dict (JSON-serialisable). The backend is a
real :class:`~alarmkit.calibrate.workerd.WorkerdProcess` or its simulated double
:class:`~alarmkit.calibrate.simbackend.SimWorkerd`: probes wait with ``wd.sleep``/``wd.monotonic``/``wd.time``
and name objects with ``wd.new_name``, so the same probe code runs on both clocks. Times are milliseconds relative to the probe's anchor ``t0_ms`` (an
epoch-ms value from workerd's own ``Date.now()``, named in each dict). Event lists are journal rows::

    {"t": int, "kind": str, "scheduled": int|None (relative to t0), "retry_count": int|None,
     "is_retry": 0|1|None, "detail": dict}

Every wait is a bounded poll. ``PROBES`` maps names to ``(function, long, restarts)``;
``run_probes()`` runs a selection and ``python -m alarmkit.calibrate.probes`` prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .workerd import WorkerdProcess, find_workerd, workerd_version

# 10 polls a second per probe: four probes polling at 20 Hz on 2 cores made workerd itself late
POLL_S = 0.1


def _name(wd: WorkerdProcess, prefix: str) -> str:
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


def _count(kind: str, n: int) -> Callable[[list[dict]], bool]:
    return lambda ev: sum(1 for e in ev if e["kind"] == kind) >= n


def _kinds(ev: list[dict], kind: str) -> list[dict]:
    return [e for e in ev if e["kind"] == kind]


def _attempts(rel: list[dict]) -> list[dict]:
    """alarm_start rows as attempts: t, retry_count, is_retry, scheduled, get_alarm at start (relative)."""
    out = []
    for e in _kinds(rel, "alarm_start"):
        out.append({
            "t": e["t"],
            "retry_count": e["retry_count"],
            "is_retry": e["is_retry"],
            "scheduled": e["scheduled"],
            "get_alarm_at_start": e["detail"].get("get_alarm"),
            "run": e["detail"].get("run"),
        })
    return out


def _gaps(ts: list[int]) -> list[int]:
    return [b - a for a, b in zip(ts, ts[1:])]


def _rel(v: Optional[int], t0: int) -> Optional[int]:
    return None if v is None else v - t0


# =============================================================================================
# seed-003 lab scenarios (LeaseLedger)
# =============================================================================================

def scenario_normal(wd: WorkerdProcess, obj: Optional[str] = None, timeout: float = 10.0) -> dict:
    """Leases of 300 ms and 1500 ms: two fires ~1.2 s apart, table empty, getAlarm null."""
    obj = obj or _name(wd, "ledger-normal")
    g1 = wd.grant(obj, "a", 300)
    g2 = wd.grant(obj, "b", 1500)
    ev, ok = wait_events(wd, obj, lambda ev: len(_kinds(ev, "alarm_end")) >= 2, timeout)
    wd.sleep(0.3)  # would catch a spurious third fire only if it were immediate
    ev = wd.events(obj)
    t0 = _kinds(ev, "grant")[0]["t_ms"]
    rel = rel_events(ev, t0)
    att = _attempts(rel)
    st = wd.state(obj)
    return {
        "probe": "normal", "obj": obj, "t0_ms": t0, "completed": ok,
        "expire_at": [_rel(g1["expire_at"], t0), _rel(g2["expire_at"], t0)],
        "attempts": att,
        "fires": len(att),
        "gap_ms": _gaps([a["t"] for a in att]),
        "lateness_ms": [a["t"] - a["scheduled"] for a in att if a["scheduled"] is not None],
        "leases_after": st["leases"], "alarm_after": st["alarm"],
        "revoke_calls": st["lab"].get("revoke_calls", 0),
        "events": rel,
    }


def scenario_crash_after_effect(wd: WorkerdProcess, obj: Optional[str] = None, timeout: float = 12.0) -> dict:
    """revoke throws once after counting: retry ~2 s later with retryCount 1, effect count 2."""
    obj = obj or _name(wd, "ledger-crash")
    wd.lab(obj, revoke_throws=1)
    g = wd.grant(obj, "a", 300)
    ev, ok = wait_events(wd, obj, _count("alarm_end", 1), timeout)
    ev = wd.events(obj)
    t0 = _kinds(ev, "grant")[0]["t_ms"]
    rel = rel_events(ev, t0)
    att = _attempts(rel)
    throws = _kinds(rel, "throw")
    st = wd.state(obj)
    return {
        "probe": "crash_after_effect", "obj": obj, "t0_ms": t0, "completed": ok,
        "expire_at": _rel(g["expire_at"], t0),
        "attempts": att,
        "retry_counts": [a["retry_count"] for a in att],
        "is_retry": [a["is_retry"] for a in att],
        "retry_gap_ms": _gaps([a["t"] for a in att]),
        "retry_after_throw_ms": (att[1]["t"] - throws[0]["t"]) if len(att) > 1 and throws else None,
        "effect_count": st["lab"].get("revoke_calls", 0),
        "leases_after": st["leases"], "alarm_after": st["alarm"],
        "events": rel,
    }


def scenario_moves_only_earlier(wd: WorkerdProcess, obj: Optional[str] = None, timeout: float = 10.0) -> dict:
    """Grant 5 s, then 60 s (alarm stays), then 1 s (alarm moves earlier); after the 1 s lease
    fires the alarm is re-armed at the 5 s lease."""
    obj = obj or _name(wd, "ledger-earlier")
    g5 = wd.grant(obj, "five", 5000)
    g60 = wd.grant(obj, "sixty", 60000)
    g1 = wd.grant(obj, "one", 1000)
    ev, ok = wait_events(wd, obj, _count("alarm_end", 1), timeout)
    st = wd.state(obj)
    ev = wd.events(obj)
    t0 = _kinds(ev, "grant")[0]["t_ms"]
    rel = rel_events(ev, t0)
    return {
        "probe": "moves_only_earlier", "obj": obj, "t0_ms": t0, "completed": ok,
        "expire_at": {k: _rel(g["expire_at"], t0) for k, g in (("five", g5), ("sixty", g60), ("one", g1))},
        "alarm_after_grant": {k: _rel(g["alarm"], t0) for k, g in (("five", g5), ("sixty", g60), ("one", g1))},
        "set_alarm_calls": [{"t": e["t"], "requested": e["scheduled"], "src": e["detail"].get("src")}
                            for e in _kinds(rel, "set_alarm")],
        "attempts": _attempts(rel),
        "alarm_after_first_fire": _rel(st["alarm"], t0),
        "leases_after_first_fire": [l["id"] for l in st["leases"]],
        "events": rel,
    }


def scenario_exhaustion(wd: WorkerdProcess, obj: Optional[str] = None, quiet_s: float = 30.0,
                        timeout: float = 260.0, noboot: bool = True, poll_s: float = 12.0) -> dict:
    """Handler always throws: 7 attempts (+0, ~2, ~6, ~14, ~30, ~62, ~126 s plus jitter), then the
    alarm is gone (getAlarm null) while the lease stays, overdue. LONG (~2.5 min + quiet_s).

    The journal is polled only every ``poll_s`` seconds so that the object can be evicted between
    retries (workerd evicts idle objects after ~10 s); ``constructs`` counts how often it was rebuilt
    (with ``noboot`` on, those constructors do not re-arm)."""
    obj = obj or _name(wd, "ledger-exhaust")
    wd.lab(obj, always_throw=True, noboot=noboot)
    g = wd.grant(obj, "a", 300)
    ev, ok = wait_events(wd, obj, _count("alarm_start", 7), timeout, interval=poll_s)
    t_last = wd.monotonic()
    # quiet period: nothing more should run (poll /events only: with noboot the constructor is inert)
    ev, extra = wait_events(wd, obj, _count("alarm_start", 8), quiet_s, interval=min(poll_s, 5.0))
    ev = wd.events(obj)
    st = wd.state(obj)
    t0 = _kinds(ev, "grant")[0]["t_ms"]
    rel = rel_events(ev, t0)
    att = _attempts(rel)
    throws = _kinds(rel, "throw")
    return {
        "probe": "exhaustion", "obj": obj, "t0_ms": t0, "completed": ok, "long": True,
        "expire_at": _rel(g["expire_at"], t0),
        "attempts": att,
        "attempt_count": len(att),
        "attempt_t_s": [round(a["t"] / 1000.0, 3) for a in att],
        "retry_counts": [a["retry_count"] for a in att],
        "gaps_ms": _gaps([a["t"] for a in att]),
        "retry_after_throw_ms": [att[i + 1]["t"] - throws[i]["t"] for i in range(min(len(att) - 1, len(throws)))],
        "scheduled_seen": sorted({a["scheduled"] for a in att if a["scheduled"] is not None}),
        "quiet_period_s": quiet_s,
        "attempts_after_exhaustion": max(0, len(att) - 7),
        "quiet_checked_s_after_last": round(wd.monotonic() - t_last, 1),
        "alarm_after": st["alarm"],
        "leases_after": [{"id": l["id"], "overdue_ms": st["now"] - l["expire_at"]} for l in st["leases"]],
        "constructs": len(_kinds(rel, "construct")),
        "constructs_t_s": [round(e["t"] / 1000.0, 3) for e in _kinds(rel, "construct")],
        "events": rel,
    }


def scenario_revival(wd: WorkerdProcess, obj: Optional[str] = None, after_exhaustion: bool = True,
                     exhaustion: Optional[dict] = None, quiet_before_request_s: float = 2.0,
                     timeout: float = 10.0, quiet_s: float = 5.0) -> dict:
    """Revival by the constructor after a restart.

    ``after_exhaustion=True`` (LONG): run (or reuse) the exhaustion scenario with noboot on, then
    clear alwaysThrow and noboot (the object is in memory, so the constructor does not run), stop
    workerd, start it on the same storage, wait ``quiet_before_request_s`` (no alarm should run:
    none is stored), make one request, and see the alarm fire and the lease go.
    ``after_exhaustion=False`` (quick): the lost alarm is simulated with deleteAlarm() instead.
    """
    ran_exhaustion = False
    if after_exhaustion:
        if exhaustion is None:
            exhaustion = scenario_exhaustion(wd, obj, quiet_s=quiet_s)
            ran_exhaustion = True
        obj = exhaustion["obj"]
    else:
        obj = obj or _name(wd, "ledger-revive")
        wd.lab(obj, noboot=True)
        wd.grant(obj, "a", 300)
        wd.get("/drop_alarm", {"obj": obj})
        wd.sleep(0.6)  # the lease is now overdue and no alarm is set
    before = wd.state(obj)
    lab = wd.lab(obj, always_throw=False, noboot=False)
    n_before = len(wd.events(obj))
    t_stop = wd.time()
    wd.restart()
    t_up = wd.time()
    wd.sleep(quiet_before_request_s)
    # no request reached the object since the restart; the journal read below is the first one
    # and does construct it, so read it only after the quiet period.
    t_req = wd.time()
    first = wd.state(obj)  # the one request
    ev, ok = wait_events(wd, obj, lambda ev: len(_kinds(ev[n_before:], "alarm_end")) >= 1, timeout)
    st = wd.state(obj)
    new = ev[n_before:]
    t0 = int(t_req * 1000)
    rel = rel_events(new, t0)
    att = _attempts(rel)
    return {
        "probe": "revival", "obj": obj, "t0_ms": t0, "t0_is": "python wall clock at the one request",
        "after_exhaustion": after_exhaustion, "completed": ok,
        "long": after_exhaustion,
        "before_restart": {"alarm": before["alarm"], "leases": [l["id"] for l in before["leases"]],
                           "lab": before["lab"]},
        "lab_after_clear": lab,
        "restart_s": round(t_up - t_stop, 3),
        "restart_at": int(t_stop * 1000) - t0,
        "alarm_seen_by_first_request": _rel(first["alarm"], t0),
        "constructor_rearmed": [e["scheduled"] for e in _kinds(rel, "set_alarm") if e["detail"].get("src") == "construct"],
        "attempts": att,
        "fire_after_request_ms": att[0]["t"] if att else None,
        "attempts_before_request": [a for a in att if a["t"] < 0],
        "leases_after": st["leases"], "alarm_after": st["alarm"],
        "revoke_calls": st["lab"].get("revoke_calls", 0),
        "events": rel,
        # the exhaustion dict when this call ran it; a reference when it was handed in
        "exhaustion": exhaustion if ran_exhaustion else ({"obj": obj, "see": "exhaustion"} if after_exhaustion else None),
    }


def scenario_wake_evicted(wd: WorkerdProcess, obj: Optional[str] = None, ttl_ms: int = 15000,
                          timeout: float = 25.0) -> dict:
    """A lease far enough out that the idle object is evicted (~10 s) before its alarm: does the
    alarm rebuild it, does the constructor run before alarm(), and what does the constructor's
    getAlarm() see? No request is made until the alarm should have run."""
    obj = obj or _name(wd, "ledger-wake")
    g = wd.grant(obj, "a", ttl_ms)
    wd.sleep(ttl_ms / 1000.0 + 1.0)
    ev, ok = wait_events(wd, obj, _count("alarm_end", 1), timeout - ttl_ms / 1000.0, interval=0.2)
    t0 = _kinds(ev, "grant")[0]["t_ms"]
    rel = rel_events(ev, t0)
    att = _attempts(rel)
    constructs = _kinds(rel, "construct")
    woke = [c for c in constructs if c["t"] > 0]
    ctor_view = [e["detail"] for e in rel if e["kind"] in ("ensure", "set_alarm") and e["detail"].get("src") == "construct"
                 and e["t"] > 0]
    first_start = att[0]["t"] if att else None
    return {
        "probe": "wake_evicted", "obj": obj, "t0_ms": t0, "completed": ok,
        "expire_at": _rel(g["expire_at"], t0),
        "constructs_t": [c["t"] for c in constructs],
        "rebuilt_before_alarm": bool(woke and first_start is not None and woke[0]["t"] <= first_start),
        "constructor_ensure": [{k: (_rel(v, t0) if k in ("next", "current", "requested", "previous", "after")
                                    and isinstance(v, int) else v) for k, v in d.items()} for d in ctor_view],
        "attempts": att,
        "lateness_ms": [a["t"] - a["scheduled"] for a in att if a["scheduled"] is not None],
        "events": rel,
    }


# =============================================================================================
# behaviour probes (Probe object)
# =============================================================================================

def _pev(wd: WorkerdProcess, obj: str) -> list[dict]:
    return wd.events(obj, "probe")


def _pwait(wd, obj, pred, timeout, interval=POLL_S):
    return wait_events(wd, obj, pred, timeout, cls="probe", interval=interval)


def _anchor(ev: list[dict], kind: str = "set_alarm") -> int:
    for e in ev:
        if e["kind"] == kind:
            return e["t_ms"]
    return ev[0]["t_ms"]


def probe_getalarm(wd: WorkerdProcess, delay_ms: int = 300) -> dict:
    """getAlarm() at handler start, after a setAlarm inside it, after deleteAlarm inside it; and
    getAlarm from outside before the fire and after the handler."""
    obj = _name(wd, "probe-getalarm")
    wd.probe("config", obj, mode="getalarm")
    armed = wd.probe("arm", obj, rel=delay_ms)
    ev, ok = _pwait(wd, obj, _count("alarm_end", 1), 10)
    after = wd.probe("get", obj)
    t0 = _anchor(ev)
    rel = rel_events(ev, t0)
    inside = _kinds(rel, "inside")
    d = inside[0]["detail"] if inside else {}
    return {
        "probe": "getalarm", "obj": obj, "t0_ms": t0, "completed": ok,
        "outside_after_set": _rel(armed["after"], t0),
        "requested": _rel(armed["requested"], t0),
        "at_handler_start": d.get("at_start"),
        "after_set_inside": _rel(d.get("after_set"), t0),
        "set_to_inside": _rel(d.get("set_to"), t0),
        "after_set_equals_set_to": d.get("after_set") == d.get("set_to") if d else None,
        "after_delete_inside": d.get("after_delete"),
        "outside_after_handler": after["alarm"],
        "attempts": _attempts(rel),
        "events": rel,
    }


def probe_bad_values(wd: WorkerdProcess) -> dict:
    """setAlarm(0), negative, NaN, new Date(0): exact error texts."""
    obj = _name(wd, "probe-bad")
    r = wd.probe("bad_values", obj)
    t0 = r["now"]
    return {"probe": "bad_values", "obj": obj, "t0_ms": t0, "results": r["results"],
            "events": rel_events(_pev(wd, obj), t0)}


def probe_past(wd: WorkerdProcess, ago_ms: int = 5000) -> dict:
    """setAlarm(now - ago): what getAlarm shows, when it fires, and scheduledTime."""
    obj = _name(wd, "probe-past")
    r = wd.probe("past", obj, ago=ago_ms)
    ev, ok = _pwait(wd, obj, _count("alarm_end", 1), 5)
    wd.sleep(0.3)
    ev = _pev(wd, obj)
    t0 = r["now"]
    rel = rel_events(ev, t0)
    att = _attempts(rel)
    return {
        "probe": "past", "obj": obj, "t0_ms": t0, "t0_is": "Date.now() in the call that set the alarm",
        "completed": ok, "requested": _rel(r["requested"], t0), "get_alarm_after_set": _rel(r["after"], t0),
        "set_error": r["error"], "attempts": att, "fires": len(att),
        "fire_t": att[0]["t"] if att else None,
        "scheduled_time_in_info": att[0]["scheduled"] if att else None,
        "events": rel,
    }


def probe_twice(wd: WorkerdProcess, first_ms: int = 400, second_ms: int = 900, await_between: bool = True) -> dict:
    """Two setAlarm calls in a row: which one wins, how many fires."""
    obj = _name(wd, "probe-twice")
    r = wd.probe("twice", obj, first=first_ms, second=second_ms, await_between=await_between)
    horizon = max(first_ms, second_ms) / 1000.0 + 1.5
    wd.sleep(horizon)
    ev = _pev(wd, obj)
    t0 = r["now"]
    rel = rel_events(ev, t0)
    att = _attempts(rel)
    return {
        "probe": "twice", "obj": obj, "t0_ms": t0, "first": first_ms, "second": second_ms,
        "await_between": await_between,
        "get_alarm_after_first": _rel(r["after_first"], t0), "get_alarm_after_both": _rel(r["after"], t0),
        "attempts": att, "fires": len(att), "fire_t": [a["t"] for a in att],
        "events": rel,
    }


def probe_delete_throw(wd: WorkerdProcess, observe_s: float = 6.0) -> dict:
    """Handler calls deleteAlarm() then throws (once): is there a retry?"""
    obj = _name(wd, "probe-delthrow")
    wd.probe("config", obj, mode="delete_throw", throws_left=1)
    wd.probe("arm", obj, rel=100)
    wd.sleep(observe_s)
    ev = _pev(wd, obj)
    after = wd.probe("get", obj)
    t0 = _anchor(ev)
    rel = rel_events(ev, t0)
    att = _attempts(rel)
    return {
        "probe": "delete_throw", "obj": obj, "t0_ms": t0, "observe_s": observe_s,
        "attempts": att, "fires": len(att), "retry_counts": [a["retry_count"] for a in att],
        "gap_ms": _gaps([a["t"] for a in att]),
        "get_alarm_after_delete_inside": [e["detail"].get("after") for e in _kinds(rel, "delete_alarm")],
        "alarm_after": after["alarm"],
        "events": rel,
    }


def probe_set_throw(wd: WorkerdProcess, delay_ms: int = 1000, observe_s: Optional[float] = None) -> dict:
    """Handler calls setAlarm(now+delay) then throws (once): does the new alarm replace the retry?"""
    obj = _name(wd, "probe-setthrow")
    wd.probe("config", obj, mode="set_throw", throws_left=1, delay=delay_ms)
    wd.probe("arm", obj, rel=100)
    observe_s = observe_s if observe_s is not None else delay_ms / 1000.0 + 4.0
    wd.sleep(observe_s)
    ev = _pev(wd, obj)
    after = wd.probe("get", obj)
    t0 = _anchor(ev)
    rel = rel_events(ev, t0)
    att = _attempts(rel)
    throws = _kinds(rel, "throw")
    inner = [e for e in _kinds(rel, "set_alarm") if e["detail"].get("src") == "handler"]
    return {
        "probe": "set_throw", "obj": obj, "t0_ms": t0, "delay_ms": delay_ms, "observe_s": observe_s,
        "attempts": att, "fires": len(att), "retry_counts": [a["retry_count"] for a in att],
        "second_after_throw_ms": (att[1]["t"] - throws[0]["t"]) if len(att) > 1 and throws else None,
        "inner_set": [{"t": e["t"], "requested": e["scheduled"], "get_after": _rel(e["detail"].get("after"), t0)}
                      for e in inner],
        "alarm_after": after["alarm"],
        "events": rel,
    }


def _runs(rel: list[dict]) -> list[dict]:
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


def probe_overlap(wd: WorkerdProcess, variant: str = "inside", sleep_ms: int = 300, second_ms: int = 50) -> dict:
    """Does a second alarm() start while the first awaits a timer?

    ``inside``: the handler sets an alarm at now+second_ms, then awaits sleep_ms.
    ``outside``: the alarm is set again from outside (now+second_ms) while the handler sleeps.
    """
    obj = _name(wd, f"probe-overlap-{variant}")
    if variant == "inside":
        wd.probe("config", obj, mode="sleep", sleep_ms=sleep_ms, inner_ms=second_ms)
        wd.probe("arm", obj, rel=100)
        op = None
    elif variant == "outside":
        op = wd.probe("overlap_outside", obj, first=100, sleep_ms=sleep_ms, second=second_ms, wait_ms=100)
    else:
        raise ValueError(variant)
    ev, ok = _pwait(wd, obj, _count("alarm_end", 2), 10)
    wd.sleep(0.3)
    ev = _pev(wd, obj)
    t0 = _anchor(ev)
    rel = rel_events(ev, t0)
    runs = _runs(rel)
    overlapped = None
    second_start_minus_first_end = None
    if len(runs) >= 2 and runs[0]["end"] is not None:
        second_start_minus_first_end = runs[1]["start"] - runs[0]["end"]
        overlapped = runs[1]["start"] < runs[0]["end"]
    return {
        "probe": "overlap", "variant": variant, "obj": obj, "t0_ms": t0, "completed": ok,
        "sleep_ms": sleep_ms, "second_ms": second_ms,
        "runs": runs, "overlapped": overlapped,
        "second_start_minus_first_end_ms": second_start_minus_first_end,
        "second_set": [{"t": e["t"], "requested": e["scheduled"], "src": e["detail"].get("src"),
                        "get_after": _rel(e["detail"].get("after"), t0)}
                       for e in _kinds(rel, "set_alarm")],
        "outside_op": op,
        "events": rel,
    }


def probe_lateness(wd: WorkerdProcess, delays_ms: tuple[int, ...] = (50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000)) -> dict:
    """setAlarm(now+X) on one object per X; lateness = Date.now() at handler start - requested."""
    objs = []
    for d in delays_ms:
        obj = _name(wd, f"probe-late{d}")
        r = wd.probe("arm", obj, rel=d)
        objs.append((d, obj, r))
    deadline = wd.monotonic() + max(delays_ms) / 1000.0 + 5.0
    samples = []
    pending = list(objs)
    while pending and wd.monotonic() < deadline:
        wd.sleep(0.2)
        still = []
        for d, obj, r in pending:
            ev = _pev(wd, obj)
            st = _kinds(ev, "alarm_start")
            if st:
                samples.append({"delay_ms": d, "requested": r["requested"], "fired": st[0]["t_ms"],
                                "scheduled_in_info": st[0]["scheduled_ms"],
                                "lateness_ms": st[0]["t_ms"] - r["requested"],
                                "scheduled_minus_requested_ms": (st[0]["scheduled_ms"] - r["requested"])
                                if st[0]["scheduled_ms"] is not None else None})
            else:
                still.append((d, obj, r))
        pending = still
    lat = [s["lateness_ms"] for s in samples]
    stats = {}
    if lat:
        srt = sorted(lat)
        stats = {"n": len(lat), "min": srt[0], "median": statistics.median(srt), "mean": round(statistics.fmean(srt), 2),
                 "max": srt[-1], "p90": srt[min(len(srt) - 1, int(0.9 * len(srt)))],
                 "early": sum(1 for x in lat if x < 0)}
    t0 = min(r["requested"] - d for d, _, r in objs)
    events = []
    for d, obj, r in objs:  # every object's journal, each row tagged with its object
        events.extend({**e, "obj": obj} for e in rel_events(_pev(wd, obj), t0))
    return {"probe": "lateness", "t0_ms": t0, "t0_is": "Date.now() at the first setAlarm",
            "samples": sorted(samples, key=lambda s: s["delay_ms"]),
            "missing": [d for d, _, _ in pending], "stats": stats,
            "events": sorted(events, key=lambda e: e["t"])}


def probe_outside_during_retry(wd: WorkerdProcess, variant: str = "earlier", earlier_ms: int = 500,
                               later_ms: int = 4000, wait_after_throw_ms: int = 300,
                               observe_s: Optional[float] = None) -> dict:
    """The handler throws once (a retry is due ~2 s later); while that retry is pending, from
    outside: ``earlier`` setAlarm(now+earlier_ms), ``later`` setAlarm(now+later_ms), or ``delete``
    deleteAlarm(). Which runs happen, with which retryCount?"""
    obj = _name(wd, f"probe-outretry-{variant}")
    wd.probe("config", obj, mode="throw", throws_left=1)
    wd.probe("arm", obj, rel=100)
    ev, ok = _pwait(wd, obj, _count("throw", 1), 5)
    wd.sleep(wait_after_throw_ms / 1000.0)
    before = wd.probe("get", obj)
    if variant == "earlier":
        wd.probe("arm", obj, rel=earlier_ms, src="outside_during_retry")
    elif variant == "later":
        wd.probe("arm", obj, rel=later_ms, src="outside_during_retry")
    elif variant == "delete":
        wd.probe("delete", obj)
    else:
        raise ValueError(variant)
    if observe_s is None:
        observe_s = (later_ms / 1000.0 + 3.0) if variant == "later" else 5.0
    wd.sleep(observe_s)
    ev = _pev(wd, obj)
    after = wd.probe("get", obj)
    throws = _kinds(ev, "throw")
    t0 = throws[0]["t_ms"] if throws else _anchor(ev)
    rel = rel_events(ev, t0)
    att = _attempts(rel)
    outside = [e for e in rel if e["detail"].get("src") in ("outside_during_retry",) or
               (e["kind"] == "delete_alarm" and e["detail"].get("src") == "outside")]
    return {
        "probe": "outside_during_retry", "variant": variant, "obj": obj,
        "t0_ms": t0, "t0_is": "the first throw", "completed": ok,
        "get_alarm_while_retry_pending": _rel(before["alarm"], t0),
        "outside_op": [{"t": e["t"], "kind": e["kind"], "requested": e["scheduled"],
                        "get_after": _rel(e["detail"].get("after"), t0)} for e in outside],
        "attempts": att, "fires": len(att),
        "attempt_t": [a["t"] for a in att], "retry_counts": [a["retry_count"] for a in att],
        "alarm_after": after["alarm"],
        "events": rel,
    }


def probe_facet(wd: WorkerdProcess) -> dict:
    """setAlarm inside a facet (ctx.facets), if this workerd has facets."""
    obj = _name(wd, "probe-facet")
    r = wd.probe("facet", obj)
    out = {"probe": "facet", "obj": obj, **r}
    if r.get("has_facets"):
        fe = r.get("facet_events_after_wait", {})
        out["facet_alarm_fired"] = any(s.get("step") == "facet_alarm_fired" for s in r.get("inside", [])) or (
            fe.get("ok") and any(e["kind"] == "alarm_start" for e in fe.get("value", [])))
        out["summary"] = {k: (v.get("ok"), (v.get("error") or {}).get("text")) for k, v in r.items()
                          if isinstance(v, dict) and "ok" in v}
    ev = _pev(wd, obj)
    out["t0_ms"] = ev[0]["t_ms"] if ev else None
    out["events"] = rel_events(ev, out["t0_ms"]) if ev else []
    return out


def probe_restart_pending(wd: WorkerdProcess, variant: str = "past_due", delay_ms: int = 1000,
                          downtime_s: float = 2.0, observe_s: float = 4.0) -> dict:
    """A stored alarm across a workerd restart, with no request after the restart.

    ``past_due``: the alarm falls due while workerd is down; ``future``: it falls due after the restart.
    The journal is read only once, ``observe_s`` after the restart (that read constructs the object).
    """
    obj = _name(wd, f"probe-restart-{variant}")
    if variant == "past_due":
        r = wd.probe("arm", obj, rel=delay_ms)
        t_stop = wd.time()
        wd.stop()
        wd.sleep(downtime_s)
    elif variant == "future":
        r = wd.probe("arm", obj, rel=delay_ms + int(downtime_s * 1000) + 1500)
        t_stop = wd.time()
        wd.stop()
        wd.sleep(downtime_s)
    else:
        raise ValueError(variant)
    t_up0 = wd.time()
    wd.start()
    t_up = wd.time()
    wd.sleep(observe_s)
    ev = _pev(wd, obj)
    t0 = r["requested"]
    rel = rel_events(ev, t0)
    att = _attempts(rel)
    return {
        "probe": "restart_pending", "variant": variant, "obj": obj,
        "t0_ms": t0, "t0_is": "the requested alarm time",
        "restart_at": int(t_stop * 1000) - t0,
        "restart_began": int(t_up0 * 1000) - t0, "restart_done": int(t_up * 1000) - t0,
        "attempts": att, "fires": len(att),
        "fire_minus_scheduled_ms": [a["t"] for a in att],
        "fire_minus_restart_ms": [a["t"] - (int(t_up * 1000) - t0) for a in att],
        "events": rel,
    }


# =============================================================================================
# registry and runner
# =============================================================================================

@dataclass(frozen=True)
class ProbeSpec:
    fn: Callable[..., dict]
    kwargs: dict
    long: bool = False
    restarts: bool = False  # stops/starts workerd: never run concurrently with others


PROBES: dict[str, ProbeSpec] = {
    "normal": ProbeSpec(scenario_normal, {}),
    "crash_after_effect": ProbeSpec(scenario_crash_after_effect, {}),
    "moves_only_earlier": ProbeSpec(scenario_moves_only_earlier, {}),
    "exhaustion": ProbeSpec(scenario_exhaustion, {}, long=True),
    "revival_quick": ProbeSpec(scenario_revival, {"after_exhaustion": False}, restarts=True),
    "revival": ProbeSpec(scenario_revival, {"after_exhaustion": True}, long=True, restarts=True),
    "wake_evicted": ProbeSpec(scenario_wake_evicted, {}),
    "getalarm": ProbeSpec(probe_getalarm, {}),
    "bad_values": ProbeSpec(probe_bad_values, {}),
    "past": ProbeSpec(probe_past, {}),
    "twice_later": ProbeSpec(probe_twice, {"first_ms": 400, "second_ms": 900, "await_between": True}),
    "twice_earlier_same_turn": ProbeSpec(probe_twice, {"first_ms": 900, "second_ms": 400, "await_between": False}),
    "delete_throw": ProbeSpec(probe_delete_throw, {}),
    "set_throw": ProbeSpec(probe_set_throw, {"delay_ms": 1000}),
    "set_throw_late": ProbeSpec(probe_set_throw, {"delay_ms": 4000}),
    "overlap_inside": ProbeSpec(probe_overlap, {"variant": "inside"}),
    "overlap_outside": ProbeSpec(probe_overlap, {"variant": "outside", "sleep_ms": 600}),
    "lateness": ProbeSpec(probe_lateness, {}),
    "outside_retry_earlier": ProbeSpec(probe_outside_during_retry, {"variant": "earlier"}),
    "outside_retry_later": ProbeSpec(probe_outside_during_retry, {"variant": "later"}),
    "outside_retry_delete": ProbeSpec(probe_outside_during_retry, {"variant": "delete"}),
    "facet": ProbeSpec(probe_facet, {}),
    "restart_past_due": ProbeSpec(probe_restart_pending, {"variant": "past_due"}, restarts=True),
    "restart_future": ProbeSpec(probe_restart_pending, {"variant": "future"}, restarts=True),
}

QUICK = [n for n, s in PROBES.items() if not s.long]
LONG = [n for n, s in PROBES.items() if s.long]


def run_probe(wd: WorkerdProcess, name: str) -> dict:
    spec = PROBES[name]
    started = time.monotonic()
    try:
        out = spec.fn(wd, **spec.kwargs)
    except Exception as e:  # keep the other probes' results
        out = {"probe": name, "error": f"{type(e).__name__}: {e}"}
    out["name"] = name
    out["long"] = spec.long
    out["wall_s"] = round(time.monotonic() - started, 2)
    return out


def run_probes(wd: WorkerdProcess, names: Optional[list[str]] = None, include_long: bool = False,
               parallel: int = 1) -> dict[str, dict]:
    """Run probes (default: all quick ones, plus long ones if ``include_long``).

    Probes that do not restart workerd run on up to ``parallel`` threads; restarting ones run
    afterwards, one at a time. ``revival`` reuses the ``exhaustion`` result when both are selected.
    """
    if names is None:
        names = QUICK + (LONG if include_long else [])
    plain = [n for n in names if not PROBES[n].restarts]
    restarting = [n for n in names if PROBES[n].restarts]
    results: dict[str, dict] = {}
    if parallel > 1 and len(plain) > 1:
        with ThreadPoolExecutor(max_workers=parallel) as ex:
            for n, r in zip(plain, ex.map(lambda n: run_probe(wd, n), plain)):
                results[n] = r
    else:
        for n in plain:
            results[n] = run_probe(wd, n)
    for n in restarting:
        if n == "revival" and "exhaustion" in results and "error" not in results["exhaustion"]:
            started = time.monotonic()
            try:
                r = scenario_revival(wd, after_exhaustion=True, exhaustion=results["exhaustion"])
            except Exception as e:
                r = {"probe": n, "error": f"{type(e).__name__}: {e}"}
            r.update(name=n, long=True, wall_s=round(time.monotonic() - started, 2))
            results[n] = r
        else:
            results[n] = run_probe(wd, n)
    return results


def strip_events(res: Any) -> Any:
    """Copy of a result tree without the bulky ``events`` lists."""
    if isinstance(res, dict):
        return {k: strip_events(v) for k, v in res.items() if k != "events"}
    if isinstance(res, list):
        return [strip_events(v) for v in res]
    return res


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="Run alarmkit calibration probes on a real workerd")
    ap.add_argument("names", nargs="*", help=f"probes to run (default: quick ones). Known: {', '.join(PROBES)}")
    ap.add_argument("--long", action="store_true", help="also run the long probes (exhaustion, revival)")
    ap.add_argument("--parallel", type=int, default=1)
    ap.add_argument("--events", action="store_true", help="keep full event lists in the output")
    ap.add_argument("--out", help="write JSON here instead of stdout")
    args = ap.parse_args(argv)
    binary = find_workerd()
    if not binary:
        print("workerd not installed (see alarmkit.calibrate.workerd.install_workerd)", file=sys.stderr)
        return 2
    with WorkerdProcess(binary) as wd:
        res = run_probes(wd, args.names or None, include_long=args.long, parallel=args.parallel)
        doc = {"workerd": workerd_version(binary), "compat_date": wd.compat_date,
               "compat_flags": list(wd.compat_flags), "results": res if args.events else strip_events(res)}
    text = json.dumps(doc, indent=1, sort_keys=False)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
