"""The same questions as worker.js, asked of a Python Worker under alarmkit (imports nothing of alarmkit)."""
from workers import DurableObject


class Probe(DurableObject):
    async def arm(self):
        await self.ctx.storage.put("k", 1)
        await self.ctx.storage.setAlarm(1_000_000)
        return await self.ctx.storage.getAlarm() is not None

    async def wipe(self):
        await self.ctx.storage.deleteAll()
        return {"alarm": await self.ctx.storage.getAlarm(), "k": await self.ctx.storage.get("k")}

    async def idname(self):
        return self.ctx.id.name

    async def alarm(self):
        pass
