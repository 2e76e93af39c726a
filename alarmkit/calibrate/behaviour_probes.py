"""Behaviour probes (the ``Probe`` twin object): one question about workerd's alarms each, asked of
a backend (a real ``WorkerdProcess`` or ``SimWorkerd``); each returns a plain dict with times in ms
relative to its anchor ``t0_ms``. ``catalogue.PROBES`` names them."""

from __future__ import annotations

import statistics
from typing import Optional

from .polling import anchor_t, attempt_rows, count_kind, gaps_ms, new_name, of_kind, probe_events, probe_wait, rel_events, rel_ms, run_spans
from .workerd import WorkerdProcess

def _watch(wd: WorkerdProcess, prefix: str, observe_s: float, **config) -> tuple:
    """A fresh object configured with ``config``, its alarm armed 100 ms ahead, watched for ``observe_s``:
    (object, get_alarm after, t0, its events relative to t0, its attempts)."""
    obj = new_name(wd, prefix)
    wd.probe("config", obj, **config)
    wd.probe("arm", obj, rel=100)
    wd.sleep(observe_s)
    ev = probe_events(wd, obj)
    after = wd.probe("get", obj)
    t0 = anchor_t(ev)
    rel = rel_events(ev, t0)
    return obj, after, t0, rel, attempt_rows(rel)


def probe_getalarm(wd: WorkerdProcess, delay_ms: int = 300) -> dict:
    """getAlarm() at handler start, after a setAlarm inside it, after deleteAlarm inside it; and
    getAlarm from outside before the fire and after the handler."""
    obj = new_name(wd, "probe-getalarm")
    wd.probe("config", obj, mode="getalarm")
    armed = wd.probe("arm", obj, rel=delay_ms)
    ev, ok = probe_wait(wd, obj, count_kind("alarm_end", 1), 10)
    after = wd.probe("get", obj)
    t0 = anchor_t(ev)
    rel = rel_events(ev, t0)
    inside = of_kind(rel, "inside")
    d = inside[0]["detail"] if inside else {}
    return {
        "probe": "getalarm", "obj": obj, "t0_ms": t0, "completed": ok,
        "outside_after_set": rel_ms(armed["after"], t0),
        "requested": rel_ms(armed["requested"], t0),
        "at_handler_start": d.get("at_start"),
        "after_set_inside": rel_ms(d.get("after_set"), t0),
        "set_to_inside": rel_ms(d.get("set_to"), t0),
        "after_set_equals_set_to": d.get("after_set") == d.get("set_to") if d else None,
        "after_delete_inside": d.get("after_delete"),
        "outside_after_handler": after["alarm"],
        "attempts": attempt_rows(rel),
        "events": rel,
    }


def probe_bad_values(wd: WorkerdProcess) -> dict:
    """setAlarm(0), negative, NaN, new Date(0): exact error texts."""
    obj = new_name(wd, "probe-bad")
    r = wd.probe("bad_values", obj)
    t0 = r["now"]
    return {"probe": "bad_values", "obj": obj, "t0_ms": t0, "results": r["results"],
            "events": rel_events(probe_events(wd, obj), t0)}


def probe_past(wd: WorkerdProcess, ago_ms: int = 5000) -> dict:
    """setAlarm(now - ago): what getAlarm shows, when it fires, and scheduledTime."""
    obj = new_name(wd, "probe-past")
    r = wd.probe("past", obj, ago=ago_ms)
    ev, ok = probe_wait(wd, obj, count_kind("alarm_end", 1), 5)
    wd.sleep(0.3)
    ev = probe_events(wd, obj)
    t0 = r["now"]
    rel = rel_events(ev, t0)
    att = attempt_rows(rel)
    return {
        "probe": "past", "obj": obj, "t0_ms": t0, "t0_is": "Date.now() in the call that set the alarm",
        "completed": ok, "requested": rel_ms(r["requested"], t0), "get_alarm_after_set": rel_ms(r["after"], t0),
        "set_error": r["error"], "attempts": att, "fires": len(att),
        "fire_t": att[0]["t"] if att else None,
        "scheduled_time_in_info": att[0]["scheduled"] if att else None,
        "events": rel,
    }


def probe_twice(wd: WorkerdProcess, first_ms: int = 400, second_ms: int = 900, await_between: bool = True) -> dict:
    """Two setAlarm calls in a row: which one wins, how many fires."""
    obj = new_name(wd, "probe-twice")
    r = wd.probe("twice", obj, first=first_ms, second=second_ms, await_between=await_between)
    horizon = max(first_ms, second_ms) / 1000.0 + 1.5
    wd.sleep(horizon)
    ev = probe_events(wd, obj)
    t0 = r["now"]
    rel = rel_events(ev, t0)
    att = attempt_rows(rel)
    return {
        "probe": "twice", "obj": obj, "t0_ms": t0, "first": first_ms, "second": second_ms,
        "await_between": await_between,
        "get_alarm_after_first": rel_ms(r["after_first"], t0), "get_alarm_after_both": rel_ms(r["after"], t0),
        "attempts": att, "fires": len(att), "fire_t": [a["t"] for a in att],
        "events": rel,
    }


def probe_delete_throw(wd: WorkerdProcess, observe_s: float = 6.0) -> dict:
    """Handler calls deleteAlarm() then throws (once): is there a retry?"""
    obj, after, t0, rel, att = _watch(wd, "probe-delthrow", observe_s, mode="delete_throw", throws_left=1)
    return {
        "probe": "delete_throw", "obj": obj, "t0_ms": t0, "observe_s": observe_s,
        "attempts": att, "fires": len(att), "retry_counts": [a["retry_count"] for a in att],
        "gap_ms": gaps_ms([a["t"] for a in att]),
        "get_alarm_after_delete_inside": [e["detail"].get("after") for e in of_kind(rel, "delete_alarm")],
        "alarm_after": after["alarm"],
        "events": rel,
    }


def probe_set_throw(wd: WorkerdProcess, delay_ms: int = 1000, observe_s: Optional[float] = None) -> dict:
    """Handler calls setAlarm(now+delay) then throws (once): does the new alarm replace the retry?"""
    observe_s = observe_s if observe_s is not None else delay_ms / 1000.0 + 4.0
    obj, after, t0, rel, att = _watch(wd, "probe-setthrow", observe_s, mode="set_throw", throws_left=1, delay=delay_ms)
    throws = of_kind(rel, "throw")
    inner = [e for e in of_kind(rel, "set_alarm") if e["detail"].get("src") == "handler"]
    return {
        "probe": "set_throw", "obj": obj, "t0_ms": t0, "delay_ms": delay_ms, "observe_s": observe_s,
        "attempts": att, "fires": len(att), "retry_counts": [a["retry_count"] for a in att],
        "second_after_throw_ms": (att[1]["t"] - throws[0]["t"]) if len(att) > 1 and throws else None,
        "inner_set": [{"t": e["t"], "requested": e["scheduled"], "get_after": rel_ms(e["detail"].get("after"), t0)}
                      for e in inner],
        "alarm_after": after["alarm"],
        "events": rel,
    }


def probe_abort(wd: WorkerdProcess, retry_alarm: bool = True, observe_s: float = 6.0) -> dict:
    """alarm() calls ctx.abort(reason, {retryAlarm}) once (after storage.sync()): is there a retry?"""
    obj, after, t0, rel, att = _watch(wd, f"probe-abort-{'retry' if retry_alarm else 'noretry'}", observe_s,
                                      mode="abort", throws_left=1, retry_alarm=retry_alarm)
    aborts = of_kind(rel, "abort")
    return {
        "probe": "abort", "obj": obj, "t0_ms": t0, "retry_alarm": retry_alarm, "observe_s": observe_s,
        "attempts": att, "fires": len(att), "retry_counts": [a["retry_count"] for a in att],
        "aborts_journaled": len(aborts),  # rows written before abort() and synced: they survive the reset
        "retry_after_abort_ms": (att[1]["t"] - aborts[0]["t"]) if len(att) > 1 and aborts else None,
        "alarm_after": after["alarm"],
        "events": rel,
    }


def probe_gate(wd: WorkerdProcess) -> dict:
    """Two calls to one object at once, each a read-modify-write (get, then put): does the second
    read wait for the first call's write (workerd's input gate), or is an update lost?"""
    obj = new_name(wd, "probe-gate")
    r = wd.get("/gate", {"obj": obj})
    ev = probe_events(wd, obj)
    t0 = anchor_t(ev, "bump_read")
    rel = rel_events(ev, t0)
    bumps = [e for e in rel if e["kind"] in ("bump_read", "bump_write")]
    out = {"probe": "gate", "obj": obj, "t0_ms": t0, "results": r.get("results"),
           "order": [f"{e['kind']}:{e['detail'].get('tag')}" for e in bumps],
           "span_ms": bumps[-1]["t"] - bumps[0]["t"] if bumps else None, "events": rel}
    if "error" in r:
        out["error"] = r["error"]
    return out


def probe_cold_name(wd: WorkerdProcess, delay_ms: int = 15000, timeout: float = 25.0) -> dict:
    """``ctx.id.name`` in an alarm() that woke the object cold: arm ``delay_ms`` ahead, make no request
    until then (workerd-local evicts an idle object after ~10 s), then read what the rebuilding
    constructor and alarm() saw (partykit issues 333/390; cloudflare-docs PR 28956). ~16 s."""
    obj = new_name(wd, "probe-coldname")
    wd.probe("config", obj, mode="name")
    wd.probe("arm", obj, rel=delay_ms)
    wd.sleep(delay_ms / 1000.0 + 1.0)  # no request meanwhile: a poll would keep the object in memory
    ev, ok = probe_wait(wd, obj, count_kind("alarm_end", 1), timeout - delay_ms / 1000.0)
    t0 = anchor_t(ev)
    rel = rel_events(ev, t0)
    att = attempt_rows(rel)
    constructs = of_kind(rel, "construct")
    first = att[0]["t"] if att else None
    woke = [c for c in constructs if c["t"] > 0 and first is not None and c["t"] <= first]
    names = of_kind(rel, "id_name")
    return {
        "probe": "cold_name", "obj": obj, "t0_ms": t0, "completed": ok, "delay_ms": delay_ms,
        "constructs_t": [c["t"] for c in constructs], "rebuilt_for_the_alarm": bool(woke),
        "name_in_constructor": [c["detail"].get("id_name") for c in constructs],
        "name_in_alarm": [e["detail"].get("id_name") for e in names],
        "attempts": att, "lateness_ms": [a["t"] - a["scheduled"] for a in att if a["scheduled"] is not None],
        "events": rel,
    }


def probe_rearm(wd: WorkerdProcess, chain: int = 5, at: str = "now", observe_s: float = 3.0) -> dict:
    """A chain of ``chain`` re-arms inside alarm(): ``setAlarm(Date.now())`` (``at="now"``) or
    ``setAlarm(scheduledTime)`` (``"scheduled"``), workerd issue 6866. How many runs within
    ``observe_s``, and did each re-arm land on its own run's scheduledTime (the case that stalls
    under ``rearm_at_now="same-time-unfired"``)?"""
    obj, after, t0, rel, att = _watch(wd, f"probe-rearm-{at}", observe_s, mode="rearm", chain_left=chain, at=at)
    rearms, running = [], None
    for e in rel:
        if e["kind"] == "alarm_start":
            running = e["scheduled"]
        elif e["kind"] in ("set_alarm", "set_alarm_error") and e["detail"].get("src") == "rearm":
            stored = rel_ms(e["detail"].get("after"), t0)
            rearms.append({"t": e["t"], "running_scheduled": running, "requested": e["scheduled"], "stored": stored,
                           "error": e["detail"].get("error"), "same_time": stored is not None and stored == running})
    # the model's rule (Profile.rearm_at_now "same-time-unfired"): the chain runs on until a re-arm
    # is stored at the running alarm's own scheduledTime; that one stays stored and never fires
    stall = next((i for i, r in enumerate(rearms) if r["same_time"]), None)
    return {
        "probe": "rearm", "obj": obj, "t0_ms": t0, "chain": chain, "at": at, "observe_s": observe_s,
        "attempts": att, "fires": len(att), "rearms": rearms,
        "fires_by_the_rule": 1 + (len(rearms) if stall is None else stall),
        "lateness_ms": [a["t"] - a["scheduled"] for a in att if a["scheduled"] is not None],
        "alarm_after": rel_ms(after["alarm"], t0), "overdue_after_ms": None if after["alarm"] is None
        else after["now"] - after["alarm"],
        "events": rel,
    }


def probe_overlap(wd: WorkerdProcess, variant: str = "inside", sleep_ms: int = 300, second_ms: int = 50) -> dict:
    """Does a second alarm() start while the first awaits a timer?

    ``inside``: the handler sets an alarm at now+second_ms, then awaits sleep_ms.
    ``outside``: the alarm is set again from outside (now+second_ms) while the handler sleeps.
    """
    obj = new_name(wd, f"probe-overlap-{variant}")
    if variant == "inside":
        wd.probe("config", obj, mode="sleep", sleep_ms=sleep_ms, inner_ms=second_ms)
        wd.probe("arm", obj, rel=100)
        op = None
    elif variant == "outside":
        op = wd.probe("overlap_outside", obj, first=100, sleep_ms=sleep_ms, second=second_ms, wait_ms=100)
    else:
        raise ValueError(variant)
    ev, ok = probe_wait(wd, obj, count_kind("alarm_end", 2), 10)
    wd.sleep(0.3)
    ev = probe_events(wd, obj)
    t0 = anchor_t(ev)
    rel = rel_events(ev, t0)
    runs = run_spans(rel)
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
                        "get_after": rel_ms(e["detail"].get("after"), t0)}
                       for e in of_kind(rel, "set_alarm")],
        "outside_op": op,
        "events": rel,
    }


def probe_lateness(wd: WorkerdProcess, delays_ms: tuple[int, ...] = (50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000)) -> dict:
    """setAlarm(now+X) on one object per X; lateness = Date.now() at handler start - requested."""
    objs = []
    for d in delays_ms:
        obj = new_name(wd, f"probe-late{d}")
        r = wd.probe("arm", obj, rel=d)
        objs.append((d, obj, r))
    deadline = wd.monotonic() + max(delays_ms) / 1000.0 + 5.0
    samples = []
    pending = list(objs)
    while pending and wd.monotonic() < deadline:
        wd.sleep(0.2)
        still = []
        for d, obj, r in pending:
            ev = probe_events(wd, obj)
            st = of_kind(ev, "alarm_start")
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
        events.extend({**e, "obj": obj} for e in rel_events(probe_events(wd, obj), t0))
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
    obj = new_name(wd, f"probe-outretry-{variant}")
    wd.probe("config", obj, mode="throw", throws_left=1)
    wd.probe("arm", obj, rel=100)
    ev, ok = probe_wait(wd, obj, count_kind("throw", 1), 5)
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
    ev = probe_events(wd, obj)
    after = wd.probe("get", obj)
    throws = of_kind(ev, "throw")
    t0 = throws[0]["t_ms"] if throws else anchor_t(ev)
    rel = rel_events(ev, t0)
    att = attempt_rows(rel)
    outside = [e for e in rel if e["detail"].get("src") in ("outside_during_retry",) or
               (e["kind"] == "delete_alarm" and e["detail"].get("src") == "outside")]
    return {
        "probe": "outside_during_retry", "variant": variant, "obj": obj,
        "t0_ms": t0, "t0_is": "the first throw", "completed": ok,
        "get_alarm_while_retry_pending": rel_ms(before["alarm"], t0),
        "outside_op": [{"t": e["t"], "kind": e["kind"], "requested": e["scheduled"],
                        "get_after": rel_ms(e["detail"].get("after"), t0)} for e in outside],
        "attempts": att, "fires": len(att),
        "attempt_t": [a["t"] for a in att], "retry_counts": [a["retry_count"] for a in att],
        "alarm_after": after["alarm"],
        "events": rel,
    }


def probe_facet(wd: WorkerdProcess) -> dict:
    """setAlarm inside a facet (ctx.facets), if this workerd has facets."""
    obj = new_name(wd, "probe-facet")
    r = wd.probe("facet", obj)
    out = {"probe": "facet", "obj": obj, **r}
    if r.get("has_facets"):
        fe = r.get("facet_events_after_wait", {})
        out["facet_alarm_fired"] = any(s.get("step") == "facet_alarm_fired" for s in r.get("inside", [])) or (
            fe.get("ok") and any(e["kind"] == "alarm_start" for e in fe.get("value", [])))
        out["summary"] = {k: (v.get("ok"), (v.get("error") or {}).get("text")) for k, v in r.items()
                          if isinstance(v, dict) and "ok" in v}
    ev = probe_events(wd, obj)
    out["t0_ms"] = ev[0]["t_ms"] if ev else None
    out["events"] = rel_events(ev, out["t0_ms"]) if ev else []
    return out


def probe_restart_pending(wd: WorkerdProcess, variant: str = "past_due", delay_ms: int = 1000,
                          downtime_s: float = 2.0, observe_s: float = 4.0) -> dict:
    """A stored alarm across a workerd restart, with no request after the restart.

    ``past_due``: the alarm falls due while workerd is down; ``future``: it falls due after the restart.
    The journal is read only once, ``observe_s`` after the restart (that read constructs the object).
    """
    obj = new_name(wd, f"probe-restart-{variant}")
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
    ev = probe_events(wd, obj)
    t0 = r["requested"]
    rel = rel_events(ev, t0)
    att = attempt_rows(rel)
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
