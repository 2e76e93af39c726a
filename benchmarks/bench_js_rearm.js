// bench_js_worker.py's JavaScript peer: re-arm at a random +1..1000 ms until the budget is used up.
import { DurableObject } from "cloudflare:workers";

export class Rearm extends DurableObject {
  async start(budget) {
    this.left = budget;
    await this.ctx.storage.setAlarm(Date.now() + 1 + Math.floor(Math.random() * 1000));
  }

  async alarm() {
    this.left -= 1;
    if (this.left > 0) await this.ctx.storage.setAlarm(Date.now() + 1 + Math.floor(Math.random() * 1000));
  }
}
