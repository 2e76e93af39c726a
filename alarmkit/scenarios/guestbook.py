"""The guestbook scenarios: the keepalive (``keepalive.py``) hosted as a root object, as a facet
without and with the parent-owned alarm proxy, in a crash loop, and on celld beside workerd.

Each scenario returns, besides the usual summary, ``report``: readable lines that ``alarmkit run``
prints, and the numbers behind them (keepalive fires with their lateness, calls and their errors).
"""

from __future__ import annotations

import json

import pandas as pd

from ..runtime import Simulation
from ..errors import ScenarioError
from .keepalive import CRASH_LOOP_BUDGET, GUESTBOOK_APP_REF, KEEPALIVE_ALARM_LEAD_MS, GuestbookFacetApp, GuestbookProcessor, GuestbookProxyApp, Keepalive, PoisonEntry, ProxiedGuestbookProcessor, keepalive_lead_ms
from .registry import scenario

__all__ = [
    "CRASH_LOOP_BUDGET", "GUESTBOOK_APP_REF", "KEEPALIVE_ALARM_LEAD_MS", "GuestbookFacetApp", "GuestbookProcessor",
    "GuestbookProxyApp", "Keepalive", "PoisonEntry", "ProxiedGuestbookProcessor", "guestbook_batch", "keepalive_fires",
    "keepalive_lead_ms",
]


# -- scenarios ----------------------------------------------------------------------------------------------
def guestbook_batch(first: int, n: int, special: dict[int, str] | None = None) -> list[dict]:
    """``n`` entries from offset ``first``; ``special`` maps an index to a text such as ``"!poison"``."""
    special = special or {}
    return [{"offset": first + i, "author": f"guest-{first + i}", "text": special.get(i, f"hello #{first + i}")}
            for i in range(n)]


def _need_facets(sim: Simulation, name: str) -> None:
    if sim.profile.facet_alarms is None:
        raise ScenarioError(
            f"scenario {name!r} hosts the processor as a facet, and profile {sim.profile.name!r} has no facets "
            "(ctx.facets is not defined there); run it with --profile workerd or --profile workerd-2026-07"
        )


def _configure(sim: Simulation, entry_ms: int, version: str = "v1", budget: int = CRASH_LOOP_BUDGET) -> None:
    sim.env.GUESTBOOK_ENTRY_MS = entry_ms
    sim.env.GUESTBOOK_VERSION = version
    sim.env.GUESTBOOK_BUDGET = budget


def _call_at(sim: Simulation, t: int, aw_fn, results: list, label: str) -> None:
    """At virtual time ``t`` start ``aw_fn()``; append ``{t_ms, call, outcome}`` when it settles."""

    def start() -> None:
        task = sim.spawn(aw_fn(), label)
        task.add_done_callback(lambda f: results.append({"t_ms": t, "call": label, "done_ms": sim.now, **_outcome(f)}))

    sim.call_at(t, start)


def _outcome(f) -> dict:
    err = f.exception()
    if err is None:
        return {"ok": True, "value": f.result()}
    return {"ok": False, "error": type(err).__name__, "message": str(err)}


def _view(sim: Simulation, stub, binding: str) -> dict:
    """The processor's committed state, read without waking it: the object itself, or (APP) its facet."""
    view = sim.inspect(stub)
    if binding == "APP":
        view = view.facet(GUESTBOOK_APP_REF)

    def rows(q: str) -> list[dict]:
        if view is None:
            return []  # the facet was never created
        try:
            return view.sql(q)
        except Exception:  # noqa: BLE001 - the table does not exist: the processor never committed
            return []

    cur = rows("SELECT offset FROM cursor")
    rev = rows("SELECT total, build, build_count FROM revivals")
    return {
        "signed": [r["offset"] for r in rows("SELECT offset FROM signed ORDER BY offset")],
        "cursor": cur[0]["offset"] if cur else -1,
        "inbox": len(rows("SELECT offset FROM inbox")),
        "revivals": rev[0]["total"] if rev else 0,
        "revivals_by_build": {rev[0]["build"]: rev[0]["build_count"]} if rev else {},
        "keepalive": (rows("SELECT armed_at_ms, rung, parked_build FROM keepalive") or [None])[0],
    }


def keepalive_fires(sim: Simulation) -> list[dict]:
    """Every keepalive fire of the run: when, against which ``armed_at_ms``, how late, and what it did."""
    ev = sim.events()
    out = []
    for row in ev[ev["kind"] == "keepalive_fire"].itertuples():
        d = json.loads(row.detail)
        out.append({"object_id": row.object_id, "t_ms": int(row.t_ms),
                    "armed_at_ms": None if pd.isna(row.scheduled_ms) else int(row.scheduled_ms),
                    "late_ms": d["late_ms"], "outcome": d["outcome"]})
    return out


def _kinds(sim: Simulation, *kinds: str) -> list[dict]:
    ev = sim.events()
    sel = ev[ev["kind"].isin(kinds)]
    return [{"t_ms": int(r.t_ms), "kind": r.kind, "object_id": r.object_id, **json.loads(r.detail)} for r in sel.itertuples()]


def _story(sim: Simulation, view: dict, calls: list[dict]) -> list[str]:
    lines = [f"  {c['call']} at {c['t_ms']} ms: " + ("ok" if c["ok"] else f"{c['error']}: {c['message']}") for c in calls]
    for f in keepalive_fires(sim):
        lines.append(f"  keepalive fire at {f['t_ms']} ms (armed for {f['armed_at_ms']}, late {f['late_ms']} ms): {f['outcome']}")
    for b in _kinds(sim, "facet_broken", "actor_broken"):
        lines.append(f"  {b['kind']} at {b['t_ms']} ms on {b['object_id']}: {b['message']} (calls failed: {b['calls'] + b['held']})")
    lines.append(f"  signed {len(view['signed'])} entries; revivals {view['revivals']}")
    return lines


@scenario("guestbook-root", "processor as a root object: it dies mid-batch; the keepalive fires at +10 s and revives it")
def guestbook_root(sim: Simulation, entries: int = 5, entry_ms: int = 200, batch_at: int = 1_000,
                   die_after_ms: int = 500) -> dict:
    _configure(sim, entry_ms)
    proc = sim.namespace("GUESTBOOK", GuestbookProcessor).get("processor")
    calls: list[dict] = []
    _call_at(sim, batch_at, lambda: proc.deliver(guestbook_batch(0, entries)), calls, "deliver")
    sim.call_at(batch_at + die_after_ms, sim.evict, proc, "the process died mid-batch")
    sim.run()
    view = _view(sim, proc, "GUESTBOOK")
    return {"calls": calls, "keepalive_fires": keepalive_fires(sim), **view, "final_alarm": sim.inspect(proc).alarm,
            "report": _story(sim, view, calls)}


@scenario("guestbook-facet", "processor as a facet without the proxy: its keepalive's set_alarm breaks the facet "
          "(workerd) or the whole actor (--profile workerd-2026-07)")
def guestbook_facet(sim: Simulation, entries: int = 5, entry_ms: int = 200, batch_at: int = 1_000,
                    redeliver_at: int = 3_000, visit_at: int = 900, visit_ms: int = 500) -> dict:
    _need_facets(sim, "guestbook-facet")
    _configure(sim, entry_ms)
    app = sim.namespace("APP", GuestbookFacetApp).get("app")
    calls: list[dict] = []
    _call_at(sim, visit_at, lambda: app.visit(visit_ms), calls, "parent visit")
    for t in (batch_at, redeliver_at):
        _call_at(sim, t, lambda: app.deliver(guestbook_batch(0, entries)), calls, "deliver")
    sim.run()
    calls.sort(key=lambda c: (c["t_ms"], c["call"]))
    view = _view(sim, app, "APP")
    broken = _kinds(sim, "facet_broken", "actor_broken")
    return {"facet_alarms": sim.profile.facet_alarms, "calls": calls, "broken": broken, **view,
            "final_alarm": sim.inspect(app).alarm, "report": _story(sim, view, calls)}


@scenario("guestbook-facet-proxy", "processor as a facet behind the parent-owned alarm proxy: the parent dies "
          "mid-batch (outage=evict|restart); the proxied keepalive fire boots the facet and revives it")
def guestbook_facet_proxy(sim: Simulation, entries: int = 5, entry_ms: int = 200, batch_at: int = 1_000,
                          die_after_ms: int = 500, outage: str = "evict", downtime_ms: int = 3_000) -> dict:
    _need_facets(sim, "guestbook-facet-proxy")
    if outage not in ("evict", "restart"):
        raise ScenarioError(f"outage must be 'evict' or 'restart', got {outage!r}")
    _configure(sim, entry_ms)
    app = sim.namespace("APP", GuestbookProxyApp).get("app")
    calls: list[dict] = []
    _call_at(sim, batch_at, lambda: app.deliver(guestbook_batch(0, entries)), calls, "deliver")
    if outage == "evict":
        sim.call_at(batch_at + die_after_ms, sim.evict, app, "the process died mid-batch")
    else:
        sim.call_at(batch_at + die_after_ms, sim.restart, downtime_ms)
    sim.run()
    view = _view(sim, app, "APP")
    proxy = _kinds(sim, "proxy_arm", "proxy_deliver")
    return {"calls": calls, "keepalive_fires": keepalive_fires(sim), "proxy": proxy, **view,
            "final_alarm": sim.inspect(app).alarm, "report": _story(sim, view, calls)}


@scenario("guestbook-crash-loop", "build v1 crashes on a poison entry: revivals at +10, +20, +40 s, then the "
          "budget (3) parks the keepalive; a deploy of v2 resets it and the next revival finishes")
def guestbook_crash_loop(sim: Simulation, entries: int = 3, entry_ms: int = 200, batch_at: int = 1_000,
                         budget: int = CRASH_LOOP_BUDGET, deploy_at: int = 300_000, hosting: str = "root") -> dict:
    if hosting not in ("root", "facet-proxy"):
        raise ScenarioError(f"hosting must be 'root' or 'facet-proxy', got {hosting!r}")
    if hosting == "facet-proxy":
        _need_facets(sim, "guestbook-crash-loop (hosting=facet-proxy)")
    _configure(sim, entry_ms, "v1", budget)
    binding, cls = ("GUESTBOOK", GuestbookProcessor) if hosting == "root" else ("APP", GuestbookProxyApp)
    target = sim.namespace(binding, cls).get("processor")
    calls: list[dict] = []
    _call_at(sim, batch_at, lambda: target.deliver(guestbook_batch(0, entries, {1: "!poison"})), calls, "deliver")
    sim.run(until=deploy_at)
    before = _view(sim, target, binding)

    sim.env.GUESTBOOK_VERSION = "v2"  # the deploy: a new registry version, then new instances
    sim.journal_event("deploy", detail={"version": "v2"})
    sim.restart(1_000)
    sim.run(until=deploy_at + 1_000)
    _call_at(sim, deploy_at + 1_000, lambda: target.status(), calls, "status after deploy")
    sim.run()
    view = _view(sim, target, binding)
    return {"calls": calls, "keepalive_fires": keepalive_fires(sim), "before_deploy": before, **view,
            "final_alarm": sim.inspect(target).alarm, "report": _story(sim, view, calls)}


def _fleet(sim: Simulation, cells: int, first_batch_at: int, spacing_ms: int, entry_ms: int) -> list[dict]:
    """``cells`` processors, one batch each, ``spacing_ms`` apart; each dies 300 ms into its batch
    (dormant from then on). One more, ``resident``, hits a transient failure and stays up."""
    _configure(sim, entry_ms)
    ns = sim.namespace("GUESTBOOK", GuestbookProcessor)
    plan = [(f"cell-{i}", first_batch_at + i * spacing_ms, {}) for i in range(cells)]
    plan.append(("resident", first_batch_at + spacing_ms // 2, {1: "!flaky"}))
    calls: list[dict] = []
    for name, t, special in plan:
        stub = ns.get(name)
        _call_at(sim, t, lambda stub=stub, special=special: stub.deliver(guestbook_batch(0, 3, special)), calls, name)
        if not special:
            sim.call_at(t + 300, sim.evict, stub, "the process died mid-batch")
    sim.run()
    woken = {w["object_id"] for w in _kinds(sim, "wake") if not w["spurious"]}
    fires = [{"cell": f["object_id"], "batch": "failed, stayed up" if f["object_id"] == "resident" else "died",
              "woken_by": "bucket" if f["object_id"] in woken else "timer",
              "armed_at_ms": f["armed_at_ms"], "fired_at_ms": f["t_ms"], "late_ms": f["late_ms"],
              "late_vs_rung": round(f["late_ms"] / KEEPALIVE_ALARM_LEAD_MS, 3)}
             for f in keepalive_fires(sim) if f["outcome"] == "revived"]
    return sorted(fires, key=lambda f: (f["armed_at_ms"], f["cell"]))


@scenario("keepalive-celld-vs-workerd", "the keepalive on celld, cells going dormant mid-batch: minute-bucket wakes "
          "fire up to ~50 s late against the 10 s rung; the same fleet on workerd fires a few ms late", profile="celld")
def keepalive_celld_vs_workerd(sim: Simulation, cells: int = 5, first_batch_at: int = 5_000, spacing_ms: int = 13_000,
                               entry_ms: int = 200, resident_ms: int | None = None,
                               compare_profile: str = "workerd") -> dict:
    if sim.profile.scheduler != "celld":
        raise ScenarioError(
            f"keepalive-celld-vs-workerd runs on celld and compares it with {compare_profile!r}; profile "
            f"{sim.profile.name!r} is not celld: drop --profile (or pass --profile celld)"
        )
    if resident_ms is not None:
        sim.configure(resident_ms=resident_ms)
    celld = _fleet(sim, cells, first_batch_at, spacing_ms, entry_ms)
    with Simulation(profile=compare_profile, seed=sim.seed, journal=sim.journal, scenario="keepalive-celld-vs-workerd",
                    params={"cells": cells, "first_batch_at": first_batch_at, "spacing_ms": spacing_ms,
                            "entry_ms": entry_ms, "compared_with": sim.profile.name}) as other:
        workerd = _fleet(other, cells, first_batch_at, spacing_ms, entry_ms)
    report = [f"  {'cell':<9} {'woken by':<9} {'armed for':>10} {'celld fired':>12} {'late':>8}   "
              f"{compare_profile + ' fired':>14} {'late':>6}"]
    by_cell = {w["cell"]: w for w in workerd}
    for c in sorted(celld, key=lambda c: (c["armed_at_ms"], c["cell"])):
        w = by_cell.get(c["cell"], {"fired_at_ms": None, "late_ms": None})
        report.append(f"  {c['cell']:<9} {c['woken_by']:<9} {c['armed_at_ms']:>10} {c['fired_at_ms']:>12} {c['late_ms']:>8}   "
                      f"{w['fired_at_ms']:>14} {w['late_ms']:>6}")
    worst = max(c["late_ms"] for c in celld)
    report.append(f"  worst celld lateness {worst} ms = {worst / KEEPALIVE_ALARM_LEAD_MS:.1f}x the "
                  f"{KEEPALIVE_ALARM_LEAD_MS} ms first rung; {compare_profile}: {max(w['late_ms'] for w in workerd)} ms")
    return {"rung_ms": KEEPALIVE_ALARM_LEAD_MS, "celld": celld, compare_profile: workerd,
            "max_late_ms": {sim.profile.name: worst, compare_profile: max(w["late_ms"] for w in workerd)},
            "compare_run_id": other.run_id, "report": report}
