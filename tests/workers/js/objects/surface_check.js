// Asks the host, from inside an object, which members of the runtime surface are there: implemented,
// refused by name (Symbol.for("alarmkit.refused") marks a refusal), missing, or raising a raw error.
import { DurableObject } from "cloudflare:workers";

const REFUSED = Symbol.for("alarmkit.refused");

export class Probe extends DurableObject {
  async surface(names) {
    const targets = { ctx: this.ctx, storage: this.ctx.storage, sql: this.ctx.storage.sql, globals: globalThis };
    const out = {};
    for (const [where, list] of Object.entries(names)) {
      const t = targets[where];
      out[where] = {};
      for (const n of list) out[where][n] = await probe(t, n);
    }
    return out;
  }
}

async function probe(t, n) {
  let v;
  try {
    if (!(n in t)) return ["missing", ""];
    v = t[n];
  } catch (e) {
    return [e.name === "WorkerUnsupported" ? "refused" : "raw", `${e.name}: ${e.message}`];
  }
  if (v === undefined) return ["undefined", ""];
  let why;
  try {
    why = v === null || v === undefined ? undefined : v[REFUSED];
  } catch {
    why = undefined;
  }
  if (why === undefined) return ["implemented", ""];
  try {
    if (typeof v === "function" && /^class\b/.test(Function.prototype.toString.call(v))) new v();
    else if (typeof v === "function") await v(); // a refused async method rejects, a refused sync one throws
    else void v.anything;
  } catch (e) {
    return ["refused", `${e.name}: ${e.message}`];
  }
  return ["raw", "a refusal that did not throw"];
}
