"""The lease ledger's lab scenarios (the ``LeaseLedger`` twin), as probes: each takes a backend (a real
``WorkerdProcess`` or ``SimWorkerd``) and returns a plain, JSON-serialisable dict whose times are ms
relative to its anchor ``t0_ms``. ``catalogue.PROBES`` names them."""

from __future__ import annotations

from typing import Optional

from .polling import attempt_rows, count_kind, gaps_ms, new_name, of_kind, rel_events, rel_ms, wait_events
from .workerd import WorkerdProcess

def scenario_normal(wd: WorkerdProcess, obj: Optional[str] = None, timeout: float = 10.0) -> dict:
    """Leases of 300 ms and 1500 ms: two fires ~1.2 s apart, table empty, getAlarm null."""
    obj = obj or new_name(wd, "ledger-normal")
    g1 = wd.grant(obj, "a", 300)
    g2 = wd.grant(obj, "b", 1500)
    ev, ok = wait_events(wd, obj, lambda ev: len(of_kind(ev, "alarm_end")) >= 2, timeout)
    wd.sleep(0.3)  # would catch a spurious third fire only if it were immediate
    ev = wd.events(obj)
    t0 = of_kind(ev, "grant")[0]["t_ms"]
    rel = rel_events(ev, t0)
    att = attempt_rows(rel)
    st = wd.state(obj)
    return {
        "probe": "normal", "obj": obj, "t0_ms": t0, "completed": ok,
        "expire_at": [rel_ms(g1["expire_at"], t0), rel_ms(g2["expire_at"], t0)],
        "attempts": att,
        "fires": len(att),
        "gap_ms": gaps_ms([a["t"] for a in att]),
        "lateness_ms": [a["t"] - a["scheduled"] for a in att if a["scheduled"] is not None],
        "leases_after": st["leases"], "alarm_after": st["alarm"],
        "revoke_calls": st["lab"].get("revoke_calls", 0),
        "events": rel,
    }


def scenario_crash_after_effect(wd: WorkerdProcess, obj: Optional[str] = None, timeout: float = 12.0) -> dict:
    """revoke throws once after counting: retry ~2 s later with retryCount 1, effect count 2."""
    obj = obj or new_name(wd, "ledger-crash")
    wd.lab(obj, revoke_throws=1)
    g = wd.grant(obj, "a", 300)
    ev, ok = wait_events(wd, obj, count_kind("alarm_end", 1), timeout)
    ev = wd.events(obj)
    t0 = of_kind(ev, "grant")[0]["t_ms"]
    rel = rel_events(ev, t0)
    att = attempt_rows(rel)
    throws = of_kind(rel, "throw")
    st = wd.state(obj)
    return {
        "probe": "crash_after_effect", "obj": obj, "t0_ms": t0, "completed": ok,
        "expire_at": rel_ms(g["expire_at"], t0),
        "attempts": att,
        "retry_counts": [a["retry_count"] for a in att],
        "is_retry": [a["is_retry"] for a in att],
        "retry_gap_ms": gaps_ms([a["t"] for a in att]),
        "retry_after_throw_ms": (att[1]["t"] - throws[0]["t"]) if len(att) > 1 and throws else None,
        "effect_count": st["lab"].get("revoke_calls", 0),
        "leases_after": st["leases"], "alarm_after": st["alarm"],
        "events": rel,
    }


def scenario_moves_only_earlier(wd: WorkerdProcess, obj: Optional[str] = None, timeout: float = 10.0) -> dict:
    """Grant 5 s, then 60 s (alarm stays), then 1 s (alarm moves earlier); after the 1 s lease
    fires the alarm is re-armed at the 5 s lease."""
    obj = obj or new_name(wd, "ledger-earlier")
    g5 = wd.grant(obj, "five", 5000)
    g60 = wd.grant(obj, "sixty", 60000)
    g1 = wd.grant(obj, "one", 1000)
    ev, ok = wait_events(wd, obj, count_kind("alarm_end", 1), timeout)
    st = wd.state(obj)
    ev = wd.events(obj)
    t0 = of_kind(ev, "grant")[0]["t_ms"]
    rel = rel_events(ev, t0)
    return {
        "probe": "moves_only_earlier", "obj": obj, "t0_ms": t0, "completed": ok,
        "expire_at": {k: rel_ms(g["expire_at"], t0) for k, g in (("five", g5), ("sixty", g60), ("one", g1))},
        "alarm_after_grant": {k: rel_ms(g["alarm"], t0) for k, g in (("five", g5), ("sixty", g60), ("one", g1))},
        "set_alarm_calls": [{"t": e["t"], "requested": e["scheduled"], "src": e["detail"].get("src")}
                            for e in of_kind(rel, "set_alarm")],
        "attempts": attempt_rows(rel),
        "alarm_after_first_fire": rel_ms(st["alarm"], t0),
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
    obj = obj or new_name(wd, "ledger-exhaust")
    wd.lab(obj, always_throw=True, noboot=noboot)
    g = wd.grant(obj, "a", 300)
    ev, ok = wait_events(wd, obj, count_kind("alarm_start", 7), timeout, interval=poll_s)
    t_last = wd.monotonic()
    # quiet period: nothing more should run (poll /events only: with noboot the constructor is inert)
    ev, extra = wait_events(wd, obj, count_kind("alarm_start", 8), quiet_s, interval=min(poll_s, 5.0))
    ev = wd.events(obj)
    st = wd.state(obj)
    t0 = of_kind(ev, "grant")[0]["t_ms"]
    rel = rel_events(ev, t0)
    att = attempt_rows(rel)
    throws = of_kind(rel, "throw")
    return {
        "probe": "exhaustion", "obj": obj, "t0_ms": t0, "completed": ok, "long": True,
        "expire_at": rel_ms(g["expire_at"], t0),
        "attempts": att,
        "attempt_count": len(att),
        "attempt_t_s": [round(a["t"] / 1000.0, 3) for a in att],
        "retry_counts": [a["retry_count"] for a in att],
        "gaps_ms": gaps_ms([a["t"] for a in att]),
        "retry_after_throw_ms": [att[i + 1]["t"] - throws[i]["t"] for i in range(min(len(att) - 1, len(throws)))],
        "scheduled_seen": sorted({a["scheduled"] for a in att if a["scheduled"] is not None}),
        "quiet_period_s": quiet_s,
        "attempts_after_exhaustion": max(0, len(att) - 7),
        "quiet_checked_s_after_last": round(wd.monotonic() - t_last, 1),
        "alarm_after": st["alarm"],
        "leases_after": [{"id": l["id"], "overdue_ms": st["now"] - l["expire_at"]} for l in st["leases"]],
        "constructs": len(of_kind(rel, "construct")),
        "constructs_t_s": [round(e["t"] / 1000.0, 3) for e in of_kind(rel, "construct")],
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
        obj = obj or new_name(wd, "ledger-revive")
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
    ev, ok = wait_events(wd, obj, lambda ev: len(of_kind(ev[n_before:], "alarm_end")) >= 1, timeout)
    st = wd.state(obj)
    new = ev[n_before:]
    t0 = int(t_req * 1000)
    rel = rel_events(new, t0)
    att = attempt_rows(rel)
    return {
        "probe": "revival", "obj": obj, "t0_ms": t0, "t0_is": "python wall clock at the one request",
        "after_exhaustion": after_exhaustion, "completed": ok,
        "long": after_exhaustion,
        "before_restart": {"alarm": before["alarm"], "leases": [l["id"] for l in before["leases"]],
                           "lab": before["lab"]},
        "lab_after_clear": lab,
        "restart_s": round(t_up - t_stop, 3),
        "restart_at": int(t_stop * 1000) - t0,
        "alarm_seen_by_first_request": rel_ms(first["alarm"], t0),
        "constructor_rearmed": [e["scheduled"] for e in of_kind(rel, "set_alarm") if e["detail"].get("src") == "construct"],
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
    obj = obj or new_name(wd, "ledger-wake")
    g = wd.grant(obj, "a", ttl_ms)
    wd.sleep(ttl_ms / 1000.0 + 1.0)
    ev, ok = wait_events(wd, obj, count_kind("alarm_end", 1), timeout - ttl_ms / 1000.0, interval=0.2)
    t0 = of_kind(ev, "grant")[0]["t_ms"]
    rel = rel_events(ev, t0)
    att = attempt_rows(rel)
    constructs = of_kind(rel, "construct")
    woke = [c for c in constructs if c["t"] > 0]
    ctor_view = [e["detail"] for e in rel if e["kind"] in ("ensure", "set_alarm") and e["detail"].get("src") == "construct"
                 and e["t"] > 0]
    first_start = att[0]["t"] if att else None
    return {
        "probe": "wake_evicted", "obj": obj, "t0_ms": t0, "completed": ok,
        "expire_at": rel_ms(g["expire_at"], t0),
        "constructs_t": [c["t"] for c in constructs],
        "rebuilt_before_alarm": bool(woke and first_start is not None and woke[0]["t"] <= first_start),
        "constructor_ensure": [{k: (rel_ms(v, t0) if k in ("next", "current", "requested", "previous", "after")
                                    and isinstance(v, int) else v) for k, v in d.items()} for d in ctor_view],
        "attempts": att,
        "lateness_ms": [a["t"] - a["scheduled"] for a in att if a["scheduled"] is not None],
        "events": rel,
    }
