"""ctx.facets under the JavaScript host (tests/workers/js/objects/facets.js, written for Cloudflare): the
Python runtime's facet model does the work (its own storage per facet, the startup callback only when
the facet is not running, abort, delete, the alarm that breaks the facet), at exact virtual times."""

import json

import alarmkit as ak
import pytest
from alarmkit.errors import ActorBroken
from alarmkit.workers.js import load

FACET_ALARM = "Error: Facets currently cannot set alarms."


def tenant(js_host, profile="workerd"):
    sim = ak.Simulation(seed=0, profile=profile)
    w = load(sim, js_host / "facets.js", {"TENANT": "Tenant"})
    return sim, w.env.TENANT.getByName("acme")


def rows(sim):
    ev = sim.events()
    return list(zip(ev["t_ms"], ev["object_id"], ev["kind"]))


def test_each_facet_has_its_own_storage_and_starts_once(js_host):
    sim, t = tenant(js_host)
    assert [sim.call(t.bump(n)) for n in ("alice", "alice", "bob", "alice")] == [1, 2, 1, 3]
    assert sim.call(t.starts()) == 2                                   # the callback ran once per facet
    assert sim.call(t.own()) == {"count": None, "facets": "object"}    # the parent's storage has no count
    constructs = [(o, k) for _, o, k in rows(sim) if k == "construct"]
    assert constructs == [("acme", "construct"), ("acme/alice", "construct"), ("acme/bob", "construct")]
    assert sim.alarms() == {"acme": None}


def test_abort_fails_the_call_in_flight_keeps_storage_and_the_next_get_starts_it_again(js_host):
    sim, t = tenant(js_host)
    assert sim.call(t.bump("alice")) == 1
    assert sim.call(t.slowThenAbort("alice")) == {"error": "Error: facet acme/alice was aborted: reset by the tenant"}
    assert sim.now == 100                                              # aborted at 100 ms, not after the 500 ms sleep
    assert sim.call(t.bump("alice")) == 2                              # its storage stayed
    assert sim.call(t.starts()) == 2                                   # started again by the callback
    assert (100, "acme/alice", "evict") in rows(sim)


def test_delete_drops_the_facets_storage(js_host):
    sim, t = tenant(js_host)
    assert [sim.call(t.bump("alice")), sim.call(t.bump("alice"))] == [1, 2]
    sim.call(t.remove("alice"))
    assert sim.call(t.bump("alice")) == 1
    assert sim.call(t.bump("bob")) == 1 and sim.call(t.starts()) == 3


def test_a_facets_alarm_breaks_the_facet_not_the_parent(js_host):
    sim, t = tenant(js_host)
    sim.advance(40)
    assert sim.call(t.alive()) == 40
    out = sim.call(t.armFacet("carol"))
    assert out == {"arm": {"error": FACET_ALARM}, "again": {"error": FACET_ALARM},   # the call, then the same stub
                   "regot": {"ok": 1}, "parent": 40}                                 # a fresh facet; the parent carries on
    broken = [r for r in rows(sim) if r[2] == "facet_broken"]
    assert broken == [(40, "acme/carol", "facet_broken")]
    ev = sim.events()
    detail = json.loads(ev[ev["kind"] == "facet_broken"]["detail"].iloc[0])
    assert detail["message"] == "Facets currently cannot set alarms." and detail["mode"] == "commit-breaks-facet"
    assert sim.alarms() == {"acme": None}


def test_before_workerd_pr_7085_a_facets_alarm_breaks_the_whole_actor(js_host):
    sim, t = tenant(js_host, "workerd-2026-07")
    sim.call(t.alive())
    with pytest.raises(ActorBroken, match="alarms are not yet implemented for SQLite-backed Durable Objects"):
        sim.call(t.armFacet("carol"))
    assert [r for r in rows(sim) if r[2] == "actor_broken"] == [(0, "acme", "actor_broken")]


def test_celld_has_no_facets_and_a_facet_answers_fetch(js_host):
    sim, t = tenant(js_host, "celld")
    assert sim.call(t.own())["facets"] == "undefined"
    sim, t = tenant(js_host)
    assert sim.call(t.askFetch("dave")) == {"status": 201, "text": "counter dave got /hello"}


def test_a_startup_callback_without_a_class_is_a_type_error_naming_the_shape(js_host):
    sim, t = tenant(js_host)
    assert sim.call(t.badClass()) == (
        'TypeError: ctx.facets.get("x", callback): the callback returned {"class":"Counter"}; return '
        "{ class: ctx.exports.ClassName } (or a Durable Object namespace of env as the class)")


def test_nested_facets_a_given_id_and_a_restart_with_another_class(js_host):
    sim = ak.Simulation(seed=0)
    root = load(sim, js_host / "nested_facets.js", {"R": "Root"}).env.R.getByName("r")
    assert [sim.call(root.go()), sim.call(root.go())] == [["mid", ["leaf", 1]], ["mid", ["leaf", 2]]]
    assert sim.call(root.ids()) == ["custom", 1]                       # ctx.id from the startup options
    sim.call(root.kill())
    assert sim.call(root.other()) == ["mid", 1]                        # restarted as Leaf, on mid's storage
    constructs = [o for _, o, k in rows(sim) if k == "construct"]
    assert constructs == ["r", "r/mid", "r/mid/leaf", "r/named", "r/mid"]
