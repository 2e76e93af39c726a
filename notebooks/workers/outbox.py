"""An outbox Durable Object, as written for Cloudflare Python Workers: messages sent to it are kept
and delivered to the inbox in batches, one second after the first message of a batch arrives."""

import time

from workers import DurableObject, Response, WorkerEntrypoint

BATCH_DELAY_MS = 1_000


class Outbox(DurableObject):
    async def send(self, msg_id, text):
        pending = await self.ctx.storage.get("pending") or []
        pending.append({"id": msg_id, "text": text})
        await self.ctx.storage.put("pending", pending)
        if await self.ctx.storage.getAlarm() is None:
            await self.ctx.storage.setAlarm(int(time.time() * 1000) + BATCH_DELAY_MS)
        return len(pending)

    async def alarm(self, alarm_info):
        batch = await self.ctx.storage.get("pending") or []
        await self.ctx.storage.delete("pending")  # the batch is gone from here...
        await self.env.INBOX.getByName("inbox").deliver(batch)  # ...before the inbox has it


class Inbox(DurableObject):
    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS delivered (id TEXT PRIMARY KEY, text TEXT)")

    async def deliver(self, batch):
        for m in batch:
            self.ctx.storage.sql.exec("INSERT OR IGNORE INTO delivered VALUES (?, ?)", m["id"], m["text"])
        await self.ctx.storage.put("batches", (await self.ctx.storage.get("batches") or 0) + 1)
        return len(batch)

    async def messages(self):
        return [row.id for row in self.ctx.storage.sql.exec("SELECT id FROM delivered ORDER BY id")]


class Default(WorkerEntrypoint):
    async def fetch(self, request):
        body = await request.json()
        n = await self.env.OUTBOX.getByName(body["to"]).send(body["id"], body["text"])
        return Response.json({"queued": n})
