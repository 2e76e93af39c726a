"""The SQL layer as workerd has it, in the Python host: its authorizer, its error texts, SQL's clock and
randomness from the simulation, and transaction_sync rolling back the alarm. The figures are the SQL
probes' recorded on workerd 1.20261117.1 (alarmkit/calibrate/data/sql-workerd-1.20261117.1.json)."""

import os

import pytest

from alarmkit import DurableObject, Simulation, SqlError
from alarmkit.calibrate.recorded import sql_reference
from alarmkit.calibrate.sql_probes import AUTH_ITEMS, ERROR_ITEMS, SETUP
from alarmkit.runtime._sqlrules import INTERNAL, TX_REFUSED, split_statements

REAL = sql_reference()
AUTH = REAL["sql_auth"]["answers"]
ERRORS = {tuple(item): answer for item, answer in REAL["sql_errors"]["answers"]}


class Box(DurableObject):
    async def setup(self, kv=True):
        if kv:
            await self.ctx.storage.put("k", 1)
        for q, *b in SETUP:
            self.ctx.storage.sql.exec(q, *b)

    async def run(self, q, *bindings):
        try:
            return self.ctx.storage.sql.exec(q, *bindings).to_list()
        except SqlError as e:
            return f"Error: {e}"

    async def kv(self):
        return await self.ctx.storage.get("k")

    async def now_row(self):
        return self.ctx.storage.sql.exec(
            "SELECT unixepoch() AS u, datetime('now') AS dt, CURRENT_TIMESTAMP AS ct, CURRENT_DATE AS cd, "
            "CURRENT_TIME AS ctime, julianday('now') AS jd, strftime('%Y-%m-%d %H:%M:%f', 'now') AS f, "
            "datetime('now', '+1 day') AS tomorrow, date() AS d0, unixepoch('2026-01-01') AS fixed, "
            "datetime('now', 'unixepoch') AS bad").one()

    async def defaults(self):
        sql = self.ctx.storage.sql
        sql.exec("CREATE TABLE IF NOT EXISTS s (id INTEGER PRIMARY KEY, at INTEGER DEFAULT (unixepoch()), "
                 "stamp TEXT DEFAULT CURRENT_TIMESTAMP, r INTEGER DEFAULT (random()))")
        sql.exec("INSERT INTO s (id) VALUES (NULL)")
        return sql.exec("SELECT at, stamp, r, hex(randomblob(4)) AS b FROM s ORDER BY id DESC LIMIT 1").one()

    async def tx_alarm(self, fail):
        st = self.ctx.storage
        st.sql.exec("CREATE TABLE IF NOT EXISTS r (a INTEGER)")

        def body():
            st.sql.exec("INSERT INTO r VALUES (1)")
            st.put("in_tx", 1)
            st.set_alarm(self.ctx.now() + 500)
            if fail:
                raise ValueError("txsync probe")

        try:
            st.transaction_sync(body)
        except ValueError:
            pass
        return {"alarm": await st.get_alarm(), "rows": st.sql.exec("SELECT count(*) AS n FROM r").one()["n"],
                "kv": await st.get("in_tx")}

    async def alarm(self, info):
        self.ctx.journal_event("sql_probe_fired")


def box(seed=0, name="b"):
    sim = Simulation(seed=seed, fire_latency="exact")
    b = sim.namespace("BOX", Box).get(name)
    return sim, b


def _primed():
    sim, b = box()
    sim.call(b.setup())
    return sim, b


primed = pytest.fixture(scope="module")(_primed)  # the probe runs its statements in order on one object: so here
primed_errors = pytest.fixture(scope="module")(_primed)


@pytest.mark.parametrize("item", AUTH_ITEMS, ids=[i[0] for i in AUTH_ITEMS])
def test_every_statement_of_the_auth_probe_answers_as_on_workerd(primed, item):
    sim, b = primed
    got = sim.call(b.run(*item))
    assert got == AUTH[item[0]]


def test_the_recorded_refusals_are_workerds_texts():
    refused = {q for q, a in AUTH.items() if a == "Error: not authorized: SQLITE_AUTH"}
    assert {"DELETE FROM _cf_KV", "ATTACH DATABASE 'x.db' AS x", "PRAGMA writable_schema = 1",
            "PRAGMA journal_mode = OFF", "CREATE TEMP TABLE tt (a)"} <= refused
    assert AUTH["SELECT * FROM _cf_KV"] == "Error: access to _cf_KV.key is prohibited: SQLITE_AUTH"
    assert {q for q, a in AUTH.items() if a == f"Error: {TX_REFUSED}"} == {
        "BEGIN", "BEGIN TRANSACTION", "BEGIN IMMEDIATE", "COMMIT", "END", "ROLLBACK", "SAVEPOINT sp", "RELEASE sp",
        "ROLLBACK TO sp"}


def test_a_refused_delete_leaves_the_kv_store_and_alarmkits_own_statements_working():
    sim, b = box()
    sim.call(b.setup())
    assert sim.call(b.run("DELETE FROM _cf_KV")) == "Error: not authorized: SQLITE_AUTH"
    assert sim.call(b.run("DROP TABLE _cf_KV")) == "Error: not authorized: SQLITE_AUTH"
    assert sim.call(b.kv()) == 1
    assert sim.inspect(b).sql("SELECT value FROM _cf_KV") == [{"value": "1"}]  # inspection from outside: trusted


def test_attach_creates_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sim, b = box()
    assert sim.call(b.run("ATTACH DATABASE 'x.db' AS x")) == "Error: not authorized: SQLITE_AUTH"
    assert sim.call(b.run("ATTACH 'y.db' AS y")) == "Error: not authorized: SQLITE_AUTH"
    assert os.listdir(tmp_path) == []


def test_alarmkits_cached_statements_are_never_handed_to_the_objects_code():
    sim, b = box()
    sim.call(b.setup())  # alarmkit ran BEGIN and its KV statements (cached by Python's sqlite3 under their text)
    assert sim.call(b.run("BEGIN" + INTERNAL)) == f"Error: {TX_REFUSED}"
    assert sim.call(b.run("SELECT value FROM _cf_KV WHERE key = ?" + INTERNAL, "k")) == \
        "Error: access to _cf_KV.value is prohibited: SQLITE_AUTH"
    assert sim.call(b.run("BEGIN")) == f"Error: {TX_REFUSED}"


@pytest.mark.parametrize("item", ERROR_ITEMS, ids=[" ".join(map(str, i)) or "(empty)" for i in ERROR_ITEMS])
def test_every_error_of_the_errors_probe_has_workerds_text(primed_errors, item):
    sim, b = primed_errors
    assert sim.call(b.run(*item)) == ERRORS[tuple(item)]


def test_the_issues_four_texts():
    assert ERRORS[("SELEC 1",)] == 'Error: near "SELEC": syntax error at offset 0: SQLITE_ERROR'
    assert ERRORS[("INSERT INTO u VALUES ('x')",)] == \
        "Error: UNIQUE constraint failed: u.name: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)"
    assert ERRORS[("SELECT ?", 1, 2)] == "Error: Wrong number of parameter bindings for SQL query."
    assert ERRORS[("CREATE TABLE t (a)",)] == "Error: table t already exists at offset 13: SQLITE_ERROR"
    sim, b = box()
    sim.call(b.setup())
    # the offset is SQLite's even for a statement Python's cache holds (run once, then again after the schema moved)
    assert sim.call(b.run("SELECT nope FROM t")) == "Error: no such column: nope at offset 7: SQLITE_ERROR"
    assert sim.call(b.run("SELECT nope FROM t")) == "Error: no such column: nope at offset 7: SQLITE_ERROR"


def test_several_statements_run_in_order_and_return_the_last_ones_rows():
    assert split_statements("SELECT 1; SELECT ';' AS s; -- c\n") == ("SELECT 1;", "SELECT ';' AS s;")
    trig = "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END; SELECT 2"
    assert split_statements(trig) == ("CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END;", "SELECT 2")
    assert split_statements("  /* only */ -- comments\n ;") == ()
    sim, b = box()
    sim.call(b.setup())
    assert sim.call(b.run("CREATE TABLE m (a); INSERT INTO m VALUES (4), (5); SELECT a FROM m WHERE a > ?", 4)) == \
        [{"a": 5}]


def test_sql_now_is_the_virtual_clock():
    sim, b = box()
    sim.advance(1_800_000_000_123)  # 2027-01-15T08:00:00.123Z
    assert sim.call(b.now_row()) == {
        "u": 1_800_000_000, "dt": "2027-01-15 08:00:00", "ct": "2027-01-15 08:00:00", "cd": "2027-01-15",
        "ctime": "08:00:00", "jd": pytest.approx(2440587.5 + 1_800_000_000_123 / 86_400_000, abs=1e-8),
        "f": "2027-01-15 08:00:00.123", "tomorrow": "2027-01-16 08:00:00", "d0": "2027-01-15", "fixed": 1_767_225_600,
        "bad": None}


def test_defaults_and_randomness_follow_the_seed():
    def draw(seed):
        sim, b = box(seed)
        sim.advance(5_000)
        first = sim.call(b.defaults())
        sim.advance(2_000)
        return first, sim.call(b.defaults())

    a, again, other = draw(1), draw(1), draw(2)
    assert a == again
    assert a[0]["at"] == 5 and a[1]["at"] == 7 and a[0]["stamp"] == "1970-01-01 00:00:05"
    assert a[0]["r"] != other[0]["r"] and a[0]["b"] != other[0]["b"]
    assert a[0]["r"] != a[1]["r"] and len(a[0]["b"]) == 8


def test_transaction_sync_that_throws_rolls_back_the_row_the_key_and_the_alarm():
    # the sql_txsync probe on workerd: rows 0, key gone, getAlarm() null, no fire; committed: kept and fired
    real = REAL["sql_txsync"]
    assert (real["rows_after"], real["kv_after"], real["alarm_after"], real["fires"]) == (0, None, None, 0)
    assert (real["ok_rows"], real["ok_alarm"], real["ok_fires"]) == (1, 500, 1)
    sim, b = box()
    assert sim.call(b.tx_alarm(True)) == {"alarm": None, "rows": 0, "kv": None}
    sim.advance(2_000)
    assert sim.events().query("kind == 'custom'").empty
    sim2, b2 = box()
    assert sim2.call(b2.tx_alarm(False)) == {"alarm": 500, "rows": 1, "kv": 1}
    sim2.advance(2_000)
    fired = sim2.events().query("kind == 'fire'")
    assert list(fired["t_ms"]) == [502]


class Nest(DurableObject):
    async def arm(self, at):
        await self.ctx.storage.set_alarm(at)

    async def nested(self):
        st = self.ctx.storage

        def inner():
            st.delete_alarm()
            raise ValueError("inner")

        def outer():
            st.set_alarm(9_000)
            try:
                st.transaction_sync(inner)
            except ValueError:
                pass
            return st.get_alarm()

        inside = await st.transaction_sync(outer)
        return inside, await st.get_alarm()

    async def delete_rolled_back(self):
        st = self.ctx.storage

        def body():
            st.delete_alarm()
            raise ValueError("no")

        try:
            st.transaction_sync(body)
        except ValueError:
            pass
        return await st.get_alarm()

    async def alarm(self, info):
        pass


def test_a_rolled_back_delete_alarm_keeps_the_alarm_and_savepoints_nest():
    sim = Simulation(seed=0, fire_latency="exact")
    n = sim.namespace("NEST", Nest).get("n")
    sim.call(n.arm(5_000))
    assert sim.call(n.delete_rolled_back()) == 5_000
    # the inner savepoint's delete is undone, the outer's set_alarm(9_000) stays and commits
    assert sim.call(n.nested()) == (9_000, 9_000)
    sim.run(until=20_000)
    assert list(sim.events().query("kind == 'fire'")["t_ms"]) == [9_002]
