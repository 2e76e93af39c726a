"""Hostile SQL from an object's own code: generated spellings of what workerd's authorizer refuses (case,
quoting, comments, schema prefixes, several statements, bindings) never reach the KV store behind the API,
never make a file, never open a transaction of their own; and any statement at all ends as rows or one
``SqlError`` (never another exception, never a broken object)."""

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alarmkit import DurableObject, Simulation, SqlError

from strategies import examples, text


class Box(DurableObject):
    async def setup(self):
        await self.ctx.storage.put("k", 1)
        self.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS t (a)")

    async def run(self, q, *bindings):
        try:
            return ["rows", self.ctx.storage.sql.exec(q, *bindings).to_list()]
        except SqlError as e:
            return ["error", str(e)]

    async def state(self):
        return [await self.ctx.storage.get("k"), self.ctx._host.db.conn.in_transaction]


KV = ["_cf_KV", "_CF_kv", '"_cf_KV"', "`_cf_KV`", "[_cf_KV]", "main._cf_KV", "main.\"_cf_KV\"", "_cf_kv"]
TEMPLATES = [
    "DELETE FROM {t}", "DROP TABLE {t}", "UPDATE {t} SET value = 'x'", "INSERT OR REPLACE INTO {t} VALUES ('k', '2')",
    "ALTER TABLE {t} RENAME TO kv2", "CREATE TRIGGER tr BEFORE DELETE ON t BEGIN DELETE FROM {t}; END",
    "CREATE INDEX ix ON {t} (value)", "SELECT * FROM {t}", "WITH x AS (SELECT * FROM {t}) SELECT * FROM x",
    "SELECT 1; DELETE FROM {t}", "CREATE VIEW v AS SELECT * FROM {t}", "REPLACE INTO {t} VALUES ('k', '3')",
]
ESCAPE = ["ATTACH DATABASE 'x.db' AS x", "attach 'y.db' as y", "ATTACH ? AS z", "VACUUM INTO 'v.db'",
          "PRAGMA writable_schema = 1", "pragma JOURNAL_MODE=off", "PRAGMA main.journal_mode = OFF", "PRAGMA temp_store = 2",
          "BEGIN", "begin immediate", "/* x */ COMMIT", "SAVEPOINT a", "END TRANSACTION", "SELECT load_extension('x')",
          "CREATE TEMP TABLE tt (a)", "CREATE TABLE temp.tt (a)", "SELECT 1; BEGIN", "PRAGMA user_version = 7"]
DECOR = st.sampled_from(["", " ", "\n", "-- c\n", "/* c */ ", "\t"])


def _box():
    sim = Simulation(seed=0)
    b = sim.namespace("BOX", Box).get("b")
    sim.call(b.setup())
    return sim, b


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tpl=st.sampled_from(TEMPLATES + ESCAPE), table=st.sampled_from(KV), pre=DECOR, post=DECOR,
       upper=st.booleans())
def test_refused_spellings_never_reach_kv_or_the_disk(tmp_path, tpl, table, pre, post, upper):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        sim, b = _box()
        q = pre + tpl.format(t=table) + post
        q = q.upper() if upper else q
        kind, _ = sim.call(b.run(q, "w.db") if "?" in q else b.run(q))
        # a trigger's body and a view's query are authorized when a statement that uses them is prepared
        # (SQLite's rule, so workerd's too): making one is allowed, using it is refused
        assert kind == "error" or tpl.startswith(("CREATE TRIGGER", "CREATE VIEW")), q
        if kind == "rows":
            follow = "DELETE FROM t" if tpl.startswith("CREATE TRIGGER") else "SELECT * FROM v"
            assert sim.call(b.run(follow))[0] == "error", follow
        assert sim.call(b.state()) == [1, True]  # the KV value is there; alarmkit's own transaction is still open
        assert os.listdir(tmp_path) == []
    finally:
        os.chdir(cwd)


@settings(max_examples=examples(60), deadline=None)
@given(q=st.one_of(text(60), st.sampled_from(TEMPLATES + ESCAPE + ["SELECT ?", "", ";", ";;", "'", "/*", "--"])),
       bindings=st.lists(st.one_of(st.integers(-2**70, 2**70), st.text(max_size=5), st.none(), st.floats()), max_size=3))
def test_any_statement_ends_as_rows_or_one_sql_error(q, bindings):
    sim, b = _box()
    kind, _ = sim.call(b.run(q.format(t="_cf_KV") if "{t}" in q else q, *bindings))
    assert kind in ("rows", "error")
    assert sim.call(b.state())[0] == 1
