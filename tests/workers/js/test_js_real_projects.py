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
