"""ctx.facets, the two ways a facet's alarm fails, and the parent-owned alarm proxy."""

import pandas as pd
import pytest

import alarmkit as ak
from alarmkit.runtime._facets import ACTOR_BROKEN_MESSAGE, FACET_BROKEN_MESSAGE
from alarmkit.errors import FacetBroken, FacetsUnavailable
from alarmkit.runtime.facets import AlarmProxyParent, facet_alarm_state

# facets ride the parent's alarm; their subject is not fire lateness:
# every simulation here takes fire_latency="exact" (each fire 2 ms late) so that the times read as
# round numbers; tests/runtime/test_latency_measured.py covers the workerd profile's measured default


def kinds(sim, *names):
    ev = sim.events()
    return ev[ev["kind"].isin(names)].reset_index(drop=True)


def outcome(task):
    err = task.exception()
    return ("ok", task.result()) if err is None else (type(err).__name__, str(err))


class Probe(ak.DurableObject):
    """The facet of the workerd twin's probe (alarmkit/calibrate/twin/worker.js ProbeFacet)."""

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS notes (note TEXT)")
        self.born = ctx.now()

    async def ping(self):
        return {"pong": True, "born": self.born}

    async def nap(self, ms):
        await self.ctx.sleep(ms)
        return ms

    async def note(self, text):
        self.ctx.storage.sql.exec("INSERT INTO notes VALUES (?)", text)
        await self.ctx.sleep(1)
        return text

    async def try_set_alarm(self, delay):
        self.ctx.storage.sql.exec("INSERT INTO notes VALUES ('in the failing transaction')")
        await self.ctx.storage.set_alarm(self.ctx.now() + delay)
        return {"get_alarm_after": await self.ctx.storage.get_alarm(), "t": self.ctx.now()}

    async def get_alarm(self):
        return await self.ctx.storage.get_alarm()

    async def delete_alarm(self):
        await self.ctx.storage.delete_alarm()
        return "deleted"

    async def notes(self):
        return [r["note"] for r in self.ctx.storage.sql.exec("SELECT note FROM notes")]


class Parent(ak.DurableObject):
    def probe(self, name="f1"):
        return self.ctx.facets.get(name, lambda: Probe)

    async def own_work(self, ms):
        self.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS work (n INTEGER)")
        self.ctx.storage.sql.exec("INSERT INTO work VALUES (1)")
        await self.ctx.sleep(ms)
        return "parent done"

    async def call(self, facet, method, *args):
        return await getattr(self.probe(facet), method)(*args)

    async def set_then_ask_again(self, delay):
        """The twin's sequence: a call in flight, set_alarm, then the same stub, then a fresh get."""
        f = self.probe()
        k = self.ctx._host.sim.kernel
        pending = k.spawn(f.nap(300))
        own = k.spawn(self.own_work(200))
        out = {}
        for key, aw in (("set", f.try_set_alarm(delay)), ("pending", pending), ("own", own), ("same_stub", f.ping())):
            try:
                out[key] = ("ok", await aw)
            except ak.AlarmkitError as err:
                out[key] = (type(err).__name__, str(err), self.ctx.now())
        out["regot_alarm"] = await self.probe().get_alarm()
        out["regot_born"] = (await self.probe().ping())["born"]
        out["notes"] = await self.probe().notes()
        return out


def parent(profile="workerd", **kw):
    sim = ak.Simulation(profile=profile, **kw, fire_latency="exact")
    return sim, sim.namespace("PARENT", Parent).get("p")


def test_a_facet_has_its_own_storage_survives_parent_eviction_and_is_journaled_under_the_parent():
    sim, p = parent()
    assert sim.call(p.call("f1", "note", "hello")) == "hello"
    assert sim.call(p.call("f2", "notes")) == []  # another facet: another database
    sim.evict(p)
    assert sim.call(p.call("f1", "notes")) == ["hello"]
    c = kinds(sim, "construct")
    assert list(c["object_id"]) == ["p", "p/f1", "p/f2", "p", "p/f1"]
    assert set(c["namespace"]) == {"PARENT"}


def test_workerd_commit_breaks_the_facet_and_only_the_facet():
    sim, p = parent("workerd")
    out = sim.call(p.set_then_ask_again(500))
    # set_alarm resolved and get_alarm showed the time, but the result never left the facet
    assert out["set"] == ("FacetBroken", FACET_BROKEN_MESSAGE, 0)
    assert out["pending"] == ("FacetBroken", FACET_BROKEN_MESSAGE, 0)  # running in the facet: fails at the break
    assert out["own"] == ("ok", "parent done")  # the parent's own work carries on, to t=200
    assert out["same_stub"] == ("FacetBroken", FACET_BROKEN_MESSAGE, 200)  # later calls on the same stub fail
    assert out["regot_alarm"] is None  # a fresh instance; the alarm was not kept
    assert out["regot_born"] == 200
    assert out["notes"] == []  # the failing transaction's writes are lost with it
    broken = kinds(sim, "facet_broken")
    assert len(broken) == 1 and broken.loc[0, "t_ms"] == 0 and broken.loc[0, "object_id"] == "p/f1"
    assert broken.loc[0, "scheduled_ms"] == 500
    d = __import__("json").loads(broken.loc[0, "detail"])
    assert d["calls"] == ["p/f1:rpc:nap"] and d["held"] == ["p/f1:rpc:try_set_alarm"]
    assert d["mode"] == "commit-breaks-facet" and d["message"] == FACET_BROKEN_MESSAGE
    assert kinds(sim, "arm").empty  # nothing ever reached a scheduler


def test_the_inside_view_set_alarm_resolves_and_get_alarm_shows_the_time():
    seen = {}

    class Inside(Probe):
        async def try_set_alarm(self, delay):
            await self.ctx.storage.set_alarm(self.ctx.now() + delay)
            seen["get_alarm_after"] = await self.ctx.storage.get_alarm()
            seen["t"] = self.ctx.now()
            return "returned"

    class P(ak.DurableObject):
        async def go(self):
            return await self.ctx.facets.get("f", lambda: Inside).try_set_alarm(750)

    sim = ak.Simulation(fire_latency="exact")
    with pytest.raises(FacetBroken, match=r"^Facets currently cannot set alarms\.$"):
        sim.call(sim.namespace("P", P).get("p").go())
    assert seen == {"get_alarm_after": 750, "t": 0}


def test_committed_writes_before_the_alarm_write_survive_the_break():
    sim, p = parent("workerd")
    assert sim.call(p.call("f1", "note", "kept")) == "kept"
    with pytest.raises(FacetBroken):
        sim.call(p.call("f1", "try_set_alarm", 100))
    assert sim.call(p.call("f1", "notes")) == ["kept"]


def test_workerd_2026_07_commit_breaks_the_whole_actor():
    sim, p = parent("workerd-2026-07")
    own = sim.kernel.spawn(p.own_work(500))
    other = sim.kernel.spawn(p.call("f2", "nap", 400))
    sim.run(until=100)
    setter = sim.kernel.spawn(p.call("f1", "try_set_alarm", 1_000))
    sim.run(until=1_000)
    for task in (setter, own, other):  # every in-flight call on the actor fails with the one error
        assert outcome(task) == ("ActorBroken", ACTOR_BROKEN_MESSAGE)
    broken = kinds(sim, "actor_broken")
    assert list(broken["t_ms"]) == [100] and list(broken["object_id"]) == ["p"]
    assert list(broken["scheduled_ms"]) == [1_100]
    d = __import__("json").loads(broken.loc[0, "detail"])
    assert sorted(d["calls"]) == ["p/f2:rpc:nap", "p:rpc:call", "p:rpc:call", "p:rpc:own_work"]
    assert d["facet"] == "p/f1" and d["mode"] == "commit-breaks-actor"
    # the actor comes back on the next call, with no alarm; what the parent committed before the break stays
    assert sim.call(p.call("f1", "get_alarm")) is None
    assert sim.inspect(p).sql("SELECT COUNT(*) AS n FROM work") == [{"n": 1}]
    assert sim.inspect(p).alarm is None


def test_deleting_an_alarm_a_facet_never_had_is_harmless():
    sim, p = parent("workerd")
    assert sim.call(p.call("f1", "delete_alarm")) == "deleted"
    assert kinds(sim, "facet_broken", "actor_broken").empty


def test_celld_has_no_facets():
    class P(ak.DurableObject):
        async def has(self):
            return hasattr(self.ctx, "facets")

        async def use(self):
            return self.ctx.facets.get("f", lambda: Probe)

    sim = ak.Simulation(profile="celld")
    stub = sim.namespace("P", P).get("p")
    assert sim.call(stub.has()) is False
    with pytest.raises(FacetsUnavailable, match=r"^ctx\.facets is not defined on profile 'celld'"):
        sim.call(stub.use())
    assert issubclass(FacetsUnavailable, AttributeError) and issubclass(FacetsUnavailable, ak.AlarmkitError)


def test_a_facet_stub_dies_with_the_parent_instance_that_gave_it():
    class P(ak.DurableObject):
        async def stub(self):
            return self.ctx.facets.get("f", lambda: Probe)

    sim = ak.Simulation(fire_latency="exact")
    p = sim.namespace("P", P).get("p")
    f = sim.call(p.stub())
    assert sim.call(f.ping())["pong"] is True
    sim.evict(p)
    with pytest.raises(ak.ObjectCrashed, match=r"^facet p/f: the parent instance that handed out this stub is gone"):
        sim.call(f.ping())


def test_abort_fails_calls_in_flight_and_keeps_storage_delete_wipes_it():
    class P(Parent):
        async def abort(self, name):
            self.ctx.facets.abort(name, "operator")

        async def delete(self, name):
            self.ctx.facets.delete(name)

    sim = ak.Simulation(fire_latency="exact")
    p = sim.namespace("P", P).get("p")
    sim.call(p.call("f1", "note", "kept"))
    napping = sim.kernel.spawn(p.call("f1", "nap", 1_000))
    sim.run(until=100)
    sim.call(p.abort("f1"))
    sim.run(until=200)
    assert outcome(napping) == ("ObjectCrashed", "facet p/f1 was aborted: operator")
    assert sim.call(p.call("f1", "notes")) == ["kept"]
    sim.call(p.delete("f1"))
    assert sim.call(p.call("f1", "notes")) == []


def test_a_bad_factory_says_what_to_return():
    class P(ak.DurableObject):
        async def go(self):
            return self.ctx.facets.get("f", lambda: "Probe")

    sim = ak.Simulation(fire_latency="exact")
    with pytest.raises(ak.AlarmkitError, match=r"^ctx\.facets\.get\('f', factory\): the factory gave 'Probe'"):
        sim.call(sim.namespace("P", P).get("p").go())


# -- the proxy ---------------------------------------------------------------------------------------------
FIRED = []


class Worker(ak.DurableObject):
    """A facet that uses the standard alarm API, unchanged, through the shim."""

    def __init__(self, ctx, env):
        super().__init__(facet_alarm_state(ctx, "worker"), env)
        self.born = self.ctx.now()

    async def arm(self, delay):
        await self.ctx.storage.set_alarm(self.ctx.now() + delay)
        return await self.ctx.storage.get_alarm()

    async def disarm(self):
        await self.ctx.storage.delete_alarm()
        return await self.ctx.storage.get_alarm()

    async def alarm(self, info):
        FIRED.append((self.ctx.now(), self.born, info.retry_count, info.scheduled_time))
        if getattr(self.env, "WORKER_THROWS", 0) > info.retry_count:
            raise RuntimeError("the facet's handler failed")


class Host(AlarmProxyParent):
    FACET_CLASSES = {"worker": Worker}

    async def worker(self, method, *args):
        return await getattr(self.facet("worker"), method)(*args)


@pytest.fixture
def proxied():
    FIRED.clear()
    sim = ak.Simulation(profile="workerd", jitter_factor=0.0, fire_latency="exact")
    return sim, sim.namespace("HOST", Host).get("h")


def test_the_shim_arms_the_parents_alarm_and_keeps_one_cell(proxied):
    sim, h = proxied
    assert sim.call(h.worker("arm", 5_000)) == 5_000
    assert sim.inspect(h).alarm == 5_000
    assert sim.inspect(h).sql("SELECT ref, at_ms, gen FROM _alarm_proxy") == [
        {"ref": '{"name": "worker", "recipe": "worker"}', "at_ms": 5_000, "gen": 1}]
    assert sim.call(h.worker("disarm")) is None
    assert sim.inspect(h).alarm is None and sim.inspect(h).sql("SELECT * FROM _alarm_proxy") == []
    arms = kinds(sim, "proxy_arm")
    assert [None if v is pd.NA else v for v in arms["scheduled_ms"]] == [5_000, None]
    assert [None if v is pd.NA else v for v in arms["prev_scheduled_ms"]] == [None, 5_000]


def test_a_fire_after_a_parent_restart_reaches_a_rebuilt_facet(proxied):
    sim, h = proxied
    sim.call(h.worker("arm", 10_000))
    sim.run(until=3_000)
    sim.restart(4_000)  # everything drops; the parent's alarm is reloaded at 7 s
    sim.run()
    assert FIRED == [(10_002, 10_002, 0, 10_000)]  # born at the fire: a fresh facet, booted from the stored ref
    assert sim.inspect(h).sql("SELECT * FROM _alarm_proxy") == []  # success consumed the cell
    c = kinds(sim, "construct")
    assert list(zip(c["t_ms"], c["object_id"])) == [(0, "h"), (0, "h/worker"), (10_002, "h"), (10_002, "h/worker")]
    assert list(kinds(sim, "proxy_deliver")["t_ms"]) == [10_002]


def test_a_failing_facet_handler_rides_the_parents_native_retry_ladder(proxied):
    sim, h = proxied
    sim.env.WORKER_THROWS = 2
    sim.call(h.worker("arm", 1_000))
    sim.run()
    # no jitter: 1 s + 2 ms, then +2 s + 2 ms, then +4 s + 2 ms; the facet sees the parent's retry_count
    assert [(t, r, s) for t, _, r, s in FIRED] == [(1_002, 0, 1_000), (3_004, 1, 1_000), (7_006, 2, 1_000)]
    errors = kinds(sim, "handler_error")
    assert list(errors["object_id"]) == ["h", "h"] and list(errors["t_ms"]) == [1_002, 3_004]
    assert sim.inspect(h).sql("SELECT * FROM _alarm_proxy") == []


def test_a_rearm_inside_the_replayed_handler_is_kept(proxied):
    class Again(Worker):
        async def alarm(self, info):
            await super().alarm(info)
            if len(FIRED) < 2:
                await self.ctx.storage.set_alarm(self.ctx.now() + 1_000)

    class H(AlarmProxyParent):
        FACET_CLASSES = {"worker": Again}

        async def arm(self):
            return await self.facet("worker").arm(500)

    sim, _ = proxied
    h = sim.namespace("H2", H).get("h")
    sim.call(h.arm())
    sim.run()
    assert [(t, s) for t, _, _, s in FIRED] == [(502, 500), (1_504, 1_502)]


def test_the_proxy_refuses_misuse_with_the_way_out():
    class Plain(ak.DurableObject):
        async def arm(self):
            shim = facet_alarm_state(self.ctx, "x")
            return await shim.storage.set_alarm(self.ctx.now() + 1)

        async def facet_arm(self):
            return await self.ctx.facets.get("w", lambda: Worker).arm(100)

    sim = ak.Simulation(fire_latency="exact")
    plain = sim.namespace("PLAIN", Plain).get("p")
    with pytest.raises(ak.AlarmkitError, match=r"^facet_alarm_state: p is a root object, whose own alarms work"):
        sim.call(plain.arm())
    with pytest.raises(ak.AlarmkitError, match=r"^facet p/w: its parent p \(Plain\) has no alarm proxy"):
        sim.call(plain.facet_arm())

    class Nested(ak.DurableObject):
        async def go(self):
            return await self.ctx.facets.get("proxy", lambda: Host).worker("arm", 100)

    with pytest.raises(ak.AlarmkitError, match=r"^Host is hosted as facet n/proxy, whose alarms do not work either"):
        sim.call(sim.namespace("NESTED", Nested).get("n").go())


def test_the_shim_validates_like_set_alarm(proxied):
    sim, h = proxied

    class Bad(Worker):
        async def arm(self, t):
            return await self.ctx.storage.set_alarm(t)

    class H(AlarmProxyParent):
        FACET_CLASSES = {"worker": Bad}

        async def go(self):
            return await self.facet("worker").arm(0)

    with pytest.raises(TypeError, match=r"^setAlarm\(\) cannot be called with an alarm time <= 0$"):
        sim.call(sim.namespace("H3", H).get("h").go())


def test_one_cell_per_parent_a_second_facet_cannot_take_a_pending_alarm():
    class Second(Worker):
        def __init__(self, ctx, env):
            ak.DurableObject.__init__(self, facet_alarm_state(ctx, "second"), env)
            self.born = 0

    class H(AlarmProxyParent):
        FACET_CLASSES = {"worker": Worker, "second": Second}

        async def both(self):
            await self.facet("worker").arm(1_000)
            return await self.facet("second").arm(2_000)

    sim = ak.Simulation(fire_latency="exact")
    with pytest.raises(ak.AlarmkitError, match=r"^the alarm proxy of h holds one alarm, owned by facet 'worker'"):
        sim.call(sim.namespace("H4", H).get("h").both())
