// Reminders written for Cloudflare: each reminder is kept in storage and, when its alarm fires,
// handed to an outbox object, which asks a filter object before it keeps it. Reminder forgets the text before the outbox has it (a crash of the
// outbox in between loses it); ReminderFixed hands it over first and forgets it after (the outbox
// keeps one copy per reminder, so a handover repeated by a retry is harmless).
import { DurableObject } from "cloudflare:workers";

interface Env {
  REMINDERS: DurableObjectNamespace<Reminder>;
  OUTBOX: DurableObjectNamespace<Outbox>;
  FILTER: DurableObjectNamespace<Filter>;
  GREETING: string;
  LIMITS: { maxDelayMs: number };
  CACHE: KVNamespace;
}

export class Reminder extends DurableObject<Env> {
  async schedule(text: string, delayMs: number): Promise<number> {
    if (delayMs > this.env.LIMITS.maxDelayMs) throw new RangeError(`delay ${delayMs} is past ${this.env.LIMITS.maxDelayMs}`);
    const due = Date.now() + delayMs;
    await this.ctx.storage.put("text", text);
    await this.ctx.storage.setAlarm(due);
    return due;
  }

  async alarm(): Promise<void> {
    const text = await this.ctx.storage.get<string>("text");
    if (text === undefined) return;
    await this.ctx.storage.delete("text"); // forgotten first...
    await this.env.OUTBOX.getByName("out").deliver(this.ctx.id.name!, text); // ...then handed over
  }

  async peek(): Promise<string | null> {
    return (await this.ctx.storage.get<string>("text")) ?? null;
  }

  async fetch(request: Request): Promise<Response> {
    return new Response(`${this.env.GREETING}, ${this.ctx.id.name}`);
  }
}

export class ReminderFixed extends Reminder {
  async alarm(): Promise<void> {
    const text = await this.ctx.storage.get<string>("text");
    if (text === undefined) return;
    await this.env.OUTBOX.getByName("out").deliver(this.ctx.id.name!, text); // handed over first...
    await this.ctx.storage.delete("text"); // ...then forgotten
  }
}

export class Outbox extends DurableObject<Env> {
  async deliver(from: string, text: string): Promise<number> {
    if (!(await this.env.FILTER.getByName("filter").allow(text))) return 0; // asks the spam filter first
    await this.ctx.storage.put(`m:${from}`, text);
    const all = await this.ctx.storage.list({ prefix: "m:" });
    return all.size;
  }
}

export class Filter extends DurableObject<Env> {
  async allow(text: string): Promise<boolean> {
    const seen = ((await this.ctx.storage.get<number>("seen")) ?? 0) + 1;
    await this.ctx.storage.put("seen", seen);
    return !text.includes("casino");
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const who = url.searchParams.get("who") ?? "anon";
    if (url.pathname === "/remind") {
      const due = await env.REMINDERS.getByName(who).schedule(await request.text(), Number(url.searchParams.get("in")));
      return Response.json({ due });
    }
    if (url.pathname === "/hello") return env.REMINDERS.getByName(who).fetch(request);
    if (url.pathname === "/cached") return new Response(String(await env.CACHE.get(who)));
    return new Response("not found", { status: 404 });
  },
};
