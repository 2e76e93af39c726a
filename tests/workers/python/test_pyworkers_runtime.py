"""A loaded worker's objects are objects of the simulation: restarts and evictions, other profiles, the
journal, timelines, reports and the explorer widget work on them as on any alarmkit object."""

import pytest

import alarmkit as ak
from alarmkit.viz.plots import timeline
from alarmkit.viz.report import export_html
from alarmkit.workers import example, registered, run_worker

from pyworker_support import FIXTURES, kinds
from alarmkit.runtime.profiles import PROFILES

# these tests are about Python workers, not fire lateness: simulations here take the exact fire latency
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)
EXACT = PROFILES["workerd"].replace(fire_latency="exact")


def test_a_restart_reloads_the_stored_alarm_and_the_constructor_restores_state(load):
    sim, w = load("batcher.py", BATCHER="Batcher")
    b = w.env.BATCHER.getByName("main")
    sim.call(b.add("x"))
    sim.call_at(3_000, sim.restart, 20_000)  # down from 3 s to 23 s: the alarm due at 10 s fires on the way back
    sim.run()
    assert kinds(sim, "restart", "fire") == [(3_000, None, "restart", None), (23_002, "main", "fire", 10_000)]
    assert sim.call(b.batches()) == [{"at": 23_002, "items": ["x"], "retry": 0}]
    assert sim.call(b.seen()) == 1  # a new instance: blockConcurrencyWhile read the count back


def test_another_profile_and_an_epoch_start(load):
    sim, w = load("ttl.py", sim_kwargs={"profile": "celld", "start_ms": 1_767_225_600_000}, CACHE="TtlCache")
    cache = w.env.CACHE.getByName("c")
    assert sim.call(cache.put("a", "1", 5_000))["at"] == "2026-01-01T00:00:00"
    sim.run()
    (t, _o, _k, scheduled), = kinds(sim, "fire")
    assert scheduled == 1_767_225_605_000 and t >= scheduled  # celld: minute buckets, never early
    assert sim.inspect(cache).sql("SELECT key FROM entries") == []


def test_journal_timeline_report_and_check(tmp_path):
    j = ak.Journal(tmp_path / "j.duckdb")
    run = run_worker(None, example("drive.json"), wrangler=example("wrangler.jsonc"), journal=j, seed=4, profile=EXACT)
    events = j.events(run.run_id)
    assert list(events.query("kind == 'fire'")["t_ms"]) == [1_002, 6_002]
    fig = timeline(events, title="outbox")
    fires = [tr for tr in fig.data if tr.name == "fire"]
    assert [list(tr.x) for tr in fires] == [[1.002, 6.002]]  # seconds on the time axis
    out = export_html(run, tmp_path / "outbox.html")
    assert out.stat().st_size > 10_000 and "worker" in out.read_text()[:5_000]
    assert ak.check(run).ok
    j.close()


def test_the_explorer_widget_runs_a_worker():
    pytest.importorskip("ipywidgets")
    from alarmkit.viz.widgets import Explorer

    with registered():
        e = Explorer("worker", entry=str(example("outbox.py")), drive=str(example("drive.json")),
                     wrangler=str(example("wrangler.jsonc")))
        assert [a["t_ms"] for a in e.result.attempts] == [1_002, 6_002]
        e.latency.value = 7
        assert [a["t_ms"] for a in e.result.attempts] == [1_007, 6_007]
    assert "worker" not in ak.SCENARIOS


def test_fixture_folder_is_plain_cloudflare_code():
    for f in list(FIXTURES.glob("*.py")) + list(example("outbox.py").parent.glob("*.py")):
        text = f.read_text()
        assert "alarmkit" not in text and "from workers import" in text, f
