"""Five Python Workers in the style of Cloudflare's docs, loaded unchanged (their files import nothing of
alarmkit): exact virtual times of their alarms and retries, and their storage after."""

import time

import alarmkit as ak
import pytest

from pyworker_support import FIXTURES, kinds

# these tests are about the example workers, not fire lateness: simulations here take fire_latency="exact"
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)


def test_fixtures_import_nothing_of_alarmkit():
    for f in FIXTURES.glob("*.py"):
        assert "alarmkit" not in f.read_text(), f


def test_ttl_cache_expires_each_entry_at_its_time(load):
    sim, w = load("ttl.py", CACHE="TtlCache")
    cache = w.env.CACHE.getByName("c")
    first = sim.call(cache.put("a", "1", 1_000))
    assert first == {"key": "a", "expires": 1_000, "at": "1970-01-01T00:00:00"}
    assert first.expires == 1_000  # a JS object comes back as a dict whose keys read as attributes
    sim.advance(200)
    assert sim.call(cache.put("b", "2", 5_000))["expires"] == 5_200
    assert sim.call(cache.get("a")) == "1"
    sim.run()
    fires = kinds(sim, "fire")
    assert [(t, s) for t, _o, _k, s in fires] == [(1_002, 1_000), (5_202, 5_200)]
    assert sim.inspect(cache).sql("SELECT key FROM entries") == []
    assert sim.inspect(cache).alarm is None
    assert sim.call(cache.get("a")) is None


def test_ttl_cache_through_the_default_entrypoint(load):
    sim, w = load("ttl.py", CACHE="TtlCache")
    r = w.fetch("/", method="PUT", body='{"cache": "x", "key": "k", "value": "v", "ttl_ms": 300}')
    assert (r.status, r.json()["expires"]) == (200, 300)
    assert r.headers.get("Content-Type") == "application/json"
    sim.advance(299)
    assert w.fetch("/", method="POST", body='{"cache": "x", "key": "k"}').json() == {"value": "v"}
    sim.run()
    assert [t for t, *_ in kinds(sim, "fire")] == [302]
    assert w.fetch("/", body='{"cache": "x", "key": "k"}').json() == {"value": None}


def test_batcher_flushes_ten_seconds_after_the_first_item_and_restores_its_count(load):
    sim, w = load("batcher.py", BATCHER="Batcher")
    b = w.env.BATCHER.getByName("main")
    assert sim.call(sim.gather(b.add("x"), b.add("y"))) == [1, 2]  # blockConcurrencyWhile ran first
    sim.advance(4_000)
    assert w.fetch("/", method="POST", body="z").text() == "queued 3"
    sim.run(until=10_002)
    assert sim.call(b.batches()) == [{"at": 10_002, "items": ["x", "y", "z"], "retry": 0}]
    assert kinds(sim, "fire") == [(10_002, "main", "fire", 10_000)]
    sim.evict(b)  # the count is restored from storage by the constructor's blockConcurrencyWhile
    assert sim.call(b.seen()) == 3
    assert sim.call(b.add("w")) == 4
    sim.run()
    assert [x["at"] for x in sim.call(b.batches())] == [10_002, 20_004]
    assert sim.inspect(b).alarm is None
    assert sim.inspect(b).sql("SELECT key FROM _cf_KV ORDER BY key") == [{"key": "count"}, {"key": "flushed"}]


def test_batcher_flush_retried_by_the_platform_sees_retry_count(load):
    sim = ak.Simulation(seed=3, faults=ak.FaultPlan(handler_throws=[1]), fire_latency="exact")
    w = sim.load_worker(FIXTURES / "batcher.py", bindings={"BATCHER": "Batcher"})
    b = w.env.BATCHER.getByName("main")
    sim.call(b.add("x"))
    sim.run()
    fires = kinds(sim, "fire")
    assert fires[0][0] == 10_002 and len(fires) == 2
    gap = fires[1][0] - fires[0][0]
    assert 2_000 <= gap <= 2_500  # workerd's first retry: 2 s plus up to 25 % jitter (alarm-scheduler.c++)
    assert sim.call(b.batches()) == [{"at": fires[1][0], "items": ["x"], "retry": 1}]


def test_rate_limiter_windows(load):
    sim, w = load("ratelimit.py", LIMITER="RateLimiter")
    rl = w.env.LIMITER.getByName("api")
    sim.advance(250)
    got = sim.call(sim.gather(*(rl.allow("alice") for _ in range(5)), rl.allow("bob")))
    assert got == [True, True, True, False, False, True]
    assert sim.call(rl.counters()) == {"count:bob": 1, "count:alice": 3}  # reverse=True, a Map as a dict
    sim.run(until=999)
    assert sim.call(rl.allow("alice")) is False
    sim.run(until=1_500)
    assert kinds(sim, "fire") == [(1_002, "api", "fire", 1_000)]
    assert sim.call(rl.allow("alice")) is True
    sim.run()
    assert [t for t, *_ in kinds(sim, "fire")] == [1_002, 2_002]
    assert sim.call(rl.counters()) == {}


class FlakyApi:
    """The external API the jobs call: a Python object bound in place of a service binding."""

    def __init__(self, fail_times):
        self.fail_times = dict(fail_times)
        self.calls = []

    async def process(self, payload):
        self.calls.append(payload)
        if self.fail_times.get(payload, 0) > 0:
            self.fail_times[payload] -= 1
            raise RuntimeError(f"{payload}: 503")
        return "ok"


def test_sql_job_retries_with_its_own_backoff(load):
    api = FlakyApi({"p1": 2, "p2": 9})
    start = 1_767_225_600_000  # 2026-01-01: a job submitted "now" at time 0 would ask setAlarm(0), a TypeError
    sim, w = load("jobs.py", JOBS="JobRunner", API=api, sim_kwargs={"start_ms": start})
    jobs = w.env.JOBS.getByName("runner")
    sim.call(jobs.submit("j1", "p1"))
    sim.call(jobs.submit("j2", "p2"))
    sim.run()
    # j1: fails at 2 and 1004, done at 3006; j2: fails at 2, 1004, 3006, 7008 (4 attempts), then failed
    assert [t - start for t, *_ in kinds(sim, "fire")] == [2, 1_004, 3_006, 7_008]
    assert api.calls == ["p1", "p2", "p1", "p2", "p1", "p2", "p2"]
    assert sim.call(jobs.jobs()) == [
        {"id": "j1", "state": "done", "attempts": 3, "last_error": "p1: 503"},
        {"id": "j2", "state": "failed", "attempts": 4, "last_error": "p2: 503"},
    ]
    assert sim.inspect(jobs).alarm is None


def test_rpc_chain_between_objects_and_the_hold_alarm(load):
    sim, w = load("chain.py", FRONT="Front", STOCK="Stock", LEDGER="Ledger")
    r = w.fetch("/", method="POST", body='{"id": "o1", "sku": "hat", "qty": 1}')
    assert r.json() == {"ok": True, "left": 1, "entry": {"seq": 1, "sku": "hat", "order": "o1", "qty": 1, "at": 0}}
    sim.advance(10_000)
    assert w.fetch("/", method="POST", body='{"id": "o2", "sku": "hat", "qty": 1}').json()["left"] == 0
    assert w.fetch("/", method="POST", body='{"id": "o3", "sku": "hat", "qty": 1}').json() == {"ok": False, "left": 0}
    stock = w.env.STOCK.getByName("hat")
    assert sim.inspect(stock).alarm == 30_000
    sim.run()
    fires = kinds(sim, "fire")
    assert [(t, o) for t, o, _k, _s in fires] == [(30_002, "hat"), (40_002, "hat")]
    left = sim.inspect(stock).sql("SELECT value FROM _cf_KV WHERE key = 'left'")
    assert left == [{"value": "2"}]  # both holds released
    front = w.env.FRONT.getByName("front")
    assert sim.inspect(front).sql("SELECT key, value FROM _cf_KV ORDER BY key") == [
        {"key": "order:o1", "value": '{"sku": "hat", "ok": true}'},
        {"key": "order:o2", "value": '{"sku": "hat", "ok": true}'},
        {"key": "order:o3", "value": '{"sku": "hat", "ok": false}'},
    ]


def test_rpc_values_cross_as_production_converts_them(load):
    sim, w = load("chain.py", FRONT="Front", STOCK="Stock", LEDGER="Ledger")
    front = w.env.FRONT.getByName("front")
    mine = {"id": "o9", "nested": {"n": None}}
    back = sim.call(front.touch(mine))
    assert back == {"id": "o9", "nested": {"n": None}, "touched": True}
    assert "touched" not in mine  # structured clone: the callee changed its own copy
    assert back.nested.n is None
    with pytest.raises(TypeError, match="tuple cannot be sent over RPC"):
        sim.call(front.touch(("a", "b")))
    with pytest.raises(TypeError, match="tuple cannot be sent over RPC"):
        sim.call(w.env.LEDGER.getByName("l").bad())
    with pytest.raises(TypeError, match='does not implement the method "nope"'):
        sim.call(front.nope())


def test_real_clock_untouched_while_the_worker_reads_virtual_time(load):
    sim, w = load("ttl.py", CACHE="TtlCache")
    sim.advance(86_400_000)
    real_before = time.time()
    got = sim.call(w.env.CACHE.getByName("c").put("a", "1", 5))
    assert got["expires"] == 86_400_005 and got["at"] == "1970-01-02T00:00:00"
    assert time.time() >= real_before > 1_700_000_000  # the process's clock is the real one
