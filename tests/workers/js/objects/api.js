// Exercises the runtime surface: KV options, SQL cursors, transactions, timers, ids, randomness.
import { DurableObject, env as moduleEnv } from "cloudflare:workers";

export class Probe extends DurableObject {
  async kv() {
    const s = this.ctx.storage;
    await s.put({ "a:1": 1, "a:2": 2, "a:3": 3, "b:1": "x" });
    const got = await s.get(["a:1", "a:9", "b:1"]);
    const list = (o) => s.list(o).then((m) => [...m.keys()]);
    const out = {
      many: Object.fromEntries(got),
      prefix: await list({ prefix: "a:" }),
      range: await list({ start: "a:2", end: "b:1" }),
      after: await list({ startAfter: "a:2" }),
      rev: await list({ reverse: true, limit: 2 }),
      del1: await s.delete("a:1"),
      del0: await s.delete("nope"),
      delMany: await s.delete(["a:2", "a:3", "zz"]),
    };
    await s.deleteAll();
    out.afterAll = [...(await s.list()).keys()];
    return out;
  }

  async sql() {
    const sql = this.ctx.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v INTEGER)");
    const ins = sql.exec("INSERT INTO t VALUES (?, ?), (?, ?), (?, ?)", "a", 1, "b", 2, "c", 3);
    const cur = sql.exec("SELECT k, v FROM t ORDER BY k");
    const first = cur.next().value;
    const rest = cur.toArray();
    const raw = [...sql.exec("SELECT k, v FROM t ORDER BY k").raw()];
    let oneErr = null;
    try {
      sql.exec("SELECT k FROM t").one();
    } catch (e) {
      oneErr = e.message;
    }
    let sqlErr = null;
    try {
      sql.exec("SELECT * FROM missing");
    } catch (e) {
      sqlErr = e.message.split(" (")[0];
    }
    try {
      this.ctx.storage.transactionSync(() => {
        sql.exec("UPDATE t SET v = 100");
        throw new Error("undo");
      });
    } catch {}
    const total = sql.exec("SELECT SUM(v) AS s FROM t").one().s;
    return { written: ins.rowsWritten, cols: cur.columnNames, first, rest, raw, oneErr, sqlErr, total, iter: [...sql.exec("SELECT v FROM t")].map((r) => r.v) };
  }

  async clock() {
    const t0 = Date.now();
    const order = [];
    const iv = setInterval(() => order.push(`tick@${Date.now()}`), 30);
    const dropped = setTimeout(() => order.push("never"), 10);
    clearTimeout(dropped);
    await new Promise((r) => setTimeout(r, 100));
    clearInterval(iv);
    order.push(`done@${Date.now()}`);
    return { t0, order, perf: performance.now(), date: new Date().getTime() };
  }

  random() {
    const a = new Uint8Array(4);
    crypto.getRandomValues(a);
    return { r: Math.random(), bytes: [...a], uuid: crypto.randomUUID() };
  }

  ids() {
    const ns = this.env.PROBE;
    const a = ns.idFromName("x");
    const u = ns.newUniqueId();
    return { same: a.equals(ns.idFromName("x")), hex: a.toString().length, name: a.name, uniqueName: u.name ?? null, myName: this.ctx.id.name, moduleEnv: typeof moduleEnv.PROBE };
  }

  async callOther(name, value) {
    return await this.env.PROBE.getByName(name).echo(value);
  }

  async callUnique() {
    const stub = this.env.PROBE.get(this.env.PROBE.newUniqueId());
    return (await stub.echo("u")).length;
  }

  async fetch(request) {
    return new Response(`probe ${request.method} ${await request.text()} ${new URL(request.url).search}`, { status: 201 });
  }

  echo(v) {
    return [v, this.ctx.id.name ?? "unnamed"];
  }

  outbound() {
    return fetch("https://example.com/");
  }

  unbound() {
    return this.env.NOPE;
  }

  forgotten() {
    Promise.reject(new RangeError("nobody awaits me"));
    return 1;
  }

  async never() {
    await new Promise(() => {});
  }

  async abortMe() {
    await this.ctx.storage.put("lost", 1);
    this.ctx.abort("enough");
  }

  async throwsType() {
    null.x;
  }

  async setBad(t) {
    await this.ctx.storage.setAlarm(t);
  }

  async arm(ms) {
    await this.ctx.storage.setAlarm(Date.now() + ms);
    this.ctx.waitUntil(new Promise((r) => setTimeout(r, 5)).then(() => console.log("waited")));
  }

  async alarm(info) {
    const mode = (await this.ctx.storage.get("mode")) ?? "ok";
    if (mode === "hang") await new Promise(() => {});
    console.log(`alarm retry=${info.retryCount}`);
  }

  async setMode(m) {
    await this.ctx.storage.put("mode", m);
  }
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/echo") {
      return new Response(JSON.stringify({ method: request.method, body: await request.text(), h: request.headers.get("x-a") }), {
        status: 202,
        headers: { "content-type": "application/json", "x-b": "2" },
      });
    }
    if (url.pathname === "/do") return env.PROBE.getByName("d").fetch("http://inner/echo?" + url.searchParams, { method: "PUT", body: "inner" });
    return new Response("nothing", { status: 404 });
  },
};
