// A lease ledger written for Cloudflare: leases in SQLite, one alarm at the earliest expiry, and a
// revoke call to an outside service (env.REVOKER) for each expired lease. Two versions of the
// alarm handler: Leases forgets the lease before revoking it; LeasesFixed revokes first.
import { DurableObject } from "cloudflare:workers";

interface Env {
  REVOKER: Fetcher;
}

export class Leases extends DurableObject<Env> {
  sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS leases (id TEXT PRIMARY KEY, expires INTEGER NOT NULL)");
  }

  async grant(id: string, ttlMs: number): Promise<number> {
    const expires = Date.now() + ttlMs;
    this.sql.exec("INSERT OR REPLACE INTO leases VALUES (?, ?)", id, expires);
    const current = await this.ctx.storage.getAlarm();
    if (current === null || expires < current) await this.ctx.storage.setAlarm(expires);
    return expires;
  }

  async alarm(): Promise<void> {
    const due = this.sql.exec("SELECT id FROM leases WHERE expires <= ? ORDER BY id", Date.now()).toArray();
    for (const { id } of due) {
      this.sql.exec("DELETE FROM leases WHERE id = ?", id); // forgotten first (committed before the fetch leaves)...
      await this.revoke(id as string); // ...then revoked: if the revoke fails, no retry finds the row
    }
    await this.rearm();
  }

  async revoke(id: string): Promise<void> {
    const res = await this.env.REVOKER.fetch(`https://revoker.example/revoke?id=${id}`, { method: "POST" });
    if (!res.ok) throw new Error(`revoke ${id}: ${res.status}`);
  }

  async rearm(): Promise<void> {
    const next = this.sql.exec("SELECT MIN(expires) AS t FROM leases").one().t as number | null;
    if (next !== null) await this.ctx.storage.setAlarm(next);
  }
}

export class LeasesFixed extends Leases {
  async alarm(): Promise<void> {
    const due = this.sql.exec("SELECT id FROM leases WHERE expires <= ? ORDER BY id", Date.now()).toArray();
    for (const { id } of due) {
      await this.revoke(id as string); // revoked first (a failure throws before the delete; a retry may revoke twice)...
      this.sql.exec("DELETE FROM leases WHERE id = ?", id); // ...then forgotten
    }
    await this.rearm();
  }
}
