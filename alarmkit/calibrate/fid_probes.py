"""Fidelity probes on real workerd (the ``Fid``, ``FidNoAlarm`` and ``FidDeploy`` classes of
twin/worker.js): how a turn ends and commits, a failing constructor, a class without ``alarm()``, a
deploy that removes ``alarm()``, the 15-minute limit, alarms due at one instant, ``deleteAll()`` under
two compatibility dates, and fire lateness.

Each takes a running backend and returns a plain dict, times in ms relative to ``t0_ms`` (an epoch-ms
value from workerd's ``Date.now()``, named in each dict). Rows come from ``FID_LOG`` (the isolate's
memory, with a global sequence number: the true order of events inside workerd) through ``/fid/log``.
"""

from __future__ import annotations

import statistics
from typing import Any

from .polling import new_name

__all__ = [
    "fid_op", "fid_log", "probe_turn_abort", "probe_ctor_fail", "probe_no_alarm_class", "probe_deploy_removes_alarm",
    "probe_long_alarm", "probe_same_instant", "probe_delete_all", "probe_lateness_many",
]

# workerd 1.20261117.1 logs this once per isolate when a due alarm finds no alarm() handler
NO_HANDLER_WARNING = "scheduled alarm without a handler"


def fid_op(wd: Any, op: str, obj: str, cls: str = "fid", **params: Any) -> dict:
    return wd.get(f"/fid/{op}", {"obj": obj, "cls": cls, **params})


def fid_log(wd: Any, obj: str | None = None) -> list[dict]:
    return wd.get("/fid/log", {"obj": obj} if obj else None)["rows"]


def _rel(rows: list[dict], t0: int) -> list[dict]:
    return [{"seq": r["seq"], "t": r["t_ms"] - t0, "kind": r["kind"], "detail": r["detail"]} for r in rows]


def _wait(wd: Any, obj: str, pred, timeout_s: float) -> list[dict]:
    end = wd.monotonic() + timeout_s
    while True:
        rows = fid_log(wd, obj)
        if pred(rows) or wd.monotonic() >= end:
            return rows
        wd.sleep(0.2)


def _kinds(rows: list[dict], kind: str) -> list[dict]:
    return [r for r in rows if r["kind"] == kind]


def probe_turn_abort(wd: Any, how: str = "await", rel_ms: int = 800, observe_s: float = 2.5) -> dict:
    """setAlarm(now + rel_ms) then ``ctx.abort()`` in one request: ``how`` "await" (awaited setAlarm),
    "noawait", or "sync" (``await storage.sync()`` before the abort). Is the alarm kept, and does it fire?"""
    obj = new_name(wd, f"fid-turn-{how}")
    r = fid_op(wd, "turn_abort", obj, how=how, rel=rel_ms)
    wd.sleep(0.1)
    after = fid_op(wd, "get", obj)
    wd.sleep(observe_s)
    rows = fid_log(wd, obj)
    t0 = _kinds(rows, "turn_abort")[0]["t_ms"]
    starts = _kinds(rows, "alarm_start")
    return {
        "probe": f"turn_abort_{how}", "obj": obj, "t0_ms": t0, "t0_is": "Date.now() in the request that set the alarm",
        "how": how, "rel_ms": rel_ms, "thrown": (r.get("thrown") or {}).get("name"),
        "get_alarm_after": None if after.get("alarm") is None else after["alarm"] - t0,
        "fires": len(starts), "fire_t": [s["t_ms"] - t0 for s in starts],
        "new_instance": bool(starts) and starts[0]["detail"]["instance"] != _kinds(rows, "turn_abort")[0]["detail"]["instance"],
        "events": _rel(rows, t0),
    }


def probe_ctor_fail(wd: Any, fails: int = 2, rel_ms: int = 100, observe_s: float = 12.0) -> dict:
    """The alarm must construct its object, whose constructor throws ``fails`` times: when are the
    constructions retried, and what ``retryCount`` does ``alarm()`` see when it finally runs?
    With ``fails`` large (never recovers) the probe stops the failures after ``observe_s``."""
    obj = new_name(wd, f"fid-ctor{fails}")
    fid_op(wd, "ctor_fail", obj, fails=fails, rel=rel_ms)
    rows = _wait(wd, obj, lambda rs: bool(_kinds(rs, "alarm_start")), observe_s)
    armed = _kinds(rows, "ctor_fail_armed")[0]
    t0 = armed["t_ms"] - rel_ms  # the request's Date.now()
    fails_t = [r["t_ms"] - t0 for r in _kinds(rows, "construct_fail")]
    starts = _kinds(rows, "alarm_start")
    if not starts:  # never recovers in the window: stop the failures so the object is usable again
        fid_op(wd, "stop_ctor_fail", obj)
    return {
        "probe": f"ctor_fail_{fails}", "obj": obj, "t0_ms": t0, "t0_is": "Date.now() in the request that set the alarm",
        "fails": fails, "scheduled": rel_ms, "failed_constructions_t": fails_t,
        "gaps_ms": [b - a for a, b in zip([rel_ms] + fails_t, fails_t)],
        "alarm_ran": bool(starts), "alarm_t": starts[0]["t_ms"] - t0 if starts else None,
        "retry_count": starts[0]["detail"]["retry_count"] if starts else None,
        "events": _rel(rows, t0),
    }


def probe_no_alarm_class(wd: Any, rel_ms: int = 300, observe_s: float = 6.0) -> dict:
    """A class without ``alarm()``: setAlarm from a request (an error?), from the constructor (allowed?),
    and what happens when that alarm falls due (run? retried? dropped?)."""
    obj = new_name(wd, "fid-noalarm")
    from_request = fid_op(wd, "arm_at", obj, cls="noalarm", at=0)  # at=0 is refused either way: use a real time below
    now = from_request.get("now")
    from_request = fid_op(wd, "arm_at", obj, cls="noalarm", at=(now or 0) + 60_000)
    fid_op(wd, "ctor_arm", obj, cls="noalarm", rel=rel_ms)
    wd.sleep(0.2)
    rows = fid_log(wd, obj)
    t0 = now
    ctor = _kinds(rows, "ctor_set_alarm") + _kinds(rows, "ctor_set_alarm_error")
    # the next constructor ran only when something reached the object: wake it
    woke = fid_op(wd, "get", obj, cls="noalarm")
    wd.sleep(observe_s)
    after = fid_op(wd, "get", obj, cls="noalarm")
    rows = fid_log(wd, obj)
    ctor = _kinds(rows, "ctor_set_alarm") + _kinds(rows, "ctor_set_alarm_error")
    log = wd.log_tail(20_000) if hasattr(wd, "log_tail") else ""
    # workerd 1.20261117.1 logs "Attempted to run a scheduled alarm without a handler, did you remember to
    # export an alarm() function?" (once per isolate)
    warning = log.count(NO_HANDLER_WARNING)
    return {
        "probe": "no_alarm_class", "obj": obj, "t0_ms": t0, "t0_is": "Date.now() in the first request",
        "request_set_alarm_error": (from_request.get("error") or {}).get("message"),
        "request_set_alarm_error_name": (from_request.get("error") or {}).get("name"),
        "constructor_set_alarm": [r["kind"] for r in ctor],
        "alarm_while_pending": None if woke.get("alarm") is None else woke["alarm"] - t0,
        "alarm_after": after.get("alarm"),
        "constructions": len(_kinds(rows, "construct")),
        "warning_logged": warning,
        "events": _rel(rows, t0),
    }


def probe_deploy_removes_alarm(wd: Any, ahead_ms: int = 3000, downtime_s: float = 1.0, check_s: float = 1.0,
                               observe_s: float = 16.0) -> dict:
    """A stored alarm, then a deploy whose class lost ``alarm()``: the twin's ``FidDeploy`` (with Fid's
    ``alarm()``) is armed for ``ahead_ms`` on, workerd restarts (down ``downtime_s``) onto deploy "v2",
    where ``FidDeploy`` is ``FidNoAlarm`` under the same className and uniqueKey. Nothing reaches the
    object after the restart until ``check_s`` past the due time (``getAlarm()``), and the log is read
    ``observe_s`` past it: does the constructor run for the due alarm, does ``alarm()`` run or retry (a
    retry after the ~10 s idle eviction would construct again), is the alarm dropped, and how many
    warnings did the new isolate log? The backend is redeployed to "v1" at the end."""
    obj = new_name(wd, "fid-deploy")
    at = int(wd.time() * 1000) + ahead_ms
    armed = fid_op(wd, "arm_at", obj, cls="deploy", at=at)
    before = fid_log(wd, obj)  # FID_LOG is the isolate's memory: the restart empties it
    down = int(wd.time() * 1000) - at
    wd.redeploy("v2", downtime_s)
    up = int(wd.time() * 1000) - at
    wd.sleep(max(0.0, (at - wd.time() * 1000) / 1000) + check_s)
    # rows since the restart (real workerd's FID_LOG holds nothing older: the restart made a new isolate)
    seen = [r for r in _rel(fid_log(wd, obj), at) if r["t"] > down]  # before any request reached the object
    check = fid_op(wd, "get", obj, cls="deploy")
    wd.sleep(max(0.0, (at - wd.time() * 1000) / 1000 + observe_s))
    after = [r for r in _rel(fid_log(wd, obj), at) if r["t"] > down]
    log = wd.log_tail(20_000)
    warnings = log.rsplit("=== start", 1)[-1].count(NO_HANDLER_WARNING)  # logged by the new deploy's workerd
    wd.redeploy("v1")
    constructs = [r for r in after if r["kind"] == "construct"]
    return {
        "probe": "deploy_removes_alarm", "obj": obj, "t0_ms": at, "t0_is": "the stored alarm's time",
        "ahead_ms": ahead_ms, "set_alarm_error": armed.get("error") or armed.get("thrown"),
        "get_alarm_before": None if armed.get("alarm") is None else armed["alarm"] - at,
        "restart_at": down, "restart_s": downtime_s, "deploy": "v2", "restart_done": up,
        "constructed_for_the_alarm": [r["t"] for r in seen if r["kind"] == "construct"],
        "constructions_after_restart": len(constructs), "construct_t": [r["t"] for r in constructs],
        "alarm_runs": len(_kinds(after, "alarm_start")),
        "get_alarm_after": None if check.get("alarm") is None else check["alarm"] - at,
        "same_instance_at_check": bool(constructs) and check.get("instance") == constructs[0]["detail"]["instance"],
        "warning_logged": warnings,
        "events": _rel(before, at) + [{**r, "restarted": True} for r in after],
    }


def probe_long_alarm(wd: Any, rel_ms: int = 200, observe_s: float = 16.5 * 60) -> dict:
    """An ``alarm()`` that would run 20 minutes: when is it stopped, retried with what ``retryCount``,
    and in which instance? Takes ``observe_s`` (16.5 minutes) of real time."""
    obj = new_name(wd, "fid-long")
    r = fid_op(wd, "long", obj, rel=rel_ms)
    t0 = r["now"]
    rows = _wait(wd, obj, lambda rs: len(_kinds(rs, "alarm_start")) >= 2 and bool(_kinds(rs, "alarm_end")), observe_s)
    starts = _kinds(rows, "alarm_start")
    ticks = _kinds(rows, "long_tick")
    return {
        "probe": "long_alarm", "obj": obj, "t0_ms": t0, "t0_is": "Date.now() in the request that set the alarm",
        "scheduled": rel_ms, "starts_t": [s["t_ms"] - t0 for s in starts],
        "retry_counts": [s["detail"]["retry_count"] for s in starts],
        "instances": [s["detail"]["instance"] for s in starts],
        "new_instance_on_retry": len(starts) > 1 and starts[1]["detail"]["instance"] != starts[0]["detail"]["instance"],
        "last_tick_t": ticks[-1]["t_ms"] - t0 if ticks else None, "ticks": len(ticks),
        "events": _rel(rows, t0),
    }


def probe_same_instant(wd: Any, objects: int = 40, ahead_ms: int = 8000, observe_s: float = 3.0) -> dict:
    """``objects`` objects armed for the same epoch ms: lateness, spread, and the order they run in
    (FID_LOG's sequence) against the arming order."""
    names = [new_name(wd, f"fid-inst{i:02d}") for i in range(objects)]
    at = int(wd.time() * 1000) + ahead_ms
    for n in names:
        fid_op(wd, "arm_at", n, at=at)
    wd.sleep(ahead_ms / 1000 + observe_s)
    rows = [r for r in fid_log(wd) if r["obj"] in set(names) and r["kind"] == "alarm_start"]
    rows.sort(key=lambda r: r["seq"])
    order = [names.index(r["obj"]) for r in rows]
    late = [r["t_ms"] - at for r in rows]
    return {
        "probe": "same_instant", "t0_ms": at, "t0_is": "the shared scheduled time", "objects": objects,
        "fired": len(rows), "order": order, "arming_order": order == sorted(order),
        "late_ms": late, "spread_ms": (max(late) - min(late)) if late else None,
        "first_late_ms": min(late) if late else None,
    }


def probe_delete_all(wd: Any, rel_ms: int = 500, observe_s: float = 1.5) -> dict:
    """setAlarm(now + rel_ms), then ``deleteAll()``: is the alarm deleted (getAlarm, does it fire)? The
    answer depends on the compatibility date (flag ``delete_all_deletes_alarm``)."""
    obj = new_name(wd, "fid-delall")
    r = fid_op(wd, "delete_all", obj, rel=rel_ms)
    wd.sleep(rel_ms / 1000 + observe_s)
    rows = fid_log(wd, obj)
    t0 = r["now"]
    starts = _kinds(rows, "alarm_start")
    return {
        "probe": "delete_all", "obj": obj, "t0_ms": t0, "t0_is": "Date.now() in the request",
        "compat_date": getattr(wd, "compat_date", None),
        "get_alarm_before": None if r.get("before") is None else r["before"] - t0,
        "get_alarm_after": None if r.get("after") is None else r["after"] - t0,
        "fires": len(starts), "fire_t": [s["t_ms"] - t0 for s in starts],
        "events": _rel(rows, t0),
    }


def probe_lateness_many(wd: Any, objects: int = 100, fires_each: int = 3, spacing_ms: int = 10_000,
                        ahead_ms: int = 30_000, observe_s: float = 2.0) -> dict:
    """``objects`` objects armed in advance, ``fires_each`` rounds: each round arms every object for a time
    ``ahead_ms`` on (offsets spread over ``spacing_ms``, so fires do not queue behind each other on a busy
    machine), waits for the fires, and records lateness = Date.now() at alarm() start - scheduled time."""
    names = [new_name(wd, f"fid-late{i:03d}") for i in range(objects)]
    samples: list[int] = []
    first = None
    for _ in range(fires_each):
        base = int(wd.time() * 1000) + ahead_ms
        first = base if first is None else first
        ats = {n: base + (i * 37) % spacing_ms for i, n in enumerate(names)}
        early = set()  # armed before its time (arming 100 objects over HTTP takes seconds): the only fair samples
        for n, at in ats.items():
            if fid_op(wd, "arm_at", n, at=at)["now"] < at:
                early.add(n)
        wd.sleep(max(0.0, (max(ats.values()) - wd.time() * 1000) / 1000) + observe_s)
        rows = [r for r in fid_log(wd) if r["obj"] in early and r["kind"] == "alarm_start"
                and r["detail"]["scheduled"] == ats[r["obj"]]]
        samples += [r["t_ms"] - r["detail"]["scheduled"] for r in rows]
    srt = sorted(samples)
    return {
        "probe": "lateness_many", "t0_ms": first, "t0_is": "the first round's base time", "objects": objects,
        "fires_each": fires_each, "samples_ms": samples, "missing": objects * fires_each - len(samples),
        "stats": {"n": len(srt), "min": srt[0], "median": statistics.median(srt), "max": srt[-1],
                  "p90": srt[int(0.9 * (len(srt) - 1))]} if srt else {},
    }
