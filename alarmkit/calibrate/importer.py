"""Import a probe's twin journal (real workerd) into alarmkit's journal, as one run.

The twin writes its own event kinds (``alarm_start``, ``throw``, ``revoke``, ...); here they become
alarmkit's kinds so that the same figures draw real and simulated runs:

=================  =================================================================
twin kind          journal kind (detail)
=================  =================================================================
construct          construct
alarm_start        fire (attempt, late_ms = t - scheduledTime, is_retry, get_alarm)
alarm_end          handler_ok (next_ms = getAlarm() at the end)
throw              handler_error (error "Error", message, counted true)
revoke             effect (name "revoke", key = lease id, call_no)
set_alarm          arm (direction, cause constructor|user, src); scheduled = stored time
delete_alarm       disarm (cause = src)
set_alarm_error    call (method setAlarm, error)
facet_step         facet_broken for the failed setAlarm call into a facet, else call;
                   the facet's surviving journal adds its constructs
grant, lab, config call (method = twin kind)
ensure, inside,    not imported (notes inside a handler; the raw rows stay in the
sleep_*, delete_*  probe's stored result)
id_name            not imported (ctx.id.name as the twin saw it; the cold_name probe's checks read it)
=================  =================================================================

Times are milliseconds relative to the probe's anchor ``t0_ms``; object ids lose their random
suffix (``ledger-normal-3f2a9c01de`` -> ``ledger-normal``). A restart the probe made (it is not in
any object's journal) is added as a ``restart`` event at ``restart_at``, with a ``deploy`` event
(``version``) beside it when the restart brought other code.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ..journal import EventRow
from ..journal import direction

__all__ = ["canonical_object", "import_result", "twin_rows", "REAL_PROFILE_PREFIX"]

REAL_PROFILE_PREFIX = "workerd-real@"
_SUFFIX = re.compile(r"-[0-9a-f]{10}(?=/|$)")
_CALLS = {"grant", "lab", "config"}


def canonical_object(name: Optional[str]) -> Optional[str]:
    """``probe-facet-83ec9115a7/f1`` -> ``probe-facet/f1``: the same lane name in real and simulated runs."""
    return _SUFFIX.sub("", name) if isinstance(name, str) else None


def _rel(v: Any, t0: Optional[int]) -> Any:
    """An absolute epoch-ms value from a twin detail, relative to ``t0`` (numbers only)."""
    if t0 is None or isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    return int(v) - t0


def _namespace(obj: str) -> str:
    return "PROBE" if obj.startswith("probe") else "LEDGER"


def twin_rows(result: dict) -> list[EventRow]:
    """The probe's twin events as journal rows (``EventRow``), numbered in time order."""
    t0 = result.get("t0_ms")
    default_obj = canonical_object(result.get("obj") or result.get("probe") or "object")
    rows: list[EventRow] = []
    last_fire: dict[str, Any] = {}
    runs: dict[str, int] = {}

    def add(t, obj, kind, sched=None, prev=None, retry=None, detail=None):
        # seq is given once the rows are in time order
        rows.append(EventRow(0, t, _namespace(obj) if obj else None, obj, kind, sched, prev, retry, detail))

    for e in result.get("events") or []:
        kind, d, t = e["kind"], dict(e.get("detail") or {}), int(e["t"])
        obj = canonical_object(e.get("obj")) or default_obj
        sched, rc = e.get("scheduled"), e.get("retry_count")
        if kind == "construct":
            add(t, obj, "construct", detail=d)
        elif kind == "alarm_start":
            runs[obj] = runs.get(obj, 0) + 1
            last_fire[obj] = sched
            add(t, obj, "fire", sched, None, rc, {
                "attempt": d.get("run") or runs[obj], "late_ms": None if sched is None else t - sched,
                "is_retry": bool(e.get("is_retry")), "get_alarm": _rel(d.get("get_alarm"), t0)})
        elif kind == "alarm_end":
            add(t, obj, "handler_ok", last_fire.get(obj), None, rc, {"next_ms": _rel(d.get("get_alarm"), t0)})
        elif kind == "throw":
            msg = d.get("message") or f"probe injected failure ({d.get('where')}, run {d.get('run')})"
            add(t, obj, "handler_error", last_fire.get(obj), None, rc,
                {"error": "Error", "message": msg, "counted": True, "where": d.get("where")})
        elif kind == "abort":  # the twin's row before ctx.abort(reason, {retryAlarm}) in alarm()
            add(t, obj, "aborted", None, None, None, {"reason": f"probe abort (run {d.get('run')})",
                                                      "retry_alarm": d.get("retry_alarm")})
            add(t, obj, "handler_error", last_fire.get(obj), None, rc,
                {"error": "Aborted", "message": f"probe abort (run {d.get('run')})", "counted": bool(d.get("retry_alarm")),
                 **({} if d.get("retry_alarm") else {"retry": False})})
        elif kind == "revoke":
            add(t, obj, "effect", detail={"name": "revoke", "key": d.get("id"), "call_no": d.get("call_no")})
        elif kind == "set_alarm":
            stored = _rel(d.get("after"), t0) if d.get("after") is not None else sched
            prev = _rel(d.get("previous"), t0)
            src = d.get("src")
            add(t, obj, "arm", stored, prev, None, {
                "direction": direction(prev, stored), "cause": "constructor" if src == "construct" else "user",
                "src": src, "requested": sched})
            if src == "construct" and prev is None and sched is not None and sched <= t:
                # the constructor re-armed an overdue lease that had no alarm: what the simulator calls revive
                add(t, obj, "revive", stored, None, None, {"cause": "constructor"})
        elif kind == "delete_alarm":
            add(t, obj, "disarm", None, _rel(d.get("before"), t0), None, {"cause": d.get("src")})
        elif kind == "set_alarm_error":
            add(t, obj, "call", None, None, None, {"method": "setAlarm", "src": d.get("src"), "error": d.get("error"),
                                                    "requested": d.get("requested") if isinstance(d.get("requested"), str)
                                                    else _rel(d.get("requested"), t0)})
        elif kind == "facet_step":
            res = d.get("result") if isinstance(d.get("result"), dict) else {}
            if d.get("step") == "set_alarm_call" and res.get("ok") is False:
                err = res.get("error") or {}
                add(t, f"{obj}/f1", "facet_broken", None, None, None,
                    {"error": err.get("name"), "message": err.get("message"), "mode": "commit-breaks-facet"})
            else:
                add(t, obj, "call", detail={"method": d.get("step"), "ok": res.get("ok")})
        elif kind in _CALLS:
            add(t, obj, "call", detail={"method": kind, **{k: _rel(v, t0) if k == "expire_at" else v
                                                             for k, v in d.items()}})
    facet_journal = (result.get("facet_events_after_wait") or {}).get("value") or []
    for e in facet_journal:  # the facet's own journal (what survived of it), read by the parent
        if e.get("kind") == "construct" and t0 is not None:
            add(int(e["t_ms"]) - t0, f"{default_obj}/f1", "construct", detail=e.get("detail") or {})
    if result.get("restart_at") is not None:
        if result.get("restart_began") is not None:
            down = result["restart_began"] - result["restart_at"]
        else:
            down = 1000 * (result.get("restart_s") or 0)
        add(int(result["restart_at"]), None, "restart", detail={"downtime_ms": max(0, int(down))})
        if result.get("deploy") is not None:  # the restart brought other code (the deploy_removes_alarm probe)
            add(int(result["restart_at"]), None, "deploy", detail={"version": result["deploy"]})
    rows.sort(key=lambda r: r.t_ms)  # stable: same-ms rows keep the twin's order
    return [row._replace(seq=i + 1) for i, row in enumerate(rows)]


def import_result(journal: Any, name: str, result: dict, version: str, params: Optional[dict] = None) -> int:
    """Write one real probe result as a run of ``journal`` (scenario ``calibrate:NAME``, profile
    ``workerd-real@VERSION``); returns its run id."""
    run_id = journal.start_run(f"calibrate:{name}", f"{REAL_PROFILE_PREFIX}{version}", None,
                               {**(params or {}), "t0_ms": result.get("t0_ms"), "obj": result.get("obj")}, None)
    journal.write_events(run_id, twin_rows(result))
    return run_id
