"""The ``SqlProbe`` class of ``twin/worker.js`` transcribed into a simulated object, line for line (the
SQL probes, ``sql_probes.py``). :class:`~alarmkit.calibrate.simbackend.SimWorkerd` serves it on ``/sql/OP``.
The one thing it cannot transcribe is the order of JavaScript microtasks (when a ``setAlarm`` promise
settles against the caller's awaits): its ``order`` is None, and that order is held by the JavaScript host's
tests (tests/workers/js/test_js_sql.py) against the recorded one."""

from __future__ import annotations

import json
from typing import Any

from ..runtime import DurableObject
from .simtwin import Error, err_info

__all__ = ["TwinSqlProbe"]

TIME_SQL = """SELECT unixepoch() AS unixepoch, unixepoch('now') AS unixepoch_now,
  datetime('now') AS datetime_now, CURRENT_TIMESTAMP AS current_timestamp, CURRENT_DATE AS current_date,
  CURRENT_TIME AS current_time, date('now') AS date_now, time('now') AS time_now,
  julianday('now') AS julianday_now, strftime('%s', 'now') AS strftime_s, strftime('%Y-%m-%d %H:%M:%f', 'now') AS strftime_f,
  datetime() AS datetime_noarg, typeof(random()) AS random_type, length(randomblob(8)) AS randomblob_len,
  unixepoch('subsec') AS unixepoch_subsec"""


class TwinSqlProbe(DurableObject):
    async def alarm(self, info) -> None:
        st = self.ctx.storage
        await st.put("fires", (await st.get("fires") or 0) + 1)
        await st.put("fired_at", self.ctx.now())

    async def op(self, name: str, p: dict) -> Any:
        st = self.ctx.storage
        sql = st.sql
        now = self.ctx.now()
        if name == "exec_each":
            if p.get("kv"):
                st.put("k", 1)
            out = []
            for q, *bindings in json.loads(p["items"]):
                try:
                    out.append({"ok": True, "rows": sql.exec(q, *bindings).to_list()})
                except Exception as e:  # noqa: BLE001 - recorded, as the twin does
                    out.append({"ok": False, "error": err_info(e)})
            return {"now": now, "results": out}
        if name == "time":
            return {"now": now, "row": sql.exec(TIME_SQL).one()}
        if name == "txsync":
            sql.exec("CREATE TABLE IF NOT EXISTS r (a INTEGER)")
            thrown = None

            def body() -> None:
                sql.exec("INSERT INTO r VALUES (1)")
                st.put("in_tx", 1)
                st.set_alarm(now + p["rel"])
                raise Error("txsync probe")

            try:
                st.transaction_sync(body)
            except Exception as e:  # noqa: BLE001 - recorded, as the twin does
                thrown = err_info(e)
            alarm = await st.get_alarm()
            return {"now": now, "thrown": thrown, "order": None, "alarm": None if alarm is None else alarm - now,
                    "rows": sql.exec("SELECT count(*) AS n FROM r").one()["n"], "kv": await st.get("in_tx")}
        if name == "txsync_ok":
            sql.exec("CREATE TABLE IF NOT EXISTS r (a INTEGER)")

            def body_ok() -> None:
                sql.exec("INSERT INTO r VALUES (1)")
                st.set_alarm(now + p["rel"])

            st.transaction_sync(body_ok)
            alarm = await st.get_alarm()
            return {"now": now, "order": None, "alarm": None if alarm is None else alarm - now,
                    "rows": sql.exec("SELECT count(*) AS n FROM r").one()["n"]}
        if name == "get":
            return {"now": now, "alarm": await st.get_alarm(), "fires": await st.get("fires") or 0,
                    "fired_at": await st.get("fired_at")}
        return {"error": f"unknown sql op {name}"}
