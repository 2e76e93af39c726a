"""Real workerd is the judge: the JS probe (probe/worker.js) on local workerd 1.20261117.1 under two
compatibility dates, against the same questions asked of a Python Worker under alarmkit: deleteAll()
keeps the alarm before 2026-02-24 and deletes it after (deleteAllDeletesAlarm), a missing RPC method's
TypeError text, ctx.id.name for a named and a unique object. Skipped without workerd
(`alarmkit calibrate --install-only`)."""

import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

import alarmkit as ak
from alarmkit.calibrate.workerd import find_workerd, free_port

HERE = Path(__file__).parent / "probe"
CONFIG = """using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w), (name = "disk", disk = (path = "{store}", writable = true)) ],
  sockets = [ (name = "http", address = "127.0.0.1:{port}", http = (), service = "main") ],
);
const w :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js") ],
  compatibilityDate = "{date}",
  durableObjectNamespaces = [ (className = "Probe", uniqueKey = "probe", enableSql = true) ],
  durableObjectStorage = (localDisk = "disk"),
  bindings = [ (name = "PROBE", durableObjectNamespace = "Probe") ],
);
"""


def on_workerd(binary: str, tmp: Path, date: str) -> dict:
    port = free_port()
    (tmp / "store").mkdir()
    shutil.copy(HERE / "worker.js", tmp / "worker.js")
    (tmp / "config.capnp").write_text(CONFIG.format(store=tmp / "store", port=port, date=date))
    proc = subprocess.Popen([binary, "serve", str(tmp / "config.capnp"), "--experimental"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                    return json.loads(r.read())
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"workerd did not answer: {proc.stderr.read1(2000)!r}")
    finally:
        proc.kill()
        proc.wait()


def in_alarmkit(date: str) -> dict:
    sim = ak.Simulation(seed=0, start_ms=1_000)
    w = sim.load_worker(HERE / "probe.py", bindings={"PROBE": "Probe"}, compatibility_date=date)
    s = w.env.PROBE.getByName("a")
    out = {"armed": sim.call(s.arm()), "after_deleteAll": sim.call(s.wipe())}
    try:
        sim.call(s.missing())
    except TypeError as err:
        out["missing"] = f"TypeError: {err}"
    out["unique_name"] = sim.call(w.env.PROBE.get(w.env.PROBE.newUniqueId()).idname())
    out["named"] = sim.call(s.idname())
    return out


@pytest.mark.parametrize("date", ["2026-01-01", "2026-11-17"])
def test_the_python_host_answers_as_workerd_does(tmp_path, date):
    binary = find_workerd()
    if binary is None:
        pytest.skip("workerd is not installed (alarmkit calibrate --install-only)")
    real = on_workerd(str(binary), tmp_path, date)
    sim = in_alarmkit(date)
    kept = real["after_deleteAll"]["alarm"] is not None
    assert kept == (date < "2026-02-24")  # what workerd did: the rule the host models
    assert (sim["after_deleteAll"]["alarm"] is not None) == kept and sim["after_deleteAll"]["k"] is None
    assert {k: real[k] for k in ("armed", "missing", "unique_name", "named")} == \
           {k: sim[k] for k in ("armed", "missing", "unique_name", "named")}
