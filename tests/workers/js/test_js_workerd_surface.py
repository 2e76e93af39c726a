"""Real workerd is the judge of the surface real projects touch: one module (objects/surface_probe.js) asked on
local workerd 1.20261117.1 and under alarmkit's JS host, the answers compared whole: blockConcurrencyWhile's
order, RPC names (`_` callable, reserved refused with workerd's text, an instance's own property or a
missing method not callable, a getter read by `await stub.name`), the hibernation API with a
WebSocketPair, an unbound env name, process.env under the default nodejs_compat, node:fs importable, iterator
helpers, and a throwing fetch handler's 500. Skipped without workerd (`alarmkit calibrate --install-only`)."""

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import alarmkit as ak
from alarmkit.calibrate.workerd import find_workerd, free_port

PROBE = Path(__file__).parent / "objects" / "surface_probe.js"
DATE = "2026-09-01"
CONFIG = """using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w) ],
  sockets = [ (name = "http", address = "127.0.0.1:{port}", http = (), service = "main") ],
);
const w :Workerd.Worker = (
  modules = [ (name = "w.js", esModule = embed "w.js") ],
  compatibilityDate = "{date}",
  bindings = [ (name = "P", durableObjectNamespace = "P"), (name = "TOKEN", text = "t0k") ],
  durableObjectNamespaces = [ (className = "P", uniqueKey = "p-key", enableSql = true) ],
  durableObjectStorage = (inMemory = void),
);
"""


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def on_workerd(binary: str, tmp: Path) -> tuple[dict, tuple[int, str]]:
    port = free_port()
    shutil.copy(PROBE, tmp / "w.js")
    (tmp / "config.capnp").write_text(CONFIG.format(port=port, date=DATE))
    proc = subprocess.Popen([binary, "serve", str(tmp / "config.capnp"), "--experimental"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                status, body = get(f"http://127.0.0.1:{port}/")
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("workerd did not answer")
        assert status == 200, body
        return json.loads(body), get(f"http://127.0.0.1:{port}/boom")
    finally:
        proc.kill()
        proc.wait()


def in_alarmkit() -> tuple[dict, tuple[int, str]]:
    sim = ak.Simulation(seed=0)
    w = sim.load_worker(PROBE, bindings={"P": "P", "TOKEN": ak.workers.Var("t0k")}, compatibility_date=DATE)
    r = w.fetch("/")
    assert r.status == 200, r.text()
    boom = w.fetch("/boom")
    return r.json(), (boom.status, boom.text())


def test_the_surface_answers_as_real_workerd(js_host, tmp_path):
    binary = find_workerd()
    if binary is None:
        pytest.skip("workerd is not installed (alarmkit calibrate --install-only)")
    real, real_boom = on_workerd(str(binary), tmp_path)
    ours, our_boom = in_alarmkit()
    assert ours == real
    assert our_boom == real_boom == (500, "Internal Server Error")
    assert real["order"] == ["ctor start", "ctor end", "bcw sees ready=true"]        # what the comparison holds
    assert real["rpc"]["alarm"] == "TypeError: 'alarm' is a reserved method and cannot be called over RPC."
    for name in ("shadowed", "arrow", "field", "nope"):  # only the prototype's methods, never an instance's own
        assert real["rpc"][name] == f'TypeError: The RPC receiver does not implement the method "{name}".'
    assert real["rpc"]["getter"] == 6       # `await stub.count`: the prototype's getter, read over RPC
    assert real["rpc"]["read field"] == 'TypeError: The RPC receiver does not implement the method "field".'
    assert real["env"]["processEnv"] == {"TOKEN": "t0k"}


DISK = """using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w), (name = "disk", disk = (path = "{store}", writable = true)) ],
  sockets = [ (name = "http", address = "127.0.0.1:{port}", http = (), service = "main") ],
);
const w :Workerd.Worker = (
  modules = [ (name = "w.js", esModule = embed "w.js") ],
  compatibilityDate = "{date}",
  bindings = [ (name = "P", durableObjectNamespace = "P") ],
  durableObjectNamespaces = [ (className = "P", uniqueKey = "p-key", enableSql = true) ],
  durableObjectStorage = (localDisk = "disk"),
);
"""


def test_database_size_a_known_difference_pinned(js_host, tmp_path):
    """sql.databaseSize of a SQLite-backed object (workerd's needs localDisk storage) step by step. A known
    difference, kept and said in docs/runtime.md: alarmkit's pages are 512 bytes, workerd's 4,096; an unwritten
    database has no page here and one on workerd; workerd keeps the alarm in its database. Both sides pinned, so
    a change on either is seen."""
    binary = find_workerd()
    if binary is None:
        pytest.skip("workerd is not installed (alarmkit calibrate --install-only)")
    port = free_port()
    (tmp_path / "store").mkdir()
    shutil.copy(PROBE.parent / "dbsize_probe.js", tmp_path / "w.js")
    (tmp_path / "config.capnp").write_text(DISK.format(store=tmp_path / "store", port=port, date=DATE))
    proc = subprocess.Popen([str(binary), "serve", str(tmp_path / "config.capnp"), "--experimental"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                status, body = get(f"http://127.0.0.1:{port}/")
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("workerd did not answer")
    finally:
        proc.kill()
        proc.wait()
    assert status == 200, body
    sim = ak.Simulation(seed=0)
    ours = sim.load_worker(PROBE.parent / "dbsize_probe.js", bindings={"P": "P"}, compatibility_date=DATE).fetch("/").json()
    steps = ["fresh", "alarm", "kv100", "kvdel", "kvall", "rows", "rowsdel", "drop"]
    assert [json.loads(body)[s] for s in steps] == [4096, 8192, 20480, 20480, 4096, 53248, 53248, 4096]
    # 100 KV values of 100 bytes: each overflows a 512-byte page of _cf_KV (WITHOUT ROWID keeps ~100 bytes a row)
    assert [ours[s] for s in steps] == [0, 0, 57344, 30208, 512, 53248, 53248, 512]
