"""The guestbook keepalive: rungs, self-gating, revival, the crash-loop budget, three hostings."""

import json
import subprocess
import sys

import pytest

import alarmkit as ak
from alarmkit.scenarios.guestbook import KEEPALIVE_ALARM_LEAD_MS, GuestbookProcessor, guestbook_batch, keepalive_fires, keepalive_lead_ms


def kinds(sim, *names):
    ev = sim.events()
    return [(int(r.t_ms), r.kind, r.object_id, json.loads(r.detail) if isinstance(r.detail, str) else None)
            for r in ev[ev["kind"].isin(names)].itertuples()]


def fires(r):
    return [(f["t_ms"], f["armed_at_ms"], f["outcome"]) for f in r["keepalive_fires"]]


def test_the_ladder_starts_at_10_s_and_climbs_to_160_s():
    assert KEEPALIVE_ALARM_LEAD_MS == 10_000
    assert [keepalive_lead_ms(r) for r in range(7)] == [10_000, 20_000, 40_000, 80_000, 160_000, 160_000, 160_000]


def test_root_the_process_dies_mid_batch_and_the_10_s_fire_revives_it():
    r = ak.run_scenario("guestbook-root", seed=1)
    sim = r.sim
    assert r["calls"][0]["error"] == "ObjectCrashed"
    assert fires(r) == [(11_002, 11_000, "revived")]
    arms = [(t, d["rung"], d["lead_ms"], d["cause"]) for t, _, _, d in kinds(sim, "keepalive_arm")]
    assert arms == [(1_000, 0, 10_000, "batch"), (11_002, 1, 20_000, "revival")]
    (_, _, _, revival), = kinds(sim, "revival")
    assert revival == {"revivals": 1, "build": "v1", "build_revivals": 1, "budget": 3, "cursor": 1, "rung": 0}
    assert [t for t, *_ in kinds(sim, "keepalive_disarm")] == [11_602]  # 3 entries left, 200 ms each
    assert r["signed"] == [0, 1, 2, 3, 4] and r["revivals"] == 1 and r["keepalive"] is None
    assert r["final_alarm"] is None


def test_crash_loop_budget_parks_the_keepalive_and_a_deploy_resets_it():
    r = ak.run_scenario("guestbook-crash-loop", seed=1)
    # each fire is late by seed 1's next draw of the workerd fire latency (2, 1, 2, 1, 2 ms), and each
    # revival re-arms from the time it ran
    assert fires(r) == [
        (11_002, 11_000, "revived"),  # rung 0: 10 s after the batch
        (31_003, 31_002, "revived"),  # rung 1: 20 s
        (71_005, 71_003, "revived"),  # rung 2: 40 s
        (151_006, 151_005, "budget spent"),  # rung 3 came due; 3 revivals in build v1 is the budget
        (311_002, 311_000, "revived"),  # deploy of v2 at 300 s, first wake at 301 s re-arms at rung 0
    ]
    assert r["before_deploy"] == {
        "signed": [0], "cursor": 0, "inbox": 3, "revivals": 3, "revivals_by_build": {"v1": 3},
        "keepalive": {"armed_at_ms": 151_005, "rung": 3, "parked_build": "v1"},
    }
    assert r["signed"] == [0, 1, 2] and r["revivals"] == 4 and r["revivals_by_build"] == {"v2": 1}
    assert r["keepalive"] is None and r["final_alarm"] is None
    errors = kinds(r.sim, "handler_error")
    assert [(t, d["error"], d["counted"]) for t, _, _, d in errors] == [
        (11_202, "PoisonEntry", True), (31_203, "PoisonEntry", True), (71_205, "PoisonEntry", True)]
    # the re-arm made inside each failing handler is what runs next: no workerd retry ever fires
    assert [a["retry_count"] for a in r.attempts] == [0, 0, 0, 0, 0]


def test_a_smaller_budget_stops_sooner():
    r = ak.run_scenario("guestbook-crash-loop", seed=1, budget=1)
    assert fires(r)[:2] == [(11_002, 11_000, "revived"), (31_003, 31_002, "budget spent")]


def test_crash_loop_behind_the_proxy_has_the_same_timeline():
    root = ak.run_scenario("guestbook-crash-loop", seed=1)
    proxy = ak.run_scenario("guestbook-crash-loop", seed=1, hosting="facet-proxy")
    assert fires(proxy) == fires(root)
    assert {f["object_id"] for f in proxy["keepalive_fires"]} == {"processor/guestbook"}
    assert proxy["signed"] == [0, 1, 2] and proxy["revivals_by_build"] == {"v2": 1}


@pytest.fixture
def dying():
    """A root processor whose process dies 500 ms into a 5-entry batch delivered at 1 s. Its tests are about
    the keepalive's logic, not fire lateness: fire_latency="exact" (each fire 2 ms late)."""
    sim = ak.Simulation(profile="workerd", seed=0, fire_latency="exact")
    sim.env.GUESTBOOK_ENTRY_MS = 200
    proc = sim.namespace("GUESTBOOK", GuestbookProcessor).get("p")
    sim.run(until=1_000)
    sim.kernel.spawn(proc.deliver(guestbook_batch(0, 5)))
    sim.kernel.call_at(1_500, sim.evict, proc, "died")
    return sim, proc


def _ignore(token, ok, counted):
    """A done callback for an alarm delivered by hand: nothing schedules a retry."""


def _fires(sim):
    return [(f["t_ms"], f["armed_at_ms"], f["outcome"]) for f in keepalive_fires(sim)]


def test_an_early_fire_rearms_for_armed_at_and_revives_nothing(dying):
    sim, proc = dying
    sim.run(until=5_000)
    sim.deliver(proc._host, 5_000, 0, _ignore, None)  # a fire 6 s before the keepalive's armed_at_ms
    sim.run()
    assert _fires(sim) == [(5_000, 11_000, "early"), (11_002, 11_000, "revived")]
    assert [d["revivals"] for *_, d in kinds(sim, "revival")] == [1]


def test_duplicate_fires_during_and_after_a_revival_are_harmless(dying):
    sim, proc = dying
    sim.run(until=11_100)  # the revival is running: the record has climbed to 31 002
    sim.deliver(proc._host, 11_000, 0, _ignore, None)
    sim.run(until=12_000)  # the revival is done: the record is gone
    sim.deliver(proc._host, 11_000, 0, _ignore, None)
    sim.run()
    assert _fires(sim) == [(11_002, 11_000, "revived"), (11_100, 31_002, "early"), (12_000, None, "no record")]
    assert [d["revivals"] for *_, d in kinds(sim, "revival")] == [1]
    view = sim.inspect(proc)
    assert view.sql("SELECT COUNT(*) AS n FROM signed") == [{"n": 5}]
    assert view.alarm is None and view.sql("SELECT * FROM keepalive") == []


def test_a_late_fire_after_an_outage_still_revives(dying):
    sim, proc = dying
    sim.run(until=1_500)
    sim.restart(20_000)  # down across armed_at_ms = 11 000; the alarm reloads at 21.5 s
    sim.run()
    assert _fires(sim) == [(21_502, 11_000, "revived")]
    assert keepalive_fires(sim)[0]["late_ms"] == 10_502
    assert sim.inspect(proc).sql("SELECT COUNT(*) AS n FROM signed") == [{"n": 5}]


def test_redelivery_is_idempotent():
    sim = ak.Simulation()
    sim.env.GUESTBOOK_ENTRY_MS = 10
    proc = sim.namespace("GUESTBOOK", GuestbookProcessor).get("p")
    batch = guestbook_batch(0, 3)
    assert sim.call(proc.deliver(batch)) == {"signed": 3, "cursor": 2}
    assert sim.call(proc.deliver(batch)) == {"signed": 0, "cursor": 2}
    status = sim.call(proc.status())
    assert status["signed"] == [0, 1, 2] and status["keepalive"] is None and status["alarm"] is None
    assert [t for t, *_ in kinds(sim, "keepalive_arm")] == [0, 30]  # armed before each batch...
    assert [t for t, *_ in kinds(sim, "keepalive_disarm")] == [30, 30]  # ...and disarmed after


def test_facet_without_proxy_on_workerd_breaks_the_facet_every_delivery():
    r = ak.run_scenario("guestbook-facet", seed=1)
    calls = [(c["t_ms"], c["call"], c["ok"], c.get("message")) for c in r["calls"]]
    assert calls == [
        (900, "parent visit", True, None),  # the parent's own work carries on
        (1_000, "deliver", False, "Facets currently cannot set alarms."),
        (3_000, "deliver", False, "Facets currently cannot set alarms."),
    ]
    assert [(b["t_ms"], b["kind"], b["object_id"]) for b in r["broken"]] == [
        (1_000, "facet_broken", "app/guestbook"), (3_000, "facet_broken", "app/guestbook")]
    # the inbox, keepalive row and alarm were one transaction: all lost; nothing owed, nothing done
    assert r["signed"] == [] and r["inbox"] == 0 and r["keepalive"] is None and r["final_alarm"] is None
    assert r.attempts == []


def test_facet_without_proxy_on_workerd_2026_07_breaks_the_whole_actor():
    r = ak.run_scenario("guestbook-facet", seed=1, profile="workerd-2026-07")
    msg = "alarms are not yet implemented for SQLite-backed Durable Objects"
    calls = [(c["t_ms"], c["call"], c["ok"], c.get("message"), c["done_ms"]) for c in r["calls"]]
    assert calls == [
        (900, "parent visit", False, msg, 1_000),  # unrelated, in flight: broken with the actor
        (1_000, "deliver", False, msg, 1_000),
        (3_000, "deliver", False, msg, 3_000),
    ]
    assert [(b["t_ms"], b["kind"], b["object_id"], b["facet"]) for b in r["broken"]] == [
        (1_000, "actor_broken", "app", "app/guestbook"), (3_000, "actor_broken", "app", "app/guestbook")]
    assert sorted(r["broken"][0]["calls"]) == ["app/guestbook:rpc:deliver", "app:rpc:deliver", "app:rpc:visit"]


@pytest.mark.parametrize("outage", ["evict", "restart"])
def test_facet_behind_the_proxy_is_revived_by_the_parents_alarm(outage):
    r = ak.run_scenario("guestbook-facet-proxy", seed=1, outage=outage)
    sim = r.sim
    # seed 1's draws of the fire latency are 2, 1 ms: the restart reloads the alarm, whose timer takes the second
    t = {"evict": 11_002, "restart": 11_001}[outage]
    assert fires(r) == [(t, 11_000, "revived")]
    assert r["signed"] == [0, 1, 2, 3, 4] and r["revivals"] == 1 and r["final_alarm"] is None
    assert [(a["t_ms"], a["object_id"]) for a in r.attempts] == [(t, "app")]  # the parent's real alarm
    assert [(p["t_ms"], p["kind"], p.get("op")) for p in r["proxy"]] == [
        (1_000, "proxy_arm", "set"), (t, "proxy_deliver", None), (t, "proxy_arm", "set"),
        (t + 600, "proxy_arm", "delete")]
    constructs = [(t, o) for t, _, o, _ in kinds(sim, "construct")]
    assert constructs[-2:] == [(t, "app"), (t, "app/guestbook")]  # booted from the stored ref
    assert kinds(sim, "facet_broken", "actor_broken") == []


def test_facet_scenarios_refuse_celld_with_the_way_out():
    with pytest.raises(ak.ScenarioError, match=r"^scenario 'guestbook-facet' hosts the processor as a facet, and "
                                               r"profile 'celld' has no facets"):
        ak.run_scenario("guestbook-facet", profile="celld")


def test_the_crash_loop_is_deterministic():
    a = ak.run_scenario("guestbook-crash-loop", seed=3).events
    b = ak.run_scenario("guestbook-crash-loop", seed=3).events
    assert a.equals(b)


def alarmkit(*args):
    return subprocess.run([sys.executable, "-m", "alarmkit", *args], capture_output=True, text=True, timeout=120)


def test_cli_lists_runs_and_refuses_bad_profile_combinations():
    names = {s["name"] for s in json.loads(alarmkit("list", "--json").stdout)}
    assert {"guestbook-root", "guestbook-facet", "guestbook-facet-proxy", "guestbook-crash-loop",
            "keepalive-celld-vs-workerd"} <= names
    p = alarmkit("run", "guestbook-facet", "--profile", "workerd-2026-07")
    assert p.returncode == 0 and "actor_broken at 1000 ms on app" in p.stdout
    p = alarmkit("run", "guestbook-facet", "--profile", "celld")
    assert p.returncode == 2 and "profile 'celld' has no facets" in p.stderr and "Traceback" not in p.stderr
    p = alarmkit("run", "keepalive-celld-vs-workerd", "--profile", "workerd")
    assert p.returncode == 2 and "profile 'workerd' is not celld" in p.stderr


def test_every_kind_these_scenarios_journal_is_a_known_kind():
    from alarmkit.journal import EVENT_KINDS

    seen = set()
    for name, profile in [("guestbook-root", None), ("guestbook-facet", None), ("guestbook-facet", "workerd-2026-07"),
                          ("guestbook-facet-proxy", None), ("guestbook-crash-loop", None),
                          ("keepalive-celld-vs-workerd", None)]:
        seen |= set(ak.run_scenario(name, profile=profile).events["kind"])
    assert seen <= set(EVENT_KINDS), sorted(seen - set(EVENT_KINDS))
    assert {"facet_broken", "actor_broken", "proxy_arm", "proxy_deliver", "keepalive_arm", "keepalive_disarm",
            "keepalive_fire", "revival", "deploy", "wake", "bucket"} <= seen
