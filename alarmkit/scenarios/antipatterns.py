"""Six ways an alarm handler fails silently, as LeaseLedger variants, and one workload.

Every scenario here runs the same workload against one ledger class and *declares what it
owes*: each lease a grant promised must be revoked (``ctx.effect("revoke", lease_id)``) at or
after its expiry. ``lease-ledger`` is the correct ledger (unchanged); each
``lease-<anti-pattern>`` swaps in one mistake. ``alarmkit.explore`` finds each mistake with a
minimal counterexample and nothing in the correct ledger.

The workload: six leases granted over the first 2.5 minutes with overlapping lifetimes, then a
status request every 3 minutes until the horizon (40 minutes). Three minutes is longer than the
profile's idle eviction (70 s), so every status request wakes a fresh instance: the constructor
runs, which is the ledger's revival path after its alarm was abandoned. The horizon leaves the
checker's grace (25 minutes: the longest retry backoff plus a minute of latency) after the
faults, which the default fault space draws in the first four minutes. A grant that fails
(the object crashed under it) is retried by the client, up to three tries; only a grant that
returned promises anything. "Lost" means not revoked by the horizon although the object was
woken after the lease was due and after the last fault (see ``alarmkit.invariants``).
"""

from __future__ import annotations

from ..runtime import Simulation
from ..errors import InternalError, ObjectCrashed
from .lease import LeaseLedger
from .registry import scenario

__all__ = [
    "AlarmAsData", "CtorPushesLater", "DeleteBeforeEffect", "ReadsClock", "GetAlarmInHandler", "NoRevival",
    "VARIANTS", "GRANTS", "run_workload",
]


class AlarmAsData(LeaseLedger):
    """Treating the alarm as the data: each grant sets the alarm to its own lease's expiry and
    records which lease the alarm is for; the handler revokes that lease. A second grant
    replaces the first one's alarm, and nothing ever revokes the first lease."""

    async def grant(self, lease_id: str, ttl_ms: int):
        expire_at = self.ctx.now() + ttl_ms
        self.sql.exec("INSERT OR REPLACE INTO leases (id, expire_at) VALUES (?, ?)", lease_id, expire_at)
        await self.ctx.storage.put("alarm_is_for", lease_id)
        await self.ctx.storage.set_alarm(expire_at)  # the mistake: replaces the previous lease's alarm

    async def alarm(self, info):
        lease_id = await self.ctx.storage.get("alarm_is_for")
        if lease_id is None:
            return
        await self.revoke(lease_id)
        self.sql.exec("DELETE FROM leases WHERE id = ?", lease_id)
        await self.ctx.storage.delete("alarm_is_for")


class CtorPushesLater(LeaseLedger):
    """Setting the alarm unconditionally in the constructor: every wake arms "a sweep in a
    minute", moving an alarm that was due sooner later; expirations run late."""

    SWEEP_MS = 60_000

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        ctx.block_concurrency_while(self.arm_sweep)

    def boot_rearms(self) -> bool:
        return False  # replaced by arm_sweep below

    async def arm_sweep(self):
        if self.sql.exec("SELECT count(*) AS n FROM leases").one()["n"]:
            await self.ctx.storage.set_alarm(self.ctx.now() + self.SWEEP_MS)  # the mistake: no get_alarm() check


class DeleteBeforeEffect(LeaseLedger):
    """Deleting before the effect: if revoke fails, the row is already gone (the writes of a
    handler that throws still commit) and the retry finds nothing to do."""

    async def alarm(self, info):
        due = self.sql.exec(
            "SELECT id FROM leases WHERE expire_at <= ? ORDER BY expire_at LIMIT 100", self.ctx.now()
        ).to_list()
        for row in due:
            self.sql.exec("DELETE FROM leases WHERE id = ?", row["id"])  # the mistake: the row first...
            await self.revoke(row["id"])  # ...then the effect
        await self.ensure_alarm()


class ReadsClock(LeaseLedger):
    """Reading the clock instead of the table: the handler takes its own firing as proof that
    the earliest lease is due and revokes it without checking ``expire_at <= now``. A run that
    is early, repeated or retried revokes a lease that is still valid."""

    async def alarm(self, info):
        rows = self.sql.exec("SELECT id FROM leases ORDER BY expire_at LIMIT 1").to_list()  # the mistake
        for row in rows:
            await self.revoke(row["id"])
            self.sql.exec("DELETE FROM leases WHERE id = ?", row["id"])
        await self.ensure_alarm()


class GetAlarmInHandler(LeaseLedger):
    """A re-arm decision based on get_alarm() inside the handler: it expects get_alarm() to still
    show the alarm that just fired and re-arms only then; inside alarm() it is None, so the
    chain to the next lease is dropped (until something wakes the object)."""

    async def alarm(self, info):
        due = self.sql.exec(
            "SELECT id FROM leases WHERE expire_at <= ? ORDER BY expire_at LIMIT 100", self.ctx.now()
        ).to_list()
        for row in due:
            await self.revoke(row["id"])
            self.sql.exec("DELETE FROM leases WHERE id = ?", row["id"])
        current = await self.ctx.storage.get_alarm()
        if current is not None and current <= self.ctx.now():  # the mistake: current is None in here
            nxt = self.sql.exec("SELECT MIN(expire_at) AS t FROM leases").one()["t"]
            if nxt is not None:
                await self.ctx.storage.set_alarm(nxt)


class NoRevival(LeaseLedger):
    """Relying on retries with no revival path: the constructor does not re-arm, so once a
    failing handler has used up its retries, the overdue leases stay in the table for good."""

    def boot_rearms(self) -> bool:
        return False


# (time of the grant in ms, lease id, ttl in ms): overlapping lifetimes, one grant moving the
# alarm earlier (lease-2), one granted after the first alarms have run (lease-5)
GRANTS = (
    (0, "lease-0", 30_000),
    (0, "lease-1", 90_000),
    (10_000, "lease-2", 5_000),
    (40_000, "lease-3", 200_000),
    (45_000, "lease-4", 60_000),
    (150_000, "lease-5", 20_000),
)
STATUS_EVERY_MS = 180_000
HORIZON_MS = 40 * 60_000
GRANT_TRIES = 3


def run_workload(sim: Simulation, cls: type, grants=GRANTS, status_every_ms: int = STATUS_EVERY_MS,
                 horizon_ms: int = HORIZON_MS) -> dict:
    """Drive ``cls`` through the workload; return the obligations (one per promised lease) and horizon."""
    ledger = sim.namespace("LEASES", cls).get("ledger")
    view = sim.inspect(ledger)
    plan = [(int(t), 0, lid, int(ttl)) for t, lid, ttl in grants]
    plan += [(t, 1, None, None) for t in range(status_every_ms, horizon_ms, status_every_ms)]
    obligations, failed_calls = [], 0
    for t, kind, lease_id, ttl in sorted(plan):
        if t > sim.now:
            sim.run(until=t)
        if kind == 1:
            failed_calls += not _try(sim, ledger.leases())
            continue
        for _ in range(GRANT_TRIES):
            if _try(sim, ledger.grant(lease_id, ttl)):
                rows = view.sql("SELECT expire_at FROM leases WHERE id = ?", lease_id)
                if not rows:
                    raise InternalError(f"grant({lease_id!r}) returned but its row is not in the table")
                obligations.append({"object": ledger.id, "effect": "revoke", "key": lease_id,
                                    "due_ms": rows[0]["expire_at"], "since_ms": sim.now})
                break
            failed_calls += 1
    if horizon_ms > sim.now:
        sim.run(until=horizon_ms)
    return {
        "obligations": obligations,
        "horizon_ms": horizon_ms,
        "failed_calls": failed_calls,
        "final_alarm": view.alarm,
        "rows_left": [r["id"] for r in view.sql("SELECT id FROM leases ORDER BY expire_at")],
    }


def _try(sim: Simulation, call) -> bool:
    try:
        sim.call(call)
    except ObjectCrashed:
        return False
    return True


VARIANTS = {
    "lease-ledger": (LeaseLedger, "the correct ledger under the exploration workload"),
    "lease-alarm-as-data": (AlarmAsData, "anti-pattern: one set_alarm per lease; the alarm is the data"),
    "lease-ctor-pushes-later": (CtorPushesLater, "anti-pattern: the constructor sets the alarm unconditionally"),
    "lease-delete-before-effect": (DeleteBeforeEffect, "anti-pattern: the row is deleted before the revoke"),
    "lease-reads-clock": (ReadsClock, "anti-pattern: the handler trusts its firing, not expire_at <= now"),
    "lease-getalarm-in-handler": (GetAlarmInHandler, "anti-pattern: re-arm decided on get_alarm() inside alarm()"),
    "lease-no-revival": (NoRevival, "anti-pattern: relies on retries; the constructor never re-arms"),
}


def _register(name: str, cls: type, description: str) -> None:
    def fn(sim: Simulation, grants: tuple = GRANTS, status_every_ms: int = STATUS_EVERY_MS,
           horizon_ms: int = HORIZON_MS) -> dict:
        return run_workload(sim, cls, grants, status_every_ms, horizon_ms)

    fn.__name__ = fn.__qualname__ = name.replace("-", "_")
    scenario(name, description)(fn)


for _name, (_cls, _desc) in VARIANTS.items():
    _register(_name, _cls, _desc)
