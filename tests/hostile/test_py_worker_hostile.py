"""Hostile Python Workers through ``alarmkit worker``: generated modules that try to leave the simulation
(network, files, processes, threads) from every place a worker's code runs (module top, constructor, RPC
method, ``alarm()``, a sibling module, a task it starts, a ``try`` that swallows the refusal), that never
end (a synchronous loop, a re-arm storm) or that fail oddly (``GeneratorExit``, ``BaseException`` of its own,
an unreadable ``__str__``, ``KeyboardInterrupt``, ``SystemExit``, ``print`` everywhere).

Every run ends with exit 0 or 1 and one JSON object on stdout (``--json``: the worker's ``print`` never lands
there), or exit 2 with exactly one line ``alarmkit: error: ...`` and nothing else on stderr (no traceback, no
RuntimeWarning); no file appears or disappears, no process runs, the local server counts no connection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from alarmkit.cli import main
from counting_server import counting_server
from harness import count

ESCAPES = {
    "urlopen": "import urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{PORT}/', timeout=2)",
    "socket": "import socket; socket.create_connection(('127.0.0.1', PORT), timeout=2)",
    "http": "import http.client; http.client.HTTPConnection('127.0.0.1', PORT, timeout=2).request('GET', '/')",
    "bind": "import socket; socket.socket().bind(('127.0.0.1', 0))",
    "dns": "import socket; socket.getaddrinfo('localhost', 80)",
    "open": "open(TARGET, 'w').write('x')",
    "append": "open(TARGET, 'a').write('x')",
    "pathlib": "import pathlib; pathlib.Path(TARGET).write_text('x')",
    "os_open": "import os; os.close(os.open(TARGET, os.O_CREAT | os.O_WRONLY))",
    "mkdir": "import os; os.mkdir(TARGET)",
    "remove": "import os; os.remove(VICTIM)",
    "rename": "import os; os.rename(VICTIM, TARGET)",
    "tempfile": "import tempfile; tempfile.NamedTemporaryFile(dir=DIR, delete=False).write(b'x')",
    "sqlite": "import sqlite3; sqlite3.connect(TARGET).execute('CREATE TABLE t (x)')",
    "copy": "import shutil; shutil.copyfile(VICTIM, TARGET)",
    "subprocess": "import subprocess; subprocess.run(['sh', '-c', 'touch ' + TARGET])",
    "popen": "import os; os.popen('touch ' + TARGET).read()",
    "system": "import os; os.system('touch ' + TARGET)",
    "spawn": "import os; os.spawnl(os.P_WAIT, '/bin/sh', 'sh', '-c', 'touch ' + TARGET)",
    "posix_spawn": "import os; os.waitpid(os.posix_spawn('/bin/sh', ['sh', '-c', 'touch ' + TARGET], {}), 0)",
    "thread": "import threading; t = threading.Thread(target=lambda: open(TARGET, 'w')); t.start(); t.join()",
    "raw_thread": "import _thread; _thread.start_new_thread(lambda: open(TARGET, 'w'), ())",
    "pool": "import concurrent.futures as cf; cf.ThreadPoolExecutor(1).submit(lambda: open(TARGET, 'w')).result()",
    # what Python raises no audit event for: the worker's own os, atexit, sqlite3, duckdb (_unaudited.py)
    "mkfifo": "import os; os.mkfifo(TARGET)",
    "atexit": "import atexit; atexit.register(open, TARGET, 'w')",
    "sqlite_attach": "import sqlite3; sqlite3.connect(':memory:').execute(f\"ATTACH '{TARGET}' AS t\")",
    "sqlite_vacuum": "import sqlite3; sqlite3.connect(':memory:').execute(f\"VACUUM INTO '{TARGET}'\")",
    "duckdb_file": "import duckdb; duckdb.connect(TARGET)",
    "duckdb_copy": "import duckdb; duckdb.sql(f\"COPY (SELECT 1) TO '{TARGET}'\")",
}
ODD = {
    "genexit": "raise GeneratorExit",
    "base": "raise BaseException('boom')",
    "mine": "raise Mine('mine')",
    "unreadable": "raise Unreadable()",
    "keyboard": "raise KeyboardInterrupt('mine')",
    "exit": "raise SystemExit(3)",
    "stopiter": "raise StopIteration",
    "print": "print('to stdout?', 1, {'x': 1}); print('err', file=__import__('sys').stderr)",
    "sleep": "import asyncio; asyncio.sleep(-1).close()",
}
PLACES = ["top", "ctor", "rpc", "alarm", "helper", "task", "swallowed"]

TEMPLATE = '''
import asyncio
from workers import DurableObject
from helper import helper
PORT = {port}
TARGET = {target!r}
VICTIM = {victim!r}
DIR = {dir!r}

class Unreadable(Exception):
    def __str__(self):
        raise ValueError("unreadable")

class Mine(BaseException):
    pass

def act():
    {action}

{top}

class W(DurableObject):
    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        {ctor}

    async def go(self):
        await self.ctx.storage.setAlarm(1_000)
        {rpc}
        return "went"

    async def alarm(self):
        {alarm}

    async def later(self):
        act()
'''
HELPER = '''
def helper(act):
    act()
'''


@pytest.fixture(scope="module")
def server():
    with counting_server() as srv:
        yield srv


@pytest.fixture
def port(server):
    server.reset()
    return server.port


def write_worker(folder: Path, port: int, action: str, place: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "src"
    src.mkdir(exist_ok=True)
    slots = {"top": "", "ctor": "pass", "rpc": "pass", "alarm": "pass"}
    call = {"top": "act()", "ctor": "act()", "rpc": "act()", "alarm": "act()", "helper": "helper(act)",
            "task": "await asyncio.create_task(self.later())",
            "swallowed": "try:\n            act()\n        except BaseException:\n            pass"}[place]
    slot = {"helper": "rpc", "task": "rpc", "swallowed": "rpc"}.get(place, place)
    slots[slot] = call
    (src / "entry.py").write_text(TEMPLATE.format(port=port, target=str(folder / "target"), victim=str(folder / "victim"),
                                                  dir=str(folder / "tmpdir"), action=action, **slots))
    (src / "helper.py").write_text(HELPER)
    (folder / "victim").write_text("keep me")
    (folder / "tmpdir").mkdir(exist_ok=True)
    (folder / "drive.json").write_text(json.dumps(
        {"steps": [{"at": 0, "call": "W", "name": "a", "method": "go"}], "until": 10_000}))
    return src / "entry.py"


def snapshot(folder: Path) -> dict:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def run(capsys, folder: Path, entry: Path, *extra: str) -> tuple[int, str, str]:
    try:
        rc = main(["worker", "--worker", str(entry), "--bind", "W=W", "--drive", str(folder / "drive.json"), "--json", *extra])
    except SystemExit as exit_:
        rc = exit_.code
    out, err = capsys.readouterr()
    return rc, out, err


def check(rc: int, out: str, err: str) -> dict | None:
    assert rc in (0, 1, 2), (rc, out, err)
    assert "Traceback" not in err and "Warning" not in err, err
    if rc == 2:
        assert out == "" and len(err.splitlines()) == 1 and err.startswith("alarmkit: error: "), (out, err)
        return None
    assert err == "", err
    return json.loads(out)  # one JSON object: nothing the worker printed


@settings(max_examples=80)
@given(name=st.sampled_from(sorted(ESCAPES)), place=st.sampled_from(PLACES))
def test_a_worker_cannot_leave_the_simulation_from_anywhere(tmp_path_factory, capsys, server, port, name, place):
    count("worker (python, escape)")
    folder = tmp_path_factory.mktemp("esc")
    entry = write_worker(folder, port, ESCAPES[name], place)
    before = snapshot(folder)
    rc, out, err = run(capsys, folder, entry)
    summary = check(rc, out, err)
    assert snapshot(folder) == before, f"{name} in {place} changed the folder"
    assert not (folder / "target").exists() and server.hits == 0
    refused = "in the worker's code at" in out + err  # the refusal's text, at the call
    if place == "swallowed":
        assert summary is not None and summary["failed"] == 0  # the worker's own except hid it; nothing left
    elif place == "alarm":  # the refusal failed each attempt: retried on the ladder
        assert summary is not None and [a["retry_count"] for a in summary["attempts"]][:3] == [0, 1, 2]
    else:
        assert refused, (name, place, out, err)


@settings(max_examples=40)
@given(name=st.sampled_from(sorted(ODD)), place=st.sampled_from(PLACES))
def test_odd_failures_and_prints_end_in_a_result_or_one_line(tmp_path_factory, capsys, port, name, place):
    count("worker (python, odd)")
    folder = tmp_path_factory.mktemp("odd")
    entry = write_worker(folder, port, ODD[name], place)
    rc, out, err = run(capsys, folder, entry)
    summary = check(rc, out, err)
    if name == "print" and summary is not None:  # captured as console lines (in --json's logs), never raw on stdout
        assert not any(line.startswith("to stdout?") for line in out.splitlines())
        assert [lvl for _, lvl, text in summary.get("logs", []) if text.startswith("to stdout?")] in ([], ["log"])
    if name in ("keyboard", "exit") and place not in ("swallowed",):
        assert rc == 2 and "Ctrl-C" not in err and "interrupted" not in err.split(":")[2]


LOOPS = {
    "spin": "while True: pass",
    "spin_caught": "while True:\n        try:\n            pass\n        except Exception:\n            pass",
    "recurse_sum": "x = 0\n    while True:\n        x = (x + 1) % 7",
}


@settings(max_examples=12)
@given(name=st.sampled_from(sorted(LOOPS)), place=st.sampled_from(["top", "ctor", "rpc", "alarm", "helper", "task"]))
def test_a_synchronous_endless_loop_is_stopped_in_one_line(tmp_path_factory, capsys, port, name, place):
    count("worker (python, loop)")
    folder = tmp_path_factory.mktemp("loop")
    entry = write_worker(folder, port, LOOPS[name], place)
    rc, out, err = run(capsys, folder, entry, "--wall-limit", "0.25")
    check(rc, out, err)
    assert rc == 2 and "ran for 0.25 s of wall-clock time" in err and "--wall-limit" in err


STORMS = {
    "at_now": "self.ctx.storage.setAlarm(__import__('js').Date.now())",
    "one_ms": "await self.ctx.storage.setAlarm(__import__('js').Date.now() + 1)",
    "past": "await self.ctx.storage.setAlarm(1)",
    "throws": "raise ValueError('again')",
}


@settings(max_examples=8)
@given(name=st.sampled_from(sorted(STORMS)))
def test_a_storm_without_until_stops_at_the_event_limit_naming_the_object(tmp_path_factory, capsys, port, name):
    count("worker (python, storm)")
    folder = tmp_path_factory.mktemp("storm")
    src = folder / "src"
    src.mkdir()
    (src / "entry.py").write_text(f'''
from workers import DurableObject

class W(DurableObject):
    async def go(self):
        await self.ctx.storage.setAlarm(1_000)

    async def alarm(self):
        {STORMS[name]}
''')
    (folder / "drive.json").write_text(json.dumps({"steps": [{"at": 0, "call": "W", "name": "a", "method": "go"}]}))
    rc, out, err = run(capsys, folder, src / "entry.py", "--event-limit", "20000")
    summary = check(rc, out, err)
    if name == "throws":  # the retry ladder ends on its own: no storm
        assert summary is not None
        return
    assert rc == 2 and "(event_limit=20,000): object W:a" in err and "alarm() fires" in err
