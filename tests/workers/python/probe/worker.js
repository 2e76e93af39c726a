import { DurableObject } from "cloudflare:workers";
export class Probe extends DurableObject {
  async arm() { await this.ctx.storage.put("k", 1); await this.ctx.storage.setAlarm(Date.now() + 60000); return await this.ctx.storage.getAlarm() !== null; }
  async wipe() { await this.ctx.storage.deleteAll(); return { alarm: await this.ctx.storage.getAlarm(), k: await this.ctx.storage.get("k") ?? null }; }
  async idname() { return this.ctx.id.name ?? null; }
  async alarm() {}
}
export default {
  async fetch(req, env) {
    const out = {};
    const s = env.PROBE.getByName("a");
    out.armed = await s.arm();
    out.after_deleteAll = await s.wipe();
    try { await s.missing(); out.missing = "no error"; } catch (e) { out.missing = `${e.name}: ${e.message}`; }
    out.unique_name = await env.PROBE.get(env.PROBE.newUniqueId()).idname();
    out.named = await s.idname();
    return Response.json(out);
  }
};
