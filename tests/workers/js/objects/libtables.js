// Objects that keep their schedules as the Agents SDK 0.32 and Actors 0.0.1-beta.6 keep them: the same
// tables and columns, the same console lines on failure, the same drop (written here from the packages'
// behaviour, not copied): AgentLike retries a failing callback 3 times inside one alarm() (100 ms, 200 ms
// apart) and drops it; ActorLike makes one attempt, catches and drops. A cron is "every minute".
import { DurableObject } from "cloudflare:workers";

let seq = 0;
const nextMinute = (ms) => (Math.floor(ms / 60000) + 1) * 60000;

class Base extends DurableObject {
  fails = {}; // callback -> failures left to throw
  async ok(payload) {
    await this.ctx.storage.put(`ran:${payload}`, Date.now());
  }
  async flaky(payload) {
    if ((this.fails.flaky ?? 0) > 0) {
      this.fails.flaky--;
      throw new Error(`flaky ${payload} failed`);
    }
    await this.ctx.storage.put(`ran:${payload}`, Date.now());
  }
  async boom() {
    throw new Error("boom");
  }
  failTimes(n) {
    this.fails.flaky = n;
  }
}

export class AgentLike extends Base {
  table() {
    this.ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS cf_agents_jobs (
      id TEXT PRIMARY KEY NOT NULL, capability TEXT NOT NULL, fn TEXT NOT NULL, time INTEGER NOT NULL,
      payload TEXT, retry_options TEXT, singleflight INTEGER NOT NULL DEFAULT 0, running INTEGER NOT NULL DEFAULT 0,
      execution_started_at INTEGER) WITHOUT ROWID`);
  }
  async schedule(when, callback, payload) {
    this.table();
    const now = Date.now();
    const type = typeof when === "string" ? "cron" : typeof when === "number" ? "delayed" : "scheduled";
    const time = type === "cron" ? nextMinute(now) : type === "delayed" ? now + when * 1000 : when;
    const id = `job${++seq}`;
    this.ctx.storage.sql.exec("INSERT INTO cf_agents_jobs (id, capability, fn, time, payload) VALUES (?, 'scheduler', ?, ?, ?)",
      id, callback, time, JSON.stringify({ payload, type, cron: type === "cron" ? when : undefined }));
    await this.arm();
    return id;
  }
  async cancel(id) {
    this.ctx.storage.sql.exec("DELETE FROM cf_agents_jobs WHERE id = ?", id);
    await this.arm();
  }
  async arm() {
    const [{ t }] = this.ctx.storage.sql.exec("SELECT MIN(time) AS t FROM cf_agents_jobs").toArray();
    if (t === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(t);
  }
  async alarm() {
    this.table();
    const due = this.ctx.storage.sql.exec("SELECT * FROM cf_agents_jobs WHERE time <= ? ORDER BY time", Date.now()).toArray();
    for (const row of due) {
      const job = JSON.parse(row.payload);
      this.ctx.storage.sql.exec("UPDATE cf_agents_jobs SET running = 1, execution_started_at = ? WHERE id = ?", Date.now(), row.id);
      let failed = null;
      for (let attempt = 1; attempt <= 3; attempt++) {
        try {
          await this[row.fn](job.payload);
          failed = null;
          break;
        } catch (e) {
          failed = e;
          if (attempt < 3) await new Promise((r) => setTimeout(r, 100 * 2 ** (attempt - 1)));
        }
      }
      if (failed) console.error(`error executing callback "${row.fn}" after 3 attempts`, failed);
      if (job.type === "cron") this.ctx.storage.sql.exec("UPDATE cf_agents_jobs SET time = ?, running = 0 WHERE id = ?", nextMinute(Date.now()), row.id);
      else this.ctx.storage.sql.exec("DELETE FROM cf_agents_jobs WHERE id = ?", row.id);
    }
    await this.arm();
  }
}

export class ActorLike extends Base {
  table() {
    this.ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS _actor_alarms (
      id TEXT PRIMARY KEY NOT NULL DEFAULT (randomblob(9)), callback TEXT, payload TEXT,
      type TEXT NOT NULL CHECK(type IN ('scheduled', 'delayed', 'cron')), time INTEGER, delayInSeconds INTEGER,
      cron TEXT, identifier TEXT DEFAULT 'default')`);
  }
  async schedule(when, callback, payload) {
    this.table();
    const id = `a${++seq}`;
    const time = Math.floor((Date.now() + when * 1000) / 1000);
    this.ctx.storage.sql.exec("INSERT INTO _actor_alarms (id, callback, payload, type, delayInSeconds, time) VALUES (?, ?, ?, 'delayed', ?, ?)",
      id, callback, JSON.stringify(payload), when, time);
    await this.ctx.storage.setAlarm(time * 1000);
    return id;
  }
  async alarm() {
    const now = Math.floor(Date.now() / 1000);
    for (const row of this.ctx.storage.sql.exec("SELECT * FROM _actor_alarms WHERE time <= ?", now).toArray()) {
      try {
        await this[row.callback](JSON.parse(row.payload), row);
      } catch (e) {
        console.error(`error executing callback "${row.callback}"`, e);
      }
      this.ctx.storage.sql.exec("DELETE FROM _actor_alarms WHERE id = ?", row.id);
    }
    const [{ t }] = this.ctx.storage.sql.exec("SELECT MIN(time) AS t FROM _actor_alarms").toArray();
    if (t !== null) await this.ctx.storage.setAlarm(t * 1000);
  }
}
