"""The Perfetto / Chrome Trace Event export, checked against the Trace Event Format's rules."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from clirun import run_main  # noqa: E402 - tests/clirun.py

from alarmkit import Journal, run_scenario
from alarmkit.errors import AlarmkitError
from alarmkit.journal import rows_to_frame
from alarmkit.realruns.perfetto import export_perfetto, trace_events
from alarmkit.runtime.profiles import PROFILES

# these tests are about the Perfetto export, not fire lateness: simulations here take the exact fire latency
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)
EXACT = PROFILES["workerd"].replace(fire_latency="exact")

ROOT = Path(__file__).resolve().parents[2]
PHASES = {"X", "i", "M", "s", "f"}


def assert_valid(trace: dict) -> None:
    """The rules of the Trace Event Format document that a viewer relies on."""
    assert set(trace) >= {"traceEvents"} and trace["displayTimeUnit"] in ("ms", "ns")
    evs = trace["traceEvents"]
    named_threads = {(e["pid"], e["tid"]) for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    named_procs = {e["pid"] for e in evs if e["ph"] == "M" and e["name"] == "process_name"}
    flows: dict[int, list[dict]] = {}
    for e in evs:
        assert e["ph"] in PHASES, e
        for field in ("name", "ph", "ts", "pid", "tid"):
            assert field in e, (field, e)
        assert isinstance(e["ts"], int) and isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert e["pid"] in named_procs
        if e["ph"] == "X":
            assert isinstance(e["dur"], int) and e["dur"] >= 0
        if e["ph"] == "i":
            assert e["s"] in ("g", "p", "t")
        if e["ph"] in ("X", "i", "s", "f") and e["tid"]:
            assert (e["pid"], e["tid"]) in named_threads
        if e["ph"] in ("s", "f"):
            flows.setdefault(e["id"], []).append(e)
    for fid, pair in flows.items():
        assert [p["ph"] for p in pair] == ["s", "f"], (fid, pair)
        s, f = pair
        assert f["bp"] == "e" and f["ts"] >= s["ts"] and (s["pid"], s["tid"]) == (f["pid"], f["tid"])
        # the finish binds to the alarm() slice that starts at its timestamp
        assert any(e["ph"] == "X" and e["ts"] == f["ts"] and e["tid"] == f["tid"] for e in evs)
    json.dumps(trace)  # plain JSON


def test_exhaustion_run_is_seven_failed_alarm_slices_with_seven_arrows():
    j = Journal()
    r = run_scenario("lease-exhaustion", journal=j, profile=EXACT)
    trace = trace_events(j.events(r.run_id), {r.run_id: j.run(r.run_id)})
    assert_valid(trace)
    evs = trace["traceEvents"]
    slices = [e for e in evs if e["ph"] == "X"]
    fires = j.events(r.run_id).query("kind == 'fire'")
    assert [e["ts"] for e in slices] == [int(t) * 1000 for t in fires["t_ms"]]
    assert [e["ts"] for e in slices][:2] == [1_002_000, 3_436_000]  # microseconds of the virtual ms 1002, 3436
    assert [e["args"]["outcome"] for e in slices] == ["handler_error"] * 7
    assert [e["args"]["retry_count"] for e in slices] == list(range(7))
    assert Counter(e["ph"] for e in evs)["s"] == 7  # the user's arm, then six retry arms, each to its fire
    proc = [e for e in evs if e["name"] == "process_name"][0]
    assert proc["args"]["name"] == "lease-exhaustion · run 1 · profile workerd · seed 0"
    assert {e["args"]["name"] for e in evs if e["name"] == "thread_name"} == {"LEASES:ledger"}
    assert sum(1 for e in evs if e["ph"] == "i" and e["name"] == "abandoned") == 1


def test_a_disarmed_arm_has_no_arrow_and_a_handler_with_no_end_is_marked():
    rows = [
        (1, 0, "NS", "a", "arm", 500, None, None, {"direction": "new"}),
        (2, 100, "NS", "a", "disarm", None, 500, None, None),
        (3, 200, "NS", "a", "arm", 900, None, None, {"direction": "new"}),
        (4, 300, "NS", "a", "arm", 700, 900, None, {"direction": "earlier"}),
        (5, 702, "NS", "a", "fire", 700, None, 0, {"attempt": 1}),
        (6, 705, "NS", "a", "effect", None, None, None, {"name": "x", "key": 1}),
        (7, 800, "NS", "a", "evict", None, None, None, None),
        (8, 0, None, None, "restart", None, None, None, None),
    ]
    trace = trace_events(rows_to_frame(1, rows))
    assert_valid(trace)
    evs = trace["traceEvents"]
    starts = [e for e in evs if e["ph"] == "s"]
    assert [e["ts"] for e in starts] == [300_000]  # only the move that really fired draws an arrow
    (x,) = [e for e in evs if e["ph"] == "X"]
    assert (x["ts"], x["dur"], x["args"]["unterminated"], x["args"]["outcome"]) == (702_000, 98_000, True, "evict")
    assert [e["name"] for e in evs if e["ph"] == "i" and e["ts"] == 300_000] == ["move (earlier)"]
    assert [e["tid"] for e in evs if e["name"] == "restart"] == [0]


def test_empty_or_foreign_frames_are_refused():
    import pandas as pd

    with pytest.raises(AlarmkitError, match=r"^events lack column"):
        trace_events(pd.DataFrame({"x": [1]}))
    with pytest.raises(AlarmkitError, match=r"^no events to export"):
        trace_events(rows_to_frame(1, []))


def test_export_perfetto_writes_two_runs_as_two_processes(tmp_path):
    with Journal(tmp_path / "j.duckdb") as j:
        a = run_scenario("lease-normal", journal=j, profile=EXACT).run_id
        b = run_scenario("lease-crash-after-effect", journal=j, profile=EXACT).run_id
        out = export_perfetto(j, [a, b], tmp_path / "t.json")
    trace = json.loads(out.read_text())
    assert_valid(trace)
    assert sorted({e["pid"] for e in trace["traceEvents"]}) == [a, b]


def _cli(*args: str, cwd: Path, real: bool = False) -> subprocess.CompletedProcess:
    """``alarmkit ARGS`` in this process (tests/clirun.py); ``real``: in a subprocess, as a user runs it."""
    if not real:
        return run_main(*args, cwd=cwd)
    env_py = {"PYTHONPATH": str(ROOT)}
    import os

    return subprocess.run([sys.executable, "-m", "alarmkit", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **env_py}, timeout=120)


def test_cli_export_format_perfetto_and_its_errors(tmp_path):
    with Journal(tmp_path / "j.duckdb") as j:
        run_scenario("lease-exhaustion", journal=j, profile=EXACT)
    ok = _cli("export", "--db", "j.duckdb", "--run", "1", "--format", "perfetto", cwd=tmp_path, real=True)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("wrote run-1.perfetto.json")
    assert_valid(json.loads((tmp_path / "run-1.perfetto.json").read_text()))
    bad = _cli("export", "--db", "j.duckdb", "--run", "9", "--format", "perfetto", cwd=tmp_path)
    assert (bad.returncode, bad.stderr.strip()) == (2, "alarmkit: error: no run 9 in the journal; runs here: [1]")
    none = _cli("export", "--db", "nope.duckdb", "--run", "1", "--format", "perfetto", cwd=tmp_path)
    assert none.returncode == 2 and "no journal file nope.duckdb" in none.stderr and "Traceback" not in none.stderr
    fmt = _cli("export", "--db", "j.duckdb", "--run", "1", "--format", "svg", cwd=tmp_path)
    assert fmt.returncode == 2 and "invalid choice: 'svg'" in fmt.stderr


def test_an_imported_real_run_keeps_epoch_microseconds():
    from alarmkit.realruns import fixture, import_file

    j = Journal()
    r = import_file(fixture("lease-exhaustion"), j)
    trace = trace_events(j.events(r.run_id), {r.run_id: j.run(r.run_id)})
    assert_valid(trace)
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    fires = j.events(r.run_id).query("kind == 'fire'")
    assert [e["ts"] for e in slices] == [int(t) * 1000 for t in fires["t_ms"]]
    assert slices[0]["ts"] > 1_700_000_000_000_000  # epoch microseconds
    # workerd's retries are not arms in a trace: only the user's arm draws an arrow, to the first run
    assert [e["ts"] for e in trace["traceEvents"] if e["ph"] == "f"] == [slices[0]["ts"]]
    proc = [e for e in trace["traceEvents"] if e["name"] == "process_name"][0]["args"]["name"]
    assert proc == "import:tail.jsonl · run 1 · profile real:tail · seed 0"
