"""The Python Workers host itself: isolation of module state and of the clock, the refusals, and the
errors a bad worker gets (one line each, naming what is wrong)."""

import datetime as real_datetime
import textwrap
import threading
import time

import pytest

import alarmkit as ak
from alarmkit.errors import WorkerError, WorkerUnsupported

from pyworker_support import FIXTURES


def write(tmp_path, name, source):
    p = tmp_path / name
    p.write_text(textwrap.dedent(source))
    return p


COUNTER = """
    import time
    from datetime import datetime, date
    from js import Date
    from workers import DurableObject

    LOADS = []
    LOADS.append(1)

    class Counter(DurableObject):
        async def clocks(self):
            return {"time": time.time(), "ns": time.time_ns(), "now": datetime.now().isoformat(),
                    "utc": datetime.utcnow().isoformat(), "today": date.today().isoformat(), "js": Date.now(),
                    "loads": len(LOADS)}

        async def alarm(self):
            pass
"""


def test_two_loads_share_no_module_state_and_each_reads_its_own_clock(tmp_path):
    path = write(tmp_path, "counter.py", COUNTER)
    a = ak.Simulation(seed=0)
    b = ak.Simulation(seed=0, start_ms=1_767_225_600_000)
    wa = a.load_worker(path, bindings={"C": "Counter"})
    wb = b.load_worker(path, bindings={"C": "Counter"})
    assert wa.module is not wb.module and wa.module.LOADS is not wb.module.LOADS
    assert wa.module.Counter is not wb.module.Counter
    a.advance(1_500)
    got_a = a.call(wa.env.C.getByName("x").clocks())
    got_b = b.call(wb.env.C.getByName("x").clocks())
    assert got_a == {"time": 1.5, "ns": 1_500_000_000, "now": "1970-01-01T00:00:01.500000",
                     "utc": "1970-01-01T00:00:01.500000", "today": "1970-01-01", "js": 1_500.0, "loads": 1}
    assert got_b["now"] == "2026-01-01T00:00:00" and got_b["js"] == 1_767_225_600_000.0
    assert "counter" not in __import__("sys").modules  # never entered in sys.modules


def test_the_process_clock_is_untouched_in_other_threads_while_a_handler_runs(tmp_path):
    path = write(tmp_path, "w.py", """
        import time
        from workers import DurableObject

        class Slow(DurableObject):
            def now_twice(self, probe):
                before = time.time()
                probe()
                return [before, time.time()]
    """)
    sim = ak.Simulation(seed=0)
    w = sim.load_worker(path, bindings={"S": "Slow"})
    seen = []

    def probe():  # runs inside the handler: another thread reads the real clock meanwhile
        t = threading.Thread(target=lambda: seen.append((time.time(), real_datetime.datetime.now().year)))
        t.start()
        t.join()

    sim.advance(42)
    stub = w.env.S.getByName("s")
    assert sim.call(stub._stub.now_twice(probe)) == [0.042, 0.042]  # raw stub: a function is not RPC-able
    assert seen[0][0] > 1_700_000_000 and seen[0][1] >= 2024


def test_local_sibling_modules_are_isolated_too(tmp_path):
    write(tmp_path, "helpers.py", "import time\nSTATE = []\ndef stamp():\n    STATE.append(1)\n    return time.time()\n")
    path = write(tmp_path, "entry.py", """
        from helpers import stamp, STATE
        from workers import DurableObject

        class H(DurableObject):
            async def go(self):
                return [stamp(), len(STATE)]
    """)
    sims = [ak.Simulation(seed=0) for _ in range(2)]
    ws = [s.load_worker(path, bindings={"H": "H"}) for s in sims]
    sims[0].advance(2_000)
    assert sims[0].call(ws[0].env.H.getByName("h").go()) == [2.0, 1]
    assert sims[0].call(ws[0].env.H.getByName("h").go()) == [2.0, 2]
    assert sims[1].call(ws[1].env.H.getByName("h").go()) == [0.0, 1]


def test_outbound_fetch_and_unsimulated_bindings_are_refused_by_name(tmp_path):
    path = write(tmp_path, "w.py", """
        from workers import DurableObject, fetch
        import js

        class Out(DurableObject):
            async def call_out(self):
                return await fetch("https://example.com")

            async def js_out(self):
                return await js.fetch("https://example.com")

            async def kv(self):
                return await self.env.CACHE.get("k")

            async def fake(self):
                return await self.env.API.lookup("k")
    """)
    cfg = write(tmp_path, "wrangler.toml", """
        main = "w.py"
        compatibility_date = "2026-01-01"
        [[durable_objects.bindings]]
        name = "OUT"
        class_name = "Out"
        [[kv_namespaces]]
        binding = "CACHE"
        id = "abc"
    """)

    class FakeApi:
        async def lookup(self, key):
            return {"key": key}

    sim = ak.Simulation(seed=0)
    w = sim.load_worker(wrangler=cfg, bindings={"API": FakeApi()})
    assert w.compatibility_date == "2026-01-01"
    out = w.env.OUT.getByName("o")
    with pytest.raises(WorkerUnsupported, match=r"workers.fetch\(...\): outbound requests .* bindings=\{'API': my_fake\}"):
        sim.call(out.call_out())
    with pytest.raises(WorkerUnsupported, match=r"js.fetch"):
        sim.call(out.js_out())
    with pytest.raises(WorkerUnsupported, match=r"env.CACHE.get: CACHE is a KV namespace, which alarmkit does not simulate; "
                                                r"stub it with load_worker\(..., bindings=\{'CACHE': my_fake\}\)"):
        sim.call(out.kv())
    assert sim.call(out.fake()) == {"key": "k"}


@pytest.mark.parametrize("source, bindings, message", [
    ("def broken(:\n    pass\n", {}, r"w.py:1: syntax error"),
    ("import no_such_module_anywhere\n", {}, r"importing .*w.py raised ModuleNotFoundError"),
    ("from workers import DurableObject\nclass A(DurableObject):\n    pass\n", {"X": "Missing"},
     r"binding X: w.py has no class 'Missing'; its Durable Object classes: A"),
    ("from workers import DurableObject\nclass A(DurableObject):\n    pass\nclass B:\n    pass\n", {"X": "B"},
     r"binding X: B is not a Durable Object class \(it must subclass workers.DurableObject\)"),
    ("raise RuntimeError('at import')\n", {}, r"raised RuntimeError: at import"),
])
def test_a_bad_worker_is_one_error_naming_what_is_wrong(tmp_path, source, bindings, message):
    path = write(tmp_path, "w.py", source)
    with pytest.raises(WorkerError, match=message) as info:
        ak.Simulation(seed=0).load_worker(path, bindings=bindings)
    assert "\n" not in str(info.value)


def test_no_such_file_and_an_unknown_suffix(tmp_path):
    sim = ak.Simulation(seed=0)
    with pytest.raises(WorkerError, match="no worker module 'nope.py'"):
        sim.load_worker("nope.py")
    with pytest.raises(WorkerError, match="ends in one of .py, .js"):
        sim.load_worker(write(tmp_path, "w.rb", "puts 1"))


def test_alarm_info_is_passed_when_the_handler_takes_it_and_dropped_when_not(load):
    sim, w = load("batcher.py", BATCHER="Batcher")  # alarm(self, alarm_info)
    sim.call(w.env.BATCHER.getByName("b").add("x"))
    sim.run()
    assert sim.call(w.env.BATCHER.getByName("b").batches())[0]["retry"] == 0
    sim2, w2 = load("ratelimit.py", L="RateLimiter")  # alarm(self)
    sim2.advance(10)
    sim2.call(w2.env.L.getByName("r").allow("c"))
    sim2.run()
    assert [k for k in sim2.events()["kind"] if k in ("handler_ok", "handler_error")] == ["handler_ok"]


def test_ids_names_and_stub_fetch(tmp_path):
    path = write(tmp_path, "w.py", """
        from workers import DurableObject, Response

        class Echo(DurableObject):
            async def fetch(self, request):
                return Response(f"{request.method} {request.url} {await request.text()} {self.ctx.id.name}",
                                headers={"x-id": self.ctx.id.toString()})

            async def whoami(self):
                return self.ctx.id.name
    """)
    sim = ak.Simulation(seed=0)
    w = sim.load_worker(path, bindings={"E": "Echo"})
    ns = w.env.E
    a = ns.idFromName("a")
    assert a.name == "a" and len(a.toString()) == 64 and ns.idFromString(a.toString()).equals(a)
    assert sim.call(ns.get(a).whoami()) == "a"
    u = ns.newUniqueId()
    assert u.name is None and sim.call(ns.get(u).whoami()) is None
    resp = sim.call(ns.getByName("a").fetch("https://do/x", method="POST", body="hi"))
    assert resp.status == 200 and resp.headers.get("x-id") == a.toString()

    async def text():
        return await resp.text()

    assert sim.call(text()) == "POST https://do/x hi a"
    with pytest.raises(TypeError, match="64 hex digits"):
        ns.idFromString("zz")


def test_the_compatibility_date_reaches_the_runtime(tmp_path):
    path = write(tmp_path, "w.py", """
        from workers import DurableObject

        class N(DurableObject):
            def __init__(self, ctx, env):
                super().__init__(ctx, env)
                self.seen = ctx.id.name

            async def arm(self):
                await self.ctx.storage.setAlarm(5_000)

            async def alarm(self):
                await self.ctx.storage.put("name_seen", self.seen)
    """)
    for date, expected in (("2026-01-01", "null"), ("2026-11-17", '"n"')):
        sim = ak.Simulation(seed=0)
        w = sim.load_worker(path, bindings={"N": "N"}, compatibility_date=date)
        assert sim.profile.compatibility_date == date
        stub = w.env.N.getByName("n")
        sim.call(stub.arm())
        sim.evict(stub)  # the alarm wakes it cold: ctx.id.name only from the workerd profile's id_name_since
        sim.run()
        assert sim.inspect(stub).sql("SELECT value FROM _cf_KV WHERE key = 'name_seen'") == [{"value": expected}]
    late = ak.Simulation(seed=0)
    late.advance(1)
    late.journal_event("mark")
    with pytest.raises(WorkerError, match="has already run"):
        late.load_worker(path, bindings={"N": "N"}, compatibility_date="2026-01-01")
