"""The pipe between Python and the JS host: polling before blocking changes how fast an answer is
seen, never what happens (the same journal, row for row, with polling on and off), and never runs
where this process has one CPU only."""

from pathlib import Path

import alarmkit as ak
import pytest
from alarmkit.workers.js import _node, load

# these tests are about the JavaScript host's pipe, not fire lateness: simulations here take fire_latency="exact"
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)

REARM = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_js_rearm.js"


def rearm_run(monkeypatch, spin_us):
    monkeypatch.setenv("ALARMKIT_JSHOST_SPIN_US", spin_us)
    sim = ak.Simulation(seed=7, fire_latency="exact")
    w = load(sim, REARM, {"R": "Rearm"})
    sim.call(sim.gather(*(w.env.R.getByName(f"o{i}").start(4) for i in range(5))))
    sim.run()
    return sim, sim.events().to_dict("records")


def test_polling_on_and_off_give_the_same_journal(js_host, monkeypatch):
    on, rows_on = rearm_run(monkeypatch, "100")
    off, rows_off = rearm_run(monkeypatch, "0")
    assert rows_on == rows_off
    fires = [(r["t_ms"], r["object_id"], r["scheduled_ms"]) for r in rows_on if r["kind"] == "fire"]
    assert len(fires) == 20 and fires[:2] == [(55, "o0", 53), (352, "o1", 350)]  # the seed's first re-arms, 2 ms late
    assert off._js_bridge.proc.polled == 0 and off._js_bridge.proc.spin_s == 0


def test_one_cpu_never_polls(js_host, monkeypatch):
    monkeypatch.setattr(_node.os, "sched_getaffinity", lambda pid: {0})
    monkeypatch.delenv("ALARMKIT_JSHOST_SPIN_US", raising=False)
    assert _node._spin_s() == 0.0
    monkeypatch.setenv("ALARMKIT_JSHOST_SPIN_US", "500")
    assert _node._spin_s() == 0.0
    sim, rows = rearm_run(monkeypatch, "500")
    proc = sim._js_bridge.proc
    assert proc.spin_s == 0 and proc.polled == 0 and proc.blocked > 0
    assert proc.proc.args[-1] == "0"  # host.mjs is told not to poll either


def test_two_cpus_poll_for_the_configured_time(monkeypatch):
    monkeypatch.setattr(_node.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.delenv("ALARMKIT_JSHOST_SPIN_US", raising=False)
    assert _node._spin_s() == pytest.approx(_node.SPIN_US / 1e6)
    monkeypatch.setenv("ALARMKIT_JSHOST_SPIN_US", "250")
    assert _node._spin_s() == pytest.approx(250e-6)


def test_the_host_answers_any_number_of_stats_messages_in_a_row(js_host):
    proc = _node.NodeProcess(_node.find_node())  # it answered them by recursion once, and died near 6,000
    try:
        for _ in range(12_000):
            proc.send({"t": "stats"})
            stats = proc.recv()
        assert stats["t"] == "stats" and stats["polled"] + stats["blocked"] >= 12_000
    finally:
        proc.close()
