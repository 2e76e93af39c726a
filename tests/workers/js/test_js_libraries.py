"""Libraries made visible: the schedules the Agents SDK and Actors keep in their own tables are read after each
turn and journaled (lib_* rows), drawn on the timeline, listed in the report and named by the verdict when the
library dropped one after it failed. tests/workers/js/objects/libtables.js keeps its schedules in the libraries'
own tables, with their console lines (the real packages: test_js_library_packages.py)."""

import json

import alarmkit as ak
import pandas as pd
import pytest
from alarmkit.journal import library_schedules, verdict_of_events
from alarmkit.journal._library import library_failure, schedule_rows, table_rows
from alarmkit.plots import timeline
from alarmkit.workers.js import load


def lib_rows(sim):
    ev = sim.events()
    ev = ev[ev["kind"].str.startswith("lib_")]
    return [(int(t), o, k, int(s), json.loads(d)["id"]) for t, o, k, s, d in
            zip(ev["t_ms"], ev["object_id"], ev["kind"], ev["scheduled_ms"], ev["detail"])]


def agent_run(js_host):
    sim = ak.Simulation(seed=0)
    w = load(sim, js_host / "libtables.js", {"AGENT": "AgentLike", "ACTOR": "ActorLike"})
    a = w.env.AGENT.getByName("a")
    assert [sim.call(a.schedule(*args)) for args in ((10, "ok", "x"), (20, "boom", "y"), ("* * * * *", "flaky", "c"),
                                                     (300, "ok", "z"))] == ["job1", "job2", "job3", "job4"]
    sim.call(a.failTimes(5))      # flaky fails its three attempts at 60 s and two more at 120 s
    sim.advance(30_000)
    sim.call(a.cancel("job4"))
    b = w.env.ACTOR.getByName("b")
    assert sim.call(b.schedule(5, "boom", None)) == "a5"
    sim.run(until=200_000)
    return sim


def test_agents_and_actors_schedules_at_exact_times(js_host):
    sim = agent_run(js_host)
    assert lib_rows(sim) == [
        (0, "a", "lib_schedule", 10_000, "job1"), (0, "a", "lib_schedule", 20_000, "job2"),
        (0, "a", "lib_schedule", 60_000, "job3"), (0, "a", "lib_schedule", 300_000, "job4"),
        (10_001, "a", "lib_ran", 10_000, "job1"),
        (20_301, "a", "lib_dropped", 20_000, "job2"),       # three attempts inside one alarm(): +100 ms, +200 ms
        (30_000, "a", "lib_cancelled", 300_000, "job4"),
        (30_000, "b", "lib_schedule", 35_000, "a5"),
        (35_001, "b", "lib_dropped", 35_000, "a5"),         # Actors: one attempt, caught, dropped
        (60_301, "a", "lib_failed", 60_000, "job3"), (60_301, "a", "lib_schedule", 120_000, "job3"),  # cron moves on
        (120_301, "a", "lib_ran", 120_000, "job3"), (120_301, "a", "lib_schedule", 180_000, "job3"),
        (180_001, "a", "lib_ran", 180_000, "job3"), (180_001, "a", "lib_schedule", 240_000, "job3"),
    ]
    ev = sim.events()
    ok = ev[ev["kind"] == "handler_ok"]["t_ms"].tolist()
    assert 20_301 in ok and 35_001 in ok and 60_301 in ok   # what the platform saw: alarm() succeeded every time
    assert not (ev["kind"] == "retry_scheduled").any()


def test_the_schedules_as_the_library_saw_them(js_host):
    df = library_schedules(agent_run(js_host).events())
    rows = [(r["object"], r["library"], r["id"], r["callback"], r["type"], int(r["due_ms"]),
             None if pd.isna(r["ended_ms"]) else int(r["ended_ms"]), r["outcome"],
             None if pd.isna(r["attempts"]) else int(r["attempts"])) for _, r in df.iterrows()]
    assert rows == [
        ("a", "Agents SDK", "job1", "ok", "delayed", 10_000, 10_001, "ran", None),
        ("a", "Agents SDK", "job2", "boom", "delayed", 20_000, 20_301, "dropped", 3),
        ("b", "Actors", "a5", "boom", "delayed", 35_000, 35_001, "dropped", 1),
        ("a", "Agents SDK", "job3", "flaky", "cron", 60_000, 60_301, "failed, moved on", 3),
        ("a", "Agents SDK", "job3", "flaky", "cron", 120_000, 120_301, "ran", None),
        ("a", "Agents SDK", "job3", "flaky", "cron", 180_000, 180_001, "ran", None),
        ("a", "Agents SDK", "job3", "flaky", "cron", 240_000, None, "pending", None),
        ("a", "Agents SDK", "job4", "ok", "delayed", 300_000, 30_000, "cancelled", None),
    ]
    assert df.loc[df["id"] == "job2", "error"].iloc[0] == "Error: boom"


def test_the_verdict_names_each_schedule_the_library_dropped(js_host):
    v = verdict_of_events(agent_run(js_host).events())
    assert v.held is False and "library_dropped" in v.invariants
    assert [f.text for f in v.findings] == [
        "library_dropped · a: Agents SDK dropped schedule job2 (boom, due at 20.000 s) at 20.301 s after 3 failed "
        "attempts: Error: boom",
        "library_dropped · b: Actors dropped schedule a5 (boom, due at 35.000 s) at 35.001 s after 1 failed attempt: "
        "Error: boom",
    ]


def test_timeline_and_report_show_them(js_host, tmp_path):
    from alarmkit.report import export_html

    ev = agent_run(js_host).events()
    fig = timeline(ev)
    names = {t.name for t in fig.data}
    assert {"lib_schedule", "lib_ran", "lib_failed", "lib_dropped", "lib_cancelled", "library schedule → due"} <= names
    dropped = next(t for t in fig.data if t.name == "lib_dropped")
    assert list(dropped.x) == [20.301, 35.001]                         # seconds on this run's axis
    assert "callback: boom" in dropped.hovertext[0] and "attempts: 3" in dropped.hovertext[0]
    page = export_html(ev, tmp_path / "r.html").read_text()
    assert "library schedules" in page
    assert "a · Agents SDK job2 boom() (delayed) due 20 s: dropped at 20.301 s after 3 attempts: Error: boom" in page


def test_builder_reads_each_table_format():
    legacy = table_rows("cf_agents_schedules", [("x1", "tick", "cron", 120, "*/2 * * * *")])
    assert legacy["x1"].due_ms == 120_000 and legacy["x1"].library == "Agents SDK"    # epoch seconds
    jobs = table_rows("cf_agents_jobs", [("j", "send", '{"type":"scheduled"}', 1_500, "scheduler")])
    assert (jobs["j"].due_ms, jobs["j"].type, jobs["j"].callback) == (1_500, "scheduled", "send")
    odd = table_rows("cf_agents_jobs", [("k", "f", "not json", None, "tasks")])
    assert (odd["k"].type, odd["k"].due_ms, odd["k"].capability) == ("job", 0, "tasks")
    assert library_failure('error executing callback "send" after 3 attempts Error: x') == ("send", 3, "Error: x")
    assert library_failure('error executing callback "send" TypeError: y') == ("send", None, "TypeError: y")
    assert library_failure("callback nope not found") == ("nope", 0, "callback nope not found")
    assert library_failure("hello") is None
    # a failure whose callback never left the table explains nothing; a row that left before due was cancelled
    rows = schedule_rows(jobs, {}, [("other", 3, "E")], now=1_000)
    assert [r[0] for r in rows] == ["lib_cancelled"]


def test_a_custom_event_may_not_take_a_library_kind():
    sim = ak.Simulation(seed=0)
    with pytest.raises(ak.AlarmkitError, match="lib_dropped.*library's own schedules"):
        sim.journal_event("lib_dropped")


def test_the_worker_command_prints_the_library_schedules(js_host, tmp_path):
    import subprocess
    import sys

    drive = tmp_path / "drive.json"
    drive.write_text(json.dumps({"steps": [{"at": 0, "call": "AGENT", "name": "a", "method": "schedule", "args": [10, "ok", "x"]},
                                           {"at": 0, "call": "AGENT", "name": "a", "method": "schedule", "args": [20, "boom", "y"]}],
                                 "until": 60_000}))
    cmd = [sys.executable, "-m", "alarmkit", "worker", "--worker", str(js_host / "libtables.js"), "--bind", "AGENT=AgentLike",
           "--drive", str(drive)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and out.stderr == "", out.stderr  # BROKEN: the library dropped job2 (exit 1, as pytest's)
    assert out.stdout.startswith("verdict: BROKEN: 1 violation")
    assert "  Agents SDK schedule job1 ok() on a due 10000 ms: ran at 10001 ms" in out.stdout.splitlines()
    assert "  Agents SDK schedule job2 boom() on a due 20000 ms: dropped at 20301 ms after 3 attempts: Error: boom" \
        in out.stdout.splitlines()
    js = json.loads(subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=300).stdout)
    assert [(d["id"], d["outcome"], d["attempts"]) for d in js["library_schedules"]] == [("job1", "ran", None),
                                                                                         ("job2", "dropped", 3)]
