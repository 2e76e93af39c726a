"""The SQL layer in a Python Worker (Cloudflare's Python Workers API): workerd's authorizer and error texts,
SQL's clock from the simulation, transactionSync rolling back a row and the alarm (the SQL probes recorded
on workerd 1.20261117.1, alarmkit/calibrate/data/sql-workerd-1.20261117.1.json)."""

import textwrap

import pytest

import alarmkit as ak

SOURCE = """
from workers import DurableObject

class Box(DurableObject):
    async def refusals(self):
        await self.ctx.storage.put("k", 1)
        out = []
        for q in ["DELETE FROM _cf_KV", "ATTACH DATABASE 'x.db' AS x", "PRAGMA journal_mode = OFF", "SELEC 1", "BEGIN"]:
            try:
                self.ctx.storage.sql.exec(q)
                out.append("ran")
            except Exception as e:
                out.append(str(e)[:60])
        return [out, await self.ctx.storage.get("k"), self.ctx.storage.sql.databaseSize > 0]

    async def stamp(self):
        sql = self.ctx.storage.sql
        sql.exec("CREATE TABLE IF NOT EXISTS s (id INTEGER PRIMARY KEY, at INTEGER DEFAULT (unixepoch()))")
        sql.exec("INSERT INTO s (id) VALUES (NULL)")
        row = sql.exec("SELECT at, CURRENT_TIMESTAMP AS ts FROM s ORDER BY id DESC LIMIT 1").one()
        return {"at": row.at, "ts": row.ts}

    async def tx(self):
        st = self.ctx.storage
        st.sql.exec("CREATE TABLE IF NOT EXISTS r (a INTEGER)")
        def body():
            st.sql.exec("INSERT INTO r VALUES (1)")
            st.setAlarm(1_800_000_000_500)
            raise ValueError("txsync probe")
        try:
            st.transactionSync(body)
        except ValueError:
            pass
        return [await st.getAlarm(), st.sql.exec("SELECT count(*) AS n FROM r").one().n]

    async def alarm(self, info=None):
        print("fired")

    async def wipe(self):
        await self.ctx.storage.deleteAll()
        self.ctx.storage.sql.exec("CREATE TABLE mine (a)")
        await self.ctx.storage.deleteAll()
        names = [r.name for r in self.ctx.storage.sql.exec("SELECT name FROM sqlite_master").toArray()]
        return [await self.ctx.storage.list(), names]
"""


@pytest.fixture
def box(tmp_path):
    p = tmp_path / "box.py"
    p.write_text(textwrap.dedent(SOURCE))
    sim = ak.Simulation(seed=0, fire_latency="exact")
    w = sim.load_worker(p, bindings={"B": "Box"})
    return sim, w, w.env.B.getByName("b")


def test_workerds_refusals_and_texts_in_a_python_worker(box, tmp_path):
    sim, _w, b = box
    out, kept, sized = sim.call(b.refusals())
    assert out == ["not authorized: SQLITE_AUTH", "not authorized: SQLITE_AUTH", "not authorized: SQLITE_AUTH",
                   'near "SELEC": syntax error at offset 0: SQLITE_ERROR',
                   "To execute a transaction, please use the state.storage.trans"]
    assert kept == 1 and sized
    assert not (tmp_path / "x.db").exists()
    assert sim.call(b.wipe()) == [{}, []]  # deleteAll still empties the KV store and the tables (alarmkit's own SQL)


def test_sql_now_is_the_virtual_clock_in_a_python_worker(box):
    sim, _w, b = box
    sim.advance(1_800_000_000_000)
    assert sim.call(b.stamp()) == {"at": 1_800_000_000, "ts": "2027-01-15 08:00:00"}


def test_transaction_sync_rolls_back_the_alarm_in_a_python_worker(box):
    sim, w, b = box
    sim.advance(1_800_000_000_000)
    assert sim.call(b.tx()) == [None, 0]
    sim.advance(5_000)
    assert (sim.events()["kind"] == "fire").sum() == 0
