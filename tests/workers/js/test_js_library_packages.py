"""The real libraries' own schedules, journaled at exact virtual times from their tables and console lines:
the Agents SDK (agents 0.32.0: notebook 12's Agent, pinned in notebooks/workers/agent/package-lock.json and
installed with `npm ci` into a cache folder), Actors and PartyServer (tests/workers/js/libs' projects)."""

import json
import shutil

import pandas as pd
import pytest

import alarmkit as ak
from alarmkit.journal import library_schedules, verdict_of_events
from alarmkit.workers import run_worker
from alarmkit.workers.js.projects import install_project
from alarmkit.workers.js.scenarios import notebook_worker


@pytest.fixture(scope="module")
def agent_project(js_host):
    if not shutil.which("npm"):
        pytest.skip("installing the Agents SDK needs npm")
    return install_project(notebook_worker("agent"))


def test_an_agents_schedules_as_the_sdk_saw_them(agent_project):
    sim = ak.Simulation(seed=0)
    w = sim.load_worker(wrangler=agent_project / "wrangler.jsonc")
    ids = sim.call(w.env.REMINDERS.getByName("r").plan())
    assert ids == ["61KdYEpkK", "vEmNHvwP3", "U9-Sep_aZ", "jum_ZvDh3", "jaJeZZtzF"]     # nanoid from the seed
    sim.run(until=400_000)
    ev = sim.events()
    lib = ev[ev["kind"].str.startswith("lib_")]
    assert [(int(t), k, int(s), json.loads(d)["callback"]) for t, k, s, d in
            zip(lib["t_ms"], lib["kind"], lib["scheduled_ms"], lib["detail"])] == [
        (0, "lib_schedule", 10_000, "remind"), (0, "lib_schedule", 60_000, "remind"),
        (0, "lib_schedule", 300_000, "digest"), (0, "lib_schedule", 30_000, "flaky"),
        (0, "lib_schedule", 45_000, "broken"),
        (0, "lib_schedule", 90_000, "remind"), (0, "lib_cancelled", 90_000, "remind"),   # made and cancelled in one turn
        (10_001, "lib_ran", 10_000, "remind"),
        (30_099, "lib_ran", 30_000, "flaky"),        # threw once; the SDK's second attempt 98 ms later ran it
        (45_244, "lib_dropped", 45_000, "broken"),   # three attempts inside one alarm(), then dropped
        (60_001, "lib_ran", 60_000, "remind"),
        (300_001, "lib_ran", 300_000, "digest"), (300_001, "lib_schedule", 600_000, "digest"),   # the cron moves on
    ]
    fires = ev[ev["kind"].isin(["fire", "handler_ok", "handler_error", "retry_scheduled"])]
    assert list(zip(fires["t_ms"], fires["kind"])) == [
        (10_001, "fire"), (10_001, "handler_ok"), (30_001, "fire"), (30_099, "handler_ok"), (45_001, "fire"),
        (45_244, "handler_ok"), (60_001, "fire"), (60_001, "handler_ok"), (300_001, "fire"), (300_001, "handler_ok")]
    s = library_schedules(ev).set_index("id")
    assert (s.loc["jaJeZZtzF", "outcome"], int(s.loc["jaJeZZtzF", "attempts"])) == ("dropped", 3)
    assert s.loc["jaJeZZtzF", "error"] == "Error: the downstream service is down"
    assert [f.text for f in verdict_of_events(ev).findings] == [
        "library_dropped · r: Agents SDK dropped schedule jaJeZZtzF (broken, due at 45.000 s) at 45.244 s after 3 "
        "failed attempts: Error: the downstream service is down"]


def test_the_same_seed_gives_the_same_schedules(agent_project):
    rows = []
    for _ in range(2):
        sim = ak.Simulation(seed=3)
        w = sim.load_worker(wrangler=agent_project / "wrangler.jsonc")
        sim.call(w.env.REMINDERS.getByName("r").plan())
        sim.run(until=100_000)
        ev = sim.events()
        rows.append(ev[ev["kind"].str.startswith("lib_")][["t_ms", "kind", "scheduled_ms", "detail"]].values.tolist())
    assert rows[0] == rows[1] and len(rows[0]) == 11


# the libraries' fixture (tests/workers/js/libs: agents, @cloudflare/actors, partyserver, one lock file), installed
# once into the cache by conftest's js_libs; each test runs a copy of one of its projects


def test_actors_drops_a_callback_that_throws_once_and_the_verdict_names_it(lib_project):
    actor = lib_project("actor")
    run = run_worker(None, actor / "drive.json", wrangler=actor / "wrangler.jsonc")
    ev = run.sim.events()
    s = library_schedules(ev)
    assert [(r.callback, int(r.due_ms), None if pd.isna(r.ended_ms) else int(r.ended_ms), r.outcome)
            for r in s.itertuples()] == [
        ("ring", 10_000, 10_001, "ran"), ("flaky", 20_000, 20_001, "dropped"), ("ring", 30_000, 0, "cancelled"),
        ("ring", 60_000, 60_001, "ran"), ("tick", 300_000, 300_001, "ran"), ("tick", 600_000, 600_001, "ran"),
        ("tick", 900_000, None, "pending")]
    assert int(s.loc[s["callback"] == "flaky", "attempts"].iloc[0]) == 1     # Actors makes one attempt
    assert ev.query("kind == 'handler_ok'")["t_ms"].tolist() == [10_001, 20_001, 60_001, 300_001, 600_001]
    assert run["expect_failures"] == []            # flaky stored its count before it threw: the drive's expect holds
    assert [f.text for f in run.verdict.findings] == [
        "library_dropped · default: Actors dropped schedule jaJeZZtzF (flaky, due at 20.000 s) at 20.001 s after 1 "
        "failed attempt: Error: flaky fails once"]


def test_partyserver_keeps_no_schedules_of_its_own(lib_project):
    party = lib_project("party")
    run = run_worker(None, party / "drive.json", wrangler=party / "wrangler.jsonc")
    ev = run.sim.events()
    assert not ev["kind"].str.startswith("lib_").any() and (ev["kind"] == "fire").sum() == 6
