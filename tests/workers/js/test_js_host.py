"""The JavaScript host's runtime surface (tests/workers/js/objects/api.js): KV and SQL, timers and the
clock, seeded randomness, ids and stubs, fetch, refusals, the 15-minute limit, restarts, evictions,
abort, and the same journal for the same seed across processes."""

import json
import os
import subprocess
import sys
import textwrap

import alarmkit as ak
import pytest
from alarmkit.workers.js import load

# these tests are about the JavaScript host, not fire lateness: simulations here take fire_latency="exact"
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)


@pytest.fixture
def probe(js_host):
    sim = ak.Simulation(seed=3, fire_latency="exact")
    w = load(sim, js_host / "api.js", {"PROBE": "Probe"})
    return sim, w, w.env.PROBE.getByName("p")


def detail(sim, kind):
    ev = sim.events()
    return [(t, json.loads(d)) for t, d in zip(ev[ev["kind"] == kind]["t_ms"], ev[ev["kind"] == kind]["detail"])]


def test_kv_api_with_list_options(probe):
    sim, _, p = probe
    assert sim.call(p.kv()) == {
        "many": {"a:1": 1, "b:1": "x"}, "prefix": ["a:1", "a:2", "a:3"], "range": ["a:2", "a:3"],
        "after": ["a:3", "b:1"], "rev": ["b:1", "a:3"], "del1": True, "del0": False, "delMany": 2, "afterAll": [],
    }


def test_sql_cursor_transaction_sync_and_errors(probe):
    sim, _, p = probe
    out = sim.call(p.sql())
    assert out["written"] == 3 and out["cols"] == ["k", "v"]
    assert out["first"] == {"k": "a", "v": 1} and out["rest"] == [{"k": "b", "v": 2}, {"k": "c", "v": 3}]
    assert out["raw"] == [["a", 1], ["b", 2], ["c", 3]] and out["iter"] == [1, 2, 3]
    assert out["oneErr"] == "Expected exactly one result from SQL query, but got multiple results."
    assert out["sqlErr"] == "no such table: missing: SQLITE_ERROR"  # workerd's dbErrorMessage (the sql_errors probe)
    assert out["total"] == 6                                              # the throwing transactionSync rolled back
    assert sim.inspect(p).sql("SELECT SUM(v) AS s FROM t") == [{"s": 6}]  # committed at the end of the turn


def test_timers_and_clock_are_virtual(probe):
    sim, _, p = probe
    sim.advance(1_000)
    out = sim.call(p.clock())
    assert out == {"t0": 1_000, "order": ["tick@1030", "tick@1060", "tick@1090", "done@1100"], "perf": 1_100, "date": 1_100}
    assert sim.now == 1_100


def test_randomness_comes_from_the_seed(js_host):
    def draw(seed):
        sim = ak.Simulation(seed=seed, fire_latency="exact")
        return sim.call(load(sim, js_host / "api.js", {"PROBE": "Probe"}).env.PROBE.getByName("p").random())

    a, b, c = draw(7), draw(7), draw(8)
    assert a == b and a != c
    assert len(a["uuid"]) == 36 and a["uuid"][14] == "4"


def test_ids_namespaces_and_rpc_between_objects(probe):
    sim, _, p = probe
    assert sim.call(p.ids()) == {"same": True, "hex": 64, "name": "x", "uniqueName": None, "myName": "p", "moduleEnv": "object"}
    assert sim.call(p.callOther("q", {"a": [1, 2]})) == [{"a": [1, 2]}, "q"]
    assert sim.call(p.callUnique()) == 2
    labels = sorted(h.label for h in sim.hosts())
    assert labels[-2:] == ["p", "q"] and len(labels[0]) == 64                # the unique object is named by its hex id


def test_fetch_default_export_and_object_fetch(probe):
    sim, w, _ = probe
    r = w.fetch("http://x/echo", method="POST", headers={"X-A": "1"}, body="hi")
    assert r.status == 202 and r.json() == {"method": "POST", "body": "hi", "h": "1"}
    assert r.headers.get("x-b") == "2"
    r = w.fetch("http://x/do?z=1")
    assert (r.status, r.text()) == (201, "probe PUT inner ?z=1")
    assert w.fetch("http://x/other").status == 404


@pytest.mark.parametrize("method, message", [
    ("outbound", 'WorkerUnsupported: fetch("https://example.com/") is refused'),  # one class for every refusal
    ("throwsType", "TypeError: Cannot read properties of null"),
])
def test_refusals_and_thrown_errors_reach_the_caller(probe, method, message):
    sim, _, p = probe
    with pytest.raises(ak.JsError) as err:
        sim.call(getattr(p, method)())
    assert str(err.value).startswith(message)


def test_set_alarm_refusals_as_workerd(probe):
    sim, _, p = probe
    for bad in (0, -5):
        with pytest.raises(ak.JsError, match=r"setAlarm\(\) cannot be called with an alarm time <= 0"):
            sim.call(p.setBad(bad))
    with pytest.raises(ak.JsError, match=r"^TypeError: Failed to execute 'setAlarm' on 'DurableObjectStorage': "
                                         r"parameter 1 is not of type 'date'\.$"):
        sim.call(p.setBad("soon"))
    with pytest.raises(ak.JsError, match=r"^TypeError: This API doesn't support dates after 2189\.$"):
        sim.call(p.setBad(1e300))  # a catchable TypeError in the object's code (it failed the whole request)
    with pytest.raises(ak.JsValueError, match="cross to JavaScript as JSON"):
        sim.call(p.setBad(float("nan")))
    assert sim.call(p.kv())["del0"] is False                              # the host still answers


def test_an_unhandled_rejection_is_journaled_not_fatal(probe):
    sim, _, p = probe
    assert sim.call(p.forgotten()) == 1
    assert detail(sim, "console") == [(0, {"level": "error", "text": "Uncaught (in promise) RangeError: nobody awaits me"})]
    assert sim.call(p.forgotten()) == 1                                    # the host is still there


def test_a_call_that_never_settles_is_a_deadlock_not_a_hang(probe):
    sim, _, p = probe
    with pytest.raises(ak.AlarmkitError, match="deadlock"):
        sim.call(p.never())


def test_an_alarm_that_never_settles_hits_the_15_minute_limit(probe):
    sim, _, p = probe
    sim.call(p.setMode("hang"))
    sim.call(p.arm(100))
    sim.run(until=1_000_000)
    errors = detail(sim, "handler_error")
    assert [t for t, _ in errors] == [900_102]                            # fired at 102, 900,000 ms later
    assert errors[0][1]["error"] == "HandlerTimeout" and errors[0][1]["counted"] is True
    assert detail(sim, "console") == [(5, {"level": "log", "text": "waited"})]  # the waitUntil's timer


def test_restart_reloads_the_js_objects_alarm(probe):
    sim, _, p = probe
    sim.call(p.arm(100))
    sim.call_at(50, sim.restart, 1_000)
    sim.run()
    ev = sim.events()
    assert ev[ev["kind"] == "fire"]["t_ms"].tolist() == [1_052]
    assert detail(sim, "console")[-1] == (1_052, {"level": "log", "text": "alarm retry=0"})
    assert ev["kind"].tolist().count("construct") == 2                     # woken again after the restart


def test_eviction_kills_a_pending_timer_and_its_call(probe):
    sim, _, p = probe
    task = sim.spawn(p.clock())
    sim.call_at(40, sim.evict, p)
    sim.run()
    assert isinstance(task.exception(), ak.ObjectCrashed)
    assert not sim.inspect(p).awake
    sim.advance(1_000)
    start = sim.now
    out = sim.call(p.clock())                                              # a new instance: the old interval is gone
    assert out["order"] == [f"tick@{start + 30}", f"tick@{start + 60}", f"tick@{start + 90}", f"done@{start + 100}"]


def test_abort_drops_uncommitted_writes(probe):
    sim, _, p = probe
    with pytest.raises(ak.Aborted, match="enough"):
        sim.call(p.abortMe())
    assert sim.call(p.kv())["afterAll"] == []
    ev = sim.events()
    assert "aborted" in ev["kind"].tolist()


SCRIPT = textwrap.dedent("""
    import json, sys
    import alarmkit as ak
    from alarmkit.workers.js import load, Response
    sim = ak.Simulation(seed=11, fire_latency="exact")
    fails = [3]
    def api(req):
        fails[0] -= 1
        return Response("no", status=503) if fails[0] >= 0 else "ok"
    w = load(sim, sys.argv[1] + "/job.ts", {"JOBS": "JobQueue", "API": api})
    q = w.env.JOBS.getByName("q")
    sim.call(q.enqueue("a", 100)); sim.call(q.enqueue("crash", 50))
    sim.run()
    print(json.dumps([list(r) for r in sim.rows]))
""")


def test_same_seed_same_journal_across_processes(js_host):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    runs = [subprocess.run([sys.executable, "-c", SCRIPT, str(js_host)], capture_output=True, text=True, env=env,
                           timeout=120) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr[-500:]
    rows = [json.loads(r.stdout) for r in runs]
    assert rows[0] == rows[1]
    assert len(rows[0]) > 30                                               # the ladder and the own backoff both ran
