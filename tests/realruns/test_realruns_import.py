"""``alarmkit import`` on the fixtures recorded on real workerd (data/real-runs, see record_fixtures.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run_main  # noqa: E402 - tests/clirun.py

from alarmkit import Journal
from alarmkit.errors import AlarmkitError
from alarmkit.realruns.importer import import_file, import_records
from alarmkit.realruns.traces import read_records

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "data" / "real-runs"


def kinds(result, kind):
    return [r for r in result.rows if r[4] == kind]


def test_exhaustion_stream_lacks_the_outcomes_workerd_did_not_stream_and_claims_no_exhaustion():
    """Recorded on workerd 1.20261117.1: for the three attempts that ran in a freshly constructed
    object (evicted while it waited), the streaming tail delivered the onset and the constructor's
    log line only. The importer makes no end for them and does not claim the ladder ran out."""
    r = import_file(FIX / "lease-exhaustion" / "stream.jsonl")
    fires = kinds(r, "fire")
    assert len(fires) == 7 and [f[7] for f in fires] == list(range(7))
    assert [f[8]["outcome"] for f in fires] == ["exception"] * 4 + [None] * 3
    assert len(kinds(r, "handler_error")) == 4 and not kinds(r, "abandoned")
    assert not [a for a in r.anomalies if a.kind == "ladder_exhausted"]
    assert any(c.startswith("outcomes: 3 alarm() run(s) have no outcome in the trace") for c in r.cannot)


@pytest.mark.parametrize("fmt", ["tail", "logpush"])
def test_exhaustion_is_seven_attempts_then_ladder_exhausted(fmt):
    r = import_file(FIX / "lease-exhaustion" / f"{fmt}.jsonl")
    fires = kinds(r, "fire")
    assert len(fires) == 7 and {f[3] for f in fires} == {"ledger-exhaust"}
    assert [f[7] for f in fires] == list(range(7))
    assert len({f[5] for f in fires}) == 1  # every retry keeps the original scheduledTime
    assert len(kinds(r, "handler_error")) == 7 and not kinds(r, "handler_ok")
    (ab,) = kinds(r, "abandoned")
    assert ab[8]["inferred"] is True and ab[1] >= fires[-1][1] and r.rows[-1][4] == "abandoned"
    waits = [(b[1] - a[1]) / 1000 for a, b in zip(fires, fires[1:])]
    for n, w in enumerate(waits):  # (2 << n) s plus up to 25 % jitter, plus a few ms of scheduling
        assert (2 << n) <= w <= (2 << n) * 1.25 + 0.1, (n, w)
    found = [a for a in r.anomalies if a.kind == "ladder_exhausted"]
    assert len(found) == 1 and found[0].object == "ledger-exhaust" and found[0].t_ms == fires[-1][1]
    assert "7 failed runs" in found[0].message and "then silence" in found[0].message
    assert [a.kind for a in r.anomalies if a.kind == "retries"] == ["retries"]


def test_exhaustion_tail_reads_retry_counts_from_the_recorder_lines():
    r = import_file(FIX / "lease-exhaustion" / "tail.jsonl")
    assert [f[8]["retry_count_inferred"] for f in kinds(r, "fire")] == [False] * 7
    assert not any(c.startswith("retry counts") for c in r.cannot)


def test_logpush_without_logs_cannot_name_the_object_and_infers_retries(tmp_path):
    recs = read_records(FIX / "lease-exhaustion" / "logpush.jsonl")
    for rec in recs:
        rec["Logs"] = []
    r = import_records(recs, "bare-logpush")
    fires = kinds(r, "fire")
    assert [f[7] for f in fires] == list(range(7)) and all(f[8]["retry_count_inferred"] for f in fires)
    assert {f[3] for f in fires} == {"LeaseLedger"}  # the Entrypoint stands in for the missing object id
    assert any(c.startswith("object ids: Logpush workers_trace_events has no Durable Object id") for c in r.cannot)
    assert any(c.startswith("arms, moves, deletes and effects: no alarmkit log lines") for c in r.cannot)
    assert [a.kind for a in r.anomalies].count("ladder_exhausted") == 1


def test_normal_run_two_fires_two_revokes_no_anomalies():
    for fmt in ("tail", "stream", "logpush"):
        r = import_file(FIX / "lease-normal" / f"{fmt}.jsonl")
        fires = kinds(r, "fire")
        assert len(fires) == 2 and [f[7] for f in fires] == [0, 0], fmt
        assert [e[8]["key"] for e in kinds(r, "effect")] == ["lease-0", "lease-1"], fmt
        assert r.anomalies == [], fmt
        if fmt == "stream":  # workerd had not streamed the alarm() ends when the recording stopped
            assert not kinds(r, "handler_ok") and any(c.startswith("outcomes: 2 alarm() run(s)") for c in r.cannot)
        else:
            assert len(kinds(r, "handler_ok")) == 2, fmt
        arms = kinds(r, "arm") if fmt != "stream" else [(None,) * 5 + (fires[1][5],)]
        assert [a[5] for a in arms][-1] == fires[1][5]  # the re-arm inside the first alarm() is the second fire's time
        assert all(0 <= f[8]["late_ms"] < 1000 for f in fires)


def test_crash_after_effect_duplicates_the_revoke_and_retries_once():
    r = import_file(FIX / "lease-crash-after-effect" / "tail.jsonl")
    fires = kinds(r, "fire")
    assert [f[7] for f in fires] == [0, 1] and fires[0][5] == fires[1][5]
    assert 2000 <= fires[1][1] - fires[0][1] <= 2600
    (err,) = kinds(r, "handler_error")
    assert err[8]["message"] == "injected revoke failure"
    assert [e[8]["key"] for e in kinds(r, "effect")] == ["lease-0", "lease-0"]
    assert [a.kind for a in r.anomalies] == ["retries"] and "1 retry" in r.anomalies[0].message
    assert r.anomalies[0].object == "ledger-crash"


def test_rows_are_in_time_order_and_numbered():
    for name in ("lease-normal", "lease-crash-after-effect", "lease-exhaustion"):
        for fmt in ("tail", "stream", "logpush"):
            rows = import_file(FIX / name / f"{fmt}.jsonl").rows
            assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
            assert [r[1] for r in rows] == sorted(r[1] for r in rows), (name, fmt)


def test_times_stay_epoch_ms_and_the_run_is_journaled(tmp_path):
    with Journal(tmp_path / "j.duckdb") as j:
        r = import_file(FIX / "lease-exhaustion" / "tail.jsonl", j)
        ev = j.events(r.run_id)
        run = j.run(r.run_id)
    assert ev["t_ms"].min() > 1_700_000_000_000
    assert run["profile"] == "real:tail" and run["scenario"] == "import:tail.jsonl"
    assert any("ladder_exhausted · ledger-exhaust" in a for a in run["params"]["imported"]["anomalies"])


def _line(ev, t, **kw):
    return json.dumps({"alarmkit": 1, "ev": ev, "obj": "x", "id": "ab" * 32, "t": t, **kw})


def _item(t, scheduled, outcome="ok", logs=()):
    return {"eventTimestamp": t, "outcome": outcome, "entrypoint": "X", "durableObjectId": "ab" * 32,
            "event": {"scheduledTime": scheduled} if scheduled is not None else {"rpcMethod": "go"},
            "logs": [{"timestamp": t, "level": "log", "message": [m]} for m in logs], "exceptions": [], "wallTime": 0}


def test_late_duplicate_and_unfired_arm_anomalies_name_object_and_time():
    t0 = 1_800_000_000_000
    recs = [
        _item(t0, None, logs=[_line("arm", t0, at=t0 + 1000)]),
        _item(t0 + 4000, t0 + 1000),  # 3 s late
        _item(t0 + 4100, t0 + 1000),  # again after a success: a duplicate
        _item(t0 + 5000, None, logs=[_line("arm", t0 + 5000, at=t0 + 6000)]),
        _item(t0 + 200_000, None, logs=[_line("call", t0 + 200_000, method="ping")]),
    ]
    r = import_records(recs, "synthetic")
    got = [(a.kind, a.object, a.t_ms - t0) for a in r.anomalies]
    assert got == [("late_fire", "x", 4000), ("duplicate_fire", "x", 4100), ("arm_without_fire", "x", 6000)]
    assert "3000 ms after" in r.anomalies[0].message
    short = import_records(recs[:4], "synthetic")  # the trace ends before the arm's time plus grace
    assert [a.kind for a in short.anomalies] == ["late_fire", "duplicate_fire"]
    assert short.pending and short.pending[0].startswith("x: armed for ")


def test_a_json_array_file_reads_like_json_lines(tmp_path):
    items = read_records(FIX / "lease-normal" / "tail.jsonl")
    (tmp_path / "a.json").write_text(json.dumps(items))
    assert len(import_file(tmp_path / "a.json").rows) == len(import_file(FIX / "lease-normal" / "tail.jsonl").rows)


def test_bad_inputs_are_refused(tmp_path):
    (tmp_path / "mixed.jsonl").write_text((FIX / "lease-normal" / "tail.jsonl").read_text()
                                          + (FIX / "lease-normal" / "logpush.jsonl").read_text())
    with pytest.raises(AlarmkitError, match=r"^mixed.jsonl mixes tail and logpush records"):
        import_file(tmp_path / "mixed.jsonl")
    (tmp_path / "junk.jsonl").write_text('{"a": 1}\n')
    with pytest.raises(AlarmkitError, match=r"^no tail, Logpush or streaming tail events among 1 records"):
        import_file(tmp_path / "junk.jsonl")
    with pytest.raises(AlarmkitError, match=r"^late_ms must be a whole number of ms >= 0, got -1$"):
        import_records([], late_ms=-1)


def _cli(*args, cwd, real=False):
    """``alarmkit ARGS`` in this process (tests/clirun.py); ``real``: in a subprocess, as a user runs it."""
    if not real:
        return run_main(*args, cwd=cwd)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "alarmkit", *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=120)


def test_cli_import_prints_summary_and_anomalies_and_the_report_shows_them(tmp_path):
    out = _cli("import", str(FIX / "lease-exhaustion" / "tail.jsonl"), "--db", "j.duckdb", cwd=tmp_path, real=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("imported tail.jsonl: 12 invocations (12 tail), 7 alarm() runs on 1 object(s)")
    assert "ladder_exhausted · ledger-exhaust at 20" in out.stdout
    rep = _cli("export", "--db", "j.duckdb", "--run", "1", "--out", "r.html", cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr
    page = (tmp_path / "r.html").read_text()
    assert "ladder_exhausted · ledger-exhaust" in page and "of wall-clock time" in page
    assert "wall-clock time since t = 0 (s)" in page and "virtual time" not in page
    assert "lateness: fire time − scheduled time" in page  # a trace has no retry_scheduled to measure from
    js = _cli("import", str(FIX / "lease-normal" / "logpush.jsonl"), "--db", "j.duckdb", "--json", cwd=tmp_path)
    assert js.returncode == 0, js.stderr
    d = json.loads(js.stdout)
    assert (d["run_id"], d["summary"]["format"], d["summary"]["alarm_invocations"], d["anomalies"]) == (2, "logpush", 2, [])
    bad = _cli("import", "nope.jsonl", "--db", "j.duckdb", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("alarmkit: error: no trace file nope.jsonl")
    (tmp_path / "broken.jsonl").write_text("{not json\n")
    broken = _cli("import", "broken.jsonl", "--db", "j.duckdb", cwd=tmp_path)
    assert broken.returncode == 2 and "broken.jsonl:1 is not JSON" in broken.stderr and "Traceback" not in broken.stderr
    neg = _cli("import", "broken.jsonl", "--db", "j.duckdb", "--late-ms", "-5", cwd=tmp_path)
    assert neg.returncode == 2 and "expected milliseconds >= 0, got -5" in neg.stderr


def _stream(inv, seq, t, event, span=None):
    return {"invocationId": inv, "sequence": seq, "timestamp": t, "spanContext": {"traceId": "t", "spanId": span},
            "event": event}


def test_stream_setalarm_spans_become_arms_with_iso_times():
    """The shape local workerd streamed (an experiment with a bare class, no recorder lines)."""
    oid = "cd" * 32
    recs = [
        _stream("i1", 0, 1_796_112_851_743, {"type": "onset", "executionModel": "durableObject", "spanId": "s0",
                                             "entrypoint": "Obj", "durableObjectId": oid, "info": {"type": "jsrpc"}}),
        _stream("i1", 6, 1_796_112_851_744, {"type": "spanOpen", "name": "durable_object_storage_setAlarm",
                                             "spanId": "s1"}, "s0"),
        _stream("i1", 7, 1_796_112_851_744, {"type": "attributes", "info": [
            {"name": "cloudflare.durable_object.alarm.scheduled_time", "value": "2026-12-01T08:14:12.044Z"}]}, "s1"),
        _stream("i1", 9, 1_796_112_851_753, {"type": "outcome", "outcome": "ok", "cpuTime": 0, "wallTime": 0}, "s0"),
        _stream("i2", 0, "2026-12-01T08:14:12.045Z", {"type": "onset", "executionModel": "durableObject", "spanId": "a0",
                                                      "entrypoint": "Obj", "durableObjectId": oid,
                                                      "info": {"type": "alarm", "scheduledTime": "2026-12-01T08:14:12.044Z"}}),
        _stream("i2", 4, 1_796_112_852_046, {"type": "exception", "name": "Error", "message": "boom 0"}, "a0"),
        _stream("i2", 6, 1_796_112_852_047, {"type": "outcome", "outcome": "exception", "cpuTime": 0, "wallTime": 0}, "a0"),
    ]
    r = import_records(recs, "stream")
    (arm,) = kinds(r, "arm")
    (fire,) = kinds(r, "fire")
    assert (arm[1], arm[3], arm[5], arm[8]["source"]) == (1_796_112_851_744, oid, 1_796_112_852_044, "setAlarm span")
    assert (fire[1], fire[5], fire[7], fire[8]["late_ms"]) == (1_796_112_852_045, 1_796_112_852_044, 0, 1)
    (err,) = kinds(r, "handler_error")
    assert (err[8]["error"], err[8]["message"]) == ("Error", "boom 0")
    assert r.summary["format"] == "stream" and r.anomalies == []


def test_the_js_files_ship_as_package_data():
    import fnmatch
    import tomllib

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["alarmkit"]
    js = [p.relative_to(ROOT / "alarmkit").as_posix() for p in (ROOT / "alarmkit" / "realruns" / "js").rglob("*.js")]
    assert len(js) == 4 and all(any(fnmatch.fnmatch(f, g) for g in globs) for f in js)
