"""SQL probes (the ``SqlProbe`` class of twin/worker.js, ``sqltwin.py`` in the simulator): which statements
workerd's SQL authorizer refuses and with what text, the texts of ordinary SQL errors, SQL's clock and
randomness, and ``transactionSync`` rolling back a row and an alarm. Each takes a running backend and
returns a plain dict; ``SQL_FACTS`` says what must be equal on real workerd and in the simulator.

The rules behind the refusals are workerd's ``SqliteDatabase::isAuthorized`` (src/workerd/util/sqlite.c++)
and ``SqlStorageRegulator`` (src/workerd/api/sql.c++); alarmkit's copy is ``runtime/_sqlauth.py``.
"""

from __future__ import annotations

import json
from typing import Any

from .polling import new_name

__all__ = ["AUTH_ITEMS", "ERROR_ITEMS", "SQL_FACTS", "probe_sql_auth", "probe_sql_errors", "probe_sql_time",
           "probe_sql_txsync", "sql_op"]

# Each item is [sql, ...bindings], run in its own try on one fresh object after SETUP (a table t, a KV
# write so that _cf_KV exists). Refused ones leave nothing behind; allowed ones may (the list is ordered so).
SETUP = [["CREATE TABLE t (a)"], ["CREATE TABLE u (name TEXT UNIQUE)"], ["INSERT INTO u VALUES ('x')"]]
AUTH_ITEMS = [
    # workerd's reserved names: _cf_ (any case), SqlStorageRegulator::isAllowedName
    ["SELECT * FROM _cf_KV"], ["SELECT count(*) AS n FROM _CF_kv"], ["DELETE FROM _cf_KV"],
    ["INSERT INTO _cf_KV VALUES ('k', 'v')"], ["UPDATE _cf_KV SET value = 1"], ["DROP TABLE _cf_KV"],
    ["CREATE TABLE _cf_mine (a)"], ["CREATE INDEX _cf_i ON t (a)"], ["CREATE INDEX i_kv ON _cf_KV (value)"],
    ["ALTER TABLE _cf_KV RENAME TO kv2"], ["PRAGMA table_info(_cf_KV)"], ["SELECT * FROM main._cf_KV"],
    # other databases
    ["ATTACH DATABASE 'x.db' AS x"], ["DETACH DATABASE x"], ["CREATE TEMP TABLE tt (a)"],
    ["CREATE TEMPORARY VIEW tv AS SELECT 1"], ["SELECT * FROM temp.sqlite_master"],
    # pragmas: an allowlist with argument rules
    ["PRAGMA writable_schema = 1"], ["PRAGMA writable_schema"], ["PRAGMA journal_mode = OFF"], ["PRAGMA journal_mode"],
    ["PRAGMA user_version = 3"], ["PRAGMA user_version"], ["PRAGMA page_size = 4096"], ["PRAGMA cache_size = 10"],
    ["PRAGMA synchronous = OFF"], ["PRAGMA integrity_check"], ["PRAGMA foreign_keys = maybe"],
    ["PRAGMA optimize = 'x'"], ["PRAGMA index_list"],
    # transactions belong to the API
    ["BEGIN"], ["BEGIN TRANSACTION"], ["BEGIN IMMEDIATE"], ["COMMIT"], ["END"], ["ROLLBACK"], ["SAVEPOINT sp"],
    ["RELEASE sp"], ["ROLLBACK TO sp"],
    # functions outside the allowlist, virtual tables outside fts5/rtree
    ["SELECT sqlite_version()"], ["SELECT sqlite_source_id()"], ["SELECT load_extension('x')"],
    ["CREATE VIRTUAL TABLE vs USING dbstat"],
    # allowed: the answer is the rows
    ["PRAGMA foreign_keys = ON"], ["PRAGMA foreign_keys"], ["PRAGMA table_info(t)"], ["PRAGMA index_list(t)"], ["PRAGMA quick_check"],
    ["PRAGMA case_sensitive_like = 'yes'"], ["SELECT name FROM pragma_table_list WHERE name = 't'"],
    ["SELECT name FROM sqlite_master WHERE name = 't'"], ["SELECT json_extract('{\"a\": 7}', '$.a') AS a"],
    ["SELECT abs(-2) AS a, upper('x') AS u, coalesce(NULL, 3) AS c, instr('abc', 'c') AS i"],
    ["CREATE INDEX ti ON t (a)"], ["CREATE VIRTUAL TABLE ft USING fts5(body)"], ["ALTER TABLE t RENAME TO t2"],
    ["ALTER TABLE t2 ADD COLUMN b"], ["ANALYZE"], ["CREATE TRIGGER tr AFTER INSERT ON t2 BEGIN SELECT 1; END"],
]
ERROR_ITEMS = [
    ["SELEC 1"], ["SELECT * FROM nope"], ["SELECT nope FROM t"], ["INSERT INTO u VALUES ('x')"],
    ["SELECT ?", 1, 2], ["SELECT ?, ?", 1], ["SELECT 1; SELECT 2"], ["SELECT 1; SELEC 2"], ["CREATE TABLE m (a); INSERT INTO m VALUES (1); SELECT a FROM m"], [""], ["   "], ["-- just a comment"],
    ["CREATE TABLE t (a)"], ["INSERT INTO t VALUES (1, 2)"], ["SELECT * FROM t WHERE a = :x", 1],
    # workerd's limits (SqliteDatabase::setupSecurity: sqlite3_limit)
    ["SELECT 1 UNION SELECT 2 UNION SELECT 3 UNION SELECT 4 UNION SELECT 5 UNION SELECT 6 UNION SELECT 7"],
    ["SELECT 1 UNION SELECT 2 UNION SELECT 3 UNION SELECT 4 UNION SELECT 5"], ["SELECT ?101 AS v", 1],
    ["SELECT length(hex(zeroblob(2097153))) AS n"], ["SELECT length(hex(zeroblob(2097152))) AS n"],
    ["SELECT length(randomblob(4194305)) AS n"],
    ["SELECT 'x' LIKE '" + "a" * 51 + "' AS m"],
    ["SELECT " + ", ".join(f"{i} AS c{i}" for i in range(101))],
    ["PRAGMA foreign_keys = OFF"], ["PRAGMA foreign_keys"],
]


def sql_op(wd: Any, op: str, obj: str, **params: Any) -> dict:
    return wd.get(f"/sql/{op}", {"obj": obj, **params})


def _run(wd: Any, obj: str, items: list[list], kv: int = 0) -> list[dict]:
    r = sql_op(wd, "exec_each", obj, items=json.dumps(items), kv=kv)
    if "results" not in r:
        raise RuntimeError(f"/sql/exec_each failed: {r}")
    return r["results"]


def _answer(r: dict) -> Any:
    """One statement's outcome: the rows, or "ErrorName: message"."""
    if r["ok"]:
        return r["rows"]
    e = r["error"]
    return f"{e.get('name')}: {e.get('message')}"


def probe_sql_auth(wd: Any) -> dict:
    """Every statement of ``AUTH_ITEMS`` on a fresh object: refused (the error's name and message) or its rows."""
    obj = new_name(wd, "sql-auth")
    setup = _run(wd, obj, SETUP, kv=1)
    out = _run(wd, obj, AUTH_ITEMS)
    return {"probe": "sql_auth", "obj": obj, "t0_ms": None, "setup_ok": all(s["ok"] for s in setup),
            "answers": {item[0]: _answer(r) for item, r in zip(AUTH_ITEMS, out)}, "events": []}


def probe_sql_errors(wd: Any) -> dict:
    """Every statement of ``ERROR_ITEMS`` (with its bindings): the error's name and message, or its rows."""
    obj = new_name(wd, "sql-errors")
    _run(wd, obj, SETUP)
    out = _run(wd, obj, ERROR_ITEMS)
    return {"probe": "sql_errors", "obj": obj, "t0_ms": None,
            "answers": [[item, _answer(r)] for item, r in zip(ERROR_ITEMS, out)], "events": []}


def probe_sql_time(wd: Any) -> dict:
    """SQL's 'now' and randomness against the object's ``Date.now()``."""
    obj = new_name(wd, "sql-time")
    r = sql_op(wd, "time", obj)
    now, row = r["now"], r["row"]
    return {"probe": "sql_time", "obj": obj, "t0_ms": now, "t0_is": "Date.now() in the request", "row": row,
            "unixepoch_minus_now_s": row["unixepoch"] - now // 1000, "events": []}


def probe_sql_txsync(wd: Any, rel_ms: int = 500, observe_s: float = 2.0) -> dict:
    """``transactionSync(() => { INSERT; kv.put; setAlarm(now + rel_ms) (not awaited); throw })``: is the row,
    the key, the alarm kept; does the alarm fire? Then the same without the throw on another object: both
    kept, and it fires. ``order``/``ok_order``: when the setAlarm promises settle against the caller's own
    awaits (JavaScript microtasks: the Python twin has none and gives None, so they are not among the facts;
    tests/workers/js/test_js_sql.py holds the JavaScript host to the recorded order)."""
    obj = new_name(wd, "sql-txsync")
    r = sql_op(wd, "txsync", obj, rel=rel_ms)
    ok_obj = new_name(wd, "sql-txsync-ok")
    ok = sql_op(wd, "txsync_ok", ok_obj, rel=rel_ms)
    wd.sleep(observe_s)
    after, ok_after = sql_op(wd, "get", obj), sql_op(wd, "get", ok_obj)
    return {"probe": "sql_txsync", "obj": obj, "t0_ms": r.get("now"), "t0_is": "Date.now() in the request",
            "rel_ms": rel_ms, "thrown": (r.get("thrown") or {}).get("message"), "order": r.get("order"),
            "alarm_after": r.get("alarm"), "rows_after": r.get("rows"), "kv_after": r.get("kv"),
            "fires": after.get("fires"), "ok_order": ok.get("order"), "ok_alarm": ok.get("alarm"), "ok_rows": ok.get("rows"),
            "ok_fires": ok_after.get("fires"), "events": []}


SQL_FACTS = {
    "sql_auth": lambda r: {"setup ran": r["setup_ok"], **r["answers"]},
    "sql_errors": lambda r: {" ".join(map(str, item)) or "(empty)": a for item, a in r["answers"]},
    "sql_time": lambda r: {
        "unixepoch() is Date.now()'s second (or the next)": r["unixepoch_minus_now_s"] in (0, 1),
        "unixepoch('now') = unixepoch()": r["row"]["unixepoch_now"] == r["row"]["unixepoch"],
        "datetime('now') = CURRENT_TIMESTAMP": r["row"]["datetime_now"] == r["row"]["current_timestamp"],
        "datetime() = datetime('now')": r["row"]["datetime_noarg"] == r["row"]["datetime_now"],
        "CURRENT_DATE = date('now')": r["row"]["current_date"] == r["row"]["date_now"],
        "CURRENT_TIME = time('now')": r["row"]["current_time"] == r["row"]["time_now"],
        "strftime('%s', 'now') = unixepoch()": int(r["row"]["strftime_s"]) == r["row"]["unixepoch"],
        "random() is an integer": r["row"]["random_type"], "randomblob(8) length": r["row"]["randomblob_len"]},
    "sql_txsync": lambda r: {
        "the caller gets": r["thrown"], "getAlarm() after": r["alarm_after"],
        "rows after": r["rows_after"], "kv after": r["kv_after"], "fires": r["fires"],
        "committed: getAlarm()": r["ok_alarm"], "committed: rows": r["ok_rows"], "committed: fires": r["ok_fires"]},
}
