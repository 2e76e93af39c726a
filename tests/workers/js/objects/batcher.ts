// Collects items and writes them out in batches: the first item of a batch arms a flush one second
// later; a batch that reaches 10 items flushes at once.
import { DurableObject } from "cloudflare:workers";

interface Env {
  SINK: Fetcher;
}

const WINDOW_MS: number = 1000;
const MAX_BATCH: number = 10;

export class Batcher extends DurableObject<Env> {
  async add(item: string): Promise<number> {
    const items: string[] = (await this.ctx.storage.get<string[]>("items")) ?? [];
    items.push(item);
    await this.ctx.storage.put("items", items);
    if (items.length >= MAX_BATCH) {
      await this.flush("full");
    } else if ((await this.ctx.storage.getAlarm()) === null) {
      await this.ctx.storage.setAlarm(Date.now() + WINDOW_MS);
    }
    return items.length;
  }

  async alarm(): Promise<void> {
    await this.flush("timer");
  }

  private async flush(why: string): Promise<void> {
    const items: string[] = (await this.ctx.storage.get<string[]>("items")) ?? [];
    if (items.length === 0) return;
    const res = await this.env.SINK.fetch("https://sink.example/batch", {
      method: "POST",
      body: JSON.stringify({ why, items }),
    });
    if (!res.ok) throw new Error(`sink answered ${res.status}`);
    await this.ctx.storage.delete("items");
    await this.ctx.storage.deleteAlarm();
    const flushed: number = ((await this.ctx.storage.get<number>("flushed")) ?? 0) + items.length;
    await this.ctx.storage.put("flushed", flushed);
  }

  async stats(): Promise<{ pending: number; flushed: number }> {
    const items: string[] = (await this.ctx.storage.get<string[]>("items")) ?? [];
    return { pending: items.length, flushed: (await this.ctx.storage.get<number>("flushed")) ?? 0 };
  }
}
