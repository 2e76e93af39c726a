"""ctx.storage: SQL cursors, KV, transaction_sync, and parking idle databases."""

import pytest

from alarmkit import DurableObject, Simulation, SqlError
from alarmkit.scenarios.lease import LeaseLedger

# these tests are about storage, not fire lateness:
# every simulation here takes fire_latency="exact" (each fire 2 ms late) so that the times read as
# round numbers; tests/runtime/test_latency_measured.py covers the workerd profile's measured default


class Store(DurableObject):
    async def kv(self):
        s = self.ctx.storage
        await s.put("a", {"n": 1})
        await s.put({"b": [1, 2], "c": None})
        got = (await s.get("a"), await s.get(["a", "b", "zzz"]), await s.list(prefix="b"))
        deleted = (await s.delete("a"), await s.delete(["b", "nope"]), await s.get("a"))
        return got, deleted

    async def sql(self):
        sql = self.ctx.storage.sql
        sql.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        w = sql.exec("INSERT INTO t (v) VALUES (?), (?)", "x", "y").rows_written
        cur = sql.exec("SELECT id, v FROM t ORDER BY id")
        return w, cur.to_list(), cur.raw(), cur.column_names, sql.exec("SELECT count(*) AS n FROM t").one()

    async def one_of_none(self):
        return self.ctx.storage.sql.exec("SELECT 1 AS x WHERE 0").one()

    async def tx(self, fail):
        sql = self.ctx.storage.sql
        sql.exec("CREATE TABLE IF NOT EXISTS u (v INTEGER)")

        def body():
            sql.exec("INSERT INTO u VALUES (1)")
            if fail:
                raise ValueError("abort")

        try:
            self.ctx.storage.transaction_sync(body)
        except ValueError:
            pass
        return sql.exec("SELECT count(*) AS n FROM u").one()["n"]

    async def explicit_begin(self):
        self.ctx.storage.sql.exec("BEGIN")

    async def bad_value(self):
        await self.ctx.storage.put("k", object())


def stub():
    sim = Simulation(fire_latency="exact")
    return sim, sim.namespace("S", Store).get("s")


def test_kv_round_trips_json_values():
    sim, s = stub()
    got, deleted = sim.call(s.kv())
    assert got == ({"n": 1}, {"a": {"n": 1}, "b": [1, 2]}, {"b": [1, 2]})
    assert deleted == (True, 1, None)


def test_sql_cursor_gives_dicts_raw_rows_and_counts():
    sim, s = stub()
    w, rows, raw, cols, one = sim.call(s.sql())
    assert w == 2
    assert rows == [{"id": 1, "v": "x"}, {"id": 2, "v": "y"}]
    assert raw == [(1, "x"), (2, "y")] and cols == ["id", "v"] and one == {"n": 2}


def test_one_on_no_rows_is_workerds_error():
    sim, s = stub()
    with pytest.raises(SqlError, match=r"^Expected exactly one result from SQL query, but got no results\.$"):
        sim.call(s.one_of_none())


def test_transaction_sync_rolls_back_only_its_own_writes():
    sim, s = stub()
    assert sim.call(s.tx(False)) == 1
    assert sim.call(s.tx(True)) == 1


def test_explicit_transactions_are_refused_with_the_way_out():
    sim, s = stub()
    # workerd's SqlStorageRegulator::allowTransactions text (the sql_auth probe, workerd 1.20261117.1)
    with pytest.raises(SqlError, match=r"^To execute a transaction, please use the state\.storage\.transaction\(\) or "
                                       r"state\.storage\.transactionSync\(\) APIs instead of the SQL BEGIN"):
        sim.call(s.explicit_begin())


def test_non_json_value_names_the_key_and_type():
    sim, s = stub()
    with pytest.raises(Exception, match=r"storage.put\('k', ...\) got a object, which is not JSON-serialisable"):
        sim.call(s.bad_value())


def test_idle_databases_are_parked_and_restored_unchanged():
    sim = Simulation(seed=1, fire_latency="exact")
    sim.db_pool.size = 3
    ns = sim.namespace("L", LeaseLedger)
    for i in range(10):
        sim.call(ns.get(f"l{i}").grant("a", 1000 + 10 * i))
    parked = [h for h in ns.hosts.values() if h._db._conn is None]
    assert len(sim.db_pool.open) == 3 and len(parked) == 7
    assert sim.inspect(ns.get("l0")).sql("SELECT id, expire_at FROM leases") == [{"id": "a", "expire_at": 1000}]
    sim.run()
    fires = sim.events().query("kind == 'fire'")
    assert fires["t_ms"].tolist() == [1002 + 10 * i for i in range(10)]
    assert all(sim.inspect(ns.get(f"l{i}")).sql("SELECT * FROM leases") == [] for i in range(10))


class FirstPut(DurableObject):
    async def put_twice(self):
        await self.ctx.storage.put("a", 1)  # the first KV write creates the KV table in this segment
        await self.ctx.sleep(1)

    async def get_a(self):
        await self.ctx.storage.put("b", 2)
        return await self.ctx.storage.get("a"), await self.ctx.storage.get("b")


def test_kv_survives_a_crash_that_rolled_back_its_table():
    """Found by the explorer: a crash that rolled back the segment creating _cf_KV broke later KV calls."""
    from alarmkit import Faults

    class CrashFirstAwait(Faults):
        def crash_at_suspend(self, host, task):
            return task.name == "rpc:put_twice" and task.awaits == 1

    sim = Simulation(faults=CrashFirstAwait(), fire_latency="exact")
    s = sim.namespace("F", FirstPut).get("f")
    with pytest.raises(Exception, match="crashed"):
        sim.call(s.put_twice())
    assert sim.call(s.get_a()) == (None, 2)


ENDLESS = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) AS n FROM c"


class Endless(DurableObject):
    async def count(self, query):
        self.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS t (x)")
        return self.ctx.storage.sql.exec(query).one()["n"]


def test_an_endless_query_is_stopped_at_the_step_limit_in_a_handler_and_from_outside(monkeypatch):
    monkeypatch.setenv("ALARMKIT_SQL_STEP_LIMIT", "3_000_000")
    sim = Simulation(fire_latency="exact")
    obj = sim.namespace("E", Endless).get("e")
    # a bounded recursion of the same shape runs: the limit is per statement, not per object
    assert sim.call(obj.count(ENDLESS.replace("FROM c)", "FROM c WHERE n < 50000)"))) == 50_000
    assert sim.call(obj.count(ENDLESS.replace("FROM c)", "FROM c WHERE n < 50000)"))) == 50_000
    with pytest.raises(SqlError) as err:
        sim.call(obj.count(ENDLESS))
    assert str(err.value).startswith("the query was stopped after 3,000,000 SQLite steps (an endless WITH RECURSIVE?)")
    assert str(err.value).endswith("bound the query, or raise the limit with ALARMKIT_SQL_STEP_LIMIT=N")
    with pytest.raises(SqlError, match="stopped after 3,000,000 SQLite steps"):
        sim.inspect(obj).sql(ENDLESS)
    assert sim.inspect(obj).sql("SELECT count(*) AS n FROM t") == [{"n": 0}]  # the object's storage still answers


@pytest.mark.parametrize("value", ["x", "0", "999999", "1e9", str(10**16)])
def test_a_bad_sql_step_limit_names_the_variable_the_range_and_the_way_out(monkeypatch, value):
    from alarmkit.errors import AlarmkitError

    monkeypatch.setenv("ALARMKIT_SQL_STEP_LIMIT", value)
    sim = Simulation(fire_latency="exact")
    obj = sim.namespace("E", Endless).get("e")
    with pytest.raises(AlarmkitError) as err:
        sim.inspect(obj).sql(ENDLESS)
    assert str(err.value) == (f"ALARMKIT_SQL_STEP_LIMIT must be an integer in 1,000,000..1,000,000,000,000,000 (SQLite steps per "
                              f"statement), got {value!r}; unset it for 100,000,000")


def test_a_bad_sql_step_limit_is_refused_at_the_first_query_not_the_first_long_one(monkeypatch):
    from alarmkit.errors import AlarmkitError

    monkeypatch.setenv("ALARMKIT_SQL_STEP_LIMIT", "abc")
    sim = Simulation(fire_latency="exact")
    obj = sim.namespace("E", Endless).get("e")
    with pytest.raises(AlarmkitError, match=r"^ALARMKIT_SQL_STEP_LIMIT must be an integer in 1,000,000\.\."):
        sim.inspect(obj).sql("SELECT 1 AS n")


def test_a_multi_statement_exec_that_runs_away_names_the_limit(monkeypatch):
    monkeypatch.setenv("ALARMKIT_SQL_STEP_LIMIT", "3000000")
    sim = Simulation(fire_latency="exact")
    obj = sim.namespace("E", Endless).get("e")
    with pytest.raises(SqlError, match=r"^the query was stopped after 3,000,000 SQLite steps"):
        sim.call(obj.count("SELECT 1; " + ENDLESS.replace("SELECT count(*) AS n", "SELECT count(*)")))


def test_ctrl_c_during_a_long_query_is_a_keyboard_interrupt_not_a_failed_query(monkeypatch):
    import os
    import signal
    import threading

    monkeypatch.setenv("ALARMKIT_SQL_STEP_LIMIT", str(10**12))
    sim = Simulation(fire_latency="exact")
    obj = sim.namespace("E", Endless).get("e")
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))  # a real SIGINT, mid-query
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sim.call(obj.count(ENDLESS))
    finally:
        timer.cancel()
