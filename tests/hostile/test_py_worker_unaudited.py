"""The ways past the audit hook that Python raises no audit event for, closed in the Python Worker's own
``os``, ``atexit``, ``sqlite3`` and ``duckdb`` (alarmkit/workers/python/_unaudited.py): each is refused at
the call with a one-line ``WorkerUnsupported`` naming the call and the worker's line, nothing is made on
disk, and what stays inside (in-memory SQLite and DuckDB, reading ``os.environ``) still works."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import alarmkit as ak

FILE_WHY = "a file written outside the simulation, which alarmkit does not do; keep the data in ctx.storage"
ATTACH_WHY = "outside the simulation (ATTACH of a file, VACUUM INTO), which alarmkit does not do; attach ':memory:'"
DUCK_WHY = "DuckDB would read or write a file outside the simulation (ATTACH, COPY, read_csv...)"

CASES = {  # the worker's code (TARGET: a file in the test's folder) -> the refusal's start, its reason
    "mkfifo": ("import os\n        os.mkfifo(TARGET)", "os.mkfifo('{t}')", FILE_WHY),
    "mknod": ("import os, stat\n        os.mknod(TARGET, stat.S_IFREG | 0o600)", "os.mknod('{t}', 33152)", FILE_WHY),
    "from_os": ("from os import mkfifo\n        mkfifo(TARGET)", "os.mkfifo('{t}')", FILE_WHY),
    "atexit": ("import atexit\n        atexit.register(open, TARGET, 'w')", "atexit.register(<built-in function open>)",
               "a callback at the process's exit runs after the simulation, outside its clock and its journal"),
    "sqlite_attach": ("import sqlite3\n        sqlite3.connect(':memory:').execute(f\"ATTACH '{TARGET}' AS a\")",
                      "sqlite3.Cursor.execute(\"ATTACH '{t}' AS a\")", "it writes the file '{t}' " + ATTACH_WHY),
    "sqlite_vacuum": ("import sqlite3\n        c = sqlite3.connect('')\n        c.execute('CREATE TABLE t (x)')\n"
                      "        c.execute(f\"VACUUM INTO '{TARGET}'\")",
                      "sqlite3.Cursor.execute(\"VACUUM INTO '{t}'\")", "it writes the file '{t}' " + ATTACH_WHY),
    "sqlite_unlocked": ("import sqlite3\n        c = sqlite3.connect(':memory:')\n        c.set_authorizer(None)\n"
                        "        c.cursor().executescript(f\"ATTACH '{TARGET}' AS a;\")",
                        "sqlite3.Cursor.executescript(\"ATTACH '{t}' AS a;\")", "it writes the file '{t}' " + ATTACH_WHY),
    "sqlite_file": ("import sqlite3\n        sqlite3.connect(TARGET)", "sqlite3.connect('{t}')", FILE_WHY),
    "duckdb_file": ("import duckdb\n        duckdb.connect(TARGET)", "duckdb.connect('{t}')", FILE_WHY),
    "duckdb_attach": ("import duckdb\n        duckdb.connect(':memory:').execute(f\"ATTACH '{TARGET}' AS a\")",
                      "duckdb.execute(\"ATTACH '{t}' AS a\")", DUCK_WHY),
    "duckdb_copy": ("import duckdb\n        duckdb.sql(f\"COPY (SELECT 1) TO '{TARGET}'\")",
                    "duckdb.sql(\"COPY (SELECT 1) TO '{t}'\")", DUCK_WHY),
    "duckdb_unlock": ("import duckdb\n        c = duckdb.connect(config={'enable_external_access': True, "
                      "'lock_configuration': False})\n        c.execute(f\"COPY (SELECT 1) TO '{TARGET}'\")",
                      "duckdb.execute(\"COPY (SELECT 1) TO '{t}'\")", DUCK_WHY),
    "environ_set": ("import os\n        os.environ['ALARMKIT_UNAUDITED'] = TARGET", "os.putenv('ALARMKIT_UNAUDITED', '{t}')",
                    "it changes the process every object and alarmkit share"),
    # found by the hostile pass: other doors to the same sqlite3, a file name the checks misread, a process end
    "sqlite_dbapi2": ("from sqlite3 import dbapi2\n        dbapi2.connect(':memory:').execute(f\"ATTACH '{TARGET}' AS a\")",
                      "sqlite3.Cursor.execute(\"ATTACH '{t}' AS a\")", "it writes the file '{t}' " + ATTACH_WHY),
    "sqlite_dbapi2_import": ("import sqlite3.dbapi2 as d\n        d.connect(':memory:').execute(f\"ATTACH '{TARGET}' AS a\")",
                             "sqlite3.Cursor.execute(\"ATTACH '{t}' AS a\")", "it writes the file '{t}' " + ATTACH_WHY),
    "sqlite_class": ("import sqlite3\n        sqlite3.Connection(':memory:').execute(f\"ATTACH '{TARGET}' AS a\")",
                     "sqlite3.Cursor.execute(\"ATTACH '{t}' AS a\")", "it writes the file '{t}' " + ATTACH_WHY),
    "sqlite_class_file": ("import sqlite3\n        sqlite3.Connection(TARGET)", "sqlite3.connect('{t}')", FILE_WHY),
    "sqlite_not_a_uri": ("import sqlite3\n        sqlite3.connect(TARGET + '?mode=memory')",
                         "sqlite3.connect('{t}?mode=memory')", FILE_WHY),
    "sqlite_uri_other_mode": ("import sqlite3\n        sqlite3.connect(f'file:{TARGET}?mode=rwc&x=mode=memory', uri=True)",
                              "sqlite3.connect('file:{t}?mode=rwc&x=mode=memory')", FILE_WHY),
    "sqlite_attach_param": ("import sqlite3\n        sqlite3.connect('').execute('ATTACH ? AS a', (TARGET,))",
                            "sqlite3.Cursor.execute('ATTACH ? AS a')",
                            "it writes a file whose name is a parameter or an expression " + ATTACH_WHY),
    "os_exit": ("import os\n        os._exit(0)", "os._exit(0)", "it ends at once the process every object and alarmkit "
                "share: the journal unwritten, the run unreported, its exit code taken for the run's"),
    "umask": ("import os\n        os.umask(0o022)", "os.umask(18)", "it changes the process every object and alarmkit "
              "share (the mode of every file alarmkit writes after it)"),
}
PLACES = ["rpc", "alarm", "top"]


def worker(tmp_path: Path, code: str, place: str) -> str:
    body = {"rpc": "", "alarm": "", "top": ""}
    if place == "top":
        top = code.replace("\n        ", "\n")
        return f"TARGET = {str(tmp_path / 'target')!r}\n{top}\nfrom workers import DurableObject\n\nclass W(DurableObject):\n    async def go(self):\n        pass\n"
    body[place] = code
    return f'''
from workers import DurableObject
TARGET = {str(tmp_path / 'target')!r}

class W(DurableObject):
    async def go(self):
        await self.ctx.storage.setAlarm(1_000)
        {body["rpc"] or "pass"}

    async def alarm(self):
        {body["alarm"] or "pass"}
'''


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_an_unaudited_way_out_is_refused_by_name_and_makes_nothing(tmp_path, name, place):
    code, call, why = CASES[name]
    t = str(tmp_path / "target")
    (tmp_path / "src").mkdir()
    entry = tmp_path / "src" / "entry.py"
    entry.write_text(worker(tmp_path, code, place))
    before = sorted(p.name for p in tmp_path.iterdir())
    env = dict(os.environ)
    sim = ak.Simulation(seed=0)
    expected = rf"^{re.escape(call.format(t=t))} in the worker's code at {re.escape(str(entry))}:\d+: " \
               rf"{re.escape(why.format(t=t))}"
    if place == "top":
        with pytest.raises(ak.WorkerError, match=re.escape(call.format(t=t))):
            sim.load_worker(entry, bindings={"W": "W"})
    else:
        w = sim.load_worker(entry, bindings={"W": "W"})
        stub = w.env.W.getByName("a")
        if place == "rpc":
            with pytest.raises(ak.WorkerUnsupported, match=expected) as err:
                sim.call(stub.go())
            assert "\n" not in str(err.value)
        else:
            sim.call(stub.go())
            sim.run(until=1_001)
            ev = sim.events()
            fails = ev[ev["kind"] == "handler_error"]
            assert fails["t_ms"].tolist() == [1_001]  # the alarm fired (1 ms late) and failed at the call
            detail = json.loads(fails["detail"].iloc[0])
            assert detail["error"] == "WorkerUnsupported" and re.match(expected, detail["message"]), detail
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not (tmp_path / "target").exists()
    assert dict(os.environ) == env


def test_what_stays_inside_still_works_and_the_environment_is_the_sessions(tmp_path):
    (tmp_path / "src").mkdir()
    entry = tmp_path / "src" / "entry.py"
    entry.write_text('''
import os, sqlite3, duckdb
from workers import DurableObject

class W(DurableObject):
    async def go(self):
        c = sqlite3.connect(":memory:")
        c.execute("ATTACH ':memory:' AS m")
        c.execute("CREATE TABLE m.t (x)")
        c.execute("INSERT INTO m.t VALUES (7)")
        d = duckdb.connect()
        u = sqlite3.connect("file::memory:?cache=shared", uri=True)  # URIs in memory stay in
        u.execute("ATTACH 'file:m2?mode=memory' AS m2")
        u.execute("CREATE TABLE m2.t (x)")
        class Mine(sqlite3.Connection):
            pass
        assert type(sqlite3.connect(":memory:", factory=Mine)) is Mine  # a factory of its own stays its own
        return [dict(os.environ), os.getenv("PATH"), os.environ.get("HOME"), sorted(os.environ),
                c.execute("SELECT x FROM m.t").fetchone()[0], duckdb.sql("SELECT 40 + 2").fetchall()[0][0],
                d.execute("SELECT 1").fetchone()[0], os.path.join("a", "b")]
''')
    sim = ak.Simulation(seed=0)
    w = sim.load_worker(entry, bindings={"W": "W"})
    assert sim.call(w.env.W.getByName("a").go()) == [{"HOME": "/session"}, None, "/session", ["HOME"], 7, 42, 1, "a/b"]
    assert os.environ.get("HOME") != "/session" or "PATH" in os.environ  # the process's own is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_a_worker_cannot_add_an_audit_hook_to_the_process(tmp_path):
    # a hook cannot be removed: the worker's saw every later event of alarmkit's in the process (one raising on
    # 'open' of a journal stopped alarmkit writing it). The worker's own sys refuses it by name; reached through
    # the real sys (below), the audit hook refuses it and Python drops that refusal's text (the call returns None)
    (tmp_path / "src").mkdir()
    entry = tmp_path / "src" / "entry.py"
    entry.write_text('''
import sys
from workers import DurableObject
SEEN = [0]

def hook(event, args):
    SEEN[0] += 1

class W(DurableObject):
    async def go(self):
        said = ''
        try:
            sys.addaudithook(hook)  # the worker's own sys: refused by name
        except Exception as err:
            said = str(err)
        import inspect
        inspect.sys.addaudithook(hook)  # the process's sys, reached past it: the hook refuses it in silence
        open(__file__).close()  # an audited event a hook added would see
        return [SEEN[0], said]
''')
    sim = ak.Simulation(seed=0)
    w = sim.load_worker(entry, bindings={"W": "W"})
    seen, said = sim.call(w.env.W.getByName("a").go())
    assert seen == 0 and said.startswith("sys.addaudithook(<function hook at ") and "in the worker's code at " in said
    open(entry).close()
    assert w.module.SEEN == [0]
