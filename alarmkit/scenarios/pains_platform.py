"""What bites in production, where the platform's behaviour is the surprise: three
stories from public threads and workerd's source.

- ``prod-runaway-internal-errors``: a failure that is not the worker's fault is not counted
  against the retry limit (workerd ``alarm-scheduler.h``), so it retries forever with the backoff
  capped at 1024 s: the object keeps waking for days. A counted failure beside it stops after 7
  attempts. The ``runaway_retries`` invariant reports it with the cost in invocations.
- ``prod-rearm-at-now``: ``setAlarm(Date.now())`` inside ``alarm()`` (workerd issue 6866), in a
  handler that starts in the same millisecond as its scheduled time (fire latency 0, the median of
  local fires), so the re-arm is at the running alarm's own time. On ``workerd-local``
  (``rearm_at_now="same-time-unfired"``) the chain stalls after one run; under ``workerd``
  (``"fires"``, the documented promise) it chains. Re-arming at ``now + 1`` chains under both, and
  so does ``now`` once the handler starts a millisecond late.
- ``prod-cold-wake-name``: code in ``alarm()`` that relies on ``ctx.id.name``. Production passes the
  name to an instance an alarm woke cold only from compatibility date 2026-03-15 (cloudflare-docs PR
  28956; partykit issues 333 and 390); before it the name is missing and the handler fails every
  attempt. Storing the name on the first request (partyserver's fix, partykit PR 337) works everywhere.
"""

from __future__ import annotations

from ..runtime import DurableObject, Simulation
from .registry import scenario

__all__ = ["Reporter", "BrokenReporter", "Ticker", "TickerPlusOne", "NamedRoom", "RememberingRoom", "NameUnavailable"]

DAY_MS = 86_400_000


# -- 3. runaway internal errors -------------------------------------------------------------------------------


class Reporter(DurableObject):
    """Builds a report once, from alarm()."""

    async def schedule(self, in_ms: int) -> int:
        at = self.ctx.now() + in_ms
        await self.ctx.storage.set_alarm(at)
        return at

    async def alarm(self, info):
        await self.ctx.effect("publish", "report")


class BrokenReporter(Reporter):
    """The same report with a bug of its own: alarm() throws (a user error, counted against the limit)."""

    async def alarm(self, info):
        raise ValueError("report template is missing")


@scenario("prod-runaway-internal-errors",
          "an alarm whose failures are not counted (injected: uncounted='always') retries forever, every ~17-21 "
          "min once the backoff caps at 1024 s; a counted failure beside it stops after 7 attempts",
          faults={"object": "runaway", "uncounted": "always"})
def prod_runaway_internal_errors(sim: Simulation, in_ms: int = 60_000, days: int = 3) -> dict:
    """Both objects set an alarm ``in_ms`` from now; the run stops after ``days`` days (the runaway
    never ends on its own)."""
    stubs = {"runaway": sim.namespace("REPORTERS", Reporter).get("runaway"),
             "counted": sim.namespace("BROKEN_REPORTERS", BrokenReporter).get("counted")}
    due = {k: sim.call(s.schedule(in_ms)) for k, s in stubs.items()}
    horizon = sim.now + days * DAY_MS
    sim.run(until=horizon)  # bounded: without until, the runaway's retries would run into time_limit_ms
    return {
        "alarm_at_end": {k: sim.inspect(s).alarm for k, s in stubs.items()},
        "obligations": [{"object": k, "effect": "publish", "key": "report", "due_ms": due[k], "since_ms": 0}
                        for k in stubs],
        "horizon_ms": horizon,
    }


# -- 4. setAlarm(Date.now()) inside alarm() -------------------------------------------------------------------


class Ticker(DurableObject):
    """Counts ticks; each alarm() re-arms at ``Date.now()`` until ``ticks`` have run."""

    LEAD_MS = 0

    async def start(self, ticks: int) -> None:
        await self.ctx.storage.put("plan", {"ticks": ticks, "done": 0})
        await self.ctx.storage.set_alarm(self.ctx.now())

    async def alarm(self, info):
        plan = await self.ctx.storage.get("plan")
        plan["done"] += 1
        await self.ctx.storage.put("plan", plan)
        await self.ctx.effect("tick", plan["done"])
        if plan["done"] < plan["ticks"]:
            await self.ctx.storage.set_alarm(self.ctx.now() + self.LEAD_MS)

    async def status(self) -> dict:
        return {"done": (await self.ctx.storage.get("plan"))["done"], "alarm": await self.ctx.storage.get_alarm()}


class TickerPlusOne(Ticker):
    """The workaround from workerd issue 6866: re-arm at ``Date.now() + 1``."""

    LEAD_MS = 1


@scenario("prod-rearm-at-now",
          "alarm() re-arms with set_alarm(now) in the millisecond it was scheduled for: on workerd-local the alarm "
          "stays stored, overdue, and never fires (workerd issue 6866); under workerd it chains; now + 1 chains "
          "under both", profile="workerd-local")
def prod_rearm_at_now(sim: Simulation, ticks: int = 5, start_at_ms: int = 1_000, fire_latency_ms: int = 0,
                      horizon_ms: int = 1_800_000) -> dict:
    """``fire_latency_ms`` replaces the profile's fire latency: 0 (local fires were 0 to 1 ms late,
    median 0) makes ``ctx.now()`` in alarm() its scheduled time, the case that stalls; 1 does not."""
    sim.configure(fire_latency=fire_latency_ms)
    tickers = {"naive": sim.namespace("TICKERS", Ticker).get("naive"),
               "fixed": sim.namespace("TICKERS_PLUS_ONE", TickerPlusOne).get("fixed")}
    sim.run(until=start_at_ms)
    for stub in tickers.values():
        sim.call(stub.start(ticks))
    sim.run(until=horizon_ms)
    return {
        "rearm_at_now": sim.profile.rearm_at_now,
        "status": {k: sim.call(s.status()) for k, s in tickers.items()},
        # no since_ms: tick n is owed only once tick n - 1 ran, which an obligation cannot say; so only
        # lost and early_effect read these (see alarmkit.invariants)
        "obligations": [{"object": k, "effect": "tick", "key": n, "due_ms": start_at_ms}
                        for k in tickers for n in range(1, ticks + 1)],
        "horizon_ms": horizon_ms,
    }


# -- 6. the cold wake that loses the object's name ------------------------------------------------------------


class NameUnavailable(Exception):
    """The name is not set (partyserver's error, partykit issue 390: "this.ctx.id.name is not set")."""


class NamedRoom(DurableObject):
    """Posts a digest to the channel named after the room, from alarm(), reading ``ctx.id.name``."""

    async def schedule_digest(self, in_ms: int) -> int:
        at = self.ctx.now() + in_ms
        await self.ctx.storage.set_alarm(at)
        return at

    async def room_name(self) -> str:
        name = self.ctx.id.name
        if name is None:
            raise NameUnavailable(f"Attempting to read .name on {type(self).__name__}, but this.ctx.id.name is not set")
        return name

    async def alarm(self, info):
        name = await self.room_name()
        self.ctx.journal_event("name_seen", detail={"name": name})
        await self.ctx.effect("post_digest", name)


class RememberingRoom(NamedRoom):
    """Stores its name on the first request and reads it back when ``ctx.id.name`` is missing (what
    partyserver does since partykit PR 337: ``setName()`` persists it, the getter hydrates from storage)."""

    async def schedule_digest(self, in_ms: int) -> int:
        if self.ctx.id.name is not None:
            await self.ctx.storage.put("__name", self.ctx.id.name)
        return await super().schedule_digest(in_ms)

    async def room_name(self) -> str:
        return self.ctx.id.name or await self.ctx.storage.get("__name")


@scenario("prod-cold-wake-name",
          "alarm() reads ctx.id.name in an instance the alarm woke cold: missing before compatibility date "
          "2026-03-15 in production (the handler fails every attempt); a name stored on first request works")
def prod_cold_wake_name(sim: Simulation, compatibility_date: str = "2026-01-28", in_ms: int = 120_000,
                        horizon_ms: int = 2_400_000) -> dict:
    """``compatibility_date`` is the Worker's (the default is the one partykit issue 390 names as most
    examples' date); the alarm fires ``in_ms`` later, after the idle eviction, so it wakes the room cold."""
    sim.configure(compatibility_date=compatibility_date)
    rooms = {"naive": sim.namespace("ROOMS", NamedRoom).get("naive"),
             "fixed": sim.namespace("REMEMBERING_ROOMS", RememberingRoom).get("fixed")}
    due = {k: sim.call(r.schedule_digest(in_ms)) for k, r in rooms.items()}
    sim.run(until=horizon_ms)
    return {
        "name_on_cold_alarm": sim.profile.id_name_on_cold_alarm(),
        "obligations": [{"object": k, "effect": "post_digest", "key": k, "due_ms": due[k], "since_ms": 0}
                        for k in rooms],
        "horizon_ms": horizon_ms,
    }
