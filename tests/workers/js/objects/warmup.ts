// Loads its state inside blockConcurrencyWhile in the constructor (which also waits 50 ms, as a slow
// warm-up would), and answers a request after a timer.
import { DurableObject } from "cloudflare:workers";

export class Warmup extends DurableObject {
  visits: number = 0;
  readyAt: number = -1;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      this.visits = (await ctx.storage.get<number>("visits")) ?? 0;
      await new Promise((resolve) => setTimeout(resolve, 50));
      this.readyAt = Date.now();
    });
  }

  async visit(): Promise<{ visits: number; readyAt: number; at: number }> {
    this.visits += 1;
    await this.ctx.storage.put("visits", this.visits);
    return { visits: this.visits, readyAt: this.readyAt, at: Date.now() };
  }

  async slow(ms: number): Promise<number> {
    const started = Date.now();
    await new Promise((resolve) => setTimeout(resolve, ms));
    await this.ctx.storage.setAlarm(Date.now() + 1000);
    return Date.now() - started;
  }

  async alarm(): Promise<void> {
    console.log(`alarm at ${Date.now()} after ${this.visits} visits, ${performance.now()} ms in`);
  }
}
