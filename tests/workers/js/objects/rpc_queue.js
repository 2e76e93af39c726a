// A queue that hands its items to a sink object through an RPC from its alarm (tests/workers/js/test_js_rpc_crash.py).
// Queue clears its items before the call (a crash of the call loses them); QueueFixed clears them after.
import { DurableObject } from "cloudflare:workers";

export class Queue extends DurableObject {
  async push(item) {
    const items = (await this.ctx.storage.get("items")) ?? [];
    items.push(item);
    await this.ctx.storage.put("items", items);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + 500);
    return items.length;
  }
  async alarm() {
    const items = (await this.ctx.storage.get("items")) ?? [];
    await this.ctx.storage.delete("items"); // the bug: cleared first
    await this.env.SINK.getByName("sink").store(items);
  }
}

export class QueueFixed extends Queue {
  async alarm() {
    const items = (await this.ctx.storage.get("items")) ?? [];
    await this.env.SINK.getByName("sink").store(items); // handed over first...
    await this.ctx.storage.delete("items"); // ...then cleared
  }
}

export class Sink extends DurableObject {
  async store(items) {
    for (const it of items) await this.ctx.storage.put(`item:${it}`, true);
    return items.length;
  }
}

export default { async fetch() { return new Response("ok"); } };
