// The lease ledger of the lease scenarios, written as a JavaScript developer would: grant(id, ttl)
// stores a lease and keeps the alarm at the earliest expiry (moving it only earlier); alarm() revokes
// every expired lease (the external effect first, then the row) and re-arms for the next one.
// lab(opts) switches the failures the fixtures need: revokeThrows (the next N revokes throw after
// counting their effect) and alwaysThrow (alarm() throws at once).
import { DurableObject } from "cloudflare:workers";
import { effect } from "./recorded.js";

export class LeaseLedger extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS leases (id TEXT PRIMARY KEY, expire_at INTEGER NOT NULL)`);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS lab (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`);
    ctx.blockConcurrencyWhile(() => this.ensureAlarm());
  }
  labGet(k) {
    const rows = this.sql.exec(`SELECT v FROM lab WHERE k = ?`, k).toArray();
    return rows.length ? rows[0].v : 0;
  }
  async lab(opts) {
    for (const [k, v] of Object.entries(opts)) this.sql.exec(`INSERT OR REPLACE INTO lab (k, v) VALUES (?, ?)`, k, Number(v));
    return true;
  }
  async ensureAlarm() {
    const next = this.sql.exec(`SELECT MIN(expire_at) AS t FROM leases`).one().t;
    if (next === null) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || next < current) await this.ctx.storage.setAlarm(next);
  }
  async grant(id, ttlMs) {
    const expireAt = Date.now() + ttlMs;
    this.sql.exec(`INSERT OR REPLACE INTO leases (id, expire_at) VALUES (?, ?)`, id, expireAt);
    await this.ensureAlarm();
    return expireAt; // when the revoke is owed
  }
  async alarm() {
    if (this.labGet("alwaysThrow")) throw new Error("injected handler failure");
    const due = this.sql.exec(`SELECT id FROM leases WHERE expire_at <= ? ORDER BY expire_at`, Date.now()).toArray();
    for (const { id } of due) {
      effect(this.ctx, "revoke", id);
      const left = this.labGet("revokeThrows");
      if (left > 0) {
        this.sql.exec(`INSERT OR REPLACE INTO lab (k, v) VALUES ('revokeThrows', ?)`, left - 1);
        throw new Error("injected revoke failure");
      }
      this.sql.exec(`DELETE FROM leases WHERE id = ?`, id);
    }
    await this.ensureAlarm();
  }
}
