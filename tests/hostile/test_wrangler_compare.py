"""Hostile input to ``alarmkit worker --compare-wrangler`` (wrangler's dry-run bundle beside the JS host's):
no --wrangler, no wrangler in node_modules, a wrangler that fails, one that reaches for the network, one
that writes no bundle or a broken one. Each is one ``alarmkit: error:`` line naming the way out, exit 2,
no report or journal file made, the project's files untouched. The wranglers here are stand-ins (a
package.json and a bin script): what is tested is alarmkit's handling of them, not wrangler."""

from __future__ import annotations

import json

import pytest

from harness import check_outcome, run_cli, snapshot

MODULE = """import { DurableObject } from "cloudflare:workers";
export class Clock extends DurableObject {
  async fetch() { await this.ctx.storage.setAlarm(Date.now() + 1000); return new Response("set"); }
  async alarm() {}
}
export default { fetch: (req, env) => env.CLOCK.getByName("a").fetch(req) };
"""
WRANGLER = {"name": "clock", "main": "index.js", "compatibility_date": "2026-09-01",
            "durable_objects": {"bindings": [{"name": "CLOCK", "class_name": "Clock"}]}}


@pytest.fixture
def project(tmp_path, js_ready):
    (tmp_path / "index.js").write_text(MODULE)
    (tmp_path / "wrangler.jsonc").write_text(json.dumps(WRANGLER))
    (tmp_path / "drive.json").write_text('{"steps": [{"at": 0, "fetch": "/"}], "until": 5000}')
    return tmp_path


@pytest.fixture(scope="module")
def js_ready():
    from alarmkit.workers.js import available

    reason = available()
    if reason is not None:
        pytest.skip(f"the JavaScript host cannot run here: {reason}")


def fake_wrangler(project, body: str) -> None:
    """node_modules/wrangler as a package whose program is ``body`` (CommonJS, argv as wrangler's)."""
    pkg = project / "node_modules" / "wrangler"
    pkg.mkdir(parents=True)
    (pkg / "package.json").write_text('{"name": "wrangler", "version": "0.0.0-fake", "bin": {"wrangler": "bin.js"}}')
    (pkg / "bin.js").write_text(body)


def run(project, *extra):
    before = snapshot(project)
    o = run_cli(["worker", "--wrangler", "wrangler.jsonc", "--drive", "drive.json", "--report", "out.html",
                 "--db", "j.duckdb", "--compare-wrangler", *extra], project)
    check_outcome(o, before, snapshot(project))
    assert o.code == 2, o.err
    assert not (project / "out.html").exists() and not (project / "j.duckdb").exists()
    return o.err.strip()


def test_without_wrangler_file_or_wrangler_installed(project):
    o = run_cli(["worker", "index.js", "--bind", "CLOCK=Clock", "--drive", "drive.json", "--compare-wrangler"], project)
    assert o.code == 2 and o.err.strip() == ("alarmkit: error: --compare-wrangler needs --wrangler wrangler.jsonc "
                                             "(wrangler bundles what that file names); pass it, or leave "
                                             "--compare-wrangler out"), o.err
    err = run(project)
    assert err.startswith("alarmkit: error: --compare-wrangler: no wrangler in node_modules of ")
    assert err.endswith("or a folder above it; `npm install -D wrangler` there, or leave --compare-wrangler out")


def test_a_wrangler_that_fails_is_named_by_its_last_line(project):
    fake_wrangler(project, 'console.log("building");\nconsole.error("X [ERROR] Could not resolve \\"nope\\"");\n'
                           "process.exit(7);\n")
    assert run(project) == ('alarmkit: error: --compare-wrangler: `wrangler deploy --dry-run` failed (exit 7): '
                            'X [ERROR] Could not resolve "nope"; fix what wrangler names, or leave --compare-wrangler out')


def test_a_connection_out_of_the_dry_run_is_refused(project):
    # the stand-in reaches for the network and reports what it got: the preload refused it before it left
    fake_wrangler(project, 'require("node:net").connect(443, "example.com")\n'
                           '  .on("connect", () => { console.error("CONNECTED"); process.exit(9); })\n'
                           '  .on("error", (e) => { console.error("socket: " + e.code); process.exit(3); });\n')
    err = run(project)
    assert err == ("alarmkit: error: --compare-wrangler: `wrangler deploy --dry-run` failed (exit 3): socket: "
                   "ECONNREFUSED; fix what wrangler names, or leave --compare-wrangler out")


def test_a_dry_run_that_writes_no_bundle_or_a_broken_one(project):
    fake_wrangler(project, "process.exit(0);\n")
    assert run(project) == ("alarmkit: error: --compare-wrangler: wrangler's dry run wrote no bundle with a source "
                            "map in its --outdir (found: nothing); or leave --compare-wrangler out")
    (project / "node_modules" / "wrangler" / "bin.js").write_text(
        'const fs = require("node:fs"); const out = process.argv[process.argv.indexOf("--outdir") + 1];\n'
        'fs.writeFileSync(out + "/index.js", "export {}"); fs.writeFileSync(out + "/index.js.map", "{not json");\n')
    assert run(project).startswith("alarmkit: error: --compare-wrangler: wrangler's bundle index.js could not be read: ")
    (project / "node_modules" / "wrangler" / "bin.js").write_text(
        'const fs = require("node:fs"); const out = process.argv[process.argv.indexOf("--outdir") + 1];\n'
        'fs.writeFileSync(out + "/index.js", "export {}"); fs.writeFileSync(out + "/index.js.map", "{}");\n')
    assert run(project) == ("alarmkit: error: --compare-wrangler: wrangler's source map index.js.map has no sources "
                            "with their text (sources, sourcesContent); or leave --compare-wrangler out")


def test_a_wrangler_package_without_a_program(project):
    pkg = project / "node_modules" / "wrangler"
    pkg.mkdir(parents=True)
    (pkg / "package.json").write_text('{"name": "wrangler"}')
    err = run(project)
    assert err == (f"alarmkit: error: --compare-wrangler: {pkg / 'package.json'} names no wrangler program (its bin); "
                   "reinstall wrangler (npm install -D wrangler), or leave --compare-wrangler out")


@pytest.fixture
def listener():
    """A TCP and a UDP socket on 127.0.0.1 that count what reaches them (a connection, a datagram)."""
    import socket
    import threading

    tcp, udp = socket.socket(), socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    udp.bind(("127.0.0.1", 0))
    got: list[str] = []

    def serve(sock, kind):
        while True:
            try:
                conn = sock.accept()[0] if kind == "tcp" else sock.recvfrom(65535)
            except OSError:
                return
            got.append(kind)
            if kind == "tcp":
                conn.close()

    for sock, kind in ((tcp, "tcp"), (udp, "udp")):
        threading.Thread(target=serve, args=(sock, kind), daemon=True).start()
    yield tcp.getsockname()[1], udp.getsockname()[1], got
    tcp.close()
    udp.close()


REPORT = ".on('connect', () => process.exit(5)).on('error', (e) => { console.error('out: ' + e.code); process.exit(3); })"
LEAKS = {  # what the stand-in tries (TCP: port @T@, UDP: port @U@); each ends "out: ECONNREFUSED" (exit 3)
    "child_node": "const r = require('child_process').spawnSync(process.execPath, ['-e', \"require('net').connect(@T@, "
                  "'127.0.0.1')" + REPORT.replace("'", "\\'") + "\"], {stdio: 'inherit'}); process.exit(r.status);",
    "child_shell_node": "const r = require('child_process').spawnSync('sh', ['-c', 'node -e \"require(\\'net\\').connect(@T@, "
                        "\\'127.0.0.1\\')" + REPORT.replace("'", "\\'").replace('"', '\\"') + "\"'], {stdio: 'inherit'}); "
                        "process.exit(r.status);",
    "udp": "require('dgram').createSocket('udp4').send('x', @U@, '127.0.0.1', (e) => { console.error('out: ' + (e && "
           "e.code)); process.exit(e ? 3 : 5); });",
    "dns_server": "const dns = require('dns'); dns.setServers(['127.0.0.1:@U@']); dns.resolve4('example.com', (e) => { "
                  "console.error('out: ' + (e && e.code)); process.exit(e && e.code === 'ECONNREFUSED' ? 3 : 5); });",
    "dns_lookup": "require('dns').lookup('localhost', (e) => { console.error('out: ' + (e && e.code)); "
                  "process.exit(e ? 3 : 5); });",
    "worker_thread": "new (require('worker_threads').Worker)(\"require('net').connect(@T@, '127.0.0.1')" +
                     REPORT.replace("'", "\\'").replace("process.exit", "process.exit") + "\", { eval: true })"
                     ".on('exit', (c) => process.exit(c));",
}


@pytest.mark.parametrize("name", sorted(LEAKS))
def test_no_connection_leaves_the_dry_run_by_another_door(project, listener, name):
    # a child Node process (not preloaded by `node -r`), UDP and DNS (not net.Socket) went out; now refused
    tcp, udp, got = listener
    fake_wrangler(project, LEAKS[name].replace("@T@", str(tcp)).replace("@U@", str(udp)))
    err = run(project)
    assert got == [] and err == ("alarmkit: error: --compare-wrangler: `wrangler deploy --dry-run` failed (exit 3): "
                                 "out: ECONNREFUSED; fix what wrangler names, or leave --compare-wrangler out"), (got, err)


@pytest.mark.parametrize("agree", [True, False])
@pytest.mark.parametrize("refused", [0, 1, 7])
def test_the_line_says_when_wrangler_reached_for_the_network(agree, refused):
    # counted from the preload's stderr lines, it was only in --json: a dry run that went on without the network
    from alarmkit.workers.js.wrangler_bundle import BundleComparison

    line = BundleComparison(agree=agree, modules=2, differ=[] if agree else ["a.js"], network_refused=refused,
                            wrangler_version="4.86.0").line()
    said = f"wrangler tried the network {refused} time(s), refused: it ran offline"
    assert (said in line) == bool(refused) and line.endswith((said + ")") if refused else "stand-ins (0))"), line
    assert ("agrees" if agree else "DIFFERS") in line and "\n" not in line
