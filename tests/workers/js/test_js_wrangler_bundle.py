"""``alarmkit worker --compare-wrangler``: wrangler's own dry-run bundle (wrangler pinned in
``libs/wrangler``, 4.86.0: the newest that runs on Node 20) beside the JS host's, on a fixture project
with TypeScript, ``nodejs_compat``, a package with a ``workerd`` export condition, a ``define`` and an
``alias``. Agreement is read from both bundles' module lists and texts; a tampered wrangler output
shows the comparison can say "differs"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from alarmkit.workers.js.wrangler_bundle import compare_outdir, compare_wrangler

INDEX = """import { DurableObject } from "cloudflare:workers";
import path from "node:path";
import { pick } from "picker";
import { label } from "labeller";
export class Clock extends DurableObject {
  async fetch(req: Request): Promise<Response> {
    await this.ctx.storage.put("set", Date.now());
    await this.ctx.storage.setAlarm(Date.now() + DELAY_MS);
    return new Response(path.join(pick(), label()));
  }
  async alarm(): Promise<void> {
    await this.ctx.storage.put("waited", Date.now() - (await this.ctx.storage.get<number>("set"))!);
  }
}
export default { fetch: (req: Request, env: any) => env.CLOCK.getByName("a").fetch(req) };
"""
WRANGLER = {"name": "clock", "main": "src/index.ts", "compatibility_date": "2025-06-01",
            "compatibility_flags": ["nodejs_compat"], "define": {"DELAY_MS": "2500"},
            "alias": {"labeller": "./src/other-label.ts"},
            "durable_objects": {"bindings": [{"name": "CLOCK", "class_name": "Clock"}]},
            "migrations": [{"tag": "v1", "new_sqlite_classes": ["Clock"]}]}


@pytest.fixture
def project(js_host, npm_fixture, tmp_path):
    modules = npm_fixture("wrangler")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.ts").write_text(INDEX)
    (tmp_path / "src" / "other-label.ts").write_text('export const label = (): string => "aliased";\n')
    (tmp_path / "wrangler.jsonc").write_text(json.dumps(WRANGLER))
    (tmp_path / "drive.json").write_text(json.dumps({
        "steps": [{"at": 0, "fetch": "/"}], "until": 10000,
        "expect": [{"requests": "ok"}, {"object": "CLOCK:a", "kv": "waited", "equals": 2501}]}))
    nm = tmp_path / "node_modules"
    nm.mkdir()
    for entry in os.listdir(modules):  # the pinned wrangler and its packages, plus one package of the project's
        (nm / entry).symlink_to(modules / entry)
    picker = nm / "picker"
    picker.mkdir()
    (picker / "package.json").write_text(json.dumps({"name": "picker", "exports": {
        ".": {"node": "./node.js", "workerd": "./workerd.js", "default": "./default.js"}}}))
    for name in ("node", "workerd", "default"):
        (picker / f"{name}.js").write_text(f'export const pick = () => "{name}";\n')
    return tmp_path


def test_wrangler_and_alarmkit_bundle_the_same_modules(project):
    r = compare_wrangler(project / "wrangler.jsonc")
    assert r.wrangler_version == "4.86.0"
    assert r.agree, r.line()
    # index.ts, the aliased module and the package's workerd file (never node.js or default.js)
    assert r.modules == 3 and r.only_wrangler == r.only_ours == r.differ == []
    assert r.cloudflare == {"wrangler": ["cloudflare:workers"], "ours": ["cloudflare:workers"]}
    assert r.shims["wrangler"] > 0  # wrangler's unenv polyfills: counted, named as not compared
    assert r.network_refused == 0  # CI=true and no metrics: the dry run never reached for the network


def test_the_dry_run_never_asks_for_a_newer_wrangler_whatever_the_machines_tmp_holds(project, tmp_path, monkeypatch):
    """wrangler's banner runs update-check, cached for an hour in the temporary folder: with an empty one (a stale
    cache, as the shared /tmp had at times) the dry run reached for the registry once (refused, counted) and the
    first test above failed now and then. The banner is hidden and wrangler's temporary folder is alarmkit's own."""
    machine_tmp = tmp_path / "machine-tmp"
    machine_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(machine_tmp))
    r = compare_wrangler(project / "wrangler.jsonc")
    assert r.agree and r.network_refused == 0
    assert list(machine_tmp.iterdir()) == []           # nothing of wrangler's (update-check/) left in the caller's


def test_a_tampered_wrangler_output_is_named_module_by_module(project, tmp_path):
    from alarmkit.workers.js import ensure
    from alarmkit.workers.wrangler import read_wrangler

    node, esbuild = ensure()
    out = tmp_path / "out"
    wrangler = project / "node_modules" / "wrangler" / "bin" / "wrangler.js"
    done = subprocess.run([node, str(wrangler), "deploy", "--dry-run", "--outdir", str(out)], cwd=project,
                          env=dict(os.environ, CI="true", WRANGLER_SEND_METRICS="false"), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-500:]
    mp = out / "index.js.map"
    m = json.loads(mp.read_text())
    i = next(k for k, s in enumerate(m["sources"]) if s.endswith("src/index.ts"))
    m["sourcesContent"][i] += "\n// edited"
    m["sources"].append("../src/label.ts")
    m["sourcesContent"].append("whatever")
    mp.write_text(json.dumps(m))
    r = compare_outdir(out, project / "src" / "index.ts", project, node, esbuild, read_wrangler(project / "wrangler.jsonc"))
    assert not r.agree
    assert (r.differ, r.only_wrangler, r.only_ours, r.modules) == (["src/index.ts"], ["src/label.ts"], [], 3)
    assert r.line().startswith("wrangler  bundle: DIFFERS from alarmkit's (only in wrangler's: src/label.ts; "
                               "different text: src/index.ts; not compared: wrangler's own polyfills (")


def test_the_command_prints_the_comparison_beside_the_run(project):
    out = subprocess.run([sys.executable, "-m", "alarmkit", "worker", "--wrangler", "wrangler.jsonc", "--drive",
                          "drive.json", "--compare-wrangler", "--json"], cwd=project, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    assert s["wrangler_bundle"]["agree"] is True and s["wrangler_bundle"]["modules"] == 3
    assert s["outcomes"][0]["body"] == "workerd/aliased"  # what the run bundled is what was compared
    assert s["expect_failures"] == [] and s["expectations"] == 2  # the define's 2500 ms + 1 ms measured fire latency (seed 0)
    assert s["final_alarms"] == {"a": None}


def test_paths_with_spaces_unicode_percent_and_hash_agree(project, tmp_path_factory):
    # wrangler's source map names its sources as URLs (ï as %C3%AF, % as %25, # as %23): read back as paths,
    # not taken for other files (it said DIFFERS, every module "only in" each bundle)
    where = tmp_path_factory.mktemp("x") / "dïr ☃ %41 #1"
    shutil.copytree(project, where, symlinks=True)
    (where / "src").rename(where / "src dir")
    (where / "src dir" / "index.ts").rename(where / "src dir" / "ïndex %25 #1.ts")
    w = json.loads((where / "wrangler.jsonc").read_text())
    w.update(main="src dir/ïndex %25 #1.ts", alias={"labeller": "./src dir/other-label.ts"})
    (where / "wrangler.jsonc").write_text(json.dumps(w))
    r = compare_wrangler(where / "wrangler.jsonc")
    assert r.agree and r.modules == 3, r.line()


def test_the_dry_run_never_reaches_for_the_network_even_with_wranglers_update_cache_stale(project, tmp_path_factory,
                                                                                         monkeypatch):
    # wrangler's banner asks registry.npmjs.org for a newer wrangler once its cache (TMPDIR/update-check, a day)
    # is stale: refused and counted, so network_refused was 1 or 0 by the machine's /tmp (the banner is hidden now)
    monkeypatch.setenv("TMPDIR", str(tmp_path_factory.mktemp("fresh-tmp")))
    r = compare_wrangler(project / "wrangler.jsonc")
    assert r.agree and r.network_refused == 0, r.line()
