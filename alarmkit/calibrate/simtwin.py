"""The calibration twin (``twin/worker.js``) transcribed into simulated objects.

``TwinLedger``, ``TwinProbe`` and ``TwinProbeFacet`` do what the JavaScript classes of the same
names do, line for line, and write the same per-object ``journal`` table (``Date.now()`` is the
virtual clock). Only the language differs: ``await storage.set_alarm(t)`` for
``await storage.setAlarm(t)``; a JavaScript ``throw new Error(m)`` is :class:`Error`; a
``new Date(0)`` argument is its number, 0. :class:`~alarmkit.calibrate.simbackend.SimWorkerd`
serves them the way ``worker.js``'s fetch handler does, so the probes run unchanged on both.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..runtime import DurableObject

__all__ = ["Error", "TwinLedger", "TwinProbe", "TwinProbeFacet", "err_info", "read_journal"]


class Error(Exception):
    """JavaScript's ``Error`` (a counted failure when ``alarm()`` throws it)."""


def err_info(e: BaseException) -> dict:
    """worker.js ``errInfo``: a TypeError stays a TypeError; every other failure is an ``Error``."""
    name = "TypeError" if isinstance(e, TypeError) else "Error"
    msg = str(e)
    return {"text": f"{name}: {msg}", "name": name, "message": msg, "ctor": name}


async def settle(aw: Any) -> dict:
    try:
        return {"ok": True, "value": await aw}
    except Exception as e:  # noqa: BLE001 - recorded, as the twin's settle() does
        return {"ok": False, "error": err_info(e)}


JOURNAL_DDL = """CREATE TABLE IF NOT EXISTS journal (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, t_ms INTEGER NOT NULL, kind TEXT NOT NULL,
  scheduled_ms INTEGER, retry_count INTEGER, is_retry INTEGER, detail_json TEXT)"""


def journal(obj: DurableObject, kind: str, scheduled: Any = None, retry_count: Any = None,
            is_retry: Any = None, detail: dict | None = None) -> None:
    obj.sql.exec(
        "INSERT INTO journal (t_ms, kind, scheduled_ms, retry_count, is_retry, detail_json) VALUES (?, ?, ?, ?, ?, ?)",
        obj.ctx.now(), kind, None if scheduled is None else int(round(scheduled)), retry_count,
        None if is_retry is None else int(bool(is_retry)), json.dumps(detail or {}),
    )


def read_journal(obj: DurableObject) -> list[dict]:
    rows = obj.sql.exec("SELECT seq, t_ms, kind, scheduled_ms, retry_count, is_retry, detail_json FROM journal ORDER BY seq")
    out = []
    for r in rows.to_list():
        d = json.loads(r.pop("detail_json") or "{}")
        out.append({**r, "detail": d})
    return out


def _info(info: Any) -> dict:
    return {"retry_count": info.retry_count, "is_retry": info.is_retry}


# ---------------------------------------------------------------------------------------------
class TwinLedger(DurableObject):
    """worker.js ``LeaseLedger``: the lease ledger with journaling and the lab switches."""

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.sql = ctx.storage.sql
        self.sql.exec("CREATE TABLE IF NOT EXISTS leases (id TEXT PRIMARY KEY, expire_at INTEGER NOT NULL)")
        self.sql.exec("CREATE INDEX IF NOT EXISTS leases_by_expiry ON leases (expire_at)")
        self.sql.exec(JOURNAL_DDL)
        self.sql.exec("CREATE TABLE IF NOT EXISTS lab (k TEXT PRIMARY KEY, v INTEGER NOT NULL)")
        noboot = self.lab_get("noboot")
        journal(self, "construct", detail={"noboot": bool(noboot)})
        if not noboot:
            ctx.block_concurrency_while(lambda: self.ensure_alarm("construct"))  # (1)

    def lab_get(self, k: str) -> int:
        rows = self.sql.exec("SELECT v FROM lab WHERE k = ?", k).to_list()
        return rows[0]["v"] if rows else 0

    def lab_set(self, k: str, v: int) -> None:
        self.sql.exec("INSERT OR REPLACE INTO lab (k, v) VALUES (?, ?)", k, v)

    async def ensure_alarm(self, src: str = "?") -> None:
        nxt = self.sql.exec("SELECT MIN(expire_at) AS t FROM leases").one()["t"]  # (2)
        if nxt is None:
            journal(self, "ensure", detail={"src": src, "next": None, "action": "none"})
            return
        current = await self.ctx.storage.get_alarm()
        if current is None or nxt < current:  # (3) moves only earlier
            await self.ctx.storage.set_alarm(nxt)
            after = await self.ctx.storage.get_alarm()
            journal(self, "set_alarm", scheduled=nxt,
                    detail={"src": src, "requested": nxt, "previous": current, "after": after})
        else:
            journal(self, "ensure", detail={"src": src, "next": nxt, "current": current, "action": "keep"})

    async def grant(self, lease_id: str, ttl_ms: int) -> dict:
        expire_at = self.ctx.now() + ttl_ms
        self.sql.exec("INSERT OR REPLACE INTO leases (id, expire_at) VALUES (?, ?)", lease_id, expire_at)
        journal(self, "grant", scheduled=expire_at, detail={"id": lease_id, "ttl_ms": ttl_ms, "expire_at": expire_at})
        await self.ensure_alarm("grant")
        return {"id": lease_id, "expire_at": expire_at, "alarm": await self.ctx.storage.get_alarm()}

    async def alarm(self, info) -> None:
        at_start = await self.ctx.storage.get_alarm()
        journal(self, "alarm_start", scheduled=info.scheduled_time, **_info(info),
                detail={"get_alarm": at_start, "has_info": True})
        if self.lab_get("always_throw"):
            journal(self, "throw", retry_count=info.retry_count,
                    detail={"where": "handler", "message": "injected handler failure"})
            raise Error("injected handler failure")
        due = self.sql.exec("SELECT id FROM leases WHERE expire_at <= ? ORDER BY expire_at LIMIT 100",
                            self.ctx.now()).to_list()  # (4)
        for row in due:
            await self.revoke(row["id"], info)  # (5) effect first
            self.sql.exec("DELETE FROM leases WHERE id = ?", row["id"])  # (6) then the row
            journal(self, "delete_lease", detail={"id": row["id"]})
        await self.ensure_alarm("alarm")  # (7)
        journal(self, "alarm_end", retry_count=info.retry_count,
                detail={"revoked": [r["id"] for r in due], "get_alarm": await self.ctx.storage.get_alarm()})

    async def revoke(self, lease_id: str, info: Any = None) -> None:
        n = self.lab_get("revoke_calls") + 1
        self.lab_set("revoke_calls", n)
        rc = getattr(info, "retry_count", None)
        journal(self, "revoke", retry_count=rc, detail={"id": lease_id, "call_no": n})
        await self.ctx.effect("revoke", lease_id, call_no=n)  # the sim journal's effect row
        left = self.lab_get("revoke_throws")
        if left > 0:
            self.lab_set("revoke_throws", left - 1)
            journal(self, "throw", retry_count=rc,
                    detail={"where": "revoke", "id": lease_id, "message": "injected revoke failure"})
            raise Error("injected revoke failure")

    async def lab(self, opts: dict) -> dict:
        for js, key in (("revokeThrows", "revoke_throws"), ("alwaysThrow", "always_throw"), ("noboot", "noboot")):
            if opts.get(js) is not None:
                self.lab_set(key, int(opts[js]) if js == "revokeThrows" else int(bool(opts[js])))
        journal(self, "lab", detail=opts)
        return self.lab_state()

    def lab_state(self) -> dict:
        return {r["k"]: r["v"] for r in self.sql.exec("SELECT k, v FROM lab").to_list()}

    async def state(self) -> dict:
        return {
            "now": self.ctx.now(),
            "leases": self.sql.exec("SELECT id, expire_at FROM leases ORDER BY expire_at").to_list(),
            "alarm": await self.ctx.storage.get_alarm(),
            "lab": self.lab_state(),
        }

    async def drop_alarm(self) -> dict:
        before = await self.ctx.storage.get_alarm()
        await self.ctx.storage.delete_alarm()
        journal(self, "delete_alarm", detail={"src": "lab", "before": before, "after": await self.ctx.storage.get_alarm()})
        return {"before": before}

    async def events(self) -> list[dict]:
        return read_journal(self)


# ---------------------------------------------------------------------------------------------
class TwinProbe(DurableObject):
    """worker.js ``Probe``: one object per probe run; ``cfg`` decides what its ``alarm()`` does."""

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.sql = ctx.storage.sql
        self.sql.exec(JOURNAL_DDL)
        self.sql.exec("CREATE TABLE IF NOT EXISTS cfg (k TEXT PRIMARY KEY, v TEXT NOT NULL)")
        self.sql.exec("CREATE TABLE IF NOT EXISTS parent_work (n INTEGER)")
        journal(self, "construct", detail={"facets": "object", "exports": "object", "id_name": ctx.id.name})

    def cfg(self) -> dict:
        return {r["k"]: json.loads(r["v"]) for r in self.sql.exec("SELECT k, v FROM cfg").to_list()}

    def set_cfg(self, obj: dict) -> None:
        for k, v in obj.items():
            self.sql.exec("INSERT OR REPLACE INTO cfg (k, v) VALUES (?, ?)", k, json.dumps(v))

    async def set_alarm_j(self, t: Any, src: str) -> dict:
        err = None
        try:
            await self.ctx.storage.set_alarm(t)
        except Exception as e:  # noqa: BLE001 - recorded, as the twin does
            err = err_info(e)
        after = await self.ctx.storage.get_alarm()
        finite = isinstance(t, (int, float)) and math.isfinite(t)
        journal(self, "set_alarm_error" if err else "set_alarm", scheduled=t if finite else None,
                detail={"src": src, "requested": t if finite else str(t), "after": after, "error": err})
        return {"requested": t if finite else None, "after": after, "error": err}

    async def alarm(self, info) -> None:
        at_start = await self.ctx.storage.get_alarm()
        cfg = self.cfg()
        run = (cfg.get("runs") or 0) + 1
        self.set_cfg({"runs": run})
        base = _info(info)
        mode = cfg.get("mode") or "plain"
        journal(self, "alarm_start", scheduled=info.scheduled_time, **base,
                detail={"get_alarm": at_start, "run": run, "mode": mode, "has_info": True})
        throws_left = cfg.get("throws_left") or 0

        def do_throw(where: str) -> None:
            self.set_cfg({"throws_left": throws_left - 1})
            journal(self, "throw", **base, detail={"where": where, "run": run})
            raise Error(f"probe injected failure ({where}, run {run})")

        storage = self.ctx.storage
        if mode == "getalarm":
            target = self.ctx.now() + 60_000
            await storage.set_alarm(target)
            after_set = await storage.get_alarm()
            await storage.delete_alarm()
            after_delete = await storage.get_alarm()
            journal(self, "inside", **base, detail={"at_start": at_start, "set_to": target, "after_set": after_set,
                                                     "after_delete": after_delete})
        elif mode == "throw":
            if throws_left > 0:
                do_throw("handler")
        elif mode == "delete_throw":
            if throws_left > 0:
                await storage.delete_alarm()
                journal(self, "delete_alarm", **base, detail={"src": "handler", "after": await storage.get_alarm()})
                do_throw("after_delete")
        elif mode == "set_throw":
            if throws_left > 0:
                await self.set_alarm_j(self.ctx.now() + (cfg.get("delay") or 1000), "handler")
                do_throw("after_set")
        elif mode == "abort":
            if throws_left > 0:
                self.set_cfg({"throws_left": throws_left - 1})
                retry_alarm = cfg.get("retry_alarm") is not False
                journal(self, "abort", **base, detail={"run": run, "retry_alarm": retry_alarm})
                await storage.sync()  # the journal row and the counter must outlive the reset
                self.ctx.abort(f"probe abort (run {run})", retry_alarm=retry_alarm)
        elif mode == "name":
            journal(self, "id_name", **base, detail={"run": run, "id_name": self.ctx.id.name})
        elif mode == "rearm":
            chain_left = cfg.get("chain_left") or 0
            if chain_left > 0:
                self.set_cfg({"chain_left": chain_left - 1})
                await self.set_alarm_j(info.scheduled_time if cfg.get("at") == "scheduled" else self.ctx.now(), "rearm")
        elif mode == "sleep" and run == 1:
            if cfg.get("inner_ms") is not None:
                await self.set_alarm_j(self.ctx.now() + cfg["inner_ms"], "handler")
            journal(self, "sleep_begin", **base, detail={"run": run, "ms": cfg.get("sleep_ms") or 300})
            await self.ctx.sleep(int(cfg.get("sleep_ms") or 300))
            journal(self, "sleep_end", **base, detail={"run": run})
        journal(self, "alarm_end", **base, detail={"run": run, "get_alarm": await storage.get_alarm()})

    async def events(self) -> list[dict]:
        return read_journal(self)

    async def bump(self, tag: str) -> int:
        """The read-modify-write of the /gate route: two run at once (the input gate probe)."""
        journal(self, "bump_read", detail={"tag": tag})
        n = (await self.ctx.storage.get("n")) or 0
        journal(self, "bump_write", detail={"tag": tag, "n": n + 1})
        await self.ctx.storage.put("n", n + 1)
        return n + 1

    async def op(self, name: str, p: dict) -> Any:
        now = self.ctx.now()
        storage = self.ctx.storage
        if name == "config":
            self.set_cfg(p)
            journal(self, "config", detail=p)
            return {"cfg": self.cfg()}
        if name == "arm":
            t = p["abs"] if "abs" in p else now + p["rel"]
            return await self.set_alarm_j(t, p.get("src", "outside"))
        if name == "get":
            return {"now": now, "alarm": await storage.get_alarm()}
        if name == "delete":
            before = await storage.get_alarm()
            await storage.delete_alarm()
            after = await storage.get_alarm()
            journal(self, "delete_alarm", detail={"src": "outside", "before": before, "after": after})
            return {"before": before, "after": after}
        if name == "bad_values":
            out = []
            # new Date(0) reaches setAlarm as its time value, 0
            for label, v in (("0", 0), ("-1", -1), ("-5000", -5000), ("NaN", float("nan")), ("Date(0)", 0)):
                r = await self.set_alarm_j(v, f"bad:{label}")
                out.append({"label": label, "threw": r["error"] is not None, "error": r["error"], "after": r["after"]})
            return {"now": now, "results": out}
        if name == "past":
            requested = now - (p.get("ago") or 5000)
            r = await self.set_alarm_j(requested, "outside_past")
            return {"now": now, "requested": requested, "after": r["after"], "error": r["error"]}
        if name == "twice":
            a, b = now + p["first"], now + p["second"]
            r1 = None
            if p.get("await_between"):
                await storage.set_alarm(a)
                r1 = await storage.get_alarm()
                await storage.set_alarm(b)
                r2 = await storage.get_alarm()
            else:  # no await in between: both writes in one turn
                p1 = storage.set_alarm(a)
                p2 = storage.set_alarm(b)
                await p1
                await p2
                r2 = await storage.get_alarm()
            journal(self, "set_alarm", scheduled=b,
                    detail={"src": "twice", "first": a, "second": b, "after_first": r1, "after": r2})
            return {"now": now, "first": a, "second": b, "after_first": r1, "after": r2}
        if name == "overlap_outside":
            self.set_cfg({"mode": "sleep", "sleep_ms": p.get("sleep_ms") or 600})
            await self.set_alarm_j(now + (p.get("first") or 100), "outside")
            deadline = self.ctx.now() + 5000
            while self.ctx.now() < deadline:
                await self.ctx.sleep(20)
                n = self.sql.exec("SELECT COUNT(*) AS n FROM journal WHERE kind = 'sleep_begin'").one()["n"]
                if n > 0:
                    break
            await self.ctx.sleep(int(p.get("wait_ms") or 100))
            r = await self.set_alarm_j(self.ctx.now() + (p.get("second") or 50), "outside_during_handler")
            return {"now": now, "second": r}
        if name == "facet":
            return await self.facet_probe(p)
        raise Error(f"unknown probe op {name}")

    async def facet_probe(self, p: dict) -> dict:
        res: dict[str, Any] = {"has_facets": True}
        inside = self.env.facet_inside
        fname = p.get("facet") or "f1"

        def get_facet():
            return self.ctx.facets.get(fname, lambda: {"class": TwinProbeFacet})

        def step(k: str, v: Any) -> None:
            res[k] = v
            journal(self, "facet_step", detail={"step": k, "result": v})

        spawn = self.ctx.start  # a second promise in flight in the same request
        inside.clear()
        f = get_facet()
        step("ping_before", await settle(f.ping()))
        step("get_before", await settle(f.get_a()))
        pending = spawn(settle(f.sleep(p.get("pending_ms") or 300)), "pending_call")

        async def parent_work():
            self.sql.exec("INSERT INTO parent_work (n) VALUES (1)")
            await self.ctx.sleep(200)
            self.sql.exec("INSERT INTO parent_work (n) VALUES (2)")
            return self.sql.exec("SELECT COUNT(*) AS n FROM parent_work").one()["n"]

        work = spawn(settle(parent_work()), "parent_work")
        step("set_alarm_call", await settle(f.try_set_alarm(p.get("delay") or 500)))
        step("pending_call", await pending)
        step("parent_work", await work)
        await self.ctx.sleep(100)
        step("ping_same_stub_after", await settle(f.ping()))
        step("get_same_stub_after", await settle(f.get_a()))
        f2 = get_facet()
        step("ping_regot", await settle(f2.ping()))
        step("get_regot", await settle(f2.get_a()))
        await self.ctx.sleep(int(p.get("wait_ms") or 1200))
        step("facet_events_after_wait", await settle(f2.events()))
        step("parent_alarm", await self.ctx.storage.get_alarm())
        step("parent_sql_ok", {"ok": True, "value": self.sql.exec("SELECT COUNT(*) AS n FROM journal").one()["n"]})
        res["inside"] = list(inside)
        return res


class TwinProbeFacet(DurableObject):
    """worker.js ``ProbeFacet``: used only as a facet of ``TwinProbe``."""

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.sql = ctx.storage.sql
        self.sql.exec(JOURNAL_DDL)
        self.born = ctx.now()
        journal(self, "construct")

    async def ping(self) -> dict:
        return {"pong": True, "born": self.born}

    async def sleep(self, ms: int) -> dict:
        await self.ctx.sleep(int(ms))
        return {"slept": ms}

    async def get_a(self) -> dict:
        return {"alarm": await self.ctx.storage.get_alarm(), "born": self.born}

    async def try_set_alarm(self, delay: int) -> dict:
        inside = self.env.facet_inside
        t = self.ctx.now() + delay
        out: dict[str, Any] = {"requested": t}
        inside.append({"t": self.ctx.now(), "step": "before_set_alarm", "requested": t})
        try:
            await self.ctx.storage.set_alarm(t)
            out["set_ok"] = True
            inside.append({"t": self.ctx.now(), "step": "set_alarm_resolved"})
        except Exception as e:  # noqa: BLE001
            out["set_ok"] = False
            out["set_error"] = err_info(e)
            inside.append({"t": self.ctx.now(), "step": "set_alarm_threw", "error": out["set_error"]})
        try:
            out["get_after"] = await self.ctx.storage.get_alarm()
            inside.append({"t": self.ctx.now(), "step": "get_alarm_after", "value": out["get_after"]})
        except Exception as e:  # noqa: BLE001
            out["get_error"] = err_info(e)
            inside.append({"t": self.ctx.now(), "step": "get_alarm_threw", "error": out["get_error"]})
        try:
            journal(self, "set_alarm", scheduled=t, detail=out)
        except Exception as e:  # noqa: BLE001
            out["journal_error"] = err_info(e)
        inside.append({"t": self.ctx.now(), "step": "returning", "out": dict(out)})
        return out

    async def alarm(self, info) -> None:
        self.env.facet_inside.append({"t": self.ctx.now(), "step": "facet_alarm_fired",
                                      "info": {"scheduledTime": info.scheduled_time, "retryCount": info.retry_count}})
        journal(self, "alarm_start", scheduled=info.scheduled_time, retry_count=info.retry_count)

    async def events(self) -> list[dict]:
        return read_journal(self)
