"""Alarms due at one instant have no order on workerd (each alarm has its own timer; real fires of 40
alarms armed for one epoch ms ran in an order that was neither arming nor id order and changed between
runs: calibration probe same_instant). ``order-handoff`` is code that assumes one: a producer and a
consumer armed for the same time, the consumer expecting the producer's hand-off to be there already.

Under arming order (``same_instant_order="arming"``, or celld) the producer, armed first, always runs
first and the batch ships. Under workerd's seeded order the consumer runs first for some seeds, finds
nothing, and the batch is never shipped: ``alarmkit.explore`` finds it by varying the seed (the order
is drawn from it), and the run's ``order`` says which alarm ran first.
"""

from __future__ import annotations

from ..runtime import DurableObject, Simulation
from .registry import scenario

__all__ = ["Producer", "Consumer"]


class Producer(DurableObject):
    """At its alarm, hands the batch to the consumer."""

    async def schedule(self, at: int, batch: str):
        await self.ctx.storage.put("batch", batch)
        await self.ctx.storage.set_alarm(at)

    async def alarm(self, info):
        batch = await self.ctx.storage.get("batch")
        self.ctx.journal_event("order", detail={"who": "producer"})
        await self.env.CONSUMER.get("consumer").offer(batch)


class Consumer(DurableObject):
    """At its alarm, ships what was offered. The mistake: it runs once, at the producer's time, and
    takes an empty in-tray as "nothing to do" (it should re-arm when an offer arrives)."""

    async def schedule(self, at: int):
        await self.ctx.storage.set_alarm(at)

    async def offer(self, batch: str):
        await self.ctx.storage.put(f"tray/{batch}", True)

    async def alarm(self, info):
        self.ctx.journal_event("order", detail={"who": "consumer"})
        tray = await self.ctx.storage.list("tray/")
        for key in tray:
            await self.ctx.effect("ship", key.removeprefix("tray/"))
            await self.ctx.storage.delete(key)


@scenario("order-handoff", "two alarms due at one instant: the consumer assumes the producer's runs first")
def order_handoff(sim: Simulation, at_ms: int = 60_000, batch: str = "b1", horizon_ms: int = 30 * 60_000) -> dict:
    producer = sim.namespace("PRODUCER", Producer).get("producer")
    consumer = sim.namespace("CONSUMER", Consumer).get("consumer")
    sim.call(producer.schedule(at_ms, batch))  # armed first
    sim.call(consumer.schedule(at_ms))
    sim.run(until=horizon_ms)
    ev = sim.events()
    order = [d for d in ev[ev["kind"] == "order"]["detail"]]
    return {
        "obligations": [{"object": consumer.id, "effect": "ship", "key": batch, "due_ms": at_ms, "since_ms": 0}],
        "horizon_ms": horizon_ms,
        "order": ["producer" if "producer" in d else "consumer" for d in order],
    }
