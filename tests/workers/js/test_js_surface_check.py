"""One mechanical check of the runtime surface: every member of DurableObjectState, DurableObjectStorage,
SqlStorage and the worker global scope that @cloudflare/workers-types declares (pinned in
tests/workers/js/libs/workers-types/package-lock.json, installed with `npm ci` into a cache folder) is, under
the JavaScript host, either implemented or refused with a WorkerUnsupported error that names it: never
missing (a raw `x is not a function` / `x is not defined` in the user's code). The test lists both sets."""

import alarmkit as ak
import pytest
from alarmkit.workers.js import load
from workers_types import INTERFACES, declared, members  # tests/workers_types.py

# what the host implements and what it refuses by name (alarmkit/workers/js/host/surface.mjs), per interface;
# a member moving from one set to the other is a change of the host's surface: say it in docs/workers.md
IMPLEMENTED = {
    "ctx": ["abort", "acceptWebSocket", "blockConcurrencyWhile", "container", "exports", "facets",
            "getHibernatableWebSocketEventTimeout", "getTags", "getWebSocketAutoResponse",
            "getWebSocketAutoResponseTimestamp", "getWebSockets", "id", "props", "setHibernatableWebSocketEventTimeout",
            "setWebSocketAutoResponse", "storage", "waitUntil"],
    "storage": ["delete", "deleteAlarm", "deleteAll", "get", "getAlarm", "kv", "list", "put", "setAlarm", "sql", "sync",
                "transaction", "transactionSync"],
    "sql": ["Cursor", "databaseSize", "exec"],
}
REFUSED = {
    "ctx": [],
    "storage": ["getBookmarkForTime", "getCurrentBookmark", "onNextSessionRestoreBookmark"],  # globals.mjs
    "sql": ["Statement"],
}
# present and undefined, as workerd gives them: an object configured without a container (probed below)
AS_UNDEFINED = {"ctx.container"}
@pytest.fixture(scope="module")
def surface(js_host, npm_fixture):
    dts = (npm_fixture("workers-types") / "@cloudflare" / "workers-types" / "index.d.ts").read_text()
    names = declared(dts)
    sim = ak.Simulation(seed=0)
    w = load(sim, js_host / "surface_check.js", {"PROBE": "Probe"})
    return names, sim.call(w.env.PROBE.getByName("p").surface(names))


def test_the_parser_reads_members_not_parameters():
    dts = ("interface A {\n  get<T>(\n    key: string,\n  ): T;\n  readonly id: string;\n  /** x: y */\n"
           "  nested: {\n    inner: number;\n  };\n  get size(): number;\n}\ninterface B {\n  other(): void;\n}\n")
    assert members(dts, "A") == ["get", "id", "nested", "size"]


def test_every_declared_member_is_implemented_or_refused_by_name(surface):
    names, got = surface
    assert len(names["globals"]) > 90 and "setTimeout" in names["globals"] and "WebSocketPair" in names["globals"]
    bad = {f"{where}.{n}: {status} {msg}" for where, table in got.items() for n, (status, msg) in table.items()
           if status not in ("implemented", "refused") and not (status == "undefined" and f"{where}.{n}" in AS_UNDEFINED)}
    assert not bad, "members neither implemented nor refused by name:\n" + "\n".join(sorted(bad))
    for where, table in got.items():
        for n, (status, msg) in table.items():
            if status == "refused":  # the error names the member, as the module wrote it
                named = msg.removeprefix("WorkerUnsupported: ").split(" is ")[0]   # e.g. "new HTMLRewriter()"
                assert msg.startswith("WorkerUnsupported: ") and f"{'' if where == 'globals' else _path(where)}{n}" in named, (n, msg)


def _path(where: str) -> str:
    return {"ctx": "ctx.", "storage": "ctx.storage.", "sql": "ctx.storage.sql."}[where]


def test_the_two_sets_as_listed(surface):
    names, got = surface
    for where in INTERFACES:
        assert sorted(IMPLEMENTED[where] + REFUSED[where]) == names[where]      # workers-types' own list
        assert sorted(n for n, (s, _) in got[where].items() if s in ("implemented", "undefined")) == IMPLEMENTED[where]
        assert sorted(n for n, (s, _) in got[where].items() if s == "refused") == REFUSED[where]
    refused_globals = sorted(n for n, (s, _) in got["globals"].items() if s == "refused")
    implemented_globals = sorted(n for n, (s, _) in got["globals"].items() if s in ("implemented", "undefined"))
    print("globals implemented:", implemented_globals)
    print("globals refused:", refused_globals)
    assert {"setTimeout", "fetch", "crypto", "Request", "Response", "console", "navigator", "self"} <= set(implemented_globals)
    assert {"WebSocketPair", "caches", "HTMLRewriter"} <= set(refused_globals) | set(implemented_globals)


def test_a_refused_member_says_what_and_why(js_host):
    sim = ak.Simulation(seed=0)
    w = load(sim, js_host / "surface_check.js", {"PROBE": "Probe"})
    got = sim.call(w.env.PROBE.getByName("p").surface({"storage": ["getCurrentBookmark"], "ctx": ["getTags"]}))
    assert got["storage"]["getCurrentBookmark"] == [
        "refused", "WorkerUnsupported: ctx.storage.getCurrentBookmark() is refused under alarmkit's JavaScript "
                   "host: point-in-time recovery (bookmarks) is not modelled by the simulation"]
    got = sim.call(w.env.PROBE.getByName("p").surface({"sql": ["Statement"], "globals": ["URLPattern", "caches"]}))
    assert got["sql"]["Statement"][1].startswith("WorkerUnsupported: ctx.storage.sql.Statement is refused under "
                                                 "alarmkit's JavaScript host: prepared statements")
    assert got["globals"] == {"URLPattern": ["refused", "WorkerUnsupported: URLPattern is refused under alarmkit's "
                                                        "JavaScript host: it is not simulated under alarmkit"],
                              "caches": ["implemented", ""]}          # globals.mjs: always a miss


@pytest.mark.parametrize("date", ["2026-08-03", "2026-09-01"])   # before and after nodejs_compat became the default
def test_the_values_the_host_gives_are_real_workerds(js_host, tmp_path, date):
    """ctx.props and ctx.container undefined, self the global scope, navigator's userAgent:
    asked of real workerd 1.20261117.1 and of the host (skipped without workerd: alarmkit calibrate --install-only)."""
    import json
    import shutil
    import subprocess
    import time
    import urllib.request

    from alarmkit.calibrate.workerd import find_workerd, free_port

    binary = find_workerd()
    if binary is None:
        pytest.skip("workerd is not installed (alarmkit calibrate --install-only)")
    port = free_port()
    shutil.copy(js_host / "surface_values.js", tmp_path / "w.js")
    (tmp_path / "config.capnp").write_text(f'''using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w) ],
  sockets = [ (name = "http", address = "127.0.0.1:{port}", http = (), service = "main") ],
);
const w :Workerd.Worker = (
  modules = [ (name = "w.js", esModule = embed "w.js") ],
  compatibilityDate = "{date}",
  bindings = [ (name = "P", durableObjectNamespace = "P") ],
  durableObjectNamespaces = [ (className = "P", uniqueKey = "p-key", enableSql = true) ],
  durableObjectStorage = (inMemory = void),
);
''')
    proc = subprocess.Popen([str(binary), "serve", str(tmp_path / "config.capnp"), "--experimental"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
                    real = json.loads(r.read().decode())
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("workerd did not answer")
    finally:
        proc.kill()
        proc.wait()
    sim = ak.Simulation(seed=0)
    w = sim.load_worker(js_host / "surface_values.js", bindings={"P": "P"}, compatibility_date=date)
    ours = w.fetch("/").json()
    print("real workerd:", real, "alarmkit:", ours)
    assert ours == real   # setImmediate was the one difference its first run found: now as workerd's
    if date < "2026-08-04":  # no nodejs_compat: neither global
        assert (real["setImmediate"], real["clearImmediate"], real["order"]) == ("undefined", "undefined", [])
    else:
        assert (real["setImmediate"], real["clearImmediate"], real["handle"]) == ("function", "function", "object")
        assert real["order"] == ["timeout 0", "immediate"]
    assert (real["propsJson"], real["container"], real["userAgent"]) == ("{}", "undefined", "Cloudflare-Workers")
