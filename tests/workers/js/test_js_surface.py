"""The runtime surface real code touches at load and at start: Node built-ins under
nodejs_compat (pure ones as Node's own, outside-reaching ones refused at the use), AsyncLocalStorage
across virtual timers, WebSocketPair and the hibernation API, caches (a miss, journaled), cloudflare:email,
exports, workerd's RPC names, blockConcurrencyWhile after the constructor, unbound env names, a
throwing fetch handler answered 500."""

import pytest

import alarmkit as ak


@pytest.fixture
def surface(js_host):
    sim = ak.Simulation(seed=1)
    w = sim.load_worker(js_host / "surface.js", bindings={"SURFACE": "Surface"}, compatibility_flags=["nodejs_compat"])
    return sim, w, w.env.SURFACE.getByName("s")


def test_block_concurrency_while_runs_after_the_constructor(surface):
    sim, _, s = surface
    assert sim.call(s.order()) == ["ctor start", "ctor end", "bcw sees this.ready=true"]


def test_node_builtins_under_nodejs_compat_and_their_randomness_from_the_seed(surface, js_host):
    sim, _, s = surface
    out = sim.call(s.node())
    assert out["ext"] == ".txt" and out["hash"] == "ba7816bf8f01cfea" and out["b64"] == "aGk=" and out["heard"] == 7
    again = ak.Simulation(seed=1)
    w2 = again.load_worker(js_host / "surface.js", bindings={"SURFACE": "Surface"}, compatibility_flags=["nodejs_compat"])
    out2 = again.call(w2.env.SURFACE.getByName("s").node())
    assert (out2["rand"], out2["uuid"]) == (out["rand"], out["uuid"])           # node:crypto draws from the seed
    assert len(out["rand"]) == 8 and out["uuid"][14] == "4"


def test_an_outside_reaching_builtin_imports_and_refuses_its_use_by_name(surface):
    sim, _, s = surface
    with pytest.raises(ak.JsError) as err:
        sim.call(s.readFile())
    assert err.value.js_name == "WorkerUnsupported"
    assert str(err.value).startswith("WorkerUnsupported: node:fs.readFileSync() is refused under alarmkit's "
                                     "JavaScript host: node:fs reaches the file system, outside the simulation")


def test_without_nodejs_compat_a_builtin_does_not_build(js_host):
    with pytest.raises(ak.JsHostError, match=r'"node:async_hooks" is a Node.js built-in module, which workerd gives a '
                                             r'Worker only under the compatibility flag "nodejs_compat" \(or "nodejs_als"\) '
                                             r'\(or a compatibility date from 2026-08-04 on\)'):
        ak.Simulation(compatibility_date="2026-08-03").load_worker(js_host / "surface.js", bindings={"SURFACE": "Surface"})
    with pytest.raises(ak.JsHostError, match=r'flags now: \["no_nodejs_compat"\]'):
        ak.Simulation(compatibility_date="2026-08-04").load_worker(js_host / "surface.js", bindings={"SURFACE": "Surface"},
                                                                   compatibility_flags=["no_nodejs_compat"])
    # from 2026-08-04 nodejs_compat is the default (workerd 1.20261117.1 says so, and its table holds the date)
    sim = ak.Simulation(compatibility_date="2026-08-04")
    w = sim.load_worker(js_host / "surface.js", bindings={"SURFACE": "Surface"})
    assert sim.call(w.env.SURFACE.getByName("s").node())["ext"] == ".txt"


def test_async_local_storage_kept_across_virtual_timers(surface):
    sim, _, s = surface
    assert sim.call(s.als()) == {"who": "ann"}
    assert sim.now == 250
    assert sim.call(s.sleepy()) == 500                                        # node:timers/promises: virtual


def test_websocket_pair_and_the_hibernation_api(surface):
    sim, _, s = surface
    out = sim.call(s.sockets())
    assert out == {"all": 1, "tagged": 1, "none": 0, "tags": ["room:a", "user:ann"], "attachment": {"n": 1},
                   "got": ["echo ping at 0"], "auto": "pong", "stamp": None, "open": True}


def test_caches_always_miss_and_say_so_in_the_journal(surface):
    sim, w, s = surface
    assert sim.call(s.cache()) is True
    assert [t for _, _, t in w.logs] == [
        'alarmkit: caches.default.match("https://example.com/x"): the Cache API is always a miss under alarmkit (nothing is cached)',
        'alarmkit: caches.default.put("https://example.com/x"): the Cache API is always a miss under alarmkit (nothing is cached)']


def test_email_exports_and_unbound_env(surface):
    sim, _, s = surface
    assert sim.call(s.email()) == ["a@example.com", "b@example.com"]
    assert sim.call(s.exportsSeen()) == ["function", "function", True]


def test_rpc_names_as_workerd(surface):
    sim, _, s = surface
    assert sim.call(s.callPrivate()) == "underscore ok"                      # `_`-prefixed: callable
    with pytest.raises(ak.JsError, match="'webSocketMessage' is a reserved method and cannot be called over RPC."):
        sim.call(s.callReserved())
    assert sim.call(s.readGetter()) == "42 from other"                     # the other object's getter, read over RPC
    out = sim.call(s.target())  # an RpcTarget crosses by reference (test_js_by_reference.py): Python sees its mark
    assert list(out) == ["counter"] and list(out["counter"]) == ["$stub"] and out["counter"]["$stub"][2] == "target"


def test_a_throwing_fetch_handler_answers_500_and_is_journaled(surface):
    sim, w, _ = surface
    r = w.fetch("/boom")
    assert (r.status, r.text()) == (500, "Internal Server Error")
    assert w.logs[-1] == (0, "error", "Uncaught ReferenceError: nope is not defined (in the worker's fetch handler)")


def test_unbound_env_name_is_undefined_as_workerd(js_host):
    sim = ak.Simulation()
    w = sim.load_worker(js_host / "api.js", bindings={"PROBE": "Probe"})
    assert sim.call(w.env.PROBE.getByName("p").unbound()) is None


def test_wrangler_flags_dev_vars_and_a_5xx_that_is_not_ok(js_host, tmp_path):
    import json
    import subprocess
    import sys

    (tmp_path / "wrangler.jsonc").write_text(json.dumps({
        "main": str(js_host / "surface.js"), "compatibility_date": "2026-09-01", "compatibility_flags": ["nodejs_compat"],
        "durable_objects": {"bindings": [{"name": "SURFACE", "class_name": "Surface"}]},
        "vars": {"GREETING": "hello", "TOKEN": "from vars"}}))
    (tmp_path / ".dev.vars").write_text('# local secrets\nTOKEN="s3cr\\nt"\nexport OTHER = plain # note\n')
    sim = ak.Simulation()
    w = sim.load_worker(wrangler=tmp_path / "wrangler.jsonc")
    assert (w.env.GREETING, w.env.TOKEN, w.env.OTHER) == ("hello", "s3cr\nt", "plain")   # .dev.vars over vars
    (tmp_path / "drive.json").write_text(json.dumps({"steps": [{"at": 0, "fetch": "/"}, {"at": 5, "fetch": "/boom"}],
                                                     "expect": [{"requests": "ok"}]}))
    r = subprocess.run([sys.executable, "-m", "alarmkit", "worker", "--wrangler", str(tmp_path / "wrangler.jsonc"),
                        "--drive", str(tmp_path / "drive.json")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr
    assert "EXPECT FAILED: 1 request(s) did not finish ok, first step 2 (GET /boom): answered 500" in r.stdout


def test_a_dev_vars_line_that_is_not_name_value_is_refused(js_host, tmp_path):
    (tmp_path / "wrangler.jsonc").write_text('{"main": "%s"}' % (js_host / "ttl.js"))
    (tmp_path / ".dev.vars").write_text("GOOD=1\nnot a pair\n")
    with pytest.raises(ak.WorkerError, match=r"\.dev\.vars, line 2: expected NAME=value \(NAME an identifier\), got 'not a pair'"):
        ak.Simulation().load_worker(wrangler=tmp_path / "wrangler.jsonc")


def test_process_is_the_workers_with_its_text_vars_and_the_virtual_clock(js_host):
    sim = ak.Simulation(seed=1, compatibility_date="2026-09-01")
    w = sim.load_worker(js_host / "surface.js", bindings={"SURFACE": "Surface", "TOKEN": ak.workers.Var("t0k"),
                                                          "LIMITS": ak.workers.Var({"n": 1})},
                        compatibility_flags=["nodejs_compat"])
    sim.run(until=1_500)
    out = sim.call(w.env.SURFACE.getByName("s").proc())
    assert out == {"env": {"TOKEN": "t0k"}, "same": True, "hr": [1, 500_000_000], "up": 1.5, "home": None,
                   "exit": "WorkerUnsupported: process.exit() is refused under alarmkit's JavaScript host: a Worker "
                           "does not own its process; throw an error (or ctx.abort()) instead"}
    sim2 = ak.Simulation(compatibility_date="2025-03-01")   # before nodejs_compat_populate_process_env's default
    w2 = sim2.load_worker(js_host / "surface.js", bindings={"SURFACE": "Surface", "TOKEN": ak.workers.Var("t0k")},
                          compatibility_flags=["nodejs_compat"])
    assert sim2.call(w2.env.SURFACE.getByName("s").proc())["env"] == {}


def test_wrangler_define_and_alias_shape_the_bundle(js_host, tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "real.js").write_text('export const who = "aliased";\n')
    (tmp_path / "w.js").write_text('import { who } from "fake-lib";\n'
                                   'export default { async fetch() { return new Response(`${__GREETING__} ${who}`); } };\n')
    (tmp_path / "wrangler.jsonc").write_text('{"main": "w.js", "define": {"__GREETING__": "\\"hi\\""}, '
                                             '"alias": {"fake-lib": "./lib/real.js"}}')
    w = ak.Simulation().load_worker(wrangler=tmp_path / "wrangler.jsonc")
    assert w.fetch("/").text() == "hi aliased"
    (tmp_path / "wrangler.jsonc").write_text('{"main": "w.js", "alias": {"fake-lib": 3}}')
    with pytest.raises(ak.WorkerError, match=r"alias must be a table of text to text, as wrangler's, got \{'fake-lib': 3\}"):
        ak.Simulation().load_worker(wrangler=tmp_path / "wrangler.jsonc")
