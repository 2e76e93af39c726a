"""Cloudflare's alarm libraries, unchanged, under the virtual clock: objects written from each library's own
docs (the Agents SDK's ``schedule()``, an Actor's ``alarms.schedule()``, PartyServer rooms with and without
hibernation broadcasting from ``onAlarm``), installed from the lock file in ``libs/`` (conftest ``js_libs``).
Every time below is exact: the seed fixes the fire latency (1 ms a fire here)."""

import json
import os
import subprocess
import sys

import pytest

import alarmkit as ak



def cli(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "alarmkit", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


def run_project(lib_project, name):
    p = lib_project(name)
    sim = ak.Simulation(seed=0)
    w = sim.load_worker(wrangler=p / "wrangler.jsonc")
    return p, sim, w


def test_agent_schedule_delay_date_cron_cancel_and_a_callback_that_throws_once(lib_project):
    p, sim, w = run_project(lib_project, "agent")
    assert w.fetch("/start").text() == "ok"
    sim.run(until=700_000)
    assert w.logs == [
        (10_001, "log", "remind delay at 10001"),       # schedule(10, ...)
        (20_029, "log", "flaky ok at 20029"),           # the SDK's own retry, inside the same alarm()
        (60_001, "log", "remind date at 60001"),        # schedule(new Date(now + 60 s), ...)
        (300_001, "log", "tick at 300001"),             # "*/5 * * * *"
        (600_001, "log", "tick at 600001"),
    ]                                                   # the cancelled one never runs
    out = sim.call(w.env.REMINDER.getByName("r1").list())
    assert [(s["callback"], s["time"]) for s in out["schedules"]] == [("tick", 900)]


def test_agent_through_the_cli_drive(lib_project):
    p = lib_project("agent")
    r = cli("worker", "--wrangler", str(p / "wrangler.jsonc"), "--drive", str(p / "drive.json"), "--json")
    assert r.returncode == 0, r.stderr  # the callback that threw once ran on the SDK's own second attempt
    out = json.loads(r.stdout)
    assert [(a["t_ms"], a["retry_count"]) for a in out["attempts"]] == [
        (10_001, 0), (20_001, 0), (60_001, 0), (300_001, 0), (600_001, 0)]   # no platform retry: the SDK caught it
    assert out["final_alarms"] == {"r1": 900_000} and out["expect_failures"] == []


def test_actor_alarms_and_its_cold_wake(lib_project):
    p, sim, w = run_project(lib_project, "actor")
    assert w.fetch("/start").text() == "scheduled"
    sim.run(until=700_000)
    assert w.logs == [
        (10_001, "log", "ring delay at 10001"),
        (20_001, "error", 'error executing callback "flaky" Error: flaky fails once'),  # Actors drops it: no retry
        (60_001, "log", "ring date at 60001"),
        (300_001, "log", "tick at 300001"),  # woken cold: blockConcurrencyWhile ran after the constructor, no TypeError
        (600_001, "log", "tick at 600001"),
    ]


def test_actor_through_the_cli_drive(lib_project):
    p = lib_project("actor")
    r = cli("worker", "--wrangler", str(p / "wrangler.jsonc"), "--drive", str(p / "drive.json"), "--json")
    assert r.returncode == 1, r.stderr  # BROKEN: Actors dropped the callback that threw (workerd saw alarm() end ok)
    out = json.loads(r.stdout)
    assert out["verdict"]["held"] is False and [f["invariant"] for f in out["verdict"]["findings"]] == ["library_dropped"]
    assert "Actors dropped schedule" in " ".join(out["verdict"]["lines"]) and "flaky fails once" in " ".join(out["verdict"]["lines"])
    assert [(a["t_ms"], a["retry_count"]) for a in out["attempts"]] == [
        (10_001, 0), (20_001, 0), (60_001, 0), (300_001, 0), (600_001, 0)]
    assert out["final_alarms"] == {"default": 900_000}


def test_partyserver_rooms_with_and_without_hibernation_broadcast_from_on_alarm(lib_project):
    p = lib_project("party")
    r = cli("worker", "--wrangler", str(p / "wrangler.jsonc"), "--drive", str(p / "drive.json"), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [o["status"] for o in out["outcomes"]] == [200, 101, 200, 101]   # 101: a WebSocket inside the simulation
    assert sorted((a["t_ms"], a["retry_count"]) for a in out["attempts"]) == [
        (5001, 0), (5001, 0), (10_002, 0), (10_002, 0), (15_003, 0), (15_003, 0)]  # same-instant fires share a ms (round3)
    sim = ak.Simulation(seed=0)
    w = sim.load_worker(wrangler=p / "wrangler.jsonc")
    for room in ("room", "live-room"):
        w.fetch(f"/parties/{room}/lobby", method="POST")
        assert w.fetch(f"/parties/{room}/lobby", headers={"Upgrade": "websocket"}).status == 101
    sim.run(until=30_000)
    assert sorted(w.logs) == [
        (5001, "log", "LiveRoom lobby: tick 1 at 5001 to 1 connection(s)"),
        (5001, "log", "Room lobby: tick 1 at 5001 to 1 connection(s)"),   # hibernate: ctx.getWebSockets()
        (10_002, "log", "LiveRoom lobby: tick 2 at 10002 to 1 connection(s)"),
        (10_002, "log", "Room lobby: tick 2 at 10002 to 1 connection(s)"),
        (15_003, "log", "LiveRoom lobby: tick 3 at 15003 to 1 connection(s)"),
        (15_003, "log", "Room lobby: tick 3 at 15003 to 1 connection(s)"),
    ]
