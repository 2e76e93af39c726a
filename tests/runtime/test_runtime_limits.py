"""Bad values refused where they enter, nothing journaled is lost when a
flush fails, runaway work stops with a message, and a KeyboardInterrupt or SystemExit in a handler
leaves the object as a crash would. (The CLI's own hostile inputs live in test_adversarial.py.)"""

from __future__ import annotations

import gc
import re
import subprocess
import sys

import pytest

import alarmkit.runtime._host as host_module
from alarmkit import DurableObject, FaultPlan, FaultPlanError, Faults, Journal, Profile, Simulation, UncountedFailure
from alarmkit.errors import InvalidValue, JournalWriteError, RunawayError

# these tests are about refused values, lost rows and runaway work, not fire lateness:
# every simulation here takes fire_latency="exact" (each fire 2 ms late) so that the times read as
# round numbers; tests/runtime/test_latency_measured.py covers the workerd profile's measured default

MAX = 2**53
RANGE = r"an int of ms in 0\.\.2\*\*53 \(9,007,199,254,740,992, JavaScript's largest safe integer\)"


class Obj(DurableObject):
    async def arm(self, t):
        await self.ctx.storage.set_alarm(t)

    async def sleep(self, ms):
        await self.ctx.sleep(ms)

    async def effect(self, name):
        await self.ctx.effect(name, "k")

    async def facet(self, name):
        self.ctx.facets.get(name, lambda: Obj)

    async def rec(self):  # an RPC that calls itself, without end
        return await self.env.NS.get(self.ctx.id).rec()

    async def alarm(self, info):
        pass


def _sim(**kw):
    sim = Simulation(**kw, fire_latency="exact")
    return sim, sim.namespace("NS", Obj).get("a")


# -- item 2: values checked where they enter --------------------------------------------------------------
# workerd takes setAlarm's time as a kj::Date (int64 ns): up to 9,223,372,036,854 ms (year 2262), past it
# "This API doesn't support dates after 2189." (jsg/value.h; observed on workerd 1.20261117.1, probe round3)
LAST = 9_223_372_036_854


@pytest.mark.parametrize("t, shown", [(2**64, "18,446,744,073,709,551,616"), (MAX + 1, "9,007,199,254,740,993"),
                                      (LAST + 1, "9,223,372,036,855"), (1e30, "1e+30"), (2**200, "an int of 201 bits")])
def test_set_alarm_after_2189_is_refused_at_the_call_and_nothing_is_lost(t, shown):
    journal = Journal()
    sim, a = _sim(journal=journal)
    sim.call(a.arm(1_000))
    with pytest.raises(InvalidValue, match=rf"^This API doesn't support dates after 2189\. \(set_alarm\(\) got "
                                           rf"{re.escape(shown)}; pass epoch milliseconds such as ctx\.now\(\) \+ 5_000\)$"):
        sim.call(a.arm(t))
    with pytest.raises(TypeError):  # workerd's setAlarm throws a TypeError for a time it cannot take: so does this
        sim.call(a.arm(t))
    assert sim.inspect(a).alarm == 1_000  # the refused calls changed nothing
    sim.run()
    n = len(sim.rows)
    sim.close()
    events = journal.events(sim.run_id)
    assert journal.unwritten == [] and len(events) == n and events["seq"].tolist() == list(range(1, n + 1))
    assert events[events.kind == "fire"]["t_ms"].tolist() == [1_002]


def test_the_last_time_workerd_takes_is_accepted_and_journaled():
    journal = Journal()
    sim, a = _sim(journal=journal, time_limit_ms=None)
    sim.call(a.arm(LAST))
    sim.run()
    sim.close()
    fires = journal.events(sim.run_id).query("kind == 'fire'")
    assert fires["t_ms"].tolist() == [LAST + 2] and fires["scheduled_ms"].tolist() == [LAST]


@pytest.mark.parametrize("call, message", [
    (lambda sim: sim.run(until=float("inf")), rf"^run\(until=\.\.\.\) must be {RANGE}, got float inf$"),
    (lambda sim: sim.run(until=2**64), rf"^run\(until=\.\.\.\) must be {RANGE}, got 18,446,744,073,709,551,616$"),
    (lambda sim: sim.run(until=1.5), rf"^run\(until=\.\.\.\) must be {RANGE}, got float 1\.5$"),
    (lambda sim: sim.run(until=True), rf"^run\(until=\.\.\.\) must be {RANGE}, got bool True$"),
    (lambda sim: sim.advance(2**60), r"^advance\(ms\) needs an int of ms in 0\.\.9,007,199,254,740,992 \(the clock ends "
                                     r"at 2\*\*53 ms\), got 1152921504606846976$"),
    (lambda sim: sim.call(sim.kernel.checkpoint(), limit=1e30), rf"^call\(limit=\.\.\.\) must be {RANGE}, got float 1e\+30$"),
    (lambda sim: sim.restart(2**64), rf"^restart\(downtime_ms\) must be {RANGE}, got 18,446,744,073,709,551,616$"),
    (lambda sim: sim.restart(-1), rf"^restart\(downtime_ms\) must be {RANGE}, got -1$"),
    (lambda sim: sim.kernel.call_at(2.5, print), r"^call_at\(t\) needs an int of ms in now\.\.2\*\*62, got 2\.5$"),
    (lambda sim: sim.namespace("\ud800", Obj), r"^namespace bindings must be valid text, got '\\ud800': a lone surrogate "
                                               r"'\\ud800' at position 0 cannot be stored; decode bytes with errors='replace'"),
    (lambda sim: sim.namespace("NS", Obj).get("ok\udfff"), r"^object names must be valid text, got 'ok\\udfff': a lone "
                                                           r"surrogate '\\udfff' at position 2 cannot be stored"),
    (lambda sim: Simulation(scenario="\ud800"), r"^scenario must be valid text, got '\\ud800'"),
    (lambda sim: Simulation(idle_evict_ms=2**64), rf"^profile 'workerd' setting idle_evict_ms must be {RANGE}, got 18,44"),
    (lambda sim: Simulation(profile=Profile(name="p\ud800")), r"^profile names must be valid text, got 'p\\ud800'"),
    (lambda sim: Simulation(backoff_max_shift=60), r"^profile 'workerd' setting backoff_max_shift must be an int in 0\.\.53"),
    (lambda sim: Simulation(step_limit=0), r"^step_limit must be a positive int or None \(no limit\), got 0$"),
])
def test_every_entry_refuses_a_bad_time_or_name_at_once(call, message):
    sim, _ = _sim()
    with pytest.raises(InvalidValue, match=message):
        call(sim)
    assert sim.now == 0 and sim.rows == []  # refused before anything happened


@pytest.mark.parametrize("method, arg, message", [
    ("sleep", 2**60, r"^sleep needs an int of milliseconds in 0\.\.9,007,199,254,740,992 \(the clock ends at 2\*\*53 ms\), "
                     r"got 1152921504606846976$"),
    ("effect", "\ud800", r"^ctx\.effect\(name\) must be valid text, got '\\ud800'"),
    ("facet", "\udc00", r"^facet names must be valid text, got '\\udc00'"),
])
def test_values_from_inside_an_object_are_refused_at_the_call(method, arg, message):
    sim, a = _sim()
    with pytest.raises(InvalidValue, match=message):
        sim.call(getattr(a, method)(arg))
    assert sim.now == 0


@pytest.mark.parametrize("plan, message", [
    ({"restarts": [{"at_ms": 5, "downtime_ms": 2**64}]},
     r"^fault plan field 'restarts\[0\]\.downtime_ms' must be an int >= 0 and <= 2\*\*53 \(how long the runtime stays down\), "
     r"got 18446744073709551616$"),
    ({"evictions": [{"at_ms": 1e30}]}, r"^fault plan field 'evictions\[0\]\.at_ms' must be an int >= 0 and <= 2\*\*53"),
    ({"handler_throws": [2**70]}, r"^fault plan field 'handler_throws\[0\]' must be an int >= 1 and <= 2\*\*53"),
    ({"object": "\ud800"}, r"^fault plan field 'object' must be valid text, got '\\ud800'.*; an object name or absent$"),
    ({"effect_throws": [{"effect": "rev\udc80"}]}, r"^fault plan field 'effect_throws\[0\]\.effect' must be valid text"),
])
def test_fault_plan_times_and_names_are_refused_in_the_plan(plan, message):
    with pytest.raises(FaultPlanError, match=message):
        FaultPlan.from_dict(plan)


def test_an_error_message_with_a_lone_surrogate_is_journaled_visibly_not_lost():
    class Bad(DurableObject):
        async def arm(self):
            await self.ctx.storage.set_alarm(100)

        async def alarm(self, info):
            raise ValueError("bad \ud800 byte")

    journal = Journal()
    sim = Simulation(journal=journal, retry_max_tries=0, fire_latency="exact")
    sim.call(sim.namespace("B", Bad).get("b").arm())
    sim.run()
    sim.close()
    ev = journal.events(sim.run_id)
    err = ev[ev.kind == "handler_error"]
    assert err["t_ms"].tolist() == [102] and '"message":"bad \\\\ud800 byte"' in err["detail"].iloc[0]
    assert ev.kind.tolist()[-3:] == ["handler_error", "abandoned", "evict"] and journal.unwritten == []


def _alarmkit(*args, cwd):
    return subprocess.run([sys.executable, "-m", "alarmkit", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize("params, name", [
    (["lease-normal", "--set", "ttls=[1e30]"], "ttls"),
    (["lease-lab", "--set", "horizon_ms=1e30"], "horizon_ms"),
    (["lease-revival", "--set", "downtime_ms=18446744073709551616"], "downtime_ms"),
    (["lease-normal", "--set", "ttls=[18446744073709551616]"], "ttls"),
    (["lease-normal", "--set", "ttls=[-5]"], "ttls"),
])
def test_cli_scenario_parameters_that_become_times_are_refused_before_any_run(tmp_path, params, name):
    """The CLI checks --set values against the parameter's shape before the journal is touched (the
    runtime's own checks, where such a value would otherwise enter, are tested above through the API)."""
    db = tmp_path / "x.duckdb"
    proc = _alarmkit("run", *params, "--db", str(db), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert re.search(rf"^alarmkit: error: scenario '[\w-]+': {name}=.* does not fit: parameter {name} takes .*in 0\.\.2\*\*53",
                     proc.stderr, re.M), proc.stderr
    assert not db.exists() or Journal(db, read_only=True).runs().empty  # nothing half-written


# -- item 2: a flush that fails keeps every event ----------------------------------------------------------
def _all_seqs(journal: Journal, run_id: int) -> list[int]:
    written = journal.events(run_id)["seq"].tolist()
    kept = [r[1] for r in journal.unwritten_rows()]
    return sorted(written + kept)


def test_a_row_no_column_can_hold_is_kept_with_its_batch_and_the_error_says_where(tmp_path):
    journal = Journal(tmp_path / "j.duckdb")
    sim, a = _sim(journal=journal)
    sim.call(a.arm(1_000))
    sim.flush()  # the first batch goes in
    written = len(journal.events(sim.run_id))
    sim.run(until=2_000)
    sim.log("custom", None, 2**64, None, None, None)  # past every check: sim.log trusts its caller
    n = len(sim.rows)
    with pytest.raises(JournalWriteError, match=rf"^journal {tmp_path / 'j.duckdb'}: a batch of {n} events could not be "
                                                r"converted for DuckDB \(.*\); earlier batches are in, and nothing is lost: "
                                                rf"{n} events are kept in journal\.unwritten \(1 batches; "
                                                r"journal\.unwritten_rows\(\) lists them\) and in .*j\.duckdb\.unwritten-"
                                                r"\S+\.jsonl \(`alarmkit journal recover .*`.*\); a value got past alarmkit's "
                                                r"checks \(sim\.log writes what it is given\): fix where it entered$"):
        sim.flush()
    kept = journal.unwritten_rows()
    assert [r[5] for r in kept] == ["fire", "handler_ok", "custom"]
    assert kept[-1] == (sim.run_id, written + 3, 2_000, None, None, "custom", 2**64, None, None, None)
    # the hot kinds are buffered packed (_events): kept, they read as the journal would hold them
    assert kept[0] == (sim.run_id, written + 1, 1_002, "NS", "a", "fire", 1_000, None, 0, '{"attempt":1,"late_ms":2}')
    assert kept[1] == (sim.run_id, written + 2, 1_002, "NS", "a", "handler_ok", 1_000, None, 0, '{"next_ms":null}')
    assert _all_seqs(journal, sim.run_id) == list(range(1, written + 4))
    journal.close()


def test_a_bad_name_forced_past_the_check_is_kept_unchanged(monkeypatch):
    monkeypatch.setattr(host_module, "text", lambda what, value: value)  # the check, switched off
    journal = Journal()
    sim = Simulation(journal=journal, fire_latency="exact")
    sim.call(sim.namespace("NS", Obj).get("\ud800").arm(50))
    with pytest.raises(JournalWriteError, match=r"could not be converted for DuckDB .*; 3 events are kept in journal\.unwritten .*in this process only"):
        sim.close()
    assert [r[1:6] for r in journal.unwritten_rows()] == [
        (1, 0, "NS", "\ud800", "construct"), (2, 0, "NS", "\ud800", "call"), (3, 0, "NS", "\ud800", "arm")]


def test_a_failed_flush_during_a_run_warns_goes_on_and_close_says_the_run_is_incomplete(tmp_path):
    journal = Journal(tmp_path / "j.duckdb", batch_size=4)  # a flush every 4 events, inside the run
    sim, a = _sim(journal=journal)
    b = sim.namespace("NS", Obj).get("b")
    sim.call(a.arm(1_000))
    sim.call(b.arm(2_000))
    sim.log("custom", None, 2**64, None, None, None)  # a bad row lands in the batch the next event flushes
    with pytest.warns(RuntimeWarning, match=r"could not be converted for DuckDB .*nothing is lost: \d+ events are kept in "
                                            r"journal\.unwritten .*; the simulation carries on$"):
        sim.call(a.arm(3_000))
    sim.run()  # it carried on: both alarms fire as they would have
    with pytest.raises(JournalWriteError, match=r"^journal .*: run 1 is incomplete: a batch could not be written during it "
                                                r"\(warned then\); earlier batches are in, and nothing is lost: \d+ events"):
        sim.close()
    events = journal.events(sim.run_id)
    assert events[events.kind == "fire"]["t_ms"].tolist() == [2_002, 3_002]
    total = len(events) + len(journal.unwritten_rows())
    assert _all_seqs(journal, sim.run_id) == list(range(1, total + 1))  # every event, once
    journal.close()


def test_a_failed_background_insert_names_how_many_events_are_kept_and_where(tmp_path):
    import duckdb

    journal = Journal(tmp_path / "w.duckdb")
    sim, a = _sim(journal=journal)
    sim.call(a.arm(1_000))
    sim.flush()
    cursor, first = journal._wcon, len(journal.events(sim.run_id))

    class FullDisk:  # the writer thread's cursor, on a disk that just filled up
        def from_arrow(self, table):
            raise duckdb.IOException("No space left on device")

    journal._wcon = FullDisk()
    sim.run(until=2_000)
    sim.flush()  # the writer thread fails on this batch
    sim.log("deploy", None, None, None, None, {"version": "v2"})
    with pytest.raises(JournalWriteError, match=r"a batch of 2 events could not be written \(.*No space left on device\); "
                                                r"earlier batches are in, and nothing is lost: 3 events are kept in "
                                                r"journal\.unwritten \(2 batches; journal\.unwritten_rows\(\) lists them\)"):
        sim.flush()
    journal._wcon = cursor
    assert [r[5] for r in journal.unwritten_rows()] == ["fire", "handler_ok", "deploy"]
    assert _all_seqs(journal, sim.run_id) == list(range(1, first + 4))
    journal.close()


# -- item 5: runaway work stops with a message ------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")  # the calls it never started
def test_an_rpc_that_calls_itself_stops_even_with_a_call_limit():
    sim, a = _sim(step_limit=2_000)
    with pytest.raises(RunawayError, match=r"^stopped at virtual time 0 ms after 2,000 steps with the clock standing still "
                                           r"\(step_limit\): task 'rpc:rec' of object NS:a keeps running without letting "
                                           r"virtual time pass \(a loop of awaits that never sleeps, or an RPC that calls "
                                           r"itself\?\); if the work is real, raise the limit: Simulation\(step_limit=\.\.\.\) "
                                           r"or sim\.step_limit = None for no limit$"):
        sim.call(a.rec(), limit=1_000)
    assert sim.now == 0
    del sim, a
    gc.collect()  # here, where the warnings about the calls it never started are expected


class Spinner(DurableObject):
    async def arm(self, t):
        await self.ctx.storage.set_alarm(t)

    async def alarm(self, info):
        while True:  # the clock never moves: storage calls settle at once
            await self.ctx.storage.get("k")


def test_a_handler_looping_on_storage_get_stops_at_the_default_budget_and_the_run_can_close():
    journal = Journal()
    sim = Simulation(journal=journal, fire_latency="exact")
    s = sim.namespace("S", Spinner).get("s")
    sim.call(s.arm(500))
    with pytest.raises(RunawayError, match=r"^stopped at virtual time 502 ms after 100,000 steps with the clock standing "
                                           r"still \(step_limit\): task 'alarm' of object S:s \(alarm\(\) attempts so far: 1\) "
                                           r"keeps running"):
        sim.run()
    assert sim.now == 502 and sim.step_limit == 100_000
    sim.close()  # closed cleanly: every event so far is in the journal
    assert journal.events(sim.run_id)["kind"].tolist()[-1] == "fire" and journal.unwritten == []


def test_a_sleep_zero_loop_stops_too():
    class Sleeper(Obj):
        async def alarm(self, info):
            while True:
                await self.ctx.sleep(0)  # timers at one instant

    sim = Simulation(step_limit=300, fire_latency="exact")
    s = sim.namespace("S", Sleeper).get("z")
    sim.call(s.arm(10))
    with pytest.raises(RunawayError, match=r"^stopped at virtual time 12 ms after 300 steps .*: task 'alarm' of object S:z"):
        sim.run(until=1_000)
    assert sim.now == 12
    sim.step_limit = None  # no limit: the loop would go on; a watchdog cannot help, the clock is still
    assert sim.kernel.step_limit is None


class AlwaysUncounted(Faults):
    def before_alarm(self, host, invocation, retry_count):
        raise UncountedFailure(f"attempt {invocation} fails, not the worker's fault")


def test_a_hook_that_always_fails_uncounted_stops_at_the_time_limit_with_exact_times():
    sim = Simulation(faults=AlwaysUncounted(), jitter_factor=0.0, time_limit_ms=100_000, fire_latency="exact")
    a = sim.namespace("NS", Obj).get("a")
    sim.call(a.arm(1_000))
    # retries back off 2, 4, 8, 16, 32 s (uncounted: the retry count stays 0), each fire 2 ms late
    with pytest.raises(RunawayError, match=r"^stopped at virtual time 70,000 ms: the next event, at 127,014 ms, is more "
                                           r"than time_limit_ms=100,000 after this run started at 0 ms; "
                                           r"next: the next alarm\(\) delivery of object NS:a \(alarm\(\) attempts so far: 6\) "
                                           r"\(work that never ends, such as a retry loop\?\); pass until= \(or limit= to call\)"):
        sim.run()
    fires = [r[1] for r in sim.rows if r[4] == "fire"]
    assert fires == [1_002, 3_004, 7_006, 15_008, 31_010, 63_012] and sim.now == 70_000  # the last event: idle eviction
    sim.run(until=170_000)  # told how far, within the budget of this run(): it goes on, one more attempt
    assert [r[1] for r in sim.rows if r[4] == "fire"][-1] == 127_014


def test_the_default_time_limit_stops_a_never_ending_retry_loop():
    sim = Simulation(faults=AlwaysUncounted(), fire_latency="exact")
    sim.call(sim.namespace("NS", Obj).get("a").arm(1_000))
    with pytest.raises(RunawayError, match=r"is more than time_limit_ms=31,536,000,000 \(365 days\) after this run started "
                                           r"at 0 ms; next: the next alarm\(\) delivery of object NS:a"):
        sim.run()
    assert 31_536_000_000 - 1_300_000 < sim.now <= 31_536_000_000


def test_no_built_in_scenario_comes_near_the_budgets(monkeypatch):
    """The defaults (100,000 steps, one year) are far above what the 25 scenarios take: they pass
    with 100 steps at an instant and two hours of virtual time per run() (prod-runaway-internal-errors
    runs three days, bounded by its run(until=...), well inside the one-year time budget)."""
    from alarmkit.scenarios import SCENARIOS, run_scenario

    original = Simulation.__init__

    def tight(self, *args, **kw):
        days3 = kw.get("scenario") == "prod-runaway-internal-errors"  # its run(until=) of 3 days keeps the budget
        original(self, *args, **{**kw, "step_limit": 100, "time_limit_ms": 259_200_000 if days3 else 7_200_000})

    monkeypatch.setattr(Simulation, "__init__", tight)
    # the Python built-ins (the JS host's js-* scenarios register when alarmkit.workers.js.scenarios is imported,
    # which another test in this process may have done: their own tests bound them)
    python = [name for name in SCENARIOS if not name.startswith("js-")]
    for name in python:
        assert run_scenario(name, seed=1).sim.step_limit == 100
    assert len(python) == 25  # 24 and order-handoff (a bug only another same-instant order shows)


# -- item 6: a BaseException in a handler does not wedge the object ------------------------------------------
class Interruptible(DurableObject):
    raise_in: dict[str, type] = {}  # where to raise, once: "alarm", "init", "stop"

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        if Interruptible.raise_in.pop("init", None):
            raise KeyboardInterrupt

    async def arm(self, t):
        await self.ctx.storage.set_alarm(t)

    def stop(self):  # a method that is not async
        exc = Interruptible.raise_in.pop("stop", None)
        if exc:
            raise exc(3)

    async def alarm(self, info):
        await self.ctx.storage.put("ran_at", self.ctx.now())
        exc = Interruptible.raise_in.pop("alarm", None)
        if exc:
            raise exc


def _events(sim):
    return [(r[1], r[4], r[5], (r[8] or {}).get("reason") or (r[8] or {}).get("error")) for r in sim.rows]


def test_a_keyboard_interrupt_in_alarm_is_journaled_the_alarm_stays_and_the_run_goes_on():
    journal = Journal()
    sim = Simulation(journal=journal, jitter_factor=0.0, fire_latency="exact")
    obj = sim.namespace("I", Interruptible).get("i")
    sim.call(obj.arm(1_000))
    Interruptible.raise_in = {"alarm": KeyboardInterrupt}
    with pytest.raises(KeyboardInterrupt):
        sim.run()
    assert sim.now == 1_002
    assert sim.inspect(obj).alarm == 1_000 and not sim.inspect(obj).awake  # as a crash leaves it
    assert _events(sim)[-5:] == [
        (1_002, "fire", 1_000, None),
        (1_002, "crash", None, "interrupted: KeyboardInterrupt in alarm"),
        (1_002, "handler_error", 1_000, "ObjectCrashed"),  # uncounted, as for a crash
        (1_002, "arm", 3_002, None),
        (1_002, "retry_scheduled", 3_002, None),
    ]
    sim.run()  # the simulation goes on: the retry fires and succeeds
    sim.call(obj.arm(sim.now + 10_000))  # and new alarms fire
    sim.run()
    assert _events(sim)[8:] == [
        (3_004, "fire", 1_000, None), (3_004, "construct", None, None), (3_004, "handler_ok", 1_000, None),
        (73_004, "evict", None, "idle"),
        (73_004, "construct", None, None), (73_004, "call", None, None), (73_004, "arm", 83_004, None),
        (83_006, "fire", 83_004, None), (83_006, "handler_ok", 83_004, None), (153_006, "evict", None, "idle"),
    ]
    assert sim.inspect(obj).sql("SELECT value FROM _cf_KV")[0]["value"] == "83006"
    n = len(sim.rows)
    sim.close()  # closed cleanly
    assert journal.unwritten == [] and len(journal.events(sim.run_id)) == n
    assert journal.events(sim.run_id).query("kind == 'crash'")["t_ms"].tolist() == [1_002]


def test_system_exit_in_a_sync_rpc_method_crashes_that_object_and_its_alarm_still_fires():
    sim = Simulation(fire_latency="exact")
    obj = sim.namespace("I", Interruptible).get("i")
    sim.call(obj.arm(5_000))
    Interruptible.raise_in = {"stop": SystemExit}
    with pytest.raises(SystemExit):
        sim.call(obj.stop())
    assert _events(sim)[-1] == (0, "crash", None, "interrupted: SystemExit in rpc:stop")
    assert sim.inspect(obj).alarm == 5_000 and not sim.inspect(obj).awake
    sim.run()
    assert _events(sim)[5:] == [(5_002, "fire", 5_000, None), (5_002, "construct", None, None),
                                (5_002, "handler_ok", 5_000, None), (75_002, "evict", None, "idle")]


def test_a_keyboard_interrupt_in_the_constructor_woken_by_an_alarm_does_not_wedge_it():
    sim = Simulation(jitter_factor=0.0, fire_latency="exact")
    obj = sim.namespace("I", Interruptible).get("i")
    sim.call(obj.arm(1_000))
    sim.evict(obj)
    Interruptible.raise_in = {"init": KeyboardInterrupt}
    with pytest.raises(KeyboardInterrupt):
        sim.run()
    assert _events(sim)[-6:] == [
        (1_002, "fire", 1_000, None),
        (1_002, "construct", None, None),
        (1_002, "crash", None, "interrupted: KeyboardInterrupt in the constructor"),
        (1_002, "handler_error", 1_000, "ObjectCrashed"),
        (1_002, "arm", 3_002, None),
        (1_002, "retry_scheduled", 3_002, None),
    ]
    sim.run()
    assert _events(sim)[-4:] == [(3_004, "fire", 1_000, None), (3_004, "construct", None, None),
                                 (3_004, "handler_ok", 1_000, None), (73_004, "evict", None, "idle")]


def test_a_keyboard_interrupt_in_a_constructor_the_celld_waker_runs_does_not_stop_the_waker():
    sim = Simulation(profile="celld")
    obj = sim.namespace("I", Interruptible).get("i")
    sim.call(obj.arm(200_000))
    sim.evict(obj)  # dormant: the minute bucket wakes it
    Interruptible.raise_in = {"init": KeyboardInterrupt}
    with pytest.raises(KeyboardInterrupt):
        sim.run()
    assert sim.now == 180_000 and _events(sim)[-1] == (180_000, "crash", None, "interrupted: KeyboardInterrupt in the constructor")
    sim.run()  # the waker ticks on: the next minute wakes the cell and its alarm fires
    assert _events(sim)[7:11] == [(240_000, "construct", None, None), (240_000, "wake", 200_000, None),
                                  (240_002, "fire", 200_000, None), (240_002, "handler_ok", 200_000, None)]


@pytest.mark.parametrize("kwargs, message", [
    ({"kind": "fire", "scheduled_ms": 100}, r"journal_event kind 'fire' is one the runtime journals itself .*e\.g\. 'my_fire'"),
    ({"kind": "handler_ok"}, r"kind 'handler_ok' is one the runtime journals itself"),
    ({"kind": ""}, r"journal_event\(kind\) must be a non-empty string, got ''"),
    ({"kind": "x", "scheduled_ms": 2**60}, r"journal_event\(scheduled_ms=\.\.\.\) must be"),
    ({"kind": "x", "prev_ms": -5}, r"journal_event\(prev_ms=\.\.\.\) must be .*got -5"),
    ({"kind": "x", "retry_count": 2**40}, r"retry_count=\.\.\.\) must be an int in 0\.\.2\*\*31-1 .*got 1,099,511,627,776"),
    ({"kind": "x", "detail": "hello"}, r"detail=\.\.\.\) must be a dict .*got str 'hello'; wrap it"),
])
def test_a_custom_event_the_journal_would_misread_or_could_not_hold_is_refused_where_it_enters(kwargs, message):
    """A custom 'fire' counted as an alarm() run (and crashed run_scenario's summary without a
    retry_count); a retry_count past the INTEGER column or a text detail broke a later flush."""
    journal = Journal()
    sim = Simulation(journal=journal, fire_latency="exact")
    stub = sim.namespace("NS", Obj).get("a")
    kind = kwargs.pop("kind")
    with pytest.raises(InvalidValue, match=message):
        sim.journal_event(kind, stub, **kwargs)
    ctx = stub._host.ensure_live().ctx  # inside an object: the same check
    with pytest.raises(InvalidValue, match=message):
        ctx.journal_event(kind, **kwargs)
    sim.journal_event("my_fire", stub, scheduled_ms=100, retry_count=0, detail={"n": 1})  # a name of its own is fine
    sim.close()
    assert journal.events(sim.run_id).kind.tolist() == ["construct", "my_fire"]
