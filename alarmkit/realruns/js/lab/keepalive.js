// A keepalive loop, written differently from the ledger: no table of work, only a counter in KV
// storage; start(ticks, everyMs) arms the first tick, each alarm() does one tick (its effect) and
// re-arms itself every everyMs until the ticks are done, then deletes nothing and stops arming.
import { DurableObject } from "cloudflare:workers";
import { effect } from "./recorded.js";

export class Keepalive extends DurableObject {
  async start(ticks, everyMs) {
    await this.ctx.storage.put({ left: ticks, every: everyMs, done: 0 });
    await this.ctx.storage.setAlarm(Date.now() + everyMs);
    return ticks;
  }
  async alarm(info) {
    const [left, every, done] = [await this.ctx.storage.get("left"), await this.ctx.storage.get("every"),
                                 await this.ctx.storage.get("done")];
    if (!left) return;
    effect(this.ctx, "tick", done + 1);
    await this.ctx.storage.put({ left: left - 1, done: done + 1 });
    if (left - 1 > 0) await this.ctx.storage.setAlarm(Date.now() + every);
  }
  async stop() {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.put("left", 0);
    return true;
  }
}
