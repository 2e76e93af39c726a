"""A Python Worker kept inside the simulation and bounded: the audit hook's refusals, the wall-clock watchdog, ``event_limit``, failures Python would not pass on
as ordinary exceptions, ``print()`` and ``ctx.storage.kv``, ``transaction()``'s rollback."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import alarmkit as ak
from alarmkit.cli import main

from counting_server import counting_server
from pyworker_support import FIXTURES, kinds

STREAM = FIXTURES / "stream_consumer"


def load(tmp_path: Path, source: str, binding: str = "W", cls: str = "W", **sim_kw):
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "entry.py").write_text(source)
    sim = ak.Simulation(seed=0, **sim_kw)
    w = sim.load_worker(tmp_path / "src" / "entry.py", bindings={binding: cls})
    return sim, w, getattr(w.env, binding).getByName("a")


# -- a keep-alive stream consumer (our own, in the shape of a public pattern), unchanged --------------------
def test_a_keepalive_stream_consumer_runs_kv_read_print_captured_websocket_refused(tmp_path, capsys):
    drive = tmp_path / "drive.json"
    drive.write_text(json.dumps({"steps": [{"at": 0, "fetch": "/status"}], "until": 70_000}))
    rc = main(["worker", "--wrangler", str(STREAM / "wrangler.jsonc"), "--drive", str(drive), "--json"])
    out, err = capsys.readouterr()
    summary = json.loads(out)  # print() went to the journal, not stdout: the JSON parses
    assert rc == 0 and err == ""
    [outcome] = summary["outcomes"]
    assert outcome["error"].startswith("WorkerUnsupported: js.WebSocket.new('wss://stream.example.net/feed")
    assert "a network connection leaves the simulation" in outcome["error"]
    # the fetch set the keep-alive alarm (time.time() reads the virtual clock) before it tried to connect
    assert [(a["t_ms"], a["retry_count"]) for a in summary["attempts"]] == [(60_001, 0), (62_434, 1), (66_829, 2)]

    sim = ak.Simulation(seed=0)
    w = sim.load_worker(wrangler=STREAM / "wrangler.jsonc")
    stub = w.env.STREAM.getByName("consumer")
    with pytest.raises(ak.WorkerUnsupported, match=r"^js\.WebSocket\.new\("):
        sim.call(stub.fetch("https://x/status"))
    sim.run(until=60_001)
    opening = "opening wss://stream.example.net/feed?topics=posts (from the start)"
    assert [line for line in w.logs if "opening" in line[2] or "alarm" in line[2]] == [
        (0, "log", opening), (60_001, "log", "keep-alive alarm: checking the stream"), (60_001, "log", opening)]
    ev = sim.events()
    console = ev[ev["kind"] == "console"]
    assert list(console["t_ms"]) == [0, 60_001, 60_001] and set(console["object_id"]) == {"consumer"}
    assert capsys.readouterr().out == ""


def test_storage_kv_is_synchronous_shares_keys_with_get_and_joins_the_turn(tmp_path):
    sim, w, a = load(tmp_path, '''
from workers import DurableObject

class W(DurableObject):
    async def go(self):
        kv = self.ctx.storage.kv
        assert kv.get("missing") is None
        kv.put("b", {"n": 1})
        kv.put("a", [1, 2])
        kv.put("c", "x")
        got = kv.get("b")
        listed = kv.list(prefix="", start="b")
        was, again = kv.delete("c"), kv.delete("c")
        return [got.n, listed, was, again, await self.ctx.storage.get("a"), kv.list(reverse=True, limit=1)]

    async def boom(self):
        self.ctx.storage.kv.put("lost", 1)
        self.ctx.abort("reset")

    async def read(self, key):
        return self.ctx.storage.kv.get(key)

    async def bad(self):
        return self.ctx.storage.kv.get(3)
''')
    assert sim.call(a.go()) == [1, [["b", {"n": 1}], ["c", "x"]], True, False, [1, 2], [["b", {"n": 1}]]]
    with pytest.raises(ak.Aborted):
        sim.call(a.boom())
    assert sim.call(a.read("lost")) is None  # the reset lost the turn's kv write, as a put
    with pytest.raises(TypeError, match=r"storage\.kv\.get: keys are text \(str\), got int"):
        sim.call(a.bad())


def test_print_goes_to_the_journal_and_logs_never_to_stdout(tmp_path, capsys):
    sim, w, a = load(tmp_path, '''
import sys
import io
from workers import DurableObject
print("loaded")

class W(DurableObject):
    async def go(self):
        print("a", 1, sep="-", end="!\\n")
        print("oops", file=sys.stderr)
        buf = io.StringIO()
        print("kept", file=buf)
        return buf.getvalue()
''')
    assert sim.call(a.go()) == "kept\n"
    assert w.logs == [(0, "log", "loaded"), (0, "log", "a-1!"), (0, "error", "oops")]
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    ev = sim.events()
    assert ev[ev["kind"] == "console"]["detail"].tolist() == [
        '{"level":"log","text":"loaded"}', '{"level":"log","text":"a-1!"}', '{"level":"error","text":"oops"}']


# -- containment ----------------------------------------------------------------------------------------
@pytest.fixture
def server():
    with counting_server() as srv:
        yield srv


ESCAPES = {
    "urlopen": ("import urllib.request\n        urllib.request.urlopen(f'http://127.0.0.1:{PORT}/')",
                r"^socket\.getaddrinfo\('127\.0\.0\.1', \d+, 0\) in the worker's code at .*entry\.py:\d+: a network "
                r"connection leaves the simulation, which alarmkit does not do; bind the service instead"),
    "connect": ("import socket\n        socket.create_connection(('127.0.0.1', PORT))",
                r"^socket\.getaddrinfo\(.*a network connection leaves the simulation"),
    "write": ("open(TARGET, 'w').write('x')",
              r"^open\('.*target', 'w', \d+\) in the worker's code at .*entry\.py:\d+: a file written outside the "
              r"simulation, which alarmkit does not do; keep the data in ctx\.storage"),
    "pathlib": ("import pathlib\n        pathlib.Path(TARGET).write_text('x')", r"^open\('.*target', 'w'"),
    "mkdir": ("import os\n        os.mkdir(TARGET)", r"^os\.mkdir\('.*target'"),
    "subprocess": ("import subprocess\n        subprocess.run(['sh', '-c', 'touch ' + TARGET])",
                   r"^subprocess\.Popen\('sh', \['sh', '-c', 'touch .*, None\) in the worker's code at .*: a "
                   r"process leaves the simulation"),
    "system": ("import os\n        os.system('touch ' + TARGET)", r"^os\.system\(b'touch .*: a process leaves"),
    "thread": ("import threading\n        threading.Thread(target=lambda: open(TARGET, 'w')).start()",
               r"^_thread\.start_new_thread\(.*a thread would run outside the simulation's virtual clock; start "
               r"the work as a task"),
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_each_way_out_is_refused_at_the_call_by_name_and_nothing_leaves(tmp_path, server, name):
    code, pattern = ESCAPES[name]
    target = tmp_path / "target"
    sim, w, a = load(tmp_path, f'''
from workers import DurableObject
PORT = {server.port}
TARGET = {str(target)!r}

class W(DurableObject):
    async def go(self):
        {code}

    async def read(self):
        return len(open(__file__).read())
''')
    with pytest.raises(ak.WorkerUnsupported, match=pattern):
        sim.call(a.go())
    assert not target.exists() and server.hits == 0
    assert sim.call(a.read()) > 0  # reading a file is not leaving
    target.write_text("the user's own code, outside the worker, writes as it likes")


def test_a_fake_binding_and_alarmkits_journal_may_write_the_worker_may_not(tmp_path):
    from alarmkit.journal import Journal

    log = tmp_path / "fake.log"

    class FakeStore:
        async def save(self, text):
            log.write_text(text)  # the user's fake, outside the simulation: allowed
            return True

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "entry.py").write_text('''
from workers import DurableObject

class W(DurableObject):
    async def go(self):
        await self.ctx.storage.put("k", 1)
        return await self.env.STORE.save("saved by the fake")
''')
    with Journal(tmp_path / "j.duckdb", batch_size=1) as journal:  # a write per event, inside the worker's steps
        sim = ak.Simulation(seed=0, journal=journal)
        w = sim.load_worker(tmp_path / "src" / "entry.py", bindings={"W": "W", "STORE": FakeStore()})
        assert sim.call(w.env.W.getByName("a").go()) is True
        sim.close()
        assert list(journal.events(sim.run_id)["kind"]) == ["construct", "call"]
    assert log.read_text() == "saved by the fake"


# -- budgets -------------------------------------------------------------------------------------------
def test_a_synchronous_endless_loop_is_stopped_after_wall_limit_s_and_the_simulation_goes_on(tmp_path):
    sim, w, a = load(tmp_path, '''
from workers import DurableObject

class W(DurableObject):
    async def spin(self):
        n = 0
        while True:
            try:
                n += 1
            except Exception:
                pass

    async def ok(self):
        return "still here"
''', wall_limit_s=0.3)
    with pytest.raises(ak.RunawayError, match=r"^object a \(rpc:spin\) ran for 0\.3 s of wall-clock time without "
                                              r"returning to the simulation, stopped at .*entry\.py:7 \(a synchronous "
                                              r"endless loop, such as while True: pass\?\): the object was reset"):
        sim.call(a.spin())
    assert sim.call(a.ok()) == "still here"
    assert [k[2] for k in kinds(sim, "crash")] == ["crash"]


@pytest.mark.parametrize("where", ["top", "constructor", "alarm"])
def test_the_wall_limit_covers_module_top_constructor_and_alarm(tmp_path, where):
    loop = "while True:\n    pass\n"
    src = f'''
from workers import DurableObject
{loop if where == "top" else ""}
class W(DurableObject):
    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        {"while True: pass" if where == "constructor" else "pass"}

    async def arm(self):
        await self.ctx.storage.setAlarm(1_000)

    async def alarm(self):
        {"while True: pass" if where == "alarm" else "pass"}
'''
    if where == "top":
        with pytest.raises(ak.WorkerError, match=r"^importing .*entry\.py ran for 0\.2 s of wall-clock time .* "
                                                 r"stopped at .*entry\.py:3 .*the worker was not loaded"):
            load(tmp_path, src, wall_limit_s=0.2)
        return
    sim, w, a = load(tmp_path, src, wall_limit_s=0.2)
    if where == "constructor":
        with pytest.raises(ak.RunawayError, match=r"^object a \(the constructor\) ran for 0\.2 s of wall-clock time.*entry\.py:7"):
            sim.call(a.arm())
        return
    sim.call(a.arm())
    with pytest.raises(ak.RunawayError, match=r"^object a \(alarm\) ran for 0\.2 s .*entry\.py:13"):
        sim.run()
    assert sim.now == 1_001


def test_a_rearm_storm_stops_at_event_limit_naming_the_object_and_the_loop(tmp_path):
    sim, w, a = load(tmp_path, '''
from workers import DurableObject
from js import Date

class W(DurableObject):
    async def start(self):
        await self.ctx.storage.setAlarm(Date.now() + 1000)

    async def alarm(self):
        self.ctx.storage.setAlarm(Date.now())
''', event_limit=100_000)
    sim.call(a.start())
    with pytest.raises(ak.RunawayError) as err:
        sim.run()
    ev = sim.events()  # the call's 3 events, then exactly the run's 100,000: the last a fire, its alarm() not run
    assert len(ev) == 3 + 100_000 and sim.now == 48_610
    assert ev[["seq", "t_ms", "kind"]].tail(3).values.tolist() == [[100_001, 48_608, "arm"], [100_002, 48_608, "handler_ok"],
                                                                   [100_003, 48_610, "fire"]]
    assert str(err.value) == (
        "stopped at virtual time 48,610 ms after 100,000 journal events in this run (event_limit=100,000): object W:a "
        "(20,000 of the latest 20,000 events): 6,667 alarm() fires, each re-arming at the time it ran (an alarm() "
        "that sets its next alarm at Date.now()?); work that never ends (driven without until?): pass until= (or "
        "limit= to call) to run less far, or raise the limit: Simulation(event_limit=...) or sim.event_limit = None "
        "for no limit (alarmkit worker --event-limit N)")
    sim.run(until=sim.now + 10)  # the next run() counts afresh: the simulation goes on
    sim.event_limit = None
    assert sim.event_limit is None
    with pytest.raises(ak.InvalidValue, match=r"event_limit must be a positive int or None"):
        sim.event_limit = 0
    with pytest.raises(ak.InvalidValue, match=r"wall_limit_s must be seconds in \(0, 86,400\] or None"):
        ak.Simulation(wall_limit_s=float("nan"))


# -- what Python would not pass on as an ordinary exception ---------------------------------------------
BAD = '''
from workers import DurableObject

class Unreadable(Exception):
    def __str__(self):
        raise ValueError("no text")

class Mine(BaseException):
    pass

class W(DurableObject):
    async def arm(self, what):
        await self.ctx.storage.put("what", what)
        await self.ctx.storage.setAlarm(1_000)

    async def alarm(self):
        what = await self.ctx.storage.get("what")
        if what == "genexit":
            raise GeneratorExit
        if what == "mine":
            raise Mine("boom")
        raise Unreadable()

    def sync_genexit(self):
        raise GeneratorExit
'''


@pytest.mark.parametrize("what, text", [
    ("genexit", "W.alarm() raised GeneratorExit, a BaseException that is not an Exception: the handler failed; "
                "raise an Exception (ValueError, RuntimeError...) from a handler"),
    ("mine", "W.alarm() raised Mine: boom, a BaseException that is not an Exception: the handler failed; "
             "raise an Exception (ValueError, RuntimeError...) from a handler"),
    ("unreadable", "W.alarm() raised Unreadable, whose text cannot be read (its __str__ raised ValueError): "
                   "the handler failed"),
])
def test_a_base_exception_or_unreadable_error_in_alarm_is_a_counted_failure_retried(tmp_path, what, text):
    sim, w, a = load(tmp_path, BAD)
    sim.call(a.arm(what))
    sim.run(until=10_000)
    assert [(t, k, r) for t, _, k, r in kinds(sim, "fire")] == [(1_001, "fire", 1_000), (3_434, "fire", 1_000),
                                                                (7_829, "fire", 1_000)]
    ev = sim.events()
    errors = ev[ev["kind"] == "handler_error"]["detail"].map(json.loads).tolist()
    assert errors[0]["error"] == "WorkerFailure" and errors[0]["message"] == text and errors[0]["counted"] is True


def test_a_base_exception_from_an_rpc_method_fails_the_call(tmp_path):
    sim, w, a = load(tmp_path, BAD)
    with pytest.raises(ak.WorkerFailure, match=r"^W\.sync_genexit\(\) raised GeneratorExit, a BaseException"):
        sim.call(a.sync_genexit())


def test_asyncio_sleep_of_zero_or_negative_returns_at_once(tmp_path):
    sim, w, a = load(tmp_path, '''
import asyncio
from workers import DurableObject

class W(DurableObject):
    async def go(self):
        await asyncio.sleep(-1)
        await asyncio.sleep(0)
        v = await asyncio.sleep(0.25, result="done")
        return v
''')
    assert sim.call(a.go()) == "done" and sim.now == 250


def test_transaction_rolls_back_writes_and_the_alarm_set_before_an_inner_await(tmp_path):
    sim, w, a = load(tmp_path, '''
from workers import DurableObject

class W(DurableObject):
    async def go(self):
        await self.ctx.storage.put("kept", 1)

        async def body(txn):
            await txn.put("k", "written")
            self.ctx.storage.sql.exec("CREATE TABLE t (x)")
            await txn.setAlarm(5_000)
            assert await txn.get("k") == "written"
            raise ValueError("changed my mind")

        try:
            await self.ctx.storage.transaction(body)
        except ValueError:
            pass
        ok = await self.ctx.storage.transaction(lambda txn: txn.put("after", 2))
        return [await self.ctx.storage.get("k"), await self.ctx.storage.get("kept"), await self.ctx.storage.get("after"),
                await self.ctx.storage.getAlarm(), [r.name for r in self.ctx.storage.sql.exec(
                    "SELECT name FROM sqlite_master WHERE name = 't'")]]

    async def alarm(self):
        pass
''')
    assert sim.call(a.go()) == [None, 1, 2, None, []]
    sim.run()
    assert kinds(sim, "fire") == []


def test_a_workers_own_keyboard_interrupt_at_import_is_not_a_ctrl_c(tmp_path, capsys):
    (tmp_path / "entry.py").write_text("raise KeyboardInterrupt('mine')\n")
    (tmp_path / "drive.json").write_text('{"steps": [{"at": 0, "fetch": "/"}]}')
    rc = main(["worker", str(tmp_path / "entry.py"), "--drive", str(tmp_path / "drive.json")])
    err = capsys.readouterr().err
    assert rc == 2 and "Ctrl-C" not in err and "RuntimeWarning" not in err
    assert err.startswith("alarmkit: error: worker: the code it ran called raise KeyboardInterrupt (raised in the "
                          f"simulated code of the worker module {tmp_path / 'entry.py'} (at import, line 1)); the run "
                          "stopped there, unfinished (the worker was not loaded, nothing ran).")


def test_a_loop_of_storage_reads_is_named_in_words_not_by_an_internal_name(tmp_path):
    sim, w, a = load(tmp_path, '''
from workers import DurableObject

class W(DurableObject):
    async def reads(self):
        while True:
            await self.ctx.storage.get("k")
''')
    with pytest.raises(ak.RunawayError) as err:
        sim.call(a.reads())
    assert "_read_done" not in str(err.value) and "Host." not in str(err.value)
    assert "(step_limit): a storage read (get or list, awaited in a loop?) of object W:a keeps running" in str(err.value)


def test_event_limit_stops_a_plain_simulation_too_and_with_a_journal_file(tmp_path):
    from alarmkit.journal import Journal

    class Storm(ak.DurableObject):
        async def start(self):
            await self.ctx.storage.set_alarm(self.ctx.now() + 10)

        async def alarm(self, info):
            await self.ctx.storage.set_alarm(self.ctx.now() + 5)

    with Journal(tmp_path / "j.duckdb", batch_size=1_000) as journal:
        sim = ak.Simulation(seed=0, journal=journal, event_limit=10_000)
        stub = sim.namespace("S", Storm).get("a")
        sim.call(stub.start())
        with pytest.raises(ak.RunawayError, match=r"^stopped at virtual time 21,788 ms after 10,000 journal events in this "
                                                  r"run \(event_limit=10,000\): object S:a \(1,003 of the latest 1,003 "
                                                  r"events\): 335 alarm\(\) fires, each re-arming 5 ms ahead \(an alarm\(\) "
                                                  r"that always sets another\?\)"):
            sim.run()
        sim.close(complete=False)
        # the call's 3 and exactly the run's 10,000 (it was 10,997 counted at the batch's check, and 2 more)
        ev = journal.events(sim.run_id)
        assert len(ev) == 3 + 10_000 and ev["t_ms"].iloc[-1] == 21_788 and ev["kind"].iloc[-1] == "fire"


def test_the_users_own_threads_and_files_are_untouched_by_the_hook(tmp_path):
    sim, w, a = load(tmp_path, '''
from workers import DurableObject

class W(DurableObject):
    async def go(self):
        return 1
''')
    assert sim.call(a.go()) == 1
    seen = []
    t = threading.Thread(target=lambda: seen.append((tmp_path / "mine.txt").write_text("x")))
    t.start()
    t.join()
    assert seen == [1] and (tmp_path / "mine.txt").read_text() == "x"


SHARED_STATE = {
    "chdir": "import os\n        os.chdir('/')",
    "putenv": "import os\n        os.environ['ALARMKIT_TEST_WORKER_SET'] = '1'",
    "unsetenv": "import os\n        os.unsetenv('HOME')",
}


@pytest.mark.parametrize("name", sorted(SHARED_STATE))
def test_a_change_to_the_shared_process_is_refused_by_name(tmp_path, name):
    """A worker's os.chdir moved the user's relative --report; its environment changes outlived the run."""
    import os

    cwd, env = os.getcwd(), dict(os.environ)
    sim, w, a = load(tmp_path, f'''
from workers import DurableObject

class W(DurableObject):
    async def go(self):
        {SHARED_STATE[name]}
''')
    with pytest.raises(ak.WorkerUnsupported, match=r"in the worker's code at .*entry\.py:\d+: it changes the process "
                                                   r"every object and alarmkit share"):
        sim.call(a.go())
    assert os.getcwd() == cwd and "ALARMKIT_TEST_WORKER_SET" not in os.environ and os.environ.get("HOME") == env.get("HOME")
