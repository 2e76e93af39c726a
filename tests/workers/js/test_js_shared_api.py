"""A JavaScript/TypeScript worker through the shared Workers API, exactly as a Python worker:
``sim.load_worker`` (path and bindings, or a wrangler file with vars and a refused KV binding),
``run_worker``, ``explore_worker``, ``alarmkit worker`` and ``alarmkit explore --worker``, with one drive
format. The worker is tests/workers/js/objects/reminders.ts (nothing of alarmkit imported)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import alarmkit as ak
import pytest
from alarmkit.workers import Var, Worker, explore_worker, run_worker
from alarmkit.runtime.profiles import PROFILES

# these tests are about the workers' API, not fire lateness: simulations here take the exact fire latency
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)
EXACT = PROFILES["workerd"].replace(fire_latency="exact")

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def rem(js_host):
    return {"ts": js_host / "reminders.ts", "wrangler": js_host / "reminders.jsonc", "drive": js_host / "reminders_drive.json"}


def fires(sim):
    ev = sim.events()
    return list(zip(ev[ev["kind"] == "fire"]["t_ms"], ev[ev["kind"] == "fire"]["object_id"]))


def test_load_worker_from_a_wrangler_file_is_the_shared_worker(rem):
    sim = ak.Simulation(seed=0, fire_latency="exact")
    w = sim.load_worker(wrangler=rem["wrangler"])  # main, bindings, vars, compatibility_date from the file
    assert isinstance(w, Worker) and w.language == "js"
    assert w.classes == {"REMINDERS": "Reminder", "OUTBOX": "Outbox", "FILTER": "Filter"}
    assert w.compatibility_date == sim.profile.compatibility_date == "2026-09-01"
    assert w.methods("REMINDERS") == ["alarm", "fetch", "peek", "schedule"]
    w.check_method("REMINDERS", "schedule")
    with pytest.raises(ak.WorkerError, match=r"Reminder \(binding REMINDERS\) has no method 'nope'; its methods: "
                                              r"\['alarm', 'fetch', 'peek', 'schedule'\]"):
        w.check_method("REMINDERS", "nope")
    # vars: visible to the JS code (GREETING in the object's fetch, LIMITS in schedule) and from Python
    assert (w.env.GREETING, w.env.LIMITS) == ("hello", {"maxDelayMs": 60000})
    assert w.fetch("/remind?who=ann&in=1000", method="POST", body="call mom").json() == {"due": 1000}
    r = w.fetch("/hello?who=ann")
    assert (r.status, r.text()) == (200, "hello, ann")
    with pytest.raises(ak.JsError, match=r"RangeError: delay 60001 is past 60000"):
        sim.call(w.env.REMINDERS.getByName("bob").schedule("late", 60_001))
    # the KV binding is refused by name where it is used: in JS and from Python
    refusal = (r"env\.CACHE\.get: CACHE is a KV namespace, which alarmkit does not simulate; stub it with "
               r"load_worker\(\.\.\., bindings=\{'CACHE': my_fake\}\)")
    r = w.fetch("/cached?who=ann")          # the worker's fetch threw: its client gets workerd's 500
    assert (r.status, r.text()) == (500, "Internal Server Error")
    assert re.match(r"Uncaught WorkerUnsupported: " + refusal, w.logs[-1][2])
    assert w.logs[-1][2].endswith("(in the worker's fetch handler)")
    with pytest.raises(ak.WorkerUnsupported, match=refusal):
        w.env.CACHE.get("ann")
    sim.run()
    assert fires(sim) == [(1002, "ann")]
    assert sim.inspect(w.stub("OUTBOX", "out")).sql("SELECT key, value FROM _cf_KV") == [
        {"key": "m:ann", "value": '"call mom"'}]


class FakeKV:
    def __init__(self):
        self.reads = []

    def get(self, key):
        self.reads.append(key)
        return f"cached:{key}"


def test_load_worker_with_bindings_compat_and_a_python_object(rem):
    sim = ak.Simulation(seed=0, fire_latency="exact")
    kv = FakeKV()
    w = sim.load_worker(rem["ts"], bindings={"REMINDERS": "ReminderFixed", "OUTBOX": "Outbox", "FILTER": "Filter",
                                             "CACHE": kv, "LIMITS": {"maxDelayMs": 10}, "GREETING": Var("hi")},
                        compatibility_date="2026-10-01")
    assert sim.profile.compatibility_date == w.compatibility_date == "2026-10-01"
    assert w.fetch("/cached?who=zoe").text() == "cached:zoe"  # env.CACHE.get(...) in JS called kv.get
    assert kv.reads == ["zoe"]
    assert w.fetch("/hello?who=zoe").text() == "hi, zoe"
    with pytest.raises(ak.JsError, match="RangeError: delay 11 is past 10"):
        sim.call(w.env.REMINDERS.getByName("zoe").schedule("x", 11))
    assert w.fetch("/nope").status == 404


def test_stubs_work_with_inspect_evict_and_rpc(rem):
    sim = ak.Simulation(seed=0, fire_latency="exact")
    w = sim.load_worker(wrangler=rem["wrangler"])
    stub = w.env.REMINDERS.getByName("ann")
    assert sim.call(stub.schedule("call mom", 1500)) == 1500
    assert sim.call(stub.peek()) == "call mom"
    assert sim.inspect(stub).alarm == 1500 and sim.inspect(stub).awake
    sim.evict(stub)
    assert not sim.inspect(stub).awake
    sim.run()
    assert fires(sim) == [(1502, "ann")]  # the evicted object woke for its alarm, 2 ms after it was due
    assert sim.call(stub.peek()) is None
    out = w.stub("OUTBOX", "out")
    assert sim.call(out.deliver("x", "no casino")) == 0  # the filter refused it: nothing kept
    assert sim.call(out.deliver("y", "lunch")) == 2  # m:ann (from the alarm) and m:y
    assert [r["key"] for r in sim.inspect(out).sql("SELECT key FROM _cf_KV ORDER BY key")] == ["m:ann", "m:y"]


def test_run_worker_drives_a_ts_worker_with_exact_times(rem, tmp_path):
    j = ak.Journal(tmp_path / "j.duckdb")
    r = run_worker(None, rem["drive"], wrangler=rem["wrangler"], journal=j, profile=EXACT)
    assert [(o["t_ms"], o["done_ms"], o.get("status", o.get("value"))) for o in r["outcomes"]] == [
        (0, 0, 200), (200, 200, 3200), (500, 500, 200)]
    assert r["outcomes"][2]["body"] == "hello, ann"
    assert [(a["t_ms"], a["retry_count"], a["object_id"]) for a in r.attempts] == [(1002, 0, "ann"), (3202, 0, "bob")]
    assert r["expect_failures"] == [] and ak.check(r).ok
    assert len(j.events(r.run_id)) == r.event_count
    j.close()
    # the outbox crashes in its first delivery: ann's alarm fails and is retried, but ann forgot the text first
    plan = ak.FaultPlan(crashes=[{"task": "rpc:deliver", "invocation": 1, "at_await": 1, "object": "out"}])
    broken = run_worker(None, rem["drive"], wrangler=rem["wrangler"], faults=plan, profile=EXACT)
    assert broken["expect_failures"] == ["OUTBOX:out kv 'm:ann': expected \"call mom\", got null"]
    assert [(v.invariant, v.object) for v in ak.check(broken).violations] == [("expect", "out")]
    fixed = run_worker(None, rem["drive"], wrangler=rem["wrangler"], bindings={"REMINDERS": "ReminderFixed"}, faults=plan, profile=EXACT)
    assert fixed["expect_failures"] == []
    first, retry = [a for a in fixed.attempts if a["object_id"] == "ann"][:2]
    assert first["t_ms"] == 1002 and 2_000 <= retry["t_ms"] - 1002 <= 2_500


def test_explore_worker_finds_the_lost_reminder_and_not_in_the_fix(rem):
    broken = explore_worker(None, rem["drive"], wrangler=rem["wrangler"], seeds=0, depth=1, workers=1, progress=False)
    assert [c.invariant for c in broken.counterexamples] == ["expect"]
    assert broken.counterexamples[0].plan.crashes[0].object == "out"
    fixed = explore_worker(rem["ts"], rem["drive"], wrangler=rem["wrangler"], bindings={"REMINDERS": "ReminderFixed"},
                           seeds=0, depth=1, workers=1, progress=False)
    # baseline + 21 crash points: the end of each alarm(), each incoming call or fetch's JS turn, each outbound call's awaits
    assert fixed.counterexamples == [] and len(fixed.table) == len(broken.table) == 22
    assert "worker" not in ak.SCENARIOS


def cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "alarmkit", *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": __import__("os").environ["PATH"]}, timeout=600)


def test_the_cli_runs_and_explores_a_ts_worker(rem, tmp_path):
    p = cli("worker", rem["ts"], "--wrangler", rem["wrangler"], "--drive", rem["drive"], "--db", tmp_path / "j.duckdb",
            "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert [(a["t_ms"], a["object_id"]) for a in s["attempts"]] == [(1001, "ann"), (3201, "bob")]  # seed 0's draws: 1 ms late
    assert s["final_alarms"] == {"ann": None, "bob": None, "out": None, "filter": None}
    assert s["expect_failures"] == [] and s["requests"] == 3
    p = cli("explore", "--worker", rem["ts"], "--wrangler", rem["wrangler"], "--drive", rem["drive"], "--depth", "1",
            "--seeds", "0", "--workers", "1", "--json", cwd=tmp_path)
    assert p.returncode == 1, p.stderr  # a counterexample found: CI fails, as pytest does on a failure
    d = json.loads(p.stdout)
    assert [(c["invariant"], c["object"]) for c in d["violations"]] == [("expect", "out")]
    assert d["runs"] == 22 and d["errors"] == []
    # --bind overrides the wrangler file's class: the fixed one holds under the same search
    p = cli("explore", "--worker", rem["ts"], "--wrangler", rem["wrangler"], "--bind", "REMINDERS=ReminderFixed",
            "--drive", rem["drive"], "--depth", "1", "--seeds", "0", "--workers", "1", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["violations"] == [] and d["runs"] == 22 and d["errors"] == []


def test_requests_in_flight_together_and_the_workers_logs(js_host):
    sim = ak.Simulation(seed=0, fire_latency="exact")
    w = sim.load_worker(js_host / "ttl.js", bindings={"CACHE": "TtlCache"})
    first = sim.spawn(w.request("/put?key=a&ttl=300", method="POST", body="apple"))
    second = sim.spawn(w.request("/put?key=b&ttl=1500", method="POST", body="banana"))
    sim.run(until=10)
    assert (first.result().status, second.result().status) == (201, 201)
    sim.run()
    assert w.logs == [(302, "log", "expired a"), (1502, "log", "expired b")]


class AsyncKV:
    def __init__(self):
        self.data = {}

    async def put(self, key, value):  # an awaitable result is awaited before it crosses back
        self.data[key] = value
        return len(self.data)


def test_a_python_object_binding_answers_its_methods_and_refuses_others(tmp_path, js_host):
    (tmp_path / "w.js").write_text(
        "export default { async fetch(request, env) {\n"
        "  const url = new URL(request.url);\n"
        "  if (url.pathname === '/put') return Response.json(await env.KV.put('k', { n: 1 }));\n"
        "  return new Response(await env.KV.get('k'));\n"
        "} };\n")
    sim = ak.Simulation(seed=0, fire_latency="exact")
    kv = AsyncKV()
    w = sim.load_worker(tmp_path / "w.js", bindings={"KV": kv})
    assert w.fetch("/put").json() == 1 and kv.data == {"k": {"n": 1}}
    assert w.fetch("/get").status == 500    # the worker's fetch threw: its client gets workerd's 500, the log says why
    assert w.logs[-1][1:] == ("error", "Uncaught WorkerUnsupported: env.KV.get: the Python object bound as KV (AsyncKV) "
                                       "has no method 'get'; add it to the object you pass in bindings={'KV': ...} "
                                       "(in the worker's fetch handler)")
