// SQL's clock and randomness in the JavaScript host: a table with the defaults the Agents SDK and Actors
// write (DEFAULT (unixepoch())), filled at two virtual times, and SQL errors caught as plain Errors.
import { DurableObject } from "cloudflare:workers";

export class Clock extends DurableObject {
  async fill() {
    const sql = this.ctx.storage.sql;
    sql.exec(`CREATE TABLE IF NOT EXISTS s (id INTEGER PRIMARY KEY, at INTEGER DEFAULT (unixepoch()),
      stamp TEXT DEFAULT CURRENT_TIMESTAMP, r INTEGER DEFAULT (random()))`);
    sql.exec("INSERT INTO s (id) VALUES (NULL)");
    return sql.exec("SELECT at, stamp, r, hex(randomblob(4)) AS b, Date() AS d FROM s ORDER BY id DESC LIMIT 1").one();
  }
  async errors() {
    const out = [];
    this.ctx.storage.kv.put("k", 1); // _cf_KV exists from the first KV write (on workerd too)
    for (const q of ["DELETE FROM _cf_KV", "SELEC 1", "BEGIN"]) {
      try {
        this.ctx.storage.sql.exec(q);
        out.push("ran");
      } catch (e) {
        out.push([e instanceof Error, e.constructor.name, e.name, e.message.slice(0, 60)]);
      }
    }
    return out;
  }
}
