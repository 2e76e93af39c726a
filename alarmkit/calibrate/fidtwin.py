"""The ``Fid``, ``FidNoAlarm`` and ``FidDeploy`` classes of ``twin/worker.js`` transcribed into simulated objects, line
for line: ``FID_LOG`` (the isolate's memory) is the simulation's ``env.fid_log``, its sequence number
the list's length; the constructor failures to inject live in ``env.ctor_fails`` (workerd's ``CTOR_FAILS``).
:class:`~alarmkit.calibrate.simbackend.SimWorkerd` serves them on ``/fid/OP`` and ``/fid/log``."""

from __future__ import annotations

import random
from typing import Any

from ..runtime import DurableObject
from .simtwin import Error, err_info

__all__ = ["TwinFid", "TwinFidNoAlarm", "TwinFidDeploy", "fid_log"]


def fid_log(env: Any, obj: str, kind: str, detail: dict, now: int) -> None:
    log = env.fid_log
    log.append({"seq": len(log) + 1, "t_ms": now, "obj": obj, "kind": kind, "detail": detail})


class _FidBase(DurableObject):
    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.obj = ctx.id.name if ctx.id.name is not None else str(ctx.id)
        # Math.random(), seeded by the log's length and the time (the log starts again after a restart)
        self.instance = f"{random.Random(f'{len(env.fid_log)}:{ctx.now()}').getrandbits(32):08x}"
        left = env.ctor_fails.get(str(ctx.id), 0)
        if left > 0:
            env.ctor_fails[str(ctx.id)] = left - 1
            self.log("construct_fail", {"instance": self.instance, "left": left - 1})
            raise Error(f"fid: constructor fails ({left - 1} left)")
        self.log("construct", {"instance": self.instance})
        self.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER)")
        rows = self.ctx.storage.sql.exec("SELECT v FROM kv WHERE k = 'ctor_arm_at'").to_list()
        if rows and rows[0]["v"]:
            self.ctx.storage.sql.exec("DELETE FROM kv WHERE k = 'ctor_arm_at'")
            try:
                self.ctx.storage.set_alarm(rows[0]["v"])
                self.log("ctor_set_alarm", {"at": rows[0]["v"], "instance": self.instance})
            except Exception as e:  # noqa: BLE001 - recorded, as the twin does
                self.log("ctor_set_alarm_error", {"error": err_info(e)})

    def log(self, kind: str, detail: dict) -> None:
        fid_log(self.env, self.obj, kind, detail, self.ctx.now())

    def kv_put(self, k: str, v: int) -> None:
        self.ctx.storage.sql.exec("INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)", k, v)

    def kv_get(self, k: str) -> Any:
        rows = self.ctx.storage.sql.exec("SELECT v FROM kv WHERE k = ?", k).to_list()
        return rows[0]["v"] if rows else None

    async def op(self, name: str, p: dict) -> Any:
        st = self.ctx.storage
        now = self.ctx.now()
        if name == "turn_abort":
            self.log("turn_abort", {"how": p["how"], "at": now + p["rel"], "instance": self.instance})
            if p["how"] == "noawait":
                st.set_alarm(now + p["rel"])
            else:
                await st.set_alarm(now + p["rel"])
            if p["how"] == "sync":
                await st.sync()
            self.ctx.abort("fid probe")
        if name == "ctor_fail":
            self.env.ctor_fails[str(self.ctx.id)] = p["fails"]
            await st.set_alarm(now + p["rel"])
            await st.sync()
            self.log("ctor_fail_armed", {"fails": p["fails"], "at": now + p["rel"]})
            self.ctx.abort("fid probe: the alarm constructs a new instance")
        if name == "stop_ctor_fail":
            self.env.ctor_fails[str(self.ctx.id)] = 0
            return {"ok": True}
        if name == "arm_at":
            err = None
            try:
                await st.set_alarm(p["at"])
            except Exception as e:  # noqa: BLE001 - recorded, as the twin does
                err = err_info(e)
            self.log("set_alarm_error" if err else "set_alarm", {"at": p["at"], "error": err, "instance": self.instance})
            return {"now": now, "at": p["at"], "error": err, "alarm": await st.get_alarm()}
        if name == "ctor_arm":
            self.kv_put("ctor_arm_at", now + p["rel"])
            await st.sync()
            self.ctx.abort("fid probe: construct again")
        if name == "long":
            self.kv_put("long", 1)
            await st.set_alarm(now + p["rel"])
            self.log("long_armed", {"at": now + p["rel"], "instance": self.instance})
            return {"now": now, "at": now + p["rel"]}
        if name == "delete_all":
            await st.set_alarm(now + p["rel"])
            self.kv_put("x", 1)
            before = await st.get_alarm()
            await st.delete_all()
            after = await st.get_alarm()
            self.log("delete_all", {"before": before, "after": after, "at": now + p["rel"], "instance": self.instance})
            return {"now": now, "before": before, "after": after}
        if name == "get":
            return {"now": now, "alarm": await st.get_alarm(), "instance": self.instance}
        return {"error": f"unknown fid op {name}"}


class TwinFid(_FidBase):
    async def alarm(self, info) -> None:
        self.log("alarm_start", {"scheduled": info.scheduled_time, "retry_count": info.retry_count,
                                 "instance": self.instance})
        long = self.ctx.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'kv'").to_list() and self.kv_get("long")
        if long and info.retry_count == 0:
            for i in range(40):
                await self.ctx.sleep(30_000)  # 20 minutes in all: the 15-minute limit comes first
                self.log("long_tick", {"i": i, "instance": self.instance})
        self.log("alarm_end", {"instance": self.instance, "alarm": await self.ctx.storage.get_alarm()})


class TwinFidNoAlarm(_FidBase):
    pass


class TwinFidDeploy(TwinFid):
    """worker.js's ``FidDeploy``: Fid's ``alarm()``. Its deploy "v2" (``deploy-v2.js``) is ``FidNoAlarm`` under
    the same name: ``SimWorkerd.redeploy("v2")`` makes the ``FIDDEPLOY`` namespace's class ``TwinFidNoAlarm``."""
