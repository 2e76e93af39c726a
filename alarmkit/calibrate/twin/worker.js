// alarmkit calibration twin: the lease ledger and behaviour probes, for real workerd.
//
// Every Durable Object here writes each event to its own SQLite table
//   journal(seq, t_ms, kind, scheduled_ms, retry_count, is_retry, detail_json)
// with t_ms = Date.now() (in workerd the clock only advances across I/O).
//
// HTTP routes (all GET, all answer JSON):
//   /health                                   -> {ok, now}
//   /events?obj=NAME[&cls=ledger|probe]       -> journal rows of that object
//   /grant?obj=&id=&ttl=                      -> LeaseLedger.grant(id, ttl)
//   /lab?obj=&revokeThrows=N&alwaysThrow=0|1&noboot=0|1   (only given fields change)
//   /state?obj=                               -> ledger leases, getAlarm(), lab switches
//   /drop_alarm?obj=                          -> ledger deleteAlarm() (simulates a lost alarm)
//   /probe/NAME?obj=&...                      -> Probe operations, see Probe.op()
//   /sql/OP?obj=&...                          -> SqlProbe operations, see SqlProbe.op()
// Objects whose name starts with "probe" are Probe objects unless cls says otherwise.

import { DurableObject } from "cloudflare:workers";
import round3 from "./round3.js";
export { R3 } from "./round3.js"; // the round-3 probes' object (calibrate/round3.py), behind /r3

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Facets run in the parent's isolate: what a facet saw from the inside is pushed here, because a
// facet whose alarm write failed loses its own storage writes and its call results.
const FACET_INSIDE = [];

function errInfo(e) {
  if (e === null || e === undefined) return { text: String(e) };
  return {
    text: String(e),
    name: e.name,
    message: e.message,
    ctor: e.constructor ? e.constructor.name : null,
  };
}

async function settle(p) {
  try {
    return { ok: true, value: await p };
  } catch (e) {
    return { ok: false, error: errInfo(e) };
  }
}

const JOURNAL_DDL = `CREATE TABLE IF NOT EXISTS journal (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  t_ms INTEGER NOT NULL,
  kind TEXT NOT NULL,
  scheduled_ms INTEGER,
  retry_count INTEGER,
  is_retry INTEGER,
  detail_json TEXT
)`;

function journal(sql, kind, fields = {}) {
  const { scheduled = null, retryCount = null, isRetry = null, detail = {} } = fields;
  sql.exec(
    `INSERT INTO journal (t_ms, kind, scheduled_ms, retry_count, is_retry, detail_json) VALUES (?, ?, ?, ?, ?, ?)`,
    Date.now(),
    kind,
    scheduled === null || scheduled === undefined ? null : Math.round(scheduled),
    retryCount === null || retryCount === undefined ? null : retryCount,
    isRetry === null || isRetry === undefined ? null : isRetry ? 1 : 0,
    JSON.stringify(detail),
  );
}

function readJournal(sql) {
  return sql
    .exec(`SELECT seq, t_ms, kind, scheduled_ms, retry_count, is_retry, detail_json FROM journal ORDER BY seq`)
    .toArray()
    .map((r) => ({ ...r, detail: JSON.parse(r.detail_json || "{}"), detail_json: undefined }));
}

// ---------------------------------------------------------------------------------------------
// LeaseLedger: the lease ledger (constructor + ensureAlarm + grant + alarm + revoke), with
// journaling and the lab switches (revoke throws N times after counting, handler always throws,
// noboot keeps the constructor from re-arming). Switches live in storage so they survive restarts.
// ---------------------------------------------------------------------------------------------
export class LeaseLedger extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS leases (id TEXT PRIMARY KEY, expire_at INTEGER NOT NULL)`);
    this.sql.exec(`CREATE INDEX IF NOT EXISTS leases_by_expiry ON leases (expire_at)`);
    this.sql.exec(JOURNAL_DDL);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS lab (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`);
    const noboot = this.labGet("noboot");
    journal(this.sql, "construct", { detail: { noboot: !!noboot } });
    if (!noboot) ctx.blockConcurrencyWhile(() => this.ensureAlarm("construct")); // (1)
  }

  labGet(k) {
    const rows = this.sql.exec(`SELECT v FROM lab WHERE k = ?`, k).toArray();
    return rows.length ? rows[0].v : 0;
  }
  labSet(k, v) {
    this.sql.exec(`INSERT OR REPLACE INTO lab (k, v) VALUES (?, ?)`, k, v);
  }

  async ensureAlarm(src = "?") {
    const next = this.sql.exec(`SELECT MIN(expire_at) AS t FROM leases`).one().t; // (2)
    if (next === null) {
      journal(this.sql, "ensure", { detail: { src, next, current: undefined, action: "none" } });
      return;
    }
    const current = await this.ctx.storage.getAlarm();
    if (current === null || next < current) {
      // (3) moves only earlier
      await this.ctx.storage.setAlarm(next);
      const after = await this.ctx.storage.getAlarm();
      journal(this.sql, "set_alarm", { scheduled: next, detail: { src, requested: next, previous: current, after } });
    } else {
      journal(this.sql, "ensure", { detail: { src, next, current, action: "keep" } });
    }
  }

  async grant(id, ttlMs) {
    const expireAt = Date.now() + ttlMs;
    this.sql.exec(`INSERT OR REPLACE INTO leases (id, expire_at) VALUES (?, ?)`, id, expireAt);
    journal(this.sql, "grant", { scheduled: expireAt, detail: { id, ttl_ms: ttlMs, expire_at: expireAt } });
    await this.ensureAlarm("grant");
    return { id, expire_at: expireAt, alarm: await this.ctx.storage.getAlarm() };
  }

  async alarm(alarmInfo) {
    const info = alarmInfo || {};
    const atStart = await this.ctx.storage.getAlarm();
    journal(this.sql, "alarm_start", {
      scheduled: info.scheduledTime,
      retryCount: info.retryCount,
      isRetry: info.isRetry,
      detail: { get_alarm: atStart, has_info: alarmInfo !== undefined },
    });
    if (this.labGet("always_throw")) {
      journal(this.sql, "throw", { retryCount: info.retryCount, detail: { where: "handler", message: "injected handler failure" } });
      throw new Error("injected handler failure");
    }
    const due = this.sql
      .exec(`SELECT id FROM leases WHERE expire_at <= ? ORDER BY expire_at LIMIT 100`, Date.now())
      .toArray(); // (4)
    for (const { id } of due) {
      await this.revoke(id, info); // (5) effect first
      this.sql.exec(`DELETE FROM leases WHERE id = ?`, id); // (6) then the row
      journal(this.sql, "delete_lease", { detail: { id } });
    }
    await this.ensureAlarm("alarm"); // (7)
    journal(this.sql, "alarm_end", {
      retryCount: info.retryCount,
      detail: { revoked: due.map((r) => r.id), get_alarm: await this.ctx.storage.getAlarm() },
    });
  }

  async revoke(id, info = {}) {
    // the external effect: counted, and made to throw on request after counting
    const n = this.labGet("revoke_calls") + 1;
    this.labSet("revoke_calls", n);
    journal(this.sql, "revoke", { retryCount: info.retryCount, detail: { id, call_no: n } });
    const left = this.labGet("revoke_throws");
    if (left > 0) {
      this.labSet("revoke_throws", left - 1);
      journal(this.sql, "throw", { retryCount: info.retryCount, detail: { where: "revoke", id, message: "injected revoke failure" } });
      throw new Error("injected revoke failure");
    }
  }

  // ---- lab controls -----------------------------------------------------------------------
  async lab(opts) {
    if (opts.revokeThrows !== undefined) this.labSet("revoke_throws", opts.revokeThrows);
    if (opts.alwaysThrow !== undefined) this.labSet("always_throw", opts.alwaysThrow ? 1 : 0);
    if (opts.noboot !== undefined) this.labSet("noboot", opts.noboot ? 1 : 0);
    journal(this.sql, "lab", { detail: opts });
    return this.labState();
  }
  labState() {
    const out = {};
    for (const r of this.sql.exec(`SELECT k, v FROM lab`).toArray()) out[r.k] = r.v;
    return out;
  }
  async state() {
    return {
      now: Date.now(),
      leases: this.sql.exec(`SELECT id, expire_at FROM leases ORDER BY expire_at`).toArray(),
      alarm: await this.ctx.storage.getAlarm(),
      lab: this.labState(),
    };
  }
  async dropAlarm() {
    const before = await this.ctx.storage.getAlarm();
    await this.ctx.storage.deleteAlarm();
    journal(this.sql, "delete_alarm", { detail: { src: "lab", before, after: await this.ctx.storage.getAlarm() } });
    return { before };
  }
  async events() {
    return readJournal(this.sql);
  }
}

// ---------------------------------------------------------------------------------------------
// Probe: one object per probe run; cfg (in storage) decides what its alarm() does.
//   mode plain        : record and return
//   mode getalarm     : getAlarm at start (journaled), setAlarm(now+60s), getAlarm, deleteAlarm, getAlarm
//   mode throw        : throw while throws_left > 0 (decremented before throwing)
//   mode delete_throw : deleteAlarm() then throw (while throws_left > 0)
//   mode set_throw    : setAlarm(now+delay) then throw (while throws_left > 0)
//   mode sleep        : first run only: optionally setAlarm(now+inner_ms), then await sleep_ms
//   mode abort        : while throws_left > 0: journal, await storage.sync(), ctx.abort(reason, {retryAlarm})
//   mode name         : journal ctx.id.name (the constructor journals it too: a cold wake's name)
//   mode rearm        : while chain_left > 0: setAlarm(Date.now()) (at "now") or setAlarm(scheduledTime)
//                       (at "scheduled"), decremented first (workerd issue 6866)
// ---------------------------------------------------------------------------------------------
export class Probe extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(JOURNAL_DDL);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS cfg (k TEXT PRIMARY KEY, v TEXT NOT NULL)`);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS parent_work (n INTEGER)`);
    journal(this.sql, "construct", {
      detail: { facets: typeof ctx.facets, exports: typeof ctx.exports, id_name: ctx.id.name ?? null },
    });
  }

  cfg() {
    const out = {};
    for (const r of this.sql.exec(`SELECT k, v FROM cfg`).toArray()) out[r.k] = JSON.parse(r.v);
    return out;
  }
  setCfg(obj) {
    for (const [k, v] of Object.entries(obj)) {
      this.sql.exec(`INSERT OR REPLACE INTO cfg (k, v) VALUES (?, ?)`, k, JSON.stringify(v));
    }
  }

  async setAlarmJ(t, src) {
    let err = null;
    try {
      await this.ctx.storage.setAlarm(t);
    } catch (e) {
      err = errInfo(e);
    }
    const after = await this.ctx.storage.getAlarm();
    journal(this.sql, err ? "set_alarm_error" : "set_alarm", {
      scheduled: typeof t === "number" && isFinite(t) ? t : null,
      detail: { src, requested: typeof t === "number" ? (isFinite(t) ? t : String(t)) : String(t), after, error: err },
    });
    return { requested: t, after, error: err };
  }

  async alarm(alarmInfo) {
    const info = alarmInfo || {};
    const atStart = await this.ctx.storage.getAlarm();
    const cfg = this.cfg();
    const run = (cfg.runs || 0) + 1;
    this.setCfg({ runs: run });
    const base = { retryCount: info.retryCount, isRetry: info.isRetry };
    journal(this.sql, "alarm_start", {
      scheduled: info.scheduledTime,
      ...base,
      detail: { get_alarm: atStart, run, mode: cfg.mode || "plain", has_info: alarmInfo !== undefined },
    });
    const mode = cfg.mode || "plain";
    const throwsLeft = cfg.throws_left || 0;
    const doThrow = (where) => {
      this.setCfg({ throws_left: throwsLeft - 1 });
      journal(this.sql, "throw", { ...base, detail: { where, run } });
      throw new Error(`probe injected failure (${where}, run ${run})`);
    };
    if (mode === "getalarm") {
      const target = Date.now() + 60000;
      await this.ctx.storage.setAlarm(target);
      const afterSet = await this.ctx.storage.getAlarm();
      await this.ctx.storage.deleteAlarm();
      const afterDelete = await this.ctx.storage.getAlarm();
      journal(this.sql, "inside", { ...base, detail: { at_start: atStart, set_to: target, after_set: afterSet, after_delete: afterDelete } });
    } else if (mode === "throw") {
      if (throwsLeft > 0) doThrow("handler");
    } else if (mode === "delete_throw") {
      if (throwsLeft > 0) {
        await this.ctx.storage.deleteAlarm();
        journal(this.sql, "delete_alarm", { ...base, detail: { src: "handler", after: await this.ctx.storage.getAlarm() } });
        doThrow("after_delete");
      }
    } else if (mode === "set_throw") {
      if (throwsLeft > 0) {
        await this.setAlarmJ(Date.now() + (cfg.delay || 1000), "handler");
        doThrow("after_set");
      }
    } else if (mode === "abort") {
      if (throwsLeft > 0) {
        this.setCfg({ throws_left: throwsLeft - 1 });
        const retryAlarm = cfg.retry_alarm !== false;
        journal(this.sql, "abort", { ...base, detail: { run, retry_alarm: retryAlarm } });
        await this.ctx.storage.sync(); // the journal row and the counter must outlive the reset
        this.ctx.abort(`probe abort (run ${run})`, { retryAlarm });
      }
    } else if (mode === "name") {
      journal(this.sql, "id_name", { ...base, detail: { run, id_name: this.ctx.id.name ?? null } });
    } else if (mode === "rearm") {
      const chainLeft = cfg.chain_left || 0;
      if (chainLeft > 0) {
        this.setCfg({ chain_left: chainLeft - 1 });
        await this.setAlarmJ(cfg.at === "scheduled" ? info.scheduledTime : Date.now(), "rearm");
      }
    } else if (mode === "sleep") {
      if (run === 1) {
        if (cfg.inner_ms !== undefined && cfg.inner_ms !== null) await this.setAlarmJ(Date.now() + cfg.inner_ms, "handler");
        journal(this.sql, "sleep_begin", { ...base, detail: { run, ms: cfg.sleep_ms || 300 } });
        await sleep(cfg.sleep_ms || 300);
        journal(this.sql, "sleep_end", { ...base, detail: { run } });
      }
    }
    journal(this.sql, "alarm_end", { ...base, detail: { run, get_alarm: await this.ctx.storage.getAlarm() } });
  }

  async events() {
    return readJournal(this.sql);
  }

  // the read-modify-write of the /gate route: two of these run at once (input gate probe)
  async bump(tag) {
    journal(this.sql, "bump_read", { detail: { tag } });
    const n = (await this.ctx.storage.get("n")) ?? 0;
    journal(this.sql, "bump_write", { detail: { tag, n: n + 1 } });
    await this.ctx.storage.put("n", n + 1);
    return n + 1;
  }

  // ---- operations driven from the HTTP routes -----------------------------------------------
  async op(name, p) {
    const now = Date.now();
    switch (name) {
      case "config":
        this.setCfg(p);
        journal(this.sql, "config", { detail: p });
        return { cfg: this.cfg() };
      case "arm": {
        // rel=ms from now, or abs=epoch ms
        const t = p.abs !== undefined ? p.abs : now + p.rel;
        return await this.setAlarmJ(t, p.src || "outside");
      }
      case "get":
        return { now, alarm: await this.ctx.storage.getAlarm() };
      case "delete": {
        const before = await this.ctx.storage.getAlarm();
        await this.ctx.storage.deleteAlarm();
        const after = await this.ctx.storage.getAlarm();
        journal(this.sql, "delete_alarm", { detail: { src: "outside", before, after } });
        return { before, after };
      }
      case "bad_values": {
        // setAlarm with invalid times: record exact error texts
        const out = [];
        const values = [
          ["0", 0],
          ["-1", -1],
          ["-5000", -5000],
          ["NaN", NaN],
          ["Date(0)", new Date(0)],
        ];
        for (const [label, v] of values) {
          const r = await this.setAlarmJ(v, `bad:${label}`);
          out.push({ label, threw: r.error !== null, error: r.error, after: r.after });
        }
        return { now, results: out };
      }
      case "past": {
        const requested = now - (p.ago || 5000);
        const r = await this.setAlarmJ(requested, "outside_past");
        return { now, requested, after: r.after, error: r.error };
      }
      case "twice": {
        const a = now + p.first;
        const b = now + p.second;
        let r1, r2;
        if (p.await_between) {
          await this.ctx.storage.setAlarm(a);
          r1 = await this.ctx.storage.getAlarm();
          await this.ctx.storage.setAlarm(b);
          r2 = await this.ctx.storage.getAlarm();
        } else {
          // no await in between: both writes in one turn
          const p1 = this.ctx.storage.setAlarm(a);
          const p2 = this.ctx.storage.setAlarm(b);
          await p1;
          await p2;
          r2 = await this.ctx.storage.getAlarm();
        }
        journal(this.sql, "set_alarm", { scheduled: b, detail: { src: "twice", first: a, second: b, after_first: r1 ?? null, after: r2 } });
        return { now, first: a, second: b, after_first: r1 ?? null, after: r2 };
      }
      case "overlap_outside": {
        // arm at now+first; wait until the handler is sleeping; then set another alarm from outside
        this.setCfg({ mode: "sleep", sleep_ms: p.sleep_ms || 600 });
        await this.setAlarmJ(now + (p.first || 100), "outside");
        const deadline = Date.now() + 5000;
        while (Date.now() < deadline) {
          await sleep(20);
          const ev = this.sql.exec(`SELECT COUNT(*) AS n FROM journal WHERE kind = 'sleep_begin'`).one().n;
          if (ev > 0) break;
        }
        await sleep(p.wait_ms || 100);
        const r = await this.setAlarmJ(Date.now() + (p.second || 50), "outside_during_handler");
        return { now, second: r };
      }
      case "facet":
        return await this.facetProbe(p);
      default:
        throw new Error(`unknown probe op ${name}`);
    }
  }

  async facetProbe(p) {
    const res = { has_facets: typeof this.ctx.facets === "object" && this.ctx.facets !== null };
    if (!res.has_facets) return res;
    const name = p.facet || "f1";
    const getFacet = () => this.ctx.facets.get(name, () => ({ class: this.ctx.exports.ProbeFacet }));
    const step = (k, v) => {
      res[k] = v;
      journal(this.sql, "facet_step", { detail: { step: k, result: v } });
    };
    FACET_INSIDE.length = 0;
    let f = getFacet();
    step("ping_before", await settle(f.ping()));
    step("get_before", await settle(f.getA()));
    // a call into the facet that is running while setAlarm commits
    const pending = settle(f.sleep(p.pending_ms || 300));
    // the parent's own work in flight
    const parentWork = settle(
      (async () => {
        this.sql.exec(`INSERT INTO parent_work (n) VALUES (1)`);
        await sleep(200);
        this.sql.exec(`INSERT INTO parent_work (n) VALUES (2)`);
        return this.sql.exec(`SELECT COUNT(*) AS n FROM parent_work`).one().n;
      })(),
    );
    step("set_alarm_call", await settle(f.trySetAlarm(p.delay || 500)));
    step("pending_call", await pending);
    step("parent_work", await parentWork);
    await sleep(100);
    step("ping_same_stub_after", await settle(f.ping()));
    step("get_same_stub_after", await settle(f.getA()));
    const f2 = getFacet();
    step("ping_regot", await settle(f2.ping()));
    step("get_regot", await settle(f2.getA()));
    await sleep(p.wait_ms || 1200);
    step("facet_events_after_wait", await settle(f2.events()));
    step("parent_alarm", await this.ctx.storage.getAlarm());
    step("parent_sql_ok", await settle(Promise.resolve(this.sql.exec(`SELECT COUNT(*) AS n FROM journal`).one().n)));
    res.inside = FACET_INSIDE.slice();
    return res;
  }
}

// A class used only as a facet of Probe (reached through ctx.exports, no namespace of its own).
export class ProbeFacet extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(JOURNAL_DDL);
    this.born = Date.now();
    journal(this.sql, "construct", {});
  }
  async ping() {
    return { pong: true, born: this.born };
  }
  async sleep(ms) {
    await sleep(ms);
    return { slept: ms };
  }
  async getA() {
    return { alarm: await this.ctx.storage.getAlarm(), born: this.born };
  }
  async trySetAlarm(delay) {
    const t = Date.now() + delay;
    const out = { requested: t };
    FACET_INSIDE.push({ t: Date.now(), step: "before_set_alarm", requested: t });
    try {
      await this.ctx.storage.setAlarm(t);
      out.set_ok = true;
      FACET_INSIDE.push({ t: Date.now(), step: "set_alarm_resolved" });
    } catch (e) {
      out.set_ok = false;
      out.set_error = errInfo(e);
      FACET_INSIDE.push({ t: Date.now(), step: "set_alarm_threw", error: out.set_error });
    }
    try {
      out.get_after = await this.ctx.storage.getAlarm();
      FACET_INSIDE.push({ t: Date.now(), step: "get_alarm_after", value: out.get_after });
    } catch (e) {
      out.get_error = errInfo(e);
      FACET_INSIDE.push({ t: Date.now(), step: "get_alarm_threw", error: out.get_error });
    }
    try {
      journal(this.sql, "set_alarm", { scheduled: t, detail: out });
    } catch (e) {
      out.journal_error = errInfo(e);
    }
    FACET_INSIDE.push({ t: Date.now(), step: "returning", out });
    return out;
  }
  async alarm(alarmInfo) {
    FACET_INSIDE.push({ t: Date.now(), step: "facet_alarm_fired", info: alarmInfo ?? null });
    journal(this.sql, "alarm_start", { scheduled: alarmInfo?.scheduledTime, retryCount: alarmInfo?.retryCount });
  }
  async events() {
    return readJournal(this.sql);
  }
}

// ---------------------------------------------------------------------------------------------
// ---------------------------------------------------------------------------------------------
// Fid / FidNoAlarm: the fidelity probes (turns, constructor failures, a class without alarm(), the
// 15-minute limit, same-instant order, deleteAll). Every row also goes to FID_LOG, this isolate's
// memory, with a global sequence number: a constructor that throws or an abort can lose its storage
// writes, and Date.now() only moves across I/O, so the sequence is the true order of events here.
// Routes: /fid/OP?obj=&cls=fid|noalarm|deploy&...  and  /fid/log?obj= (FID_LOG rows of that object).
// ---------------------------------------------------------------------------------------------
const FID_LOG = [];
let FID_SEQ = 0;
const CTOR_FAILS = new Map(); // object id -> constructor failures still to inject (isolate memory)

function fidLog(obj, kind, detail = {}) {
  FID_SEQ += 1;
  FID_LOG.push({ seq: FID_SEQ, t_ms: Date.now(), obj, kind, detail });
}

class FidBase extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.obj = ctx.id.name ?? ctx.id.toString();
    this.instance = Math.random().toString(36).slice(2, 10);
    const left = CTOR_FAILS.get(ctx.id.toString()) || 0;
    if (left > 0) {
      CTOR_FAILS.set(ctx.id.toString(), left - 1);
      fidLog(this.obj, "construct_fail", { instance: this.instance, left: left - 1 });
      throw new Error(`fid: constructor fails (${left - 1} left)`);
    }
    fidLog(this.obj, "construct", { instance: this.instance });
    const armAt = this.ctx.storage.kv.get("ctor_arm_at");
    if (armAt) {
      this.ctx.storage.kv.delete("ctor_arm_at");
      try {
        this.ctx.storage.setAlarm(armAt);
        fidLog(this.obj, "ctor_set_alarm", { at: armAt, instance: this.instance });
      } catch (e) {
        fidLog(this.obj, "ctor_set_alarm_error", { error: errInfo(e) });
      }
    }
  }

  async op(name, p) {
    const st = this.ctx.storage;
    const now = Date.now();
    switch (name) {
      case "turn_abort": {
        // setAlarm(now + rel) then ctx.abort() in the same turn: "await", "noawait", or "sync" (await sync() first)
        fidLog(this.obj, "turn_abort", { how: p.how, at: now + p.rel, instance: this.instance });
        if (p.how === "noawait") st.setAlarm(now + p.rel);
        else await st.setAlarm(now + p.rel);
        if (p.how === "sync") await st.sync();
        this.ctx.abort("fid probe");
        return { unreachable: true };
      }
      case "ctor_fail": {
        // the next `fails` constructions throw; the alarm (now + rel) must construct the object: sync, abort
        CTOR_FAILS.set(this.ctx.id.toString(), p.fails);
        await st.setAlarm(now + p.rel);
        await st.sync();
        fidLog(this.obj, "ctor_fail_armed", { fails: p.fails, at: now + p.rel });
        this.ctx.abort("fid probe: the alarm constructs a new instance");
        return { unreachable: true };
      }
      case "stop_ctor_fail":
        CTOR_FAILS.set(this.ctx.id.toString(), 0);
        return { ok: true };
      case "arm_at": {
        // for the same-instant probe: every object armed for the same epoch ms
        let err = null;
        try {
          await st.setAlarm(p.at);
        } catch (e) {
          err = errInfo(e);
        }
        fidLog(this.obj, err ? "set_alarm_error" : "set_alarm", { at: p.at, error: err, instance: this.instance });
        return { now, at: p.at, error: err, alarm: await st.getAlarm() };
      }
      case "ctor_arm": {
        // the next constructor sets the alarm (for a class without alarm(), where a request may not)
        st.kv.put("ctor_arm_at", now + p.rel);
        await st.sync();
        this.ctx.abort("fid probe: construct again");
        return { unreachable: true };
      }
      case "long": {
        // the alarm (now + rel) runs past the 15-minute limit on its first run
        st.kv.put("long", true);
        await st.setAlarm(now + p.rel);
        fidLog(this.obj, "long_armed", { at: now + p.rel, instance: this.instance });
        return { now, at: now + p.rel };
      }
      case "delete_all": {
        await st.setAlarm(now + p.rel);
        st.kv.put("x", 1);
        const before = await st.getAlarm();
        await st.deleteAll();
        const after = await st.getAlarm();
        fidLog(this.obj, "delete_all", { before, after, at: now + p.rel, instance: this.instance });
        return { now, before, after };
      }
      case "get":
        return { now, alarm: await st.getAlarm(), instance: this.instance };
      default:
        return { error: `unknown fid op ${name}` };
    }
  }
}

export class Fid extends FidBase {
  async alarm(info) {
    fidLog(this.obj, "alarm_start", {
      scheduled: info?.scheduledTime ?? null, retry_count: info?.retryCount ?? null, instance: this.instance,
    });
    if (this.ctx.storage.kv.get("long") && (info?.retryCount ?? 0) === 0) {
      for (let i = 0; i < 40; i++) {
        await sleep(30000); // 20 minutes in all: the 15-minute limit comes first
        fidLog(this.obj, "long_tick", { i, instance: this.instance });
      }
    }
    fidLog(this.obj, "alarm_end", { instance: this.instance, alarm: await this.ctx.storage.getAlarm() });
  }
}

export class FidNoAlarm extends FidBase {}

// FidDeploy: the class a deploy changes. This module's FidDeploy has Fid's alarm(); deploy-v2.js, the
// main module of the config WorkerdProcess.redeploy("v2") starts, exports FidNoAlarm under the same
// name, so the namespace's className and uniqueKey (and its stored alarms) stay while alarm() is gone.
export class FidDeploy extends Fid {}

// ---------------------------------------------------------------------------------------------
// SqlProbe: the SQL layer (sql_probes.py): which statements workerd's authorizer refuses and with
// what text, SQL error texts, SQL's clock and randomness, transactionSync rolling back a row and an
// alarm. Routes: /sql/OP?obj=&...  (items: a JSON list of [sql, ...bindings]).
// ---------------------------------------------------------------------------------------------
export class SqlProbe extends DurableObject {
  async alarm(info) {
    this.ctx.storage.kv.put("fires", (this.ctx.storage.kv.get("fires") || 0) + 1);
    this.ctx.storage.kv.put("fired_at", Date.now());
  }

  async op(name, p) {
    const st = this.ctx.storage;
    const sql = st.sql;
    const now = Date.now();
    switch (name) {
      case "exec_each": {
        // every item in its own try: the rows, or the error's name and message (kv=1: a KV write first,
        // which makes the _cf_KV table exist)
        if (p.kv) st.kv.put("k", 1);
        const out = [];
        for (const [q, ...bindings] of JSON.parse(p.items)) {
          try {
            const cur = sql.exec(q, ...bindings);
            out.push({ ok: true, rows: cur.toArray() });
          } catch (e) {
            out.push({ ok: false, error: errInfo(e) });
          }
        }
        return { now, results: out };
      }
      case "time": {
        const row = sql.exec(`SELECT unixepoch() AS unixepoch, unixepoch('now') AS unixepoch_now,
          datetime('now') AS datetime_now, CURRENT_TIMESTAMP AS current_timestamp, CURRENT_DATE AS current_date,
          CURRENT_TIME AS current_time, date('now') AS date_now, time('now') AS time_now,
          julianday('now') AS julianday_now, strftime('%s', 'now') AS strftime_s, strftime('%Y-%m-%d %H:%M:%f', 'now') AS strftime_f,
          datetime() AS datetime_noarg, typeof(random()) AS random_type, length(randomblob(8)) AS randomblob_len,
          unixepoch('subsec') AS unixepoch_subsec`).one();
        return { now, row };
      }
      case "txsync": {
        // transactionSync(() => { INSERT; kv.put; setAlarm(now + rel) not awaited; throw }): what survives,
        // and when the setAlarm promise settles against the caller's own awaits
        const order = [];
        sql.exec("CREATE TABLE IF NOT EXISTS r (a INTEGER)");
        let thrown = null;
        try {
          st.transactionSync(() => {
            sql.exec("INSERT INTO r VALUES (1)");
            st.kv.put("in_tx", 1);
            const pr = st.setAlarm(now + p.rel);
            pr.then(() => order.push("setAlarm resolved"), (e) => order.push(`setAlarm rejected: ${e.message}`));
            order.push("throw");
            throw new Error("txsync probe");
          });
        } catch (e) {
          thrown = errInfo(e);
          order.push("caught");
        }
        for (let i = 1; i <= 4; i++) {
          await null;
          order.push(`after await ${i}`);
        }
        const alarm = await st.getAlarm();
        order.push("after await getAlarm()");
        await new Promise((r) => setTimeout(r, 0));
        order.push("after await setTimeout(0)");
        return {
          now, thrown, order, alarm: alarm === null ? null : alarm - now,
          rows: sql.exec("SELECT count(*) AS n FROM r").one().n, kv: st.kv.get("in_tx") ?? null,
        };
      }
      case "txsync_ok": {
        // the same without the throw: the row and the alarm commit
        // and, for comparison, when a setAlarm made outside any transaction settles
        const order = [];
        sql.exec("CREATE TABLE IF NOT EXISTS r (a INTEGER)");
        st.transactionSync(() => {
          sql.exec("INSERT INTO r VALUES (1)");
          st.setAlarm(now + p.rel).then(() => order.push("setAlarm in the transaction resolved"));
        });
        order.push("committed");
        st.setAlarm(now + p.rel).then(() => order.push("setAlarm outside resolved"));
        for (let i = 1; i <= 4; i++) {
          await null;
          order.push(`after await ${i}`);
        }
        const alarm = await st.getAlarm();
        return { now, order, alarm: alarm === null ? null : alarm - now, rows: sql.exec("SELECT count(*) AS n FROM r").one().n };
      }
      case "get":
        return { now, alarm: await st.getAlarm(), fires: st.kv.get("fires") ?? 0, fired_at: st.kv.get("fired_at") ?? null };
      default:
        return { error: `unknown sql op ${name}` };
    }
  }
}

function intParam(u, k) {
  const v = u.searchParams.get(k);
  if (v === null || v === "") return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`bad number for ${k}: ${v}`);
  return n;
}

function probeParams(u) {
  const p = {};
  for (const [k, v] of u.searchParams) {
    if (k === "obj") continue;
    const n = Number(v);
    p[k] = v !== "" && Number.isFinite(n) ? n : v === "true" ? true : v === "false" ? false : v;
  }
  return p;
}

export default {
  async fetch(req, env) {
    const u = new URL(req.url);
    const obj = u.searchParams.get("obj") || "default";
    try {
      if (u.pathname === "/health") return Response.json({ ok: true, now: Date.now() });
      if (u.pathname === "/r3") return round3.fetch(req, env);
      const cls = u.searchParams.get("cls") || (obj.startsWith("probe") ? "probe" : "ledger");
      const ns = cls === "probe" ? env.PROBE : env.LEDGER;
      const stub = ns.get(ns.idFromName(obj));
      if (u.pathname === "/events") return Response.json({ obj, cls, now: Date.now(), events: await stub.events() });
      if (u.pathname === "/grant") {
        const id = u.searchParams.get("id") || "lease";
        return Response.json(await stub.grant(id, intParam(u, "ttl") ?? 1000));
      }
      if (u.pathname === "/lab") {
        const opts = {};
        for (const k of ["revokeThrows", "alwaysThrow", "noboot"]) {
          const v = intParam(u, k);
          if (v !== undefined) opts[k] = v;
        }
        return Response.json(await stub.lab(opts));
      }
      if (u.pathname === "/state") return Response.json(await stub.state());
      if (u.pathname === "/drop_alarm") return Response.json(await stub.dropAlarm());
      if (u.pathname === "/gate") {
        // two calls to one object started at once (both RPCs start when made, as in JavaScript)
        const gstub = env.PROBE.get(env.PROBE.idFromName(obj));
        return Response.json({ results: await Promise.all([gstub.bump("a"), gstub.bump("b")]), now: Date.now() });
      }
      if (u.pathname === "/fid/log") {
        const want = u.searchParams.get("obj");
        return Response.json({ now: Date.now(), rows: FID_LOG.filter((r) => !want || r.obj === want) });
      }
      if (u.pathname.startsWith("/fid/")) {
        const fcls = u.searchParams.get("cls");
        const fns = fcls === "noalarm" ? env.FIDNOALARM : fcls === "deploy" ? env.FIDDEPLOY : env.FID;
        const fstub = fns.get(fns.idFromName(obj));
        try {
          return Response.json(await fstub.op(u.pathname.slice("/fid/".length), probeParams(u)));
        } catch (e) {
          return Response.json({ thrown: errInfo(e), now: Date.now() });
        }
      }
      if (u.pathname.startsWith("/sql/")) {
        const sstub = env.SQLPROBE.get(env.SQLPROBE.idFromName(obj));
        try {
          return Response.json(await sstub.op(u.pathname.slice("/sql/".length), probeParams(u)));
        } catch (e) {
          return Response.json({ thrown: errInfo(e), now: Date.now() });
        }
      }
      if (u.pathname.startsWith("/probe/")) {
        const name = u.pathname.slice("/probe/".length);
        const pstub = env.PROBE.get(env.PROBE.idFromName(obj));
        return Response.json(await pstub.op(name, probeParams(u)));
      }
      return Response.json({ error: "not found", path: u.pathname }, { status: 404 });
    } catch (e) {
      return Response.json({ error: errInfo(e), path: u.pathname }, { status: 500 });
    }
  },
};
