"""Patterns met in public projects (docs/real-projects.md), written here in our own words, run as a user
runs a project: a wrangler.toml with no ``main`` (a build command makes the bundle, so ``--worker`` names
the source), a tsconfig path alias, the Cache API in front of the object (always a miss), a rate-limit
bucket kept in storage and a clean-up alarm hours later, and local vars in ``.env`` (no ``.dev.vars``)."""

import json
import subprocess
import sys

LIMITER = """import { Limit } from "@/shapes";
export class Limiter {
  constructor(private state: DurableObjectState, private env: any) {}
  async fetch(req: Request): Promise<Response> {
    const l: Limit = await req.json();
    const n = ((await this.state.storage.get<number>("hits")) ?? 0) + 1;
    await this.state.storage.put("hits", n);
    if (!(await this.state.storage.getAlarm())) await this.state.storage.setAlarm(Date.now() + 6 * 3600 * 1000);
    return Response.json(n > l.limit ? { error: "limited", by: this.env.OWNER } : { left: l.limit - n });
  }
  async alarm(): Promise<void> { await this.state.storage.deleteAll(); await this.state.storage.put("swept", Date.now()); }
}
export default {
  async fetch(req: Request, env: any, ctx: ExecutionContext): Promise<Response> {
    const body = await req.clone().json() as Limit;
    const cache = await caches.open("limits");
    const hit = await cache.match("https://limits.invalid/" + body.key);
    if (hit) return hit;
    const res = await env.LIMITER.get(env.LIMITER.idFromName(body.key)).fetch("https://do/", { method: "POST", body: JSON.stringify(body) });
    ctx.waitUntil(cache.put("https://limits.invalid/" + body.key, res.clone()));
    return res;
  },
};
"""


def test_a_build_command_project_with_a_path_alias_the_cache_api_and_a_clean_up_alarm(js_host, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.ts").write_text(LIMITER)
    (tmp_path / "src" / "shapes.ts").write_text("export interface Limit { key: string; limit: number }\n")
    (tmp_path / "tsconfig.json").write_text(json.dumps({"compilerOptions": {"baseUrl": ".", "paths": {"@/*": ["src/*"]}}}))
    (tmp_path / "wrangler.toml").write_text('name = "limiter"\ncompatibility_date = "2022-10-05"\n'
                                            'compatibility_flags = ["durable_object_alarms"]\n'
                                            '[durable_objects]\nbindings = [{ name = "LIMITER", class_name = "Limiter" }]\n'
                                            '[build]\ncommand = "node build.js"\n')
    (tmp_path / ".env").write_text("OWNER=ops\n")
    post = {"fetch": "/", "method": "POST", "body": json.dumps({"key": "k1", "limit": 1})}
    (tmp_path / "drive.json").write_text(json.dumps({
        "steps": [{"at": 0, **post}, {"at": 1000, **post}], "until": 30_000_000,
        "expect": [{"requests": "ok"}, {"object": "LIMITER:k1", "kv": "swept", "equals": 21_600_001}]}))
    r = subprocess.run([sys.executable, "-m", "alarmkit", "worker", "--worker", "src/index.ts", "--wrangler", "wrangler.toml",
                        "--drive", "drive.json", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr + r.stdout[-800:]
    s = json.loads(r.stdout)
    # the second request is not served from the cache (a miss, always): the object counts it and limits it
    assert [o["body"] for o in s["outcomes"]] == ['{"left":0}', '{"error":"limited","by":"ops"}']
    assert s["expect_failures"] == [] and s["final_alarms"] == {"k1": None}


TALLY = """import { DurableObject } from "cloudflare:workers";
export class Tally extends DurableObject {
  n = 0;
  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => { this.n = (await ctx.storage.get<number>("n")) ?? 0; });
    this.bump = () => -1;                      // an own property: never callable over RPC
  }
  bump(by = 1) { this.n += by; void this.ctx.storage.put("n", this.n); }          // synchronous, the write not awaited
  clearLater(ms: number) { void this.ctx.storage.setAlarm(Date.now() + ms); }      // nor the alarm
  alarm() { this.n = 0; void this.ctx.storage.put("n", 0); }
  fetch(req: Request) {
    if (new URL(req.url).pathname === "/moved") return Response.redirect("https://example.com/there", 302);
    this.n += 1; void this.ctx.storage.put("n", this.n);
    return new Response(String(this.n));
  }
}
export default { fetch: (req: Request, env: any) => env.TALLY.get(env.TALLY.idFromName(new URL(req.url).pathname)).fetch(req) };
"""


def test_unawaited_writes_and_alarm_in_synchronous_methods_reloaded_after_an_eviction(js_host, tmp_path):
    (tmp_path / "index.ts").write_text(TALLY)
    (tmp_path / "wrangler.jsonc").write_text('{"main": "index.ts", // no compatibility_date: the profile\'s\n'
                                             '"durable_objects": {"bindings": [{"name": "TALLY", "class_name": "Tally"}]},\n'
                                             '"migrations": [{"tag": "v1", "new_classes": ["Tally"]}]}')
    call = {"call": "TALLY", "name": "/a"}
    (tmp_path / "drive.json").write_text(json.dumps({"steps": [
        {"at": 0, "fetch": "/a"}, {"at": 1000, "fetch": "/a"}, {"at": 2000, **call, "method": "clearLater", "args": [60_000]},
        {"at": 3000, **call, "method": "bump"}, {"at": 30_000, "evict": "TALLY", "name": "/a"}, {"at": 31_000, "fetch": "/a"},
        {"at": 70_000, "fetch": "/a"}, {"at": 71_000, "fetch": "/moved"}]}))
    r = subprocess.run([sys.executable, "-m", "alarmkit", "worker", "--wrangler", "wrangler.jsonc", "--drive", "drive.json",
                        "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr + r.stdout[-800:]
    s = json.loads(r.stdout)
    assert [(o["t_ms"], o.get("status"), o.get("body"), o.get("error")) for o in s["outcomes"]] == [
        (0, 200, "1", None), (1000, 200, "2", None), (2000, None, None, None),
        (3000, None, None, 'JsError: TypeError: The RPC receiver does not implement the method "bump".'),
        (31_000, 200, "3", None),            # woken cold: blockConcurrencyWhile reloaded 2 from storage
        (70_000, 200, "1", None),            # the alarm set without await fired at 62,001 ms and cleared it
        (71_000, 302, "", None)]
    assert [(a["t_ms"], a["retry_count"], a["outcome"]) for a in s["attempts"]] == [(62_001, 0, "ok")]


# A plain-JavaScript module (no TypeScript, no build): one SQLite-backed class whose alarm is first parked far
# out and then pulled in (the pattern of a public repro of alarms that production holds past their time).
DEADLINE = """import { DurableObject } from "cloudflare:workers";
export class Deadline extends DurableObject {
  born = crypto.randomUUID().slice(0, 6);              // tells one incarnation from the next
  async park(ms) { await this.ctx.storage.setAlarm(Date.now() + ms); }
  async pull(ms) { const due = Date.now() + ms; this.ctx.storage.put("due", due); await this.ctx.storage.setAlarm(due); return due; }
  async alarm() {
    const seen = (await this.ctx.storage.get("seen")) ?? [];
    await this.ctx.storage.put("seen", [...seen, [Date.now(), this.born]]);
  }
  async look() { return { pending: await this.ctx.storage.getAlarm(), seen: (await this.ctx.storage.get("seen")) ?? [] }; }
  async nudge(how) {
    const pending = await this.ctx.storage.getAlarm();
    if (how === "write") await this.ctx.storage.put("nudged", true);
    else await this.ctx.storage.setAlarm(how === "again" ? pending : Date.now() + 1);
  }
}
export default {
  async fetch(req, env) {
    const u = new URL(req.url), stub = env.DEADLINE.getByName(u.searchParams.get("k"));
    if (u.pathname === "/move") { await stub.park(60_000); return Response.json(await stub.pull(1_500)); }
    if (u.pathname === "/look") return Response.json(await stub.look());
    await stub.nudge(u.searchParams.get("how"));
    return new Response("nudged");
  },
};
"""


def _deadline_project(tmp_path, steps):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.js").write_text(DEADLINE)
    (tmp_path / "wrangler.jsonc").write_text('{"main": "src/index.js", "compatibility_date": "2026-09-01",\n'
                                             ' "durable_objects": {"bindings": [{"name": "DEADLINE", "class_name": "Deadline"}]},\n'
                                             ' "migrations": [{"tag": "v1", "new_sqlite_classes": ["Deadline"]}]}')
    (tmp_path / "drive.json").write_text(json.dumps({"steps": steps, "until": 120_000}))


def test_a_plain_js_alarm_moved_earlier_fires_at_its_new_time_and_wakes_an_evicted_object(js_host, tmp_path):
    _deadline_project(tmp_path, [{"at": 0, "fetch": "/move?k=a"}, {"at": 200, "fetch": "/move?k=b"},
                                 {"at": 1000, "evict": "DEADLINE", "name": "b"}, {"at": 5000, "fetch": "/look?k=a"},
                                 {"at": 5000, "fetch": "/look?k=b"}, {"at": 6000, "fetch": "/nudge?k=a&how=again"}])
    r = subprocess.run([sys.executable, "-m", "alarmkit", "worker", "--wrangler", "wrangler.jsonc", "--drive", "drive.json",
                        "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr + r.stdout[-800:]
    s = json.loads(r.stdout)
    bodies = [json.loads(o["body"]) if o.get("status") == 200 else o.get("status") for o in s["outcomes"]]
    assert bodies[:2] == [1_500, 1_700]
    # each fired once, at the pulled-in time (+1 ms of measured latency), never at the replaced 60 s one
    assert [(a["t_ms"], a["object_id"]) for a in s["attempts"]] == [(1_501, "a"), (1_701, "b")]
    (at_a, born_a), (at_b, born_b) = bodies[2]["seen"][0], bodies[3]["seen"][0]
    assert (bodies[2]["pending"], at_a, bodies[3]["pending"], at_b) == (None, 1_501, None, 1_701)
    assert born_a != born_b  # b was evicted at 1,000 ms: its alarm woke a new incarnation
    # setAlarm(getAlarm()) with no alarm left is setAlarm(null): workerd's own TypeError (checked with
    # `alarmkit record` on workerd), so the request answers 500, and the reason is in the output, as wrangler
    # dev's terminal shows it (before, only the journal's console events had it)
    assert bodies[4] == 500
    why = ("Uncaught TypeError: Failed to execute 'setAlarm' on 'DurableObjectStorage': parameter 1 is not of type "
           "'date'. (in the worker's fetch handler)")
    assert s["logs"] == [[6_000, "error", why]]
    text = subprocess.run([sys.executable, "-m", "alarmkit", "worker", "--wrangler", "wrangler.jsonc", "--drive",
                           "drive.json"], cwd=tmp_path, capture_output=True, text=True, timeout=300).stdout
    assert f"  console.error at   6000 ms  {why}" in text.splitlines()


def test_a_forgotten_alarm_stays_overdue_until_set_again_and_a_write_does_not_help(js_host, tmp_path):
    from alarmkit import FaultPlan
    from alarmkit.workers import run_worker

    keys = ("wait", "next", "again", "write")
    _deadline_project(tmp_path, [{"at": 0, "fetch": f"/move?k={k}"} for k in keys]
                      + [{"at": 5_000, "fetch": f"/nudge?k={k}&how={k}"} for k in keys[1:]]
                      + [{"at": 6_000, "fetch": f"/look?k={k}"} for k in keys])
    plan = FaultPlan.from_dict({"forgotten_alarms": [{"at_ms": 1_000, "object": k} for k in keys]})
    res = run_worker(None, tmp_path / "drive.json", wrangler=tmp_path / "wrangler.jsonc", faults=plan)
    looks = {k: json.loads(o["body"]) for k, o in zip(keys, res.summary["outcomes"][-4:])}
    assert {k: (v["pending"], [at for at, _ in v["seen"]]) for k, v in looks.items()} == {
        "wait": (1_500, []),            # getAlarm() keeps answering the overdue time; alarm() never ran
        "next": (None, [5_002]),        # setAlarm(now + 1 ms) at 5,000: fired at 5,001 + 1
        "again": (None, [5_001]),       # setAlarm(the same, past, time): fired at once, + 1
        "write": (1_500, [])}           # an unrelated put() does not bring it back
    assert [(a["t_ms"], a["object_id"]) for a in res.attempts] == [(5_001, "again"), (5_002, "next")]
