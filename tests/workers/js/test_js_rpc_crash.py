"""A call between JavaScript Durable Objects (an RPC through a stub) as a crash window: a fault plan that asks
for a crash of the receiving object must either crash it or say, in the run's result and verdict and in
``alarmkit explore``'s warning, that it never applied. The worker is tests/workers/js/objects/rpc_queue.js: a
queue that clears its items, then hands them to a sink from its alarm (the "delete, then call" bug)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import alarmkit as ak
import pytest
from alarmkit.runtime.profiles import PROFILES
from alarmkit.workers import explore_worker, run_worker

EXACT = PROFILES["workerd"].replace(fire_latency="exact")  # each fire 2 ms late: exact times below
ROOT = Path(__file__).resolve().parents[3]
BIND = {"QUEUE": "Queue", "SINK": "Sink"}


@pytest.fixture
def q(js_host):
    return {"js": js_host / "rpc_queue.js", "drive": js_host / "rpc_queue_drive.json"}


def _crash_sink(at_await: int) -> ak.FaultPlan:
    return ak.FaultPlan(crashes=[{"task": "rpc:store", "invocation": 1, "at_await": at_await, "object": "sink"}])


def test_a_receiver_crash_that_never_applied_is_said_in_the_result_and_its_verdict(q):
    r = run_worker(q["js"], q["drive"], bindings=BIND, faults=_crash_sink(2), profile=EXACT)
    why = "task 'rpc:store' invocation 1 reached 1 await(s); await 2 never came"  # one crash point per JS turn
    assert r.unapplied == {"crashes[0]": why}
    assert r["expect_failures"] == [] and [(a["t_ms"], a["outcome"]) for a in r.attempts] == [(502, "ok")]
    assert r.verdict.status == "warning"  # not a green "held": the crash asked for never happened
    assert [w.text for w in r.verdict.warnings] == [f"fault plan not applied · 1 of 1 plan entry never applied: crashes[0]: {why}"]
    assert r.verdict.headline.startswith("WARNING, nothing broken but: fault plan not applied")
    clean = run_worker(q["js"], q["drive"], bindings=BIND, profile=EXACT)  # no plan: nothing to warn of
    assert clean.unapplied == {} and clean.verdict.status == "held"


def test_the_receiving_object_crashes_before_its_turn_commits(q):
    r = run_worker(q["js"], q["drive"], bindings=BIND, faults=_crash_sink(1), profile=EXACT)
    assert r.unapplied == {}
    ev = r.events
    hits = ev[ev["kind"].isin(["call", "fault", "crash"]) & (ev["object_id"] == "sink")]
    assert [(t, k) for t, k in zip(hits["t_ms"], hits["kind"])] == [(502, "call"), (502, "fault"), (502, "crash"), (2936, "call")]
    # the caller's alarm() fails with the crash and is retried 2 s (+ the 2 ms fire latency) later, but the
    # queue had cleared its items before the call: both are lost, as in workerd
    assert [(a["t_ms"], a["retry_count"], a["outcome"]) for a in r.attempts] == [(502, 0, "threw"), (2936, 1, "ok")]
    assert r.attempts[0]["error"] == "JsError: Error: object sink crashed: injected at await 1 of rpc:store"
    assert r["expect_failures"] == ["SINK:sink kv 'item:a': expected true, got null",
                                    "SINK:sink kv 'item:b': expected true, got null"]
    # every incoming call's JS turn is one crash point (rpc:push, rpc:store), before its writes commit
    assert r.sim.faults.points == [("q", "rpc:push", 1, 1, 0), ("q", "rpc:push", 2, 1, 100), ("q", "alarm", 1, 1, 502),
                                   ("q", "rpc:out:SINK.store", 1, 1, 502), ("sink", "rpc:store", 1, 1, 502),
                                   ("q", "alarm", 1, 2, 502), ("q", "alarm", 2, 1, 2936), ("q", "rpc:out:SINK.store", 2, 1, 2936),
                                   ("sink", "rpc:store", 2, 1, 2936), ("q", "alarm", 2, 2, 2936)]


def test_explore_finds_the_delete_then_call_window_at_depth_1_and_not_in_the_fix(q):
    broken = explore_worker(q["js"], q["drive"], bindings=BIND, seeds=0, depth=1, workers=1, progress=False, profile=EXACT)
    assert [(c.invariant, c.plan.crashes[0].object, c.plan.crashes[0].task) for c in broken.counterexamples] == [
        ("expect", "sink", "rpc:store")]
    assert "expect on sink (shrunk from crash:sink/rpc:store#1@1" in broken.report()
    fixed = explore_worker(q["js"], q["drive"], bindings={**BIND, "QUEUE": "QueueFixed"}, seeds=0, depth=1, workers=1,
                           progress=False, profile=EXACT)
    assert fixed.counterexamples == [] and len(fixed.table) == len(broken.table) == 8  # baseline + 7 crash points


def test_explore_with_a_plan_that_never_applied_warns_on_the_cli(q, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text('{"crashes": [{"task": "rpc:store", "object": "sink", "invocation": 1, "at_await": 2}]}')
    p = subprocess.run([sys.executable, "-m", "alarmkit", "explore", "--worker", str(q["js"]), "--bind", "QUEUE=Queue",
                        "--bind", "SINK=Sink", "--drive", str(q["drive"]), "--seeds", "1", "--crash-points", "none",
                        "--faults", str(plan)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = ("1 of 1 plan entry never applied: crashes[0]: task 'rpc:store' invocation 1 reached 1 await(s); "
            "await 2 never came")
    assert p.returncode == 0, p.stderr
    assert f"warning: {line}" in p.stdout and f"alarmkit: warning: {line}" in p.stderr
    assert "no fault applied in any run: no violation found, but this says nothing about faults" in p.stdout


def test_js_leases_tries_a_crashed_grant_again_and_owes_nothing_for_one_that_never_got_through(js_host):
    import alarmkit.workers.js.scenarios  # noqa: F401 - registers js-leases

    def run(invocations):
        plan = ak.FaultPlan(crashes=[{"task": "rpc:grant", "invocation": i, "at_await": 1, "object": "ledger"}
                                     for i in invocations])
        return ak.run_scenario("js-leases-fixed", faults=plan, profile=EXACT)

    once = run([1])  # the ledger crashes in the first grant, before it commits: the client tries again at once
    ev = once.events
    assert [(t, k) for t, k in zip(ev["t_ms"], ev["kind"]) if k in ("call", "crash", "effect")] == [
        (0, "call"), (0, "crash"), (0, "call"), (0, "call"), (302, "effect"), (1502, "effect")]
    assert once.unapplied == {} and once["failed_grants"] == [] and ak.check(once).ok
    assert [o["due_ms"] for o in once.obligations] == [300, 1500]
    never = run([1, 2, 3])  # every try of lease a crashed: its client knows, and nothing is owed for it
    assert never.unapplied == {} and never["failed_grants"] == ["a"] and ak.check(never).ok
    assert [o["key"] for o in never.obligations] == ["https://revoker.example/revoke?id=b"]
