// A job queue in SQLite. The alarm runs the oldest due job; a job whose call fails is retried by the
// object itself with its own backoff (1 s, 2 s, 4 s), then marked dead. A job whose payload says
// "crash" throws out of alarm(), so the platform's retries apply instead.
import { DurableObject } from "cloudflare:workers";

interface Env {
  API: Fetcher;
}

type Job = { id: number; payload: string; attempts: number; due: number };

export class JobQueue extends DurableObject<Env> {
  sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS jobs (
      id INTEGER PRIMARY KEY AUTOINCREMENT, payload TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0, due INTEGER NOT NULL, state TEXT NOT NULL DEFAULT 'queued')`);
  }

  async enqueue(payload: string, delayMs: number): Promise<number> {
    const id = this.sql.exec("INSERT INTO jobs (payload, due) VALUES (?, ?) RETURNING id", payload, Date.now() + delayMs).one().id as number;
    await this.rearm();
    return id;
  }

  async alarm(info: AlarmInvocationInfo): Promise<void> {
    const job = this.sql.exec("SELECT id, payload, attempts, due FROM jobs WHERE state = 'queued' AND due <= ? ORDER BY due, id LIMIT 1", Date.now()).toArray()[0] as Job | undefined;
    if (job) {
      if (job.payload === "crash") throw new Error(`job ${job.id} crashed (retry ${info.retryCount})`);
      const res = await this.env.API.fetch(`https://api.example/run/${job.id}`, { method: "POST", body: job.payload });
      if (res.ok) {
        this.sql.exec("UPDATE jobs SET state = 'done', attempts = attempts + 1 WHERE id = ?", job.id);
      } else if (job.attempts + 1 >= 4) {
        this.sql.exec("UPDATE jobs SET state = 'dead', attempts = attempts + 1 WHERE id = ?", job.id);
      } else {
        const backoff = 1000 * 2 ** job.attempts;
        this.sql.exec("UPDATE jobs SET attempts = attempts + 1, due = ? WHERE id = ?", Date.now() + backoff, job.id);
      }
    }
    await this.rearm();
  }

  async rearm(): Promise<void> {
    const next = this.sql.exec("SELECT MIN(due) AS due FROM jobs WHERE state = 'queued'").one().due as number | null;
    if (next === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(next);
  }

  jobs(): Job[] {
    return this.sql.exec("SELECT id, payload, attempts, due, state FROM jobs ORDER BY id").toArray() as Job[];
  }
}
