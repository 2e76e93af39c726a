"""Hostile input to the JavaScript host: modules that do not parse or build, missing exports, bad
bindings, throwing constructors, a missing or too old Node, and generated module text. Each is a
JsHostError/AlarmkitError with one clean line, never a hang, never another exception."""

import json
import os
import re
import stat

import alarmkit as ak
import pytest
try:
    from hypothesis import HealthCheck, given, settings
    from tiers import tier_examples  # a tenth of the examples in the quick tier
    from hypothesis import strategies as st
except ImportError:  # the dev extra brings it (pyproject.toml); without it only the generated test is skipped
    given = None

from alarmkit.workers.js import available, load

OBJECTS = os.path.join(os.path.dirname(__file__), "..", "workers", "js", "objects")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

pytestmark = pytest.mark.skipif(available() is not None, reason=f"the JavaScript host cannot run here: {available()}")


def one_clean_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text and not CONTROL.search(text), repr(text)
    return text


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_module_that_does_not_parse(tmp_path):
    p = write(tmp_path, "w.js", "export class A extends {\n")
    with pytest.raises(ak.JsHostError) as err:
        load(ak.Simulation(), p, {"A": "A"})
    assert one_clean_line(err.value).endswith("does not build: BuildError: w.js:2:0: Expected identifier but found end of file")


def test_typescript_syntax_error_reported_by_esbuild(tmp_path):
    p = write(tmp_path, "w.ts", "export class A { x: number = ; }\n")
    with pytest.raises(ak.JsHostError, match=r"does not build: BuildError: .*w\.ts:1:\d+: Unexpected"):
        load(ak.Simulation(), p, {"A": "A"})


def test_module_that_throws_while_loading(tmp_path):
    p = write(tmp_path, "w.js", "throw new Error('top-level boom');\nexport class A {}\n")
    with pytest.raises(ak.JsHostError, match="could not be loaded: Error: top-level boom"):
        load(ak.Simulation(), p, {"A": "A"})


def test_class_in_bindings_not_exported(tmp_path):
    p = write(tmp_path, "w.js", "export class Ledger {}\nexport class Other {}\n")
    with pytest.raises(ak.JsHostError) as err:
        load(ak.Simulation(), p, {"L": "Ledgr"})
    assert one_clean_line(err.value) == (
        'bindings["L"] names class Ledgr, which the module does not export; it exports: ["Ledger","Other"]')


@pytest.mark.parametrize("bindings, message", [
    ({"not a name": "A"}, "binding names are identifiers"),
    ({"A": float("nan")}, r"A cannot cross to JavaScript \(JSON values only\)"),
    ({"A": "no such"}, r"bindings\['A'\] names a class as an identifier"),
    ({"A": dict}, r"bindings\['A'\] is a Python class \(dict\)"),
])
def test_bad_bindings_refused_before_node_starts(tmp_path, bindings, message):
    p = write(tmp_path, "w.js", "export class A {}\n")
    with pytest.raises(ak.AlarmkitError, match=message):
        load(ak.Simulation(), p, bindings)


@pytest.mark.parametrize("name", ["w.py", "missing.js"])
def test_not_a_js_module(tmp_path, name):
    if name == "w.py":
        write(tmp_path, name, "x = 1\n")
    with pytest.raises(ak.AlarmkitError, match="JavaScript worker is a|does not exist"):
        load(ak.Simulation(), tmp_path / name, {})


def test_constructor_throwing_fails_the_call_and_counts_for_alarms():
    sim = ak.Simulation(seed=0)
    w = load(sim, os.path.join(OBJECTS, "bad_ctor.js"), {"F": "Fragile"})
    with pytest.raises(ak.JsError) as err:
        sim.call(w.env.F.getByName("broken").hello())
    assert one_clean_line(err.value) == "RangeError: constructor refused to start"
    assert err.value.js_name == "RangeError"
    assert sim.call(w.env.F.getByName("fine").hello()) == "hi"


def test_node_missing(monkeypatch, tmp_path):
    monkeypatch.delenv("ALARMKIT_NODE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    p = write(tmp_path, "w.js", "export class A {}\n")
    with pytest.raises(ak.JsHostError, match="needs Node.js 18 or newer: `node` is not on PATH"):
        load(ak.Simulation(), p, {"A": "A"})


def test_node_too_old(monkeypatch, tmp_path):
    fake = tmp_path / "node"
    fake.write_text("#!/bin/sh\necho v16.20.0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("ALARMKIT_NODE", str(fake))
    p = write(tmp_path, "w.js", "export class A {}\n")
    with pytest.raises(ak.JsHostError) as err:
        load(ak.Simulation(), p, {"A": "A"})
    assert "needs Node.js 18 or newer" in one_clean_line(err.value) and "v16.20.0" in str(err.value)


def test_one_worker_per_simulation(tmp_path):
    p = write(tmp_path, "w.js", "export class A {}\n")
    sim = ak.Simulation()
    load(sim, p, {"A": "A"})
    with pytest.raises(ak.AlarmkitError, match="already runs a JavaScript worker"):
        load(sim, p, {"B": "A"})


if given is None:
    def test_generated_module_text_never_hangs_or_crashes():
        pytest.skip("hypothesis is not installed (pip install -e .[dev])")
else:
    @settings(max_examples=tier_examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(body=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60))
    def test_generated_module_text_never_hangs_or_crashes(tmp_path, body):
        p = tmp_path / "gen.js"
        p.write_text(body + "\nexport class A { ping() { return 1; } }\n")
        sim = ak.Simulation()
        try:
            w = load(sim, p, {"A": "A"})
        except ak.AlarmkitError as err:
            assert isinstance(err, ak.JsHostError)
            one_clean_line(err)
            return
        try:
            assert sim.call(w.env.A.getByName("a").ping()) == 1
        except ak.AlarmkitError as err:  # the generated text may leave a bad global behind; never another error
            one_clean_line(err)


LOOPING = """import { DurableObject } from "cloudflare:workers";
export class S extends DurableObject {
  constructor(ctx, env) { super(ctx, env); if (ctx.id.name === "ctor") for (;;) {} }
  async spin() { for (;;) {} }
  async arm() { await this.ctx.storage.setAlarm(Date.now() + 1000); }
  async later() { setTimeout(() => { for (;;) {} }, 50); }
  async fetch(request) { while (true) {} }
  async alarm() { while (true) {} }
}
"""


@pytest.mark.parametrize("name, method, doing, at", [
    ("a", "spin", "S:a.spin()", 0),
    ("ctor", "spin", "the constructor of S:ctor", 0),
    ("a", "fetch", "S:a.fetch()", 0),
    ("a", "arm", "S:a.alarm()", 1001),  # set for 1000, delivered 1 ms late (seed 0's draw); the alarm's failure is not a retried one: the run stops
    ("a", "later", "a timer callback of S:a", 50),
])
def test_a_synchronous_endless_loop_is_stopped_naming_the_object_and_the_limit(tmp_path, name, method, doing, at):
    sim = ak.Simulation()
    w = load(sim, write(tmp_path, "w.js", LOOPING), {"S": "S"})
    sim._js_bridge.proc.answer_s = 1.0  # ALARMKIT_JSHOST_TIMEOUT_S=1 after the load (esbuild may take a second)
    stub = w.env.S.getByName(name)
    with pytest.raises(ak.JsHostError) as err:
        sim.call(stub.fetch("http://x/") if method == "fetch" else getattr(stub, method)())
        sim.run(until=10_000)
    said = one_clean_line(err.value)
    assert said == (
        f"{doing} did not finish within 1 s of wall-clock time (a synchronous endless loop in its JavaScript?): "
        "the JavaScript host was stopped and this simulation cannot go on; if the code is only slow, "
        "raise ALARMKIT_JSHOST_TIMEOUT_S (seconds, now 1)")
    assert sim.now == at
    with pytest.raises(ak.JsHostError) as again:  # the host stays gone: the same error for anything after
        sim.call(w.env.S.getByName("b").arm())
    assert str(again.value) == said


def test_an_endless_alarm_on_the_cli_is_one_line_exit_2(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ALARMKIT_JSHOST_TIMEOUT_S", "4")  # the load (esbuild) must fit in it too
    write(tmp_path, "w.js", LOOPING)
    write(tmp_path, "d.json", json.dumps({"steps": [{"at": 0, "call": "S", "name": "a", "method": "arm"}]}))
    rc, out, err = run_cli(capsys, ["worker", str(tmp_path / "w.js"), "--bind", "S=S", "--drive", str(tmp_path / "d.json")])
    assert rc == 2 and out == ""
    assert err == ("alarmkit: error: S:a.alarm() did not finish within 4 s of wall-clock time (a synchronous endless "
                   "loop in its JavaScript?): the JavaScript host was stopped and this simulation cannot go on; if the "
                   "code is only slow, raise ALARMKIT_JSHOST_TIMEOUT_S (seconds, now 4)\n")


def test_explore_stops_at_the_first_run_whose_host_hung_and_names_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ALARMKIT_JSHOST_TIMEOUT_S", "4")
    write(tmp_path, "w.js", LOOPING)
    write(tmp_path, "d.json", json.dumps({"steps": [{"at": 0, "call": "S", "name": "a", "method": "arm"}]}))
    rc, out, err = run_cli(capsys, ["explore", "--worker", str(tmp_path / "w.js"), "--bind", "S=S",
                                    "--drive", str(tmp_path / "d.json"), "--seeds", "5", "--workers", "1"])
    assert rc == 2, (out, err)
    lines = [ln for ln in err.splitlines() if ln.startswith("alarmkit: error")]
    assert len(lines) == 1 and lines[0].startswith("alarmkit: error: explore stopped at run ")
    assert lines[0].endswith("S:a.alarm() did not finish within 4 s of wall-clock time (a synchronous endless loop in "
                             "its JavaScript?): the JavaScript host was stopped and this simulation cannot go on; if "
                             "the code is only slow, raise ALARMKIT_JSHOST_TIMEOUT_S (seconds, now 4)")


@pytest.mark.parametrize("value", ["0", "soon", "-3", "1e9"])
def test_bad_host_timeout_setting_is_refused(monkeypatch, tmp_path, value):
    monkeypatch.setenv("ALARMKIT_JSHOST_TIMEOUT_S", value)
    p = write(tmp_path, "w.js", "export class A {}\n")
    with pytest.raises(ak.JsHostError, match=r"ALARMKIT_JSHOST_TIMEOUT_S must be seconds in \(0, 86400\]"):
        load(ak.Simulation(), p, {"A": "A"})


@pytest.mark.parametrize("value", ["-1", "fast", "1e5", "nan"])
def test_bad_host_poll_setting_is_refused(monkeypatch, tmp_path, value):
    monkeypatch.setenv("ALARMKIT_JSHOST_SPIN_US", value)
    p = write(tmp_path, "w.js", "export class A {}\n")
    with pytest.raises(ak.JsHostError, match=r"^ALARMKIT_JSHOST_SPIN_US must be microseconds in \[0, 10000\], got "):
        load(ak.Simulation(), p, {"A": "A"})


def test_calibrate_js_host_without_node_is_one_line_exit_2(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "ALARMKIT_NODE"}
    env.update(PATH=str(tmp_path), PYTHONPATH=str(root))
    p = subprocess.run([sys.executable, "-m", "alarmkit", "calibrate", "--reference", "--js-host"], capture_output=True,
                       text=True, cwd=tmp_path, env=env, timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs Node.js 18 or newer" in lines[0] and not CONTROL.search(p.stderr)
    assert list(tmp_path.iterdir()) == []


# -- the CLI on a .ts entry: `alarmkit worker` and `alarmkit explore --worker`, as for a Python worker ----------
TS_WORKER = """import { DurableObject } from "cloudflare:workers";
export class Box extends DurableObject {
  async put(value: unknown): Promise<unknown> {
    await this.ctx.storage.put("v", value);
    await this.ctx.storage.setAlarm(Date.now() + 1000);
    return value;
  }
  async alarm(): Promise<void> {
    await this.ctx.storage.put("fired", true);
  }
}
export class Broken extends DurableObject {
  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    throw new Error("ctor \\u001b[31mboom\\u202e");
  }
  async put(): Promise<void> {}
}
export default {
  async fetch(request: Request): Promise<Response> {
    return new Response((await request.text()) + "\\u001b[31m\\u202e");
  },
};
"""
CLI_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def snapshot(folder):
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def run_cli(capsys, argv):
    from alarmkit.cli import main

    try:
        rc = main(argv)
    except SystemExit as exit_:  # argparse's usage errors
        rc = exit_.code
    out, err = capsys.readouterr()
    assert rc in (0, 1, 2), (rc, out, err)
    assert not CLI_CONTROL.search(out) and not CLI_CONTROL.search(err), (out, err)
    assert "Traceback" not in err
    if rc == 2:
        assert len([x for x in err.splitlines() if x.startswith("alarmkit: error")]) == 1, err
    if rc == 1:
        assert "EXPECT FAILED" in out
    return rc, out, err


@pytest.fixture
def ts_project(tmp_path):
    write(tmp_path, "w.ts", TS_WORKER)
    return tmp_path


@pytest.mark.parametrize("source, argv, message", [
    ("export class A { x: number = ; }\n", ["--bind", "BOX=A"], r"does not build: BuildError: .*w\.ts:1:\d+: Unexpected"),
    (TS_WORKER, ["--bind", "BOX=Boxx"], r'bindings\["BOX"\] names class Boxx, which the module does not export'),
    (TS_WORKER, ["--bind", "BOX=Box", "--compat", "soon"], r"compatibility_date is a date such as '2026-11-17'"),
    (TS_WORKER, ["--bind", "NOPE=Box", "--bind", "BOX=Box", "--drive-method", "missing"], r"Box \(binding BOX\) has no method 'missing'; its methods: \['alarm', 'put'\]"),
    (TS_WORKER, ["--bind", "BOX=Box", "--drive-binding", "OTHER"], r"has no Durable Object binding 'OTHER'"),
])
def test_cli_refuses_a_bad_ts_worker_in_one_line(ts_project, capsys, source, argv, message):
    write(ts_project, "w.ts", source)
    method = argv[argv.index("--drive-method") + 1] if "--drive-method" in argv else "put"
    binding = argv[argv.index("--drive-binding") + 1] if "--drive-binding" in argv else "BOX"
    argv = [a for i, a in enumerate(argv) if not a.startswith("--drive-") and not (i and argv[i - 1].startswith("--drive-"))]
    write(ts_project, "d.json", json.dumps({"steps": [{"call": binding, "name": "a", "method": method, "args": [1]}]}))
    before = snapshot(ts_project)
    for cmd in (["worker", str(ts_project / "w.ts")], ["explore", "--worker", str(ts_project / "w.ts"), "--workers", "1"]):
        rc, out, err = run_cli(capsys, [*cmd, "--drive", str(ts_project / "d.json"), *argv,
                                        "--db", str(ts_project / "j.duckdb")])
        assert rc == 2 and out == "" and re.search(message, err), err
    assert snapshot(ts_project) == before  # no journal made for a run refused before it started


def test_cli_runs_a_ts_worker_and_escapes_its_text(ts_project, capsys):
    write(ts_project, "d.json", json.dumps({"steps": [
        {"at": 0, "fetch": "/", "method": "POST", "body": "a\u0007b"},
        {"at": 10, "call": "BOX", "name": "a", "method": "put", "args": [7]},
        {"at": 20, "call": "BAD", "name": "b", "method": "put"}],
        "expect": [{"object": "BOX:a", "kv": "fired", "equals": True}, {"requests": "ok"}]}))
    rc, out, err = run_cli(capsys, ["worker", str(ts_project / "w.ts"), "--bind", "BOX=Box", "--bind", "BAD=Broken",
                                    "--drive", str(ts_project / "d.json")])
    assert rc == 1 and "a\\x07b\\x1b[31m\\u202e" in out  # the response body, escaped
    assert "alarm() at      1011 ms  retry_count=0  a" in out  # 1 ms late: seed 0's draw
    assert "error JsError: Error: ctor \\x1b[31mboom\\u202e" in out  # the constructor's throw, escaped
    assert "EXPECT FAILED: 1 request(s) did not finish ok, first step 3 (BAD:b.put)" in out


if given is not None:
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=True) | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
        max_leaves=8,
    )
    ts_steps = st.fixed_dictionaries({}, optional={
        "at": st.integers(-5, 3000) | json_values, "fetch": st.text(max_size=20) | st.just("/x"),
        "call": st.sampled_from(["BOX", "NOPE"]), "name": st.text(max_size=4) | st.just("a"),
        "method": st.sampled_from(["put", "alarm", "missing"]), "args": st.lists(json_values, max_size=2) | json_values,
        "body": st.text(max_size=20) | json_values, "restart": st.integers(-1, 3000), "evict": st.just("BOX"),
    })
    ts_drives = st.fixed_dictionaries({"steps": st.lists(ts_steps, max_size=4)}, optional={
        "until": st.integers(-1, 5000) | json_values,
        "expect": st.lists(st.fixed_dictionaries({}, optional={
            "object": st.sampled_from(["BOX:a", "BOX", "X:y"]), "kv": st.text(max_size=3), "alarm": json_values,
            "equals": json_values, "requests": st.sampled_from(["ok", "no"])}), max_size=2)})

    @settings(max_examples=tier_examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(drive=ts_drives | json_values)
    def test_generated_drive_scripts_for_a_ts_worker(ts_project, capsys, drive):
        d = ts_project / "drive.json"
        d.write_text(json.dumps(drive))
        before = snapshot(ts_project)
        run_cli(capsys, ["worker", str(ts_project / "w.ts"), "--bind", "BOX=Box", "--drive", str(d)])
        assert snapshot(ts_project) == before


def test_the_node_host_dies_with_alarmkit_even_in_an_endless_loop(tmp_path):
    """SIGKILL (or SIGTERM) of alarmkit while the user's JS spins: the Node host is killed with its parent
    (PR_SET_PDEATHSIG), not left running at 100 % CPU under PID 1."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    write(tmp_path, "spin.js", 'import { DurableObject } from "cloudflare:workers";\n'
          "export class S extends DurableObject { async spin() { while (true) {} } }\n")
    script = ("import alarmkit as ak\nsim = ak.Simulation()\n"
              f"w = sim.load_worker({str(tmp_path / 'spin.js')!r}, bindings={{'S': 'S'}})\n"
              "print('loaded', flush=True)\nsim.call(w.env.S.getByName('a').spin())\n")
    root = str(Path(__file__).resolve().parents[2])
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": root})
    try:
        assert p.stdout.readline().strip() == "loaded"
        time.sleep(1)
        kids = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
        assert kids, "the Node host was not started"
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()

    def live(pid):
        try:
            return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
    for _ in range(100):
        if not any(live(k) for k in kids):
            break
        time.sleep(0.1)
    left = [k for k in kids if live(k)]
    for k in left:
        os.kill(int(k), signal.SIGKILL)
    assert not left, f"Node host(s) {left} outlived alarmkit"


FACETS_JS = """
import { DurableObject } from "cloudflare:workers";
export class Child extends DurableObject {
  async ping() { return "pong"; }
}
export class Parent extends DurableObject {
  async attempt(kind, name) {
    const f = this.ctx.facets;
    const cases = {
      name: () => f.get(name, () => ({ class: this.ctx.exports.Child })).ping(),
      nofn: () => f.get("a", name),
      throws: () => f.get("a", () => { throw new RangeError(name); }),
      shape: () => f.get("a", () => name).ping(),
      rejects: () => f.get("a", async () => { throw new Error(name); }).ping(),
      method: () => f.get("a", () => ({ class: this.ctx.exports.Child }))[name](),
      abort: () => f.abort(name, name),
      delete: () => f.delete(name),
    };
    try {
      return { ok: await cases[kind]() ?? null };
    } catch (e) {
      return { error: `${e.name}: ${e.message}` };
    }
  }
}
"""


@pytest.mark.parametrize("kind, arg, expected", [
    ("name", "", 'TypeError: facet names are non-empty strings, got ""'),
    ("name", 7, "TypeError: facet names are non-empty strings, got 7"),
    ("name", None, "TypeError: facet names are non-empty strings, got null"),
    ("name", "a\x00b\n", None),                                  # a name with control characters: a facet like any other
    ("name", "x" * 5000, None),
    ("nofn", {"class": "Child"}, "TypeError: The facet startup callback must be a function."),
    ("throws", "no class for you", "RangeError: no class for you"),
    ("shape", None, 'TypeError: ctx.facets.get("a", callback): the callback returned null; return '
                    "{ class: ctx.exports.ClassName } (or a Durable Object namespace of env as the class)"),
    ("shape", {"class": {"_name": "Child"}}, None),
    ("rejects", "late failure", "Error: late failure"),
    ("method", "nope", None),
    ("method", "__class__", None),
    ("abort", "never-started", None),
    ("delete", "never-started", None),
])
def test_hostile_facet_calls_are_one_line_errors_thrown_in_js(tmp_path, kind, arg, expected):
    p = write(tmp_path, "facets.js", FACETS_JS)
    sim = ak.Simulation(seed=0)
    parent = load(sim, p, {"P": "Parent"}).env.P.getByName("p")
    out = sim.call(parent.attempt(kind, arg))
    if expected is not None:
        assert out == {"error": expected}
    elif kind == "name":
        assert out == {"ok": "pong"}
    elif kind == "shape":  # a plain object shaped like ctx.exports.Child is not a class
        assert out["error"].startswith('TypeError: ctx.facets.get("a", callback): the callback returned {"class":{"_name":"Child"}}')
    elif kind == "method":  # the runtime's check: the facet class has no such method
        assert set(out) == {"error"} and "\n" not in out["error"] and arg in out["error"], out
    else:
        assert out == {"ok": None}
    assert sim.call(parent.attempt("name", "after")) == {"ok": "pong"}   # the parent still works


# -- issue 36/37: a project's libraries, its bundle, and connections out of the simulation --------------
NODEJS = '{"main": "w.js", "compatibility_date": "2026-09-01", "compatibility_flags": ["nodejs_compat"], ' \
         '"durable_objects": {"bindings": [{"name": "A", "class_name": "A"}]}}'

OUTSIDE = [
    ('import net from "node:net";\nnet.connect(80, "example.com");', "node:net.connect() is refused", "network sockets"),
    ('import tls from "tls";\ntls.connect(443, "example.com");', "node:tls.connect() is refused", "network sockets"),
    ('import http from "node:http";\nhttp.request("http://example.com/");', "node:http.request() is refused", "the network"),
    ('import { get } from "https";\nget("https://example.com/");', "node:https.get() is refused", "the network"),
    ('import dgram from "node:dgram";\ndgram.createSocket("udp4");', "node:dgram.createSocket() is refused", "network sockets"),
    ('import dns from "node:dns";\ndns.lookup("example.com", () => {});', "node:dns.lookup() is refused", "the machine's DNS"),
    ('import { exec } from "node:child_process";\nexec("sh");', "node:child_process.exec() is refused", "processes"),
    ('import { Worker } from "node:worker_threads";\nnew Worker("x.js");', "new node:worker_threads.Worker() is refused", "threads"),
    ('const fs = require("fs");\nfs.writeFileSync("out.txt", "x");', "node:fs.writeFileSync() is refused", "the file system"),
    ('import { writeFile } from "node:fs/promises";\nawait writeFile("out.txt", "x");', "node:fs/promises.writeFile() is refused", "the file system"),
    ('import { connect } from "cloudflare:sockets";\nconnect("example.com:80");', 'connect("example.com:80") from cloudflare:sockets is refused', "a connection out of the simulation"),
    ('new WebSocket("wss://example.com/");', 'new WebSocket("wss://example.com/") is refused', "a connection out of the simulation"),
]


@pytest.mark.parametrize("code, refused, reach", OUTSIDE, ids=[o[1].split("(")[0] for o in OUTSIDE])
def test_a_connection_or_file_out_of_the_simulation_is_refused_by_name(tmp_path, code, refused, reach):
    write(tmp_path, "w.js", code + "\nexport class A {}\n")
    write(tmp_path, "wrangler.jsonc", NODEJS)
    with pytest.raises(ak.JsHostError) as err:
        ak.Simulation().load_worker(wrangler=tmp_path / "wrangler.jsonc")
    text = one_clean_line(err.value)
    assert f"could not be loaded: WorkerUnsupported: {refused} under alarmkit's JavaScript host" in text and reach in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.js", "wrangler.jsonc"]     # nothing written


def test_a_library_that_is_not_installed(tmp_path):
    write(tmp_path, "w.js", 'import { Agent } from "agents";\nexport class A extends Agent {}\n')
    with pytest.raises(ak.JsHostError) as err:
        load(ak.Simulation(), tmp_path / "w.js", {"A": "A"})
    assert one_clean_line(err.value).endswith(
        'does not build: BuildError: w.js:1:22: Could not resolve "agents" (a package the project\'s node_modules does '
        "not hold: install the project's dependencies, e.g. npm ci in its folder)")


def test_a_half_installed_library(tmp_path):
    lib = tmp_path / "node_modules" / "halflib"
    lib.mkdir(parents=True)
    write(lib, "package.json", '{"name": "halflib", "version": "1.0.0", "main": "dist/index.js"}')
    write(tmp_path, "w.js", 'import x from "halflib";\nexport class A {}\n')
    with pytest.raises(ak.JsHostError, match=r'does not build: BuildError: w\.js:1:14: Could not resolve "halflib" \(a '
                                             r"package the project's node_modules does not hold"):
        load(ak.Simulation(), tmp_path / "w.js", {"A": "A"})


def test_a_library_that_does_not_build(tmp_path):
    lib = tmp_path / "node_modules" / "badlib"
    lib.mkdir(parents=True)
    write(lib, "package.json", '{"name": "badlib", "version": "1.0.0", "main": "index.js"}')
    write(lib, "index.js", "export const x = ;\n")
    write(tmp_path, "w.js", 'import { x } from "badlib";\nexport class A {}\n')
    with pytest.raises(ak.JsHostError) as err:
        load(ak.Simulation(), tmp_path / "w.js", {"A": "A"})
    assert re.search(r"does not build: BuildError: node_modules/badlib/index\.js:1:17: Unexpected \";\"$", one_clean_line(err.value))


def test_a_builtin_without_nodejs_compat(tmp_path):
    write(tmp_path, "w.js", 'import path from "path";\nexport class A {}\n')
    with pytest.raises(ak.JsHostError) as err:
        load(ak.Simulation(compatibility_date="2026-08-03"), tmp_path / "w.js", {"A": "A"})
    assert '"path" is a Node.js built-in module, which workerd gives a Worker only under the compatibility flag ' \
           '"nodejs_compat"' in one_clean_line(err.value)


@pytest.mark.parametrize("code", [
    'import net from "node:net";\nnet.connect(80, "example.com");',
    'import { Agent } from "agents";',
    "export const = 1;",
])
def test_cli_one_line_exit_2_and_nothing_written(tmp_path, code):
    import subprocess
    import sys

    write(tmp_path, "w.js", code + "\nexport class A {}\n")
    write(tmp_path, "wrangler.jsonc", NODEJS)
    write(tmp_path, "drive.json", '{"steps": [{"at": 0, "fetch": "/"}]}')
    r = subprocess.run([sys.executable, "-m", "alarmkit", "worker", "--wrangler", "wrangler.jsonc", "--drive", "drive.json",
                        "--db", "j.duckdb", "--report", "r.html"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("alarmkit: error: worker module ") and r.stderr.count("\n") == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["drive.json", "w.js", "wrangler.jsonc"]


PROCESS_WAYS_OUT = [
    ('process.getBuiltinModule("fs").writeFileSync("out.txt", "x");', "process.getBuiltinModule() is refused"),
    ('process.getBuiltinModule("child_process").execSync("touch out.txt");', "process.getBuiltinModule() is refused"),
    ('process.getBuiltinModule("module").createRequire("/")("fs").writeFileSync("out.txt", "x");',
     "process.getBuiltinModule() is refused"),
    ('process.stdout.write("x");', "Cannot read properties of undefined (reading 'write')"),
]


@pytest.mark.parametrize("code, refused", PROCESS_WAYS_OUT, ids=["fs", "child_process", "createRequire", "stdout"])
def test_the_workers_process_hands_out_nothing_of_the_machine(tmp_path, code, refused):
    """The worker's ``process`` passes through only what Node is (versions, platform): getBuiltinModule (Node's real
    fs, child_process...) is refused by name, the machine's report, paths and streams are undefined."""
    write(tmp_path, "w.js", code + "\nexport class A {}\n")
    write(tmp_path, "wrangler.jsonc", NODEJS)
    with pytest.raises(ak.JsHostError) as err:
        ak.Simulation().load_worker(wrangler=tmp_path / "wrangler.jsonc")
    assert refused in one_clean_line(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.js", "wrangler.jsonc"]     # nothing written


def test_the_workers_process_shows_no_environment_path_or_report(tmp_path, monkeypatch):
    monkeypatch.setenv("ALARMKIT_TEST_SECRET", "hunter2")
    write(tmp_path, "w.js", '''
export class A {
  look() {
    let ev = 0;
    process.on("tick", () => { ev += 1; });
    process.emit("tick");
    return [typeof process.report, typeof process.execPath, typeof process.config, typeof process.memoryUsage,
            JSON.stringify(process.env).includes("hunter2"), typeof process.versions.node, ev];
  }
}
export default { async fetch() { return new Response("ok"); } };
''')
    write(tmp_path, "wrangler.jsonc", '{"main": "w.js", "compatibility_date": "2026-09-01", "durable_objects": '
                                      '{"bindings": [{"name": "A", "class_name": "A"}]}}')
    sim = ak.Simulation()
    w = sim.load_worker(wrangler=tmp_path / "wrangler.jsonc")
    assert sim.call(w.env.A.getByName("a").look()) == [
        "undefined", "undefined", "undefined", "function", False, "string", 1]



def test_a_result_past_a_workers_memory_is_a_sql_error_and_the_host_lives_on(tmp_path):
    """``SELECT zeroblob(1e9)`` ended the JavaScript host (ERR_STRING_TOO_LONG) for the rest of the simulation."""
    write(tmp_path, "w.js", '''
import { DurableObject } from "cloudflare:workers";
export class A extends DurableObject {
  go(n) {
    try {
      return this.ctx.storage.sql.exec("SELECT length(zeroblob(?)) AS n, zeroblob(?) AS b", n, n).one().n;
    } catch (e) {
      return e.name + ": " + e.message;
    }
  }
}
export default { async fetch() { return new Response("ok"); } };
''')
    write(tmp_path, "wrangler.jsonc", '{"main": "w.js", "compatibility_date": "2026-09-01", "durable_objects": '
                                      '{"bindings": [{"name": "A", "class_name": "A"}]}}')
    sim = ak.Simulation()
    a = sim.load_worker(wrangler=tmp_path / "wrangler.jsonc").env.A.getByName("a")
    got = sim.call(a.go(140_000_000))
    assert got.startswith("Error: the result of this query holds more than 134,217,728 bytes"), got
    assert sim.call(a.go(16)) == 16                     # the host lives on
