// sql.databaseSize after each step, asked of real workerd and of alarmkit's JS host (test_js_workerd_surface.py)
import { DurableObject } from "cloudflare:workers";

export class P extends DurableObject {
  async run(step) {
    const s = this.ctx.storage;
    if (step === "alarm") await s.setAlarm(Date.now() + 1e9);
    if (step === "kv100") for (let i = 0; i < 100; i++) await s.put(`k${i}`, "x".repeat(100));
    if (step === "kvdel") for (let i = 0; i < 100; i += 2) await s.delete(`k${i}`);
    if (step === "kvall") await s.deleteAll();
    if (step === "rows") {
      s.sql.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
      for (let i = 0; i < 200; i++) s.sql.exec("INSERT INTO t (v) VALUES (?)", "y".repeat(200));
    }
    if (step === "rowsdel") s.sql.exec("DELETE FROM t WHERE id % 3 = 0");
    if (step === "drop") s.sql.exec("DROP TABLE t");
    return s.sql.databaseSize;
  }
  alarm() {}
}

const STEPS = [["a", "fresh"], ["a", "alarm"], ["b", "kv100"], ["b", "kvdel"], ["b", "kvall"], ["c", "rows"], ["c", "rowsdel"], ["c", "drop"]];

export default {
  async fetch(request, env) {
    const out = {};
    for (const [who, step] of STEPS) out[step] = await env.P.getByName(who).run(step);
    return Response.json(out);
  },
};
