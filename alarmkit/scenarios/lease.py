"""The lease ledger, its lab, and the five lab results as scenarios.

The ledger keeps expirations in a table (the truth) and derives one alarm from it: the alarm
moves only earlier; the handler reads what is due, runs the effect, then deletes the row; the
constructor re-arms on every wake (revival).
"""

from __future__ import annotations

from ..runtime import DurableObject, Simulation
from ..runtime.faults import InjectedError
from .registry import scenario

__all__ = ["LeaseLedger", "LeaseLab", "LEASE_SCENARIOS"]


class LeaseLedger(DurableObject):
    """The lease ledger, line for line."""

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.sql = ctx.storage.sql
        self.sql.exec("CREATE TABLE IF NOT EXISTS leases (id TEXT PRIMARY KEY, expire_at INTEGER NOT NULL)")
        self.sql.exec("CREATE INDEX IF NOT EXISTS leases_by_expiry ON leases (expire_at)")
        if self.boot_rearms():
            ctx.block_concurrency_while(self.ensure_alarm)  # (1) re-arm on every wake

    def boot_rearms(self) -> bool:
        return True

    async def ensure_alarm(self):
        nxt = self.sql.exec("SELECT MIN(expire_at) AS t FROM leases").one()["t"]  # (2) the table is the truth
        if nxt is None:
            return
        current = await self.ctx.storage.get_alarm()
        if current is None or nxt < current:  # (3) only ever earlier
            await self.ctx.storage.set_alarm(nxt)

    async def grant(self, lease_id: str, ttl_ms: int):
        self.sql.exec(
            "INSERT OR REPLACE INTO leases (id, expire_at) VALUES (?, ?)", lease_id, self.ctx.now() + ttl_ms
        )
        await self.ensure_alarm()

    async def alarm(self, info):
        due = self.sql.exec(  # (4) what is due now, not how often we were called
            "SELECT id FROM leases WHERE expire_at <= ? ORDER BY expire_at LIMIT 100", self.ctx.now()
        ).to_list()
        for row in due:
            await self.revoke(row["id"])  # (5) the effect first...
            self.sql.exec("DELETE FROM leases WHERE id = ?", row["id"])  # (6) ...then the row
        await self.ensure_alarm()  # (7) chain to the next expiry

    async def revoke(self, lease_id: str):
        await self.ctx.effect("revoke", lease_id)

    async def leases(self) -> list[dict]:
        return self.sql.exec("SELECT id, expire_at FROM leases ORDER BY expire_at").to_list()


class LeaseLab(LeaseLedger):
    """The lab subclass: revoke throws N times (after counting its call), the handler can throw
    always, and a persisted ``noboot`` switch keeps the constructor from re-arming."""

    def __init__(self, ctx, env):
        ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS lab (key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
        super().__init__(ctx, env)

    def _switch(self, key: str) -> int:
        rows = self.ctx.storage.sql.exec("SELECT value FROM lab WHERE key = ?", key).to_list()
        return rows[0]["value"] if rows else 0

    def boot_rearms(self) -> bool:
        return not self._switch("noboot")

    async def lab(self, revoke_throws: int | None = None, always_throw: bool | None = None, noboot: bool | None = None):
        for key, value in (("revoke_throws", revoke_throws), ("always_throw", always_throw), ("noboot", noboot)):
            if value is not None:
                if isinstance(value, bool) or key == "revoke_throws":
                    value = int(value)
                self.sql.exec("INSERT OR REPLACE INTO lab (key, value) VALUES (?, ?)", key, value)
        return {k: self._switch(k) for k in ("revoke_throws", "always_throw", "noboot")}

    async def alarm(self, info):
        if self._switch("always_throw"):
            raise InjectedError(f"lab: the handler throws (attempt with retry_count={info.retry_count})")
        await super().alarm(info)

    async def revoke(self, lease_id: str):
        await super().revoke(lease_id)  # the call is counted (journaled) first
        left = self._switch("revoke_throws")
        if left > 0:
            self.sql.exec("UPDATE lab SET value = ? WHERE key = 'revoke_throws'", left - 1)
            raise InjectedError(f"lab: revoke({lease_id!r}) throws after recording its call")

    async def status(self) -> dict:
        return {"leases": await self.leases(), "alarm": await self.ctx.storage.get_alarm()}


def _ledger(sim: Simulation, name: str = "ledger"):
    return sim.namespace("LEASES", LeaseLab).get(name)


def _summary(sim: Simulation, ledger) -> dict:
    view = sim.inspect(ledger)
    return {
        "final_alarm": view.alarm,
        "rows_left": [r["id"] for r in view.sql("SELECT id FROM leases ORDER BY expire_at")],
    }


@scenario("lease-normal", "two leases (300 ms, 1500 ms): one fire each, 1.2 s apart; table empty at the end")
def lease_normal(sim: Simulation, ttls: tuple = (300, 1500)) -> dict:
    ledger = _ledger(sim)
    for i, ttl in enumerate(ttls):
        sim.call(ledger.grant(f"lease-{i}", ttl))
    sim.run()
    return _summary(sim, ledger)


@scenario("lease-crash-after-effect", "revoke throws once after counting its call: the retry ~2 s later runs it again")
def lease_crash_after_effect(sim: Simulation, ttl: int = 300, revoke_throws: int = 1) -> dict:
    ledger = _ledger(sim)
    sim.call(ledger.lab(revoke_throws=revoke_throws))
    sim.call(ledger.grant("lease-0", ttl))
    sim.run()
    return _summary(sim, ledger)


@scenario("lease-moves-only-earlier", "grant 5 s, then 60 s (alarm unchanged), then 1 s (alarm moves earlier)")
def lease_moves_only_earlier(sim: Simulation, ttls: tuple = (5_000, 60_000, 1_000)) -> dict:
    ledger = _ledger(sim)
    alarms = []
    for i, ttl in enumerate(ttls):
        sim.call(ledger.grant(f"lease-{i}", ttl))
        alarms.append(sim.inspect(ledger).alarm)
    sim.run()
    return {"alarm_after_each_grant": alarms, **_summary(sim, ledger)}


def _exhaust(sim: Simulation, ttl: int, quiet_ms: int):
    ledger = _ledger(sim)
    sim.call(ledger.lab(always_throw=True, noboot=True))
    sim.call(ledger.grant("lease-0", ttl))
    sim.run()  # seven attempts, then abandonment; nothing else is scheduled
    sim.advance(quiet_ms)  # "no further attempt over the next 100 seconds"
    return ledger


@scenario("lease-exhaustion", "the handler always throws: 7 attempts (+2, 4, 8, 16, 32, 64 s + jitter), then nothing")
def lease_exhaustion(sim: Simulation, ttl: int = 1_000, quiet_ms: int = 100_000) -> dict:
    ledger = _exhaust(sim, ttl, quiet_ms)
    due = sim.inspect(ledger).sql("SELECT MIN(expire_at) AS t FROM leases")[0]["t"]
    return {"overdue_ms": None if due is None else sim.now - due, **_summary(sim, ledger)}


@scenario("lease-revival", "after exhaustion: restart with the failure cleared, one request; the constructor re-arms")
def lease_revival(sim: Simulation, ttl: int = 1_000, quiet_ms: int = 100_000, downtime_ms: int = 5_000) -> dict:
    ledger = _exhaust(sim, ttl, quiet_ms)
    sim.call(ledger.lab(always_throw=False, noboot=False))
    sim.restart(downtime_ms)
    sim.advance(downtime_ms)
    request_at = sim.now
    sim.call(ledger.status())  # one request wakes the object: its constructor re-arms
    sim.run()
    return {"request_at": request_at, **_summary(sim, ledger)}


@scenario("lease-lab", "the ledger with every lab control: leases, revoke throws, handler throws, a restart")
def lease_lab(
    sim: Simulation,
    leases: int = 2,
    ttl_ms: int = 300,
    spacing_ms: int = 1_200,
    revoke_throws: int = 0,
    always_throw: bool = False,
    noboot: bool = False,
    restart_at_ms: int | None = None,
    downtime_ms: int = 5_000,
    horizon_ms: int = 400_000,
) -> dict:
    """Grant ``leases`` leases of ``ttl_ms + i * spacing_ms``; optionally restart the runtime at
    ``restart_at_ms`` (one request wakes the object afterwards); run until ``horizon_ms``."""
    if leases < 0 or ttl_ms < 0 or spacing_ms < 0 or horizon_ms <= 0:
        from ..errors import ScenarioError

        raise ScenarioError(
            f"lease-lab needs leases, ttl_ms, spacing_ms >= 0 and horizon_ms > 0; got leases={leases}, "
            f"ttl_ms={ttl_ms}, spacing_ms={spacing_ms}, horizon_ms={horizon_ms}"
        )
    ledger = _ledger(sim)
    sim.call(ledger.lab(revoke_throws=revoke_throws, always_throw=always_throw, noboot=noboot))
    for i in range(leases):
        sim.call(ledger.grant(f"lease-{i}", ttl_ms + i * spacing_ms))
    if restart_at_ms is not None and restart_at_ms < horizon_ms:
        sim.run(until=max(restart_at_ms, sim.now))
        sim.call(ledger.lab(always_throw=False, revoke_throws=0))
        sim.restart(downtime_ms)
        sim.advance(downtime_ms)
        sim.call(ledger.status())
    sim.run(until=max(horizon_ms, sim.now))
    return _summary(sim, ledger)


LEASE_SCENARIOS = [
    "lease-normal", "lease-crash-after-effect", "lease-moves-only-earlier", "lease-exhaustion", "lease-revival",
    "lease-lab",
]
