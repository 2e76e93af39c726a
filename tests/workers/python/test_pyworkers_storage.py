"""The JS-named storage and the runtime modules a Python Worker sees, call by call: list's options, lists
of keys, deleteAll on SQL tables, transactionSync, the SQL cursor, asyncio on the virtual clock, console."""

import textwrap

import pytest

import alarmkit as ak
from alarmkit.errors import WorkerUnsupported

SOURCE = """
import asyncio
import time
from js import console
from workers import DurableObject

class Store(DurableObject):
    async def fill(self):
        await self.ctx.storage.put({"a": 1, "b": {"x": [1, None]}, "c": "three", "d": None})
        self.ctx.storage.sql.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        for i, v in enumerate(["p", "q", "r"]):
            self.ctx.storage.sql.exec("INSERT INTO t VALUES (?, ?)", i, v)

    async def lists(self):
        s = self.ctx.storage
        return {
            "all": list(await s.list()),
            "start_end": list(await s.list(start="b", end="d")),
            "after_rev": list(await s.list({"startAfter": "a", "reverse": True, "limit": 2})),
            "many": await s.get(["a", "c", "zzz"]),
            "nested": (await s.get("b")).x,
        }

    async def cursor(self):
        cur = self.ctx.storage.sql.exec("SELECT id, v FROM t ORDER BY id")
        first = cur.next()
        return {"cols": cur.columnNames, "raw": self.ctx.storage.sql.exec("SELECT v FROM t ORDER BY id").raw(),
                "first": [first.done, first.value.v], "read": cur.rowsRead,
                "written": self.ctx.storage.sql.exec("UPDATE t SET v = 'z' WHERE id > 0").rowsWritten,
                "size": self.ctx.storage.sql.databaseSize > 0}

    async def tx(self):
        def work():
            self.ctx.storage.sql.exec("INSERT INTO t VALUES (9, 'tx')")
            raise ValueError("no")
        try:
            self.ctx.storage.transactionSync(work)
        except ValueError:
            pass
        return self.ctx.storage.sql.exec("SELECT COUNT(*) AS n FROM t WHERE id = 9").one().n

    async def wipe(self):
        await self.ctx.storage.deleteAll()
        tables = self.ctx.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 't'")
        return [len(tables.toArray()), await self.ctx.storage.list()]

    async def waits(self):
        t0 = time.time()
        a, b = await asyncio.gather(asyncio.sleep(1.5, "a"), asyncio.sleep(0.25, "b"))
        console.log("slept", a, b)
        return [t0, time.time(), a, b]

    async def blocks(self):
        time.sleep(1)

    async def bad_put(self):
        await self.ctx.storage.put("s", {1, 2})
"""


@pytest.fixture
def store(tmp_path):
    p = tmp_path / "store.py"
    p.write_text(textwrap.dedent(SOURCE))
    sim = ak.Simulation(seed=0)
    w = sim.load_worker(p, bindings={"S": "Store"})
    s = w.env.S.getByName("s")
    sim.call(s.fill())
    return sim, w, s


def test_list_options_and_lists_of_keys(store):
    sim, _w, s = store
    assert sim.call(s.lists()) == {"all": ["a", "b", "c", "d"], "start_end": ["b", "c"], "after_rev": ["d", "c"],
                                   "many": {"a": 1, "c": "three"}, "nested": [1, None]}


def test_the_sql_cursor(store):
    sim, _w, s = store
    assert sim.call(s.cursor()) == {"cols": ["id", "v"], "raw": [["p"], ["q"], ["r"]], "first": [False, "p"],
                                    "read": 3, "written": 2, "size": True}


def test_transaction_sync_rolls_back_and_delete_all_drops_tables(store):
    sim, _w, s = store
    assert sim.call(s.tx()) == 0
    assert sim.call(s.wipe()) == [0, {}]


def test_asyncio_on_the_virtual_clock_and_console(store):
    sim, w, s = store
    sim.advance(500)
    assert sim.call(s.waits()) == [0.5, 2.0, "a", "b"]
    assert w.logs == [(2_000, "log", "slept a b")]


def test_blocking_sleep_and_unstorable_values_are_refused(store):
    sim, _w, s = store
    with pytest.raises(WorkerUnsupported, match=r"time.sleep\(\) blocks the whole isolate"):
        sim.call(s.blocks())
    with pytest.raises(TypeError, match=r"storage.put\('s', ...\): alarmkit keeps JSON-shaped values"):
        sim.call(s.bad_put())
