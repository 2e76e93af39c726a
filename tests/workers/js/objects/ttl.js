// A key-value cache whose entries expire: one alarm, always at the earliest expiry.
import { DurableObject } from "cloudflare:workers";

export class TtlCache extends DurableObject {
  async put(key, value, ttlMs) {
    const expires = Date.now() + ttlMs;
    await this.ctx.storage.put(`e:${key}`, { value, expires });
    const current = await this.ctx.storage.getAlarm();
    if (current === null || expires < current) await this.ctx.storage.setAlarm(expires);
  }

  async get(key) {
    const e = await this.ctx.storage.get(`e:${key}`);
    return e && e.expires > Date.now() ? e.value : null;
  }

  async alarm() {
    const now = Date.now();
    let next = null;
    for (const [k, e] of await this.ctx.storage.list({ prefix: "e:" })) {
      if (e.expires <= now) {
        await this.ctx.storage.delete(k);
        console.log(`expired ${k.slice(2)}`);
      } else if (next === null || e.expires < next) {
        next = e.expires;
      }
    }
    if (next !== null) await this.ctx.storage.setAlarm(next);
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const stub = env.CACHE.getByName(url.searchParams.get("cache") ?? "main");
    if (url.pathname === "/put") {
      await stub.put(url.searchParams.get("key"), await request.text(), Number(url.searchParams.get("ttl")));
      return new Response("stored", { status: 201 });
    }
    const value = await stub.get(url.searchParams.get("key"));
    return value === null ? new Response("missing", { status: 404 }) : Response.json({ value });
  },
};
