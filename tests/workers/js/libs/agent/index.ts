import { Agent, getAgentByName } from "agents";

type Env = { REMINDER: DurableObjectNamespace<Reminder> };

export class Reminder extends Agent<Env> {
  failedOnce = false;

  async start() {
    await this.schedule(10, "remind", { what: "delay" });
    await this.schedule(new Date(Date.now() + 60_000), "remind", { what: "date" });
    await this.schedule("*/5 * * * *", "tick", { what: "cron" });
    const s = await this.schedule(30, "remind", { what: "cancelled" });
    await this.cancelSchedule(s.id);
    await this.schedule(20, "flaky", { what: "flaky" });
    return "ok";
  }

  async list() {
    return { schedules: this.getSchedules(), tables: this.ctx.storage.sql.exec("select name from sqlite_master where type='table'").toArray() };
  }

  async remind(payload: { what: string }) {
    console.log(`remind ${payload.what} at ${Date.now()}`);
  }

  async tick(payload: { what: string }) {
    console.log(`tick at ${Date.now()}`);
  }

  async flaky(payload: { what: string }) {
    const n = (this.ctx.storage.kv.get("flaky") as number | undefined) ?? 0;
    this.ctx.storage.kv.put("flaky", n + 1);
    if (n === 0) throw new Error("flaky fails once");
    console.log(`flaky ok at ${Date.now()}`);
  }
}

export default {
  async fetch(request: Request, env: Env) {
    const agent = await getAgentByName(env.REMINDER, "r1");
    return new Response(await agent.start());
  },
};
