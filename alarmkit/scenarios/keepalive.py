"""The guestbook stream processor and its keepalive recovery, with the two parent apps.

The processor receives batches of guestbook entries, stores them in its inbox, and signs them one
by one. Its keepalive is transport-free (it touches alarms only through ``ctx.storage``):

- it arms before a batch (first rung ``KEEPALIVE_ALARM_LEAD_MS`` = 10 s) and disarms after;
- a fire self-gates on the persisted ``armed_at_ms``: an early fire re-arms and does nothing, a
  late one proceeds, a duplicate finds the record gone or moved on; every path is idempotent;
- a fire that finds work owed revives the processor: it bumps a durable revivals counter, records
  a revival fact (journal kind ``revival``), re-arms at the next rung (20, 40, 80, 160 s) and
  finishes the work;
- a crash-loop budget stops revivals after ``budget`` in one build (the keepalive parks); a deploy
  (a new ``GUESTBOOK_VERSION``) resets it, and the first wake of the new build re-arms.

Configuration comes from ``env`` (``GUESTBOOK_VERSION``, ``GUESTBOOK_ENTRY_MS``, ``GUESTBOOK_BUDGET``).
Entry texts ``"!poison"`` (crashes build v1 every time) and ``"!flaky"`` (fails once) make failures.
"""

from __future__ import annotations

import json

from ..runtime.facets import AlarmProxyParent, facet_alarm_state
from ..runtime import DurableObject

__all__ = [
    "BUGGY_BUILDS", "CRASH_LOOP_BUDGET", "GUESTBOOK_APP_REF", "KEEPALIVE_ALARM_LEAD_MS", "KEEPALIVE_MAX_RUNG",
    "GuestbookFacetApp", "GuestbookProcessor", "GuestbookProxyApp", "Keepalive", "PoisonEntry",
    "ProxiedGuestbookProcessor", "keepalive_lead_ms",
]

KEEPALIVE_ALARM_LEAD_MS = 10_000  # stream-processor-keepalive.ts: the first rung
KEEPALIVE_MAX_RUNG = 4  # rungs 10, 20, 40, 80, 160 s (the climb is ours; the keepalive names only the first)
CRASH_LOOP_BUDGET = 3
GUESTBOOK_APP_REF = "guestbook"  # the template's exported ref: the proxy boots the facet from it
BUGGY_BUILDS = frozenset({"v1"})  # builds that crash on "!poison"


class PoisonEntry(Exception):
    """The processor build crashes on this entry (a user error: a counted failure)."""


def keepalive_lead_ms(rung: int) -> int:
    """How far ahead the keepalive arms at ``rung``: 10 s, then doubling, capped at 160 s."""
    return KEEPALIVE_ALARM_LEAD_MS << min(rung, KEEPALIVE_MAX_RUNG)


class Keepalive:
    """The keepalive's durable record (``armed_at_ms``, rung, parked build) and revivals counter."""

    def __init__(self, ctx, build: str, budget: int) -> None:
        self.ctx, self.build, self.budget = ctx, build, budget
        self.sql = ctx.storage.sql
        self.sql.exec("CREATE TABLE IF NOT EXISTS keepalive (one INTEGER PRIMARY KEY CHECK (one = 1), "
                      "armed_at_ms INTEGER NOT NULL, rung INTEGER NOT NULL, parked_build TEXT)")
        self.sql.exec("CREATE TABLE IF NOT EXISTS revivals (one INTEGER PRIMARY KEY CHECK (one = 1), "
                      "total INTEGER NOT NULL, build TEXT NOT NULL, build_count INTEGER NOT NULL)")

    def record(self) -> dict | None:
        rows = self.sql.exec("SELECT armed_at_ms, rung, parked_build FROM keepalive").to_list()
        return rows[0] if rows else None

    def revivals(self) -> dict:
        rows = self.sql.exec("SELECT total, build, build_count FROM revivals").to_list()
        return rows[0] if rows else {"total": 0, "build": self.build, "build_count": 0}

    def _write(self, at: int, rung: int, cause: str, parked: str | None = None) -> None:
        prev = self.record()
        self.sql.exec("INSERT OR REPLACE INTO keepalive (one, armed_at_ms, rung, parked_build) VALUES (1, ?, ?, ?)",
                      at, rung, parked)
        self.ctx.journal_event("keepalive_arm", scheduled_ms=at, prev_ms=prev["armed_at_ms"] if prev else None,
                               detail={"rung": rung, "lead_ms": keepalive_lead_ms(rung), "cause": cause})

    async def arm(self, cause: str = "batch") -> None:
        """Before a batch. Already armed: the same time again (idempotent). Parked: no alarm."""
        rec = self.record()
        if rec is not None and rec["parked_build"] is not None:
            return
        if rec is None:
            self._write(self.ctx.now() + keepalive_lead_ms(0), 0, cause)
            rec = self.record()
        await self.ctx.storage.set_alarm(rec["armed_at_ms"])

    async def climb(self, cause: str) -> None:
        rung = min((self.record() or {"rung": -1})["rung"] + 1, KEEPALIVE_MAX_RUNG)
        self._write(self.ctx.now() + keepalive_lead_ms(rung), rung, cause)
        await self.ctx.storage.set_alarm(self.record()["armed_at_ms"])

    async def disarm(self, cause: str) -> None:
        rec = self.record()
        if rec is None:
            return
        self.sql.exec("DELETE FROM keepalive")
        self.ctx.journal_event("keepalive_disarm", prev_ms=rec["armed_at_ms"], detail={"cause": cause})
        await self.ctx.storage.delete_alarm()

    async def park(self) -> None:
        """The crash-loop budget is spent: keep the record, drop the alarm, until a deploy."""
        self.sql.exec("UPDATE keepalive SET parked_build = ?", self.build)
        self.ctx.journal_event("keepalive_disarm", prev_ms=self.record()["armed_at_ms"],
                               detail={"cause": "crash-loop budget spent", "parked_build": self.build})
        await self.ctx.storage.delete_alarm()

    def deployed_since_parked(self) -> bool:
        rec = self.record()
        return rec is not None and rec["parked_build"] not in (None, self.build)

    async def resume_after_deploy(self) -> None:
        if self.deployed_since_parked():
            self._write(self.ctx.now() + keepalive_lead_ms(0), 0, "deploy")
            await self.ctx.storage.set_alarm(self.record()["armed_at_ms"])

    def budget_left(self) -> bool:
        r = self.revivals()
        return r["build"] != self.build or r["build_count"] < self.budget

    def bump(self) -> dict:
        r = self.revivals()
        count = r["build_count"] + 1 if r["build"] == self.build else 1  # a deploy resets the budget
        self.sql.exec("INSERT OR REPLACE INTO revivals (one, total, build, build_count) VALUES (1, ?, ?, ?)",
                      r["total"] + 1, self.build, count)
        return self.revivals()


class GuestbookProcessor(DurableObject):
    """The stream processor: ``deliver(batch)`` signs entries; ``alarm(info)`` is the keepalive fire."""

    def __init__(self, ctx, env) -> None:
        super().__init__(ctx, env)
        self.build = str(getattr(env, "GUESTBOOK_VERSION", "v1"))
        self.entry_ms = int(getattr(env, "GUESTBOOK_ENTRY_MS", 200))
        sql = self.sql = self.ctx.storage.sql
        sql.exec("CREATE TABLE IF NOT EXISTS inbox (offset INTEGER PRIMARY KEY, author TEXT, text TEXT)")
        sql.exec("CREATE TABLE IF NOT EXISTS signed (offset INTEGER PRIMARY KEY, author TEXT, text TEXT, "
                 "at_ms INTEGER, build TEXT)")
        sql.exec("CREATE TABLE IF NOT EXISTS cursor (one INTEGER PRIMARY KEY CHECK (one = 1), offset INTEGER NOT NULL)")
        sql.exec("CREATE TABLE IF NOT EXISTS flaked (offset INTEGER PRIMARY KEY)")
        sql.exec("CREATE TABLE IF NOT EXISTS facts (n INTEGER PRIMARY KEY, kind TEXT, at_ms INTEGER, detail TEXT)")
        self.keepalive = Keepalive(self.ctx, self.build, int(getattr(env, "GUESTBOOK_BUDGET", CRASH_LOOP_BUDGET)))
        if self.keepalive.deployed_since_parked():
            self.ctx.block_concurrency_while(self.keepalive.resume_after_deploy)

    # -- the stream ---------------------------------------------------------------------------------
    async def deliver(self, batch: list[dict]) -> dict:
        """Store the batch, arm the keepalive, sign everything owed, disarm. Redelivery is harmless."""
        for e in batch:
            self.sql.exec("INSERT OR IGNORE INTO inbox (offset, author, text) VALUES (?, ?, ?)",
                          int(e["offset"]), str(e["author"]), str(e["text"]))
        await self.keepalive.arm("batch")
        signed = await self.process()
        await self.keepalive.disarm("batch done")
        return {"signed": signed, "cursor": self.cursor()}

    def cursor(self) -> int:
        rows = self.sql.exec("SELECT offset FROM cursor").to_list()
        return rows[0]["offset"] if rows else -1

    def owed(self) -> bool:
        return self.sql.exec("SELECT COUNT(*) AS n FROM inbox WHERE offset > ?", self.cursor()).one()["n"] > 0

    async def process(self) -> int:
        n = 0
        while True:
            rows = self.sql.exec("SELECT offset, author, text FROM inbox WHERE offset > ? ORDER BY offset LIMIT 1",
                                 self.cursor()).to_list()
            if not rows:
                return n
            e = rows[0]
            await self.ctx.sleep(self.entry_ms)  # the work
            self.check(e)
            self.sql.exec("INSERT OR IGNORE INTO signed (offset, author, text, at_ms, build) VALUES (?, ?, ?, ?, ?)",
                          e["offset"], e["author"], e["text"], self.ctx.now(), self.build)
            self.sql.exec("INSERT OR REPLACE INTO cursor (one, offset) VALUES (1, MAX(?, ?))", e["offset"], self.cursor())
            n += 1

    def check(self, e: dict) -> None:
        if e["text"] == "!poison" and self.build in BUGGY_BUILDS:
            raise PoisonEntry(f"build {self.build} crashes on entry {e['offset']} ({e['text']!r})")
        if e["text"] == "!flaky" and self.sql.exec("INSERT OR IGNORE INTO flaked VALUES (?)", e["offset"]).rows_written:
            raise RuntimeError(f"entry {e['offset']}: a transient failure (it succeeds when tried again)")

    # -- the keepalive fire ----------------------------------------------------------------------------
    async def alarm(self, info) -> None:
        ka, now = self.keepalive, self.ctx.now()
        rec = ka.record()
        outcome = self._gate(rec, now)
        self.ctx.journal_event("keepalive_fire", scheduled_ms=rec["armed_at_ms"] if rec else None, detail={
            "outcome": outcome, "late_ms": now - rec["armed_at_ms"] if rec else None,
            "retry_count": info.retry_count, "scheduled_time": info.scheduled_time,
        })
        if outcome == "early":
            await self.ctx.storage.set_alarm(rec["armed_at_ms"])  # the same time again: harmless
        elif outcome == "idle":
            await ka.disarm("fire found nothing owed")
        elif outcome == "budget spent":
            await ka.park()
        elif outcome == "revived":
            await self.revive(rec)

    def _gate(self, rec: dict | None, now: int) -> str:
        if rec is None:
            return "no record"  # duplicate, or stale after a disarm
        if rec["parked_build"] is not None:
            return "parked"
        if now < rec["armed_at_ms"]:
            return "early"
        if not self.owed():
            return "idle"
        return "revived" if self.keepalive.budget_left() else "budget spent"

    async def revive(self, rec: dict) -> None:
        r = self.keepalive.bump()
        detail = {"revivals": r["total"], "build": r["build"], "build_revivals": r["build_count"],
                  "budget": self.keepalive.budget, "cursor": self.cursor(), "rung": rec["rung"]}
        self.sql.exec("INSERT INTO facts (kind, at_ms, detail) VALUES ('revival', ?, ?)", self.ctx.now(), json.dumps(detail))
        self.ctx.journal_event("revival", scheduled_ms=rec["armed_at_ms"], detail=detail)
        await self.keepalive.climb("revival")  # armed at the next rung before the work: a crash is caught again
        await self.process()
        await self.keepalive.disarm("revival done")

    async def status(self) -> dict:
        return {
            "build": self.build, "cursor": self.cursor(), "owed": self.owed(),
            "signed": [r["offset"] for r in self.sql.exec("SELECT offset FROM signed ORDER BY offset")],
            "keepalive": self.keepalive.record(), "revivals": self.keepalive.revivals(),
            "alarm": await self.ctx.storage.get_alarm(),
        }


class ProxiedGuestbookProcessor(GuestbookProcessor):
    """The same processor as a facet: its ctx is the shim, so its alarm calls go to the parent."""

    def __init__(self, ctx, env) -> None:
        super().__init__(facet_alarm_state(ctx, GUESTBOOK_APP_REF), env)


class _App:
    """The project worker's object: it forwards the stream to its processor facet, and has work of its own."""

    def processor(self):
        raise NotImplementedError

    async def deliver(self, batch: list[dict]) -> dict:
        return await self.processor().deliver(batch)

    async def status(self) -> dict:
        return await self.processor().status()

    async def visit(self, ms: int) -> int:
        """The parent's own work: a write, a wait of ``ms``, a write."""
        sql = self.ctx.storage.sql
        sql.exec("CREATE TABLE IF NOT EXISTS visits (at_ms INTEGER)")
        sql.exec("INSERT INTO visits VALUES (?)", self.ctx.now())
        await self.ctx.sleep(ms)
        sql.exec("INSERT INTO visits VALUES (?)", self.ctx.now())
        return sql.exec("SELECT COUNT(*) AS n FROM visits").one()["n"]


class GuestbookFacetApp(_App, DurableObject):
    """Hosts the plain processor as a facet: its keepalive calls set_alarm in a facet, and breaks."""

    def processor(self):
        return self.ctx.facets.get(GUESTBOOK_APP_REF, lambda: GuestbookProcessor)


class GuestbookProxyApp(_App, AlarmProxyParent):
    """Hosts the proxied processor as a facet and owns its alarm (the parent-owned alarm proxy)."""

    FACET_CLASSES = {GUESTBOOK_APP_REF: ProxiedGuestbookProcessor}

    def processor(self):
        return self.facet(GUESTBOOK_APP_REF)
