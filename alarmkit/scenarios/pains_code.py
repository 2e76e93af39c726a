"""What bites in production, the mistakes in user code: three stories from public
threads, each a naive object and a fixed one under the same workload in one simulation.

Every scenario here names its objects ``naive`` and ``fixed`` and declares what each owes (an
effect per unit of work), so ``alarmkit.check`` shows the loss on ``naive`` and none on ``fixed``:

- ``prod-clobbered-alarm``: two modules of one object each use the one alarm for their own
  purpose; the second moves, then deletes, the first one's wake-up. The fix multiplexes both onto
  the alarm through a schedule table (the agents SDK's ``cf_agents_schedules`` pattern).
- ``prod-set-early-throw-later``: a periodic handler sets its next alarm first and then throws;
  the queued alarm replaces the retry (cloudflare-docs PR 15685 review), so the failed period's
  work is never retried. The fix sets the next alarm last.
- ``prod-stale-overdue-alarm``: the alarm manager loses a stored alarm (the fault
  ``forgotten_alarms``); ``get_alarm()`` keeps returning the overdue time and code that arms "only
  if none is set" stalls for good (cloudflare-docs issue 18324, opennextjs-cloudflare issue 929).
  The fix re-arms when the stored alarm is overdue.
"""

from __future__ import annotations

from ..runtime import DurableObject, Simulation
from .registry import scenario

__all__ = [
    "ClobberingRoom", "ScheduledRoom", "EarlyDigest", "LateDigest", "NaivePurgeQueue", "DefensivePurgeQueue",
    "IDLE_MS", "DIGEST_PERIOD_MS", "PURGE_DELAY_MS",
]

IDLE_MS = 600_000  # the room's idle timeout: closed 10 minutes after the last join, unless everyone left
DIGEST_PERIOD_MS = 60_000
PURGE_DELAY_MS = 5_000  # opennext's bucket cache purge batches tags for a few seconds (its DEFAULT_PURGE_DELAY)


# -- 1. the clobbered alarm slot ------------------------------------------------------------------------------


class ClobberingRoom(DurableObject):
    """A chat room with two modules written apart: reminders (``remind``) and an idle timeout
    (``join``/``leave``). Each keeps its own table and treats the one alarm as its own."""

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.sql = ctx.storage.sql
        self.sql.exec("CREATE TABLE IF NOT EXISTS reminders (note TEXT PRIMARY KEY, due_ms INTEGER NOT NULL)")
        self.sql.exec("CREATE TABLE IF NOT EXISTS members (user TEXT PRIMARY KEY)")
        self.sql.exec("CREATE TABLE IF NOT EXISTS idle (one INTEGER PRIMARY KEY CHECK (one = 1), due_ms INTEGER)")

    # the reminders module
    async def remind(self, note: str, in_ms: int) -> None:
        due = self.ctx.now() + in_ms
        self.sql.exec("INSERT OR REPLACE INTO reminders VALUES (?, ?)", note, due)
        await self.want("reminders", due)

    async def send_due_reminders(self) -> None:
        for row in self.sql.exec("SELECT note FROM reminders WHERE due_ms <= ? ORDER BY due_ms", self.ctx.now()).to_list():
            await self.ctx.effect("remind", row["note"])
            self.sql.exec("DELETE FROM reminders WHERE note = ?", row["note"])

    # the idle-timeout module
    async def join(self, user: str) -> None:
        self.sql.exec("INSERT OR IGNORE INTO members VALUES (?)", user)
        due = self.ctx.now() + IDLE_MS
        self.sql.exec("INSERT OR REPLACE INTO idle VALUES (1, ?)", due)
        await self.want("idle", due)

    async def leave(self, user: str) -> None:
        self.sql.exec("DELETE FROM members WHERE user = ?", user)
        if self.sql.exec("SELECT COUNT(*) AS n FROM members").one()["n"] == 0:
            self.sql.exec("DELETE FROM idle")
            await self.drop("idle")  # nobody left to time out: cancel the timeout

    async def close_if_idle(self) -> None:
        rows = self.sql.exec("SELECT due_ms FROM idle WHERE due_ms <= ?", self.ctx.now()).to_list()
        if rows:
            await self.ctx.effect("close_room", "idle")
            self.sql.exec("DELETE FROM idle")

    # how the modules use the alarm: the mistake is here
    async def want(self, owner: str, at: int) -> None:
        await self.ctx.storage.set_alarm(at)  # replaces whatever the other module had set

    async def drop(self, owner: str) -> None:
        await self.ctx.storage.delete_alarm()  # deletes whatever the other module had set

    async def alarm(self, info):
        await self.send_due_reminders()
        await self.close_if_idle()

    async def status(self) -> dict:
        return {"reminders": self.sql.exec("SELECT note, due_ms FROM reminders").to_list(),
                "alarm": await self.ctx.storage.get_alarm()}


class ScheduledRoom(ClobberingRoom):
    """The same modules; their wishes go to a schedule table and the alarm is its earliest row (the
    agents SDK: one physical alarm, a ``cf_agents_schedules`` table of every wish, the alarm set to the
    earliest row at ``max(time, now + 1 ms)`` or deleted when nothing is pending; alarm() runs the due
    rows, then re-arms)."""

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.sql.exec("CREATE TABLE IF NOT EXISTS schedules (owner TEXT PRIMARY KEY, at_ms INTEGER NOT NULL)")

    async def want(self, owner: str, at: int) -> None:
        self.sql.exec("INSERT OR REPLACE INTO schedules VALUES (?, ?)", owner, at)
        await self.arm_earliest()

    async def drop(self, owner: str) -> None:
        self.sql.exec("DELETE FROM schedules WHERE owner = ?", owner)
        await self.arm_earliest()

    async def arm_earliest(self) -> None:
        at = self.sql.exec("SELECT MIN(at_ms) AS t FROM schedules").one()["t"]
        if at is None:
            await self.ctx.storage.delete_alarm()
        else:
            await self.ctx.storage.set_alarm(max(at, self.ctx.now() + 1))

    async def alarm(self, info):
        due = {r["owner"] for r in self.sql.exec("SELECT owner FROM schedules WHERE at_ms <= ?", self.ctx.now())}
        if "reminders" in due:
            await self.send_due_reminders()
            nxt = self.sql.exec("SELECT MIN(due_ms) AS t FROM reminders").one()["t"]
            if nxt is None:
                self.sql.exec("DELETE FROM schedules WHERE owner = 'reminders'")
            else:
                self.sql.exec("INSERT OR REPLACE INTO schedules VALUES ('reminders', ?)", nxt)
        if "idle" in due:
            await self.close_if_idle()
            self.sql.exec("DELETE FROM schedules WHERE owner = 'idle'")
        await self.arm_earliest()


def _poll(sim: Simulation, stubs: list, every_ms: int, horizon_ms: int) -> None:
    """A client asks each room for its status every ``every_ms`` until the horizon (each ask after an
    idle eviction wakes a fresh instance: the object's chance to notice work it owes)."""
    for t in range(every_ms, horizon_ms, every_ms):
        sim.run(until=t)
        for stub in stubs:
            sim.call(stub.status())
    sim.run(until=horizon_ms)


@scenario("prod-clobbered-alarm",
          "two modules share the one alarm: the idle timeout moves, then deletes, the reminder's wake-up; "
          "a schedule table (agents SDK pattern) loses nothing")
def prod_clobbered_alarm(sim: Simulation, remind_in_ms: int = 30_000, join_at_ms: int = 5_000,
                         leave_at_ms: int = 20_000, poll_every_ms: int = 300_000, horizon_ms: int = 2_400_000) -> dict:
    rooms = {"naive": sim.namespace("ROOMS", ClobberingRoom).get("naive"),
             "fixed": sim.namespace("SCHEDULED_ROOMS", ScheduledRoom).get("fixed")}
    alarm_after = {}
    for label, room in rooms.items():
        sim.call(room.remind("stand-up", remind_in_ms))
    for at, step in ((join_at_ms, "join"), (leave_at_ms, "leave")):
        sim.run(until=max(at, sim.now))
        for label, room in rooms.items():
            sim.call(room.join("ada") if step == "join" else room.leave("ada"))
            alarm_after[f"{label} after {step}"] = sim.inspect(room).alarm
    _poll(sim, list(rooms.values()), poll_every_ms, horizon_ms)
    return {
        "alarm_after": alarm_after,
        "reminders_left": {k: [r["note"] for r in sim.inspect(s).sql("SELECT note FROM reminders")] for k, s in rooms.items()},
        "obligations": [{"object": k, "effect": "remind", "key": "stand-up", "due_ms": remind_in_ms, "since_ms": 0}
                        for k in rooms],
        "horizon_ms": horizon_ms,
    }


# -- 2. set early, throw later --------------------------------------------------------------------------------


class DownstreamDown(Exception):
    """The mail service the digest goes to is down (a user-visible error: a counted failure)."""


class EarlyDigest(DurableObject):
    """Sends a digest per period from alarm(); sets the next period's alarm first, then sends."""

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.sql = ctx.storage.sql
        self.sql.exec("CREATE TABLE IF NOT EXISTS plan (one INTEGER PRIMARY KEY CHECK (one = 1), periods INTEGER, "
                      "down_from INTEGER, down_to INTEGER)")

    async def start(self, periods: int, down_from: int, down_to: int) -> int:
        self.sql.exec("INSERT OR REPLACE INTO plan VALUES (1, ?, ?, ?)", periods, down_from, down_to)
        first = self.ctx.now() + DIGEST_PERIOD_MS
        await self.ctx.storage.set_alarm(first)
        return first

    def plan(self) -> dict:
        return self.sql.exec("SELECT periods, down_from, down_to FROM plan").one()

    async def send(self, period: int) -> None:
        p, now = self.plan(), self.ctx.now()
        if p["down_from"] <= now < p["down_to"]:
            raise DownstreamDown(f"mail service down at {now} ms: digest {period} not sent")
        await self.ctx.effect("send_digest", period)

    async def next_alarm(self, info) -> None:
        period = info.scheduled_time // DIGEST_PERIOD_MS
        if period < self.plan()["periods"]:
            await self.ctx.storage.set_alarm(info.scheduled_time + DIGEST_PERIOD_MS)

    async def alarm(self, info):
        await self.next_alarm(info)  # the mistake: the next alarm is queued before the work can fail...
        await self.send(info.scheduled_time // DIGEST_PERIOD_MS)  # ...so a failure here is never retried


class LateDigest(EarlyDigest):
    """The same digest, the next alarm set last: a failed send is retried at the same scheduled time."""

    async def alarm(self, info):
        await self.send(info.scheduled_time // DIGEST_PERIOD_MS)
        await self.next_alarm(info)


@scenario("prod-set-early-throw-later",
          "a periodic handler sets its next alarm, then throws: the queued alarm replaces the retry and that "
          "period's digest is never sent; setting the next alarm last retries it")
def prod_set_early_throw_later(sim: Simulation, periods: int = 5, down_from_ms: int = 119_000,
                               down_to_ms: int = 121_000, horizon_ms: int = 600_000) -> dict:
    senders = {"naive": sim.namespace("EARLY_DIGESTS", EarlyDigest).get("naive"),
               "fixed": sim.namespace("LATE_DIGESTS", LateDigest).get("fixed")}
    for stub in senders.values():
        sim.call(stub.start(periods, down_from_ms, down_to_ms))
    sim.run(until=horizon_ms)
    return {
        "obligations": [{"object": k, "effect": "send_digest", "key": p, "due_ms": p * DIGEST_PERIOD_MS, "since_ms": 0}
                        for k in senders for p in range(1, periods + 1)],
        "horizon_ms": horizon_ms,
        # a period's work waits at most one period (the next alarm) plus a retry: less than the
        # default grace, which allows for the longest retry backoff
        "grace_ms": 2 * DIGEST_PERIOD_MS,
    }


# -- 5. the stored alarm in the past that never fires ---------------------------------------------------------


class NaivePurgeQueue(DurableObject):
    """A cache purge queue (opennextjs-cloudflare's bucket cache purge): tags wait in a table and one
    alarm purges them in a batch. It arms only if no alarm is set."""

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.sql = ctx.storage.sql
        self.sql.exec("CREATE TABLE IF NOT EXISTS tags (tag TEXT PRIMARY KEY, since_ms INTEGER NOT NULL)")

    async def purge(self, tag: str) -> int | None:
        self.sql.exec("INSERT OR IGNORE INTO tags VALUES (?, ?)", tag, self.ctx.now())
        current = await self.ctx.storage.get_alarm()
        if self.needs_alarm(current):
            await self.ctx.storage.set_alarm(self.ctx.now() + PURGE_DELAY_MS)
        return await self.ctx.storage.get_alarm()

    def needs_alarm(self, current: int | None) -> bool:
        return current is None  # the mistake: an overdue alarm that will never fire counts as set

    async def alarm(self, info):
        for row in self.sql.exec("SELECT tag FROM tags ORDER BY since_ms, tag").to_list():
            await self.ctx.effect("purge", row["tag"])
            self.sql.exec("DELETE FROM tags WHERE tag = ?", row["tag"])

    async def status(self) -> dict:
        return {"tags": [r["tag"] for r in self.sql.exec("SELECT tag FROM tags ORDER BY tag")],
                "alarm": await self.ctx.storage.get_alarm()}


class DefensivePurgeQueue(NaivePurgeQueue):
    """The fix proposed in opennextjs-cloudflare issue 929 (and cloudflare-docs issue 18324's
    workaround): an alarm already overdue is treated as no alarm, and set again."""

    def needs_alarm(self, current: int | None) -> bool:
        return current is None or current <= self.ctx.now()


@scenario("prod-stale-overdue-alarm",
          "the alarm manager loses a stored alarm (fault forgotten_alarms): get_alarm() shows it overdue and "
          "'arm only if none is set' stalls; re-arming when overdue purges everything",
          faults={"forgotten_alarms": [{"at_ms": 1_000}]})
def prod_stale_overdue_alarm(sim: Simulation, second_tag_at_ms: int = 60_000, poll_every_ms: int = 300_000,
                             horizon_ms: int = 2_400_000) -> dict:
    queues = {"naive": sim.namespace("PURGE_QUEUES", NaivePurgeQueue).get("naive"),
              "fixed": sim.namespace("DEFENSIVE_PURGE_QUEUES", DefensivePurgeQueue).get("fixed")}
    first = {k: sim.call(q.purge("tag-a")) for k, q in queues.items()}
    sim.run(until=max(second_tag_at_ms, sim.now))
    second = {k: sim.call(q.purge("tag-b")) for k, q in queues.items()}
    _poll(sim, list(queues.values()), poll_every_ms, horizon_ms)
    return {
        "alarm_after_first_tag": first,
        "alarm_after_second_tag": second,
        "tags_left": {k: sim.inspect(q).sql("SELECT tag FROM tags ORDER BY tag") for k, q in queues.items()},
        # no since_ms: the batching delay is a wish, not a promise, so an overdue batch that waits one more
        # delay is not "pushed past due"; lost and early_effect read these
        "obligations": [{"object": k, "effect": "purge", "key": tag, "due_ms": due}
                        for k in queues for tag, due in (("tag-a", PURGE_DELAY_MS),
                                                         ("tag-b", second_tag_at_ms + PURGE_DELAY_MS))],
        "horizon_ms": horizon_ms,
    }
