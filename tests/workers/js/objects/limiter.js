// A fixed-window rate limiter: at most 3 requests per client per 10-second window; an alarm at the
// end of each window clears the counts.
import { DurableObject } from "cloudflare:workers";

const LIMIT = 3;
const WINDOW_MS = 10_000;

export class RateLimiter extends DurableObject {
  async hit(client) {
    const window = Math.floor(Date.now() / WINDOW_MS);
    const key = `${window}:${client}`;
    const n = ((await this.ctx.storage.get(key)) ?? 0) + 1;
    await this.ctx.storage.put(key, n);
    if ((await this.ctx.storage.getAlarm()) === null) {
      await this.ctx.storage.setAlarm((window + 1) * WINDOW_MS);
    }
    return n <= LIMIT;
  }

  async alarm(info) {
    const current = `${Math.floor(Date.now() / WINDOW_MS)}:`;
    const old = [...(await this.ctx.storage.list())].map(([k]) => k).filter((k) => !k.startsWith(current));
    const deleted = await this.ctx.storage.delete(old);
    console.log(`window closed: ${deleted} counters cleared (retry ${info.retryCount})`);
  }

  async fetch(request) {
    const client = new URL(request.url).searchParams.get("client") ?? "anon";
    return (await this.hit(client)) ? new Response("ok") : new Response("slow down", { status: 429 });
  }
}

export default {
  async fetch(request, env) {
    return env.LIMITER.get(env.LIMITER.idFromName("global")).fetch(request);
  },
};
