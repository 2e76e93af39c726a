"""The outbox of outbox.py, fixed: a batch leaves storage only once the inbox has it (the inbox ignores a
message it already has, so a batch delivered twice after a crash is harmless)."""

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
        await self.env.INBOX.getByName("inbox").deliver(batch)  # the inbox has the batch first...
        sent = {m["id"] for m in batch}
        rest = [m for m in await self.ctx.storage.get("pending") or [] if m["id"] not in sent]
        await self.ctx.storage.put("pending", rest)  # ...then it leaves; what arrived meanwhile stays
        if rest:
            await self.ctx.storage.setAlarm(int(time.time() * 1000) + BATCH_DELAY_MS)


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
