// Facets of facets, a facet's id from its startup options, a facet restarted with another class.
import { DurableObject } from "cloudflare:workers";
export class Root extends DurableObject {
  async go() { return await this.ctx.facets.get("mid", () => ({ class: this.ctx.exports.Mid })).go(); }
  async ids() { return await this.ctx.facets.get("named", () => ({ class: this.ctx.exports.Leaf, id: "custom" })).who(); }
  async other() { return await this.ctx.facets.get("mid", () => ({ class: this.ctx.exports.Leaf })).who(); }
  async kill() { this.ctx.facets.abort("mid", "x"); }
}
export class Mid extends DurableObject {
  async go() { return [this.ctx.id.name, await this.ctx.facets.get("leaf", () => ({ class: this.ctx.exports.Leaf })).who()]; }
}
export class Leaf extends DurableObject {
  async who() { const n = ((await this.ctx.storage.get("n")) ?? 0) + 1; await this.ctx.storage.put("n", n); return [this.ctx.id.name, n]; }
}
