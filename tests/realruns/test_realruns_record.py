"""``alarmkit record`` on real local workerd (skipped without it): the lab ledger, a keepalive loop and
a worker that wraps its own class, each journaled like a simulated run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from alarmkit import Journal
from alarmkit.realruns.record import JS_DIR, LAB_DIR, record

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _cli(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "alarmkit", *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=180)


def test_record_cli_on_the_lease_ledger_checks_ok_and_reports(tmp_path, workerd_binary):
    script = {"steps": [  # the drive format of `alarmkit worker` (call names the binding; record binds the class)
        {"at": 0, "call": "LEDGER", "name": "ledger", "method": "grant", "args": ["a", 300], "owes": {"effect": "revoke", "key": "a", "due": "returned"}},
        {"after": 100, "call": "LEDGER", "name": "ledger", "method": "grant", "args": ["b", 900], "owes": {"effect": "revoke", "key": "b", "due": "returned"}},
    ], "until": 2000}
    (tmp_path / "drive.json").write_text(json.dumps(script))
    out = _cli("record", "--worker", str(LAB_DIR / "lease.js"), "--class", "LeaseLedger", "--drive", "drive.json",
               "--db", "j.duckdb", "--out", "raw", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "note" not in out.stderr
    assert "check: no violation; 2 of 2 obligations done, 0 lost, 0 stuck, 0 duplicated" in out.stdout
    assert "<Report" not in out.stdout and "{'" not in out.stdout  # words, not Python reprs
    assert (tmp_path / "raw" / "tail.jsonl").stat().st_size > 0
    with Journal(tmp_path / "j.duckdb") as j:
        ev = j.events(1)
        run = j.run(1)
    assert run["profile"].startswith("workerd-real@") and run["scenario"] == "record:LeaseLedger"
    fires = ev[ev["kind"] == "fire"]
    assert len(fires) == 2 and list(fires["retry_count"]) == [0, 0]
    assert [json.loads(d)["key"] for d in ev.loc[ev["kind"] == "effect", "detail"]] == ["a", "b"]
    assert list(ev.loc[ev["kind"] == "call", "detail"].map(lambda d: json.loads(d)["method"])).count("grant") == 2
    assert (fires["t_ms"] >= fires["scheduled_ms"]).all()
    rep = _cli("export", "--db", "j.duckdb", "--run", "1", "--out", "r.html", cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr
    assert "record:LeaseLedger" in (tmp_path / "r.html").read_text()
    perf = _cli("export", "--db", "j.duckdb", "--run", "1", "--format", "perfetto", "--out", "t.json", cwd=tmp_path)
    assert perf.returncode == 0, perf.stderr


def test_record_a_keepalive_loop(workerd_binary):
    script = {"steps": [{"at_ms": 0, "object": "ka", "method": "start", "args": [3, 400]}], "until_ms": 2200}
    r = record(LAB_DIR / "keepalive.js", "Keepalive", script, binary=workerd_binary)
    rows = r.imported.rows
    fires = [x for x in rows if x[4] == "fire"]
    assert len(fires) == 3 and [f[7] for f in fires] == [0, 0, 0]
    assert [x[8]["key"] for x in rows if x[4] == "effect"] == [1, 2, 3]
    arms = [x for x in rows if x[4] == "arm"]
    assert len(arms) == 3 and [a[8]["in_alarm"] for a in arms] == [False, True, True]
    for a, f in zip(arms, fires):  # each fire is for the arm before it, never early
        assert f[5] == a[5] and f[1] >= f[5]
    assert [x[8]["next_ms"] for x in rows if x[4] == "handler_ok"] == [arms[1][5], arms[2][5], None]
    assert r.check().ok and r.imported.anomalies == []


def test_a_worker_that_wraps_its_own_class(tmp_path, workerd_binary):
    """The README's lines: import recorded, extend recorded(MyClass), export it."""
    (tmp_path / "worker.js").write_text(
        'import { DurableObject } from "cloudflare:workers";\n'
        'import { recorded } from "./recorded.js";\n'
        "class MyCounter extends DurableObject {\n"
        "  async bump() { await this.ctx.storage.setAlarm(Date.now() + 200); return 1; }\n"
        "  async alarm(info) { if (info.retryCount === 0) throw new Error('first run fails'); }\n"
        "}\n"
        "export class Counter extends recorded(MyCounter) {}\n")
    script = {"steps": [{"at_ms": 0, "object": "c", "method": "bump"}], "until_ms": 3500}
    r = record(tmp_path / "worker.js", "Counter", script, binary=workerd_binary)
    fires = [x for x in r.imported.rows if x[4] == "fire"]
    assert [f[7] for f in fires] == [0, 1] and [f[8]["retry_count_inferred"] for f in fires] == [False, False]
    assert [x[8]["message"] for x in r.imported.rows if x[4] == "handler_error"] == ["first run fails"]
    assert [a.kind for a in r.imported.anomalies] == ["retries"]
    assert sum(1 for x in r.imported.rows if x[4] == "call" and x[8]["method"] == "bump") == 1  # wrapped once


def test_record_refuses_bad_input_before_starting_workerd(tmp_path):
    (tmp_path / "s.json").write_text('{"steps": [{"object": "a", "method": "m"}]}')
    bad = _cli("record", "--worker", str(LAB_DIR / "lease.js"), "--class", "LeaseLedger", "--script", "s.json",
               "--db", "j.duckdb", cwd=tmp_path)
    assert bad.returncode == 2 and "until_ms must be a whole number of ms in 1..3600000, got None" in bad.stderr
    nofile = _cli("record", "--worker", "nope.js", "--class", "X", "--script", "s.json", "--db", "j.duckdb", cwd=tmp_path)
    assert nofile.returncode == 2 and "Traceback" not in nofile.stderr
    (tmp_path / "s.json").write_text('{"steps": [{"object": "a", "method": "m"}], "until_ms": 100}')
    cls = _cli("record", "--worker", str(LAB_DIR / "lease.js"), "--class", "Not-A-Class", "--script", "s.json",
               "--db", "j.duckdb", cwd=tmp_path)
    assert cls.returncode == 2 and "--class must be a JavaScript class name, got 'Not-A-Class'" in cls.stderr
    assert (JS_DIR / "recorded.js").is_file()


@pytest.mark.long
@pytest.mark.skipif(os.environ.get("ALARMKIT_LONG") != "1", reason="~2.5 min of real time: set ALARMKIT_LONG=1")
def test_record_a_full_exhaustion_on_workerd(tmp_path, workerd_binary):
    """What data/real-runs/record_fixtures.py does for lease-exhaustion, into a temp folder."""
    script = json.loads((ROOT / "data" / "real-runs" / "lease-exhaustion" / "drive.json").read_text())
    r = record(LAB_DIR / "lease.js", "LeaseLedger", script, binary=workerd_binary, out_dir=tmp_path)
    fires = [x for x in r.imported.rows if x[4] == "fire"]
    assert [f[7] for f in fires] == list(range(7)) and len({f[5] for f in fires}) == 1
    assert [a.kind for a in r.imported.anomalies] == ["retries", "ladder_exhausted"]
    waits = [(b[1] - a[1]) / 1000 for a, b in zip(fires, fires[1:])]
    assert all((2 << n) <= w <= (2 << n) * 1.25 + 0.1 for n, w in enumerate(waits)), waits
    report = r.check()
    assert [o["status"] for o in report.obligations] != ["done"]  # the revoke never ran: the handler always threw
