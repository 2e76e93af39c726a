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
from alarmkit.workers import run_worker

EXACT = PROFILES["workerd"].replace(fire_latency="exact")  # each fire 2 ms late: exact times below
ROOT = Path(__file__).resolve().parents[3]
BIND = {"QUEUE": "Queue", "SINK": "Sink"}


@pytest.fixture
def q(js_host):
    return {"js": js_host / "rpc_queue.js", "drive": js_host / "rpc_queue_drive.json"}


def _crash_sink(at_await: int) -> ak.FaultPlan:
    return ak.FaultPlan(crashes=[{"task": "rpc:store", "invocation": 1, "at_await": at_await, "object": "sink"}])


def test_a_receiver_crash_that_never_applied_is_said_in_the_result_and_its_verdict(q):
    r = run_worker(q["js"], q["drive"], bindings=BIND, faults=_crash_sink(1), profile=EXACT)
    why = ("object 'sink' reached no await in this run, so it had no crash point; crash points seen: q/alarm, "
           "q/rpc:out:SINK.store")
    assert r.unapplied == {"crashes[0]": why}
    assert r["expect_failures"] == [] and [(a["t_ms"], a["outcome"]) for a in r.attempts] == [(502, "ok")]
    assert r.verdict.status == "warning"  # not a green "held": the crash asked for never happened
    assert [w.text for w in r.verdict.warnings] == [f"fault plan not applied · 1 of 1 plan entry never applied: crashes[0]: {why}"]
    assert r.verdict.headline.startswith("WARNING, nothing broken but: fault plan not applied")
    clean = run_worker(q["js"], q["drive"], bindings=BIND, profile=EXACT)  # no plan: nothing to warn of
    assert clean.unapplied == {} and clean.verdict.status == "held"


def test_explore_with_a_plan_that_never_applied_warns_on_the_cli(q, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text('{"crashes": [{"task": "rpc:store", "object": "sink", "invocation": 1, "at_await": 1}]}')
    p = subprocess.run([sys.executable, "-m", "alarmkit", "explore", "--worker", str(q["js"]), "--bind", "QUEUE=Queue",
                        "--bind", "SINK=Sink", "--drive", str(q["drive"]), "--seeds", "1", "--crash-points", "none",
                        "--faults", str(plan)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = ("1 of 1 plan entry never applied: crashes[0]: object 'sink' reached no await in this run, so it had no "
            "crash point; crash points seen: q/alarm, q/rpc:out:SINK.store")
    assert p.returncode == 0, p.stderr
    assert f"warning: {line}" in p.stdout and f"alarmkit: warning: {line}" in p.stderr
    assert "no fault applied in any run: no violation found, but this says nothing about faults" in p.stdout
