import { Actor, handler } from "@cloudflare/actors";

export class Timer extends Actor<Env> {
  async onRequest(request: Request): Promise<Response> {
    await this.alarms.schedule(10, "ring", { what: "delay" });
    await this.alarms.schedule(new Date(Date.now() + 60_000), "ring", { what: "date" });
    await this.alarms.schedule("*/5 * * * *", "tick", { what: "cron" });
    const s = await this.alarms.schedule(30, "ring", { what: "cancelled" });
    await this.alarms.cancelSchedule(s.id);
    await this.alarms.schedule(20, "flaky", { what: "flaky" });
    return new Response("scheduled");
  }

  async ring(payload: { what: string }) {
    console.log(`ring ${payload.what} at ${Date.now()}`);
  }

  async tick() {
    console.log(`tick at ${Date.now()}`);
  }

  async flaky() {
    const n = (await this.ctx.storage.get<number>("flaky")) ?? 0;
    await this.ctx.storage.put("flaky", n + 1);
    if (n === 0) throw new Error("flaky fails once");
    console.log(`flaky ok at ${Date.now()}`);
  }
}

export default handler(Timer);
