// An Agent written from the Agents SDK's own docs (agents 0.32.0, pinned in package-lock.json beside it):
// schedule() by delay (seconds), by Date and by cron, cancelSchedule(), a callback that throws once and
// one that always throws. Nothing of alarmkit is imported; notebook 12 runs it under virtual time.
import { Agent } from "agents";

type Env = { REMINDERS: DurableObjectNamespace<Reminders> };

export class Reminders extends Agent<Env> {
  failuresLeft = 1; // flaky() throws this many times (in memory: a new instance starts again)

  async plan(): Promise<string[]> {
    const soon = await this.schedule(10, "remind", { text: "ten seconds from now" });
    const dated = await this.schedule(new Date(Date.now() + 60_000), "remind", { text: "at a Date" });
    const digest = await this.schedule("*/5 * * * *", "digest", {});
    const flaky = await this.schedule(30, "flaky", { text: "throws once" });
    const broken = await this.schedule(45, "broken", { text: "always throws" });
    const dropped = await this.schedule(90, "remind", { text: "cancelled before it is due" });
    await this.cancelSchedule(dropped.id);
    return [soon.id, dated.id, digest.id, flaky.id, broken.id];
  }

  async remind(payload: { text: string }) {
    await this.ctx.storage.put(`reminded:${Date.now()}`, payload.text);
  }

  async digest() {
    const n = ((await this.ctx.storage.get<number>("digests")) ?? 0) + 1;
    await this.ctx.storage.put("digests", n);
  }

  async flaky(payload: { text: string }) {
    if (this.failuresLeft-- > 0) throw new Error("the downstream service is busy");
    await this.ctx.storage.put("flaky", payload.text);
  }

  async broken() {
    throw new Error("the downstream service is down");
  }
}

export default {
  async fetch(): Promise<Response> {
    return new Response("drive the agent through RPC", { status: 404 });
  },
};
