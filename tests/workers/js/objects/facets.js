// A tenant object that keeps one counter per user as a facet (ctx.facets, workerd's API): each
// counter has its own storage; the parent only routes. Written for Cloudflare, nothing of alarmkit.
import { DurableObject } from "cloudflare:workers";

export let STARTS = 0; // how often a startup callback ran (workerd calls it only when the facet is not running)

export class Tenant extends DurableObject {
  counter(name) {
    return this.ctx.facets.get(name, () => {
      STARTS++;
      return { class: this.ctx.exports.Counter };
    });
  }
  async bump(name) {
    return await this.counter(name).inc();
  }
  async starts() {
    return STARTS;
  }
  async slowThenAbort(name) {
    const slow = this.counter(name).slow(500).then((v) => ({ ok: v }), (e) => ({ error: `${e.name}: ${e.message}` }));
    await new Promise((r) => setTimeout(r, 100));
    this.ctx.facets.abort(name, "reset by the tenant");
    return await slow;
  }
  async remove(name) {
    this.ctx.facets.delete(name);
    return null;
  }
  async own() {
    return { count: (await this.ctx.storage.get("count")) ?? null, facets: typeof this.ctx.facets };
  }
  async armFacet(name) {
    const stub = this.counter(name);
    const out = {};
    for (const [k, p] of [["arm", () => stub.arm(250)], ["again", () => stub.inc()], ["regot", () => this.counter(name).inc()]]) {
      try {
        out[k] = { ok: await p() };
      } catch (e) {
        out[k] = { error: `${e.name}: ${e.message}` };
      }
    }
    out.parent = await this.ctx.storage.get("alive");
    return out;
  }
  async alive() {
    await this.ctx.storage.put("alive", Date.now());
    return Date.now();
  }
  async askFetch(name) {
    const res = await this.counter(name).fetch("http://facet/hello");
    return { status: res.status, text: await res.text() };
  }
  async badClass() {
    try {
      this.ctx.facets.get("x", () => ({ class: "Counter" }));
      return "accepted";
    } catch (e) {
      return `${e.name}: ${e.message}`;
    }
  }
}

export class Counter extends DurableObject {
  async inc() {
    const n = ((await this.ctx.storage.get("count")) ?? 0) + 1;
    await this.ctx.storage.put("count", n);
    return n;
  }
  async slow(ms) {
    await new Promise((r) => setTimeout(r, ms));
    return "finished";
  }
  async arm(delay) {
    await this.ctx.storage.setAlarm(Date.now() + delay);
    return await this.ctx.storage.getAlarm();
  }
  async alarm() {}
  async fetch(request) {
    return new Response(`counter ${this.ctx.id.name} got ${new URL(request.url).pathname}`, { status: 201 });
  }
}
