// alarmkit calibration, round 3: one Durable Object module run unchanged on real workerd
// (alarmkit/calibrate/data/round3-workerd-1.20261117.1.json, recorded by alarmkit/calibrate/round3.py) and
// in alarmkit's JavaScript host (tests/workers/test_js_round3.py).
import { DurableObject } from "cloudflare:workers";

const LOG = [];
let SEQ = 0;
function log(ev, o) { LOG.push({ seq: ++SEQ, t: Date.now(), ev, ...o }); }

class CodeError extends Error {
  constructor(m) { super(m); this.name = "CodeError"; this.code = 42; }
}

function errShape(e) {
  return { ctor: e && e.constructor && e.constructor.name, name: e && e.name, message: e && e.message,
    code: e && e.code, isErr: e instanceof Error, isRange: e instanceof RangeError, isType: e instanceof TypeError };
}

export class R3 extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.name = ctx.id.name;
    log("construct", { obj: this.name });
    if (this.name && this.name.startsWith("bcw")) {
      ctx.blockConcurrencyWhile(async () => {
        await ctx.storage.setAlarm(Date.now());
        log("bcw_armed", { obj: this.name });
        if (this.name.startsWith("bcwslow")) {
          await new Promise((r) => setTimeout(r, 50));
          await ctx.storage.get("x");
          log("bcw_done", { obj: this.name });
        }
      });
    }
  }
  async alarm(info) {
    log("alarm", { obj: this.name, scheduledTime: info && info.scheduledTime, retryCount: info && info.retryCount });
    const spin = await this.ctx.storage.get("spin");
    if (spin) {
      const d0 = Date.now(), p0 = performance.now();
      const end = performance.now() + spin;
      let x = 0;
      // a CPU loop
      const s = globalThis.__realStart || 0;
      let i = 0;
      while (i < spin * 250000) { x += Math.sqrt(i++); }
      log("spun", { obj: this.name, dDate: Date.now() - d0, dPerf: performance.now() - p0, x: x > 0 });
    }
  }
  async req(tag) { log("req", { obj: this.name, tag }); return tag; }
  async setSpin(n) { await this.ctx.storage.put("spin", n); }
  async arm(at) { await this.ctx.storage.setAlarm(at); return at; }
  async getAlarm() { return await this.ctx.storage.getAlarm(); }
  async badAlarms() {
    const vals = { nan: NaN, inf: Infinity, big: 1e300, max_date: 8.64e15, after: 9.3e12, before: 9.2e12, neg: -5,
      zero: 0, half: 0.5, neg_half: -0.5, one_point_nine: 1.9, str: "123", nul: null, undef: undefined, t: true,
      obj: {}, bigint: 5n, date_nan: new Date(NaN), neg_big: -1e13, arr: [5] };
    const out = {};
    for (const [k, v] of Object.entries(vals)) {
      try {
        await this.ctx.storage.setAlarm(v);
        out[k] = { ok: await this.ctx.storage.getAlarm() };
        await this.ctx.storage.deleteAlarm();
      } catch (e) { out[k] = errShape(e); }
    }
    return out;
  }
  async txThrow(at) {
    let caught = null;
    try {
      await this.ctx.storage.transaction(async (txn) => {
        await txn.put("k", "v");
        await txn.setAlarm(at);
        throw new RangeError("body refuses");
      });
    } catch (e) { caught = errShape(e); }
    return { caught, k: (await this.ctx.storage.get("k")) ?? null, alarm: await this.ctx.storage.getAlarm() };
  }
  async txRollback(at) {
    let out, caught = null, rb = null;
    try {
      out = await this.ctx.storage.transaction(async (txn) => {
        await txn.put("k2", "v");
        await txn.setAlarm(at);
        try { txn.rollback(); rb = "returned"; } catch (e) { rb = errShape(e); }
        return "body value";
      });
    } catch (e) { caught = errShape(e); }
    return { out: out ?? null, rb, caught, k2: (await this.ctx.storage.get("k2")) ?? null, alarm: await this.ctx.storage.getAlarm() };
  }
  async txOk(at) {
    const out = await this.ctx.storage.transaction(async (txn) => { await txn.put("k3", 7); await txn.setAlarm(at); return await txn.get("k3"); });
    return { out, k3: await this.ctx.storage.get("k3"), alarm: await this.ctx.storage.getAlarm() };
  }
  async syncOrAsync() {
    let how = "none";
    try { const p = this.ctx.storage.setAlarm(NaN); how = "returned " + (p instanceof Promise); p.catch(() => {}); } catch (e) { how = "sync throw"; }
    return how;
  }
  async throwRange() { throw new RangeError("probe: b refuses"); }
  async throwCustom() { throw new CodeError("custom refuses"); }
  async throwType() { throw new TypeError("type refuses"); }
  async callOther(method) {
    const other = this.env.R3.getByName("other-" + this.name);
    try { await other[method](); return null; } catch (e) { return errShape(e); }
  }
  async values() {
    const v = { d: new Date(1700000000000), m: new Map([["a", 1], [2, "b"]]), s: new Set([1, "x"]), u8: new Uint8Array([1, 2, 3]),
      f64: new Float64Array([1.5, NaN]), nan: NaN, inf: -Infinity, o: { a: undefined, b: 1 }, big: 12345678901234567890n, re: /ab+c/gi,
      nested: [new Date(5), { m: new Map() }], ab: new Uint8Array([9, 8]).buffer, negz: -0 };
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      try { await this.ctx.storage.put("v_" + k, x); } catch (e) { out[k] = { putErr: errShape(e) }; continue; }
      const back = await this.ctx.storage.get("v_" + k);
      out[k] = { type: Object.prototype.toString.call(back), ctor: back === null || back === undefined ? null : back.constructor.name,
        show: describe(back) };
    }
    try { await this.ctx.storage.put("v_fn", () => 1); out.fn = "stored"; } catch (e) { out.fn = errShape(e); }
    try { await this.ctx.storage.put("v_sym", Symbol("x")); out.sym = "stored"; } catch (e) { out.sym = errShape(e); }
    try { await this.ctx.storage.put("v_undef", undefined); out.undef = { back: String(await this.ctx.storage.get("v_undef")) }; } catch (e) { out.undef = errShape(e); }
    try { await this.ctx.storage.put("v_cls", new CodeError("x")); const b = await this.ctx.storage.get("v_cls"); out.err = { ctor: b.constructor.name, name: b.name, message: b.message, code: b.code }; } catch (e) { out.err = errShape(e); }
    return out;
  }
  log() { return LOG.filter((r) => !this.name || r.obj === undefined || true); }
}

function describe(x) {
  if (typeof x === "bigint") return "bigint:" + x.toString();
  if (typeof x === "number") return Object.is(x, -0) ? "-0" : String(x);
  if (x instanceof Date) return "Date:" + x.getTime();
  if (x instanceof Map) return "Map:" + JSON.stringify([...x].map(([k, v]) => [typeof k, k, describe(v)]));
  if (x instanceof Set) return "Set:" + JSON.stringify([...x]);
  if (ArrayBuffer.isView(x)) return x.constructor.name + ":" + Array.from(x).join(",");
  if (x instanceof ArrayBuffer) return "ArrayBuffer:" + Array.from(new Uint8Array(x)).join(",");
  if (x instanceof RegExp) return "RegExp:" + x.toString();
  if (Array.isArray(x)) return "[" + x.map(describe).join(",") + "]";
  if (x && typeof x === "object") return "{" + Object.keys(x).map((k) => k + ":" + describe(x[k])).join(",") + "}";
  return String(x);
}

export default {
  async fetch(req, env) {
    const u = new URL(req.url);
    const name = u.searchParams.get("name") || "x";
    const op = u.searchParams.get("op");
    const arg = u.searchParams.get("arg");
    if (op === "log") return Response.json(LOG);
    const stub = env.R3.getByName(name);
    const a = arg === null ? undefined : JSON.parse(arg);
    try {
      const r = await stub[op](a);
      return Response.json({ ok: r === undefined ? null : r });
    } catch (e) {
      return Response.json({ err: errShape(e) });
    }
  },
};
