"""Five Durable Objects written for Cloudflare (tests/workers/js/objects/, none importing anything of
alarmkit) run under the JavaScript host: the exact virtual times of their alarms and retries."""

import alarmkit as ak
import pytest
from alarmkit.workers.js import Response, load
from alarmkit.runtime.profiles import PROFILES

# these tests are about JavaScript objects, not fire lateness: simulations here take the exact fire latency
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)
EXACT = PROFILES["workerd"].replace(fire_latency="exact")


def fires(sim, label=None):
    ev = sim.events()
    ev = ev[ev["kind"] == "fire"]
    if label is not None:
        ev = ev[ev["object_id"] == label]
    return ev["t_ms"].tolist()


def kinds(sim):
    return sim.events()["kind"].tolist()


def test_ttl_cache_expires_each_entry_at_its_time(js_host):
    sim = ak.Simulation(seed=0, fire_latency="exact")
    w = load(sim, js_host / "ttl.js", {"CACHE": "TtlCache"})
    assert w.fetch("http://x/put?key=a&ttl=300", method="POST", body="apple").status == 201
    assert w.fetch("http://x/put?key=b&ttl=1500", method="POST", body="banana").status == 201
    assert w.fetch("http://x/get?key=a").json() == {"value": "apple"}
    sim.run(until=1000)
    assert w.fetch("http://x/get?key=a").status == 404          # expired at 300, removed at 302
    assert w.fetch("http://x/get?key=b").json() == {"value": "banana"}
    sim.run()
    assert fires(sim) == [302, 1502]                                         # each entry 2 ms after it expired
    ev = sim.events()
    logs = ev[ev["kind"] == "console"]
    assert logs["t_ms"].tolist() == [302, 1502]
    assert [d["text"] for d in logs["detail"].map(__import__("json").loads)] == ["expired a", "expired b"]
    arms = ev[ev["kind"] == "arm"]
    assert arms["scheduled_ms"].tolist() == [300, 1500]                      # the second put kept the earlier alarm
    assert sim.alarms() == {"main": None}


def test_batcher_flushes_on_its_window_and_retries_a_failed_sink(js_host):
    sent = []

    def sink(request):
        sent.append(request.json())
        return Response("busy", status=503) if len(sent) == 2 else Response("ok")

    sim = ak.Simulation(seed=1, fire_latency="exact")
    w = load(sim, js_host / "batcher.ts", {"BATCH": "Batcher", "SINK": sink})
    b = w.env.BATCH.getByName("b")
    for i in range(3):
        assert sim.call(b.add(f"x{i}")) == i + 1
        sim.advance(100)
    sim.run(until=5_000)
    assert sent == [{"why": "timer", "items": ["x0", "x1", "x2"]}]
    assert fires(sim) == [1002]                                               # first add at 0, window 1 s, +2 ms
    sim.call_at(10_000, lambda: sim.spawn(b.add("y0")))
    sim.run()
    # the flush at 11,002 met a 503 and threw: workerd's retry 2 s later (+ seeded jitter) flushed it
    assert fires(sim) == [1002, 11_002, 13_072]
    assert sent[1:] == [{"why": "timer", "items": ["y0"]}] * 2
    assert sim.call(b.stats()) == {"pending": 0, "flushed": 4}
    ev = sim.events()
    assert ev[ev["kind"] == "handler_error"]["t_ms"].tolist() == [11_002]


def test_rate_limiter_windows_and_its_cleanup_alarm(js_host):
    sim = ak.Simulation(seed=0, start_ms=1_767_225_600_000, fire_latency="exact")                  # a real epoch: windows of 10 s
    w = load(sim, js_host / "limiter.js", {"LIMITER": "RateLimiter"})
    statuses = [w.fetch("http://x/?client=ann").status for _ in range(5)]
    assert statuses == [200, 200, 200, 429, 429]
    assert w.fetch("http://x/?client=bob").status == 200
    sim.advance(10_005)                                                       # past the cleanup alarm at +10,002
    assert w.fetch("http://x/?client=ann").status == 200           # a new window, a new alarm
    sim.run()
    assert fires(sim) == [1_767_225_610_002, 1_767_225_620_002]
    ev = sim.events()
    texts = [__import__("json").loads(d)["text"] for d in ev[ev["kind"] == "console"]["detail"]]
    assert texts == ["window closed: 2 counters cleared (retry 0)", "window closed: 1 counters cleared (retry 0)"]


def test_sql_job_queue_own_backoff_then_platform_retries(js_host):
    failures = [2]

    def api(request):
        if failures[0]:
            failures[0] -= 1
            return Response("busy", status=503)
        return "done"

    sim = ak.Simulation(seed=1, fire_latency="exact")
    w = load(sim, js_host / "job.ts", {"JOBS": "JobQueue", "API": api})
    q = w.env.JOBS.getByName("q")
    assert sim.call(q.enqueue("a", 500)) == 1
    assert sim.call(q.enqueue("crash", 20_000)) == 2
    sim.run(until=19_000)
    # its own backoff: 1 s then 2 s after each failure, each fire 2 ms late
    assert fires(sim) == [502, 1504, 3506]
    assert sim.call(q.jobs())[0] == {"id": 1, "payload": "a", "attempts": 3, "due": 3504, "state": "done"}
    sim.run()
    # job 2 throws out of alarm(): workerd's ladder (2, 4, 8, 16, 32, 64 s + jitter), 7 attempts, then abandoned
    ladder = fires(sim)[3:]
    assert ladder == [20_002, 22_072, 26_656, 36_393, 55_681, 93_939, 158_974]
    lease = ak.run_scenario("lease-exhaustion", seed=1, profile=EXACT)                       # the same ladder, in Python
    assert ladder == [a["t_ms"] + 19_000 for a in lease.attempts]
    ev = sim.events()
    assert ev[ev["kind"] == "handler_error"]["retry_count"].tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert "abandoned" in kinds(sim)
    assert sim.alarms() == {"q": None}


def test_block_concurrency_while_in_constructor_and_a_timer_in_a_request(js_host):
    sim = ak.Simulation(seed=0, fire_latency="exact")
    w = load(sim, js_host / "warmup.ts", {"W": "Warmup"})
    s = w.env.W.getByName("w")
    first, slow, second = sim.spawn(s.visit()), sim.spawn(s.slow(200)), sim.spawn(s.visit())
    sim.run()
    # the constructor's blockConcurrencyWhile (a 50 ms timer inside) held all three calls until 50
    assert first.result() == {"visits": 1, "readyAt": 50, "at": 50}
    assert second.result() == {"visits": 2, "readyAt": 50, "at": 50}          # ran during slow's timer
    assert slow.result() == 200
    ev = sim.events()
    assert ev[ev["kind"] == "call"]["t_ms"].tolist() == [50, 50, 50]
    assert ev[ev["kind"] == "arm"]["scheduled_ms"].tolist() == [1250]         # set after the 200 ms timer
    assert fires(sim) == [1252]
    assert __import__("json").loads(ev[ev["kind"] == "console"]["detail"].iloc[0])["text"] == (
        "alarm at 1252 after 2 visits, 1252 ms in")
    # evicted after 70 s idle; the next call constructs again and reads the committed count
    sim.call_at(100_000, lambda: None)
    sim.run()
    assert sim.call(s.visit())["visits"] == 3
    assert kinds(sim).count("construct") == 2


@pytest.mark.parametrize("module", ["ttl.js", "batcher.ts", "limiter.js", "job.ts", "warmup.ts"])
def test_objects_import_nothing_of_alarmkit(js_host, module):
    text = (js_host / module).read_text()
    assert "alarmkit" not in text
    assert 'from "cloudflare:workers"' in text
