"""Measured fire lateness: the workerd profile's default (300 quiet fires), the loaded sample, and the
workerd-local profile's first fires, each recomputed from its committed file and replayed seeded."""

import json
import random
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import duckdb
import pytest

import alarmkit as ak
from alarmkit.runtime.profiles import (LOADED_LATENESS_COUNTS, LOADED_LATENESS_MS, MEASURED_FIRST_FIRES_MS,
                                       QUIET_LATENESS_COUNTS, QUIET_LATENESS_MS)

# probes whose first fire is not an ordinary one: queued behind a running alarm (overlap_*), set in the
# past, after a restart, or waking an evicted object (its constructor runs first)
NOT_ORDINARY = ("overlap_inside", "overlap_outside", "past", "restart_future", "restart_past_due", "revival",
                "revival_quick", "wake_evicted")


# the reference run the sample comes from: recorded on a quiet machine, committed before the one that
# added the gate and abort probes (recorded under load: median 2 ms, up to 74 ms); see profiles.py
QUIET_REFERENCE = "1d27644:alarmkit/calibrate/data/calibration-workerd-1.20261117.1.duckdb"
REPO = Path(__file__).resolve().parents[2]


def test_the_measured_sample_is_the_quiet_reference_runs_ordinary_first_fires(tmp_path):
    if shutil.which("git") is None or subprocess.run(["git", "cat-file", "-e", QUIET_REFERENCE], cwd=REPO,
                                                     capture_output=True).returncode != 0:
        pytest.skip(f"needs git history holding {QUIET_REFERENCE} (a source checkout)")
    db = tmp_path / "quiet.duckdb"
    db.write_bytes(subprocess.run(["git", "show", QUIET_REFERENCE], cwd=REPO, capture_output=True, check=True).stdout)
    con = duckdb.connect(str(db), read_only=True)
    late = con.execute(
        "SELECT e.t_ms - e.scheduled_ms, r.scenario FROM events e JOIN runs r USING (run_id) "
        "WHERE r.profile = 'workerd-real@1.20261117.1' AND e.kind = 'fire' AND e.retry_count = 0"
    ).fetchall()
    ordinary = sorted(ms for ms, scenario in late if scenario.removeprefix("calibrate:") not in NOT_ORDINARY)
    assert tuple(ordinary) == MEASURED_FIRST_FIRES_MS
    assert (ordinary[len(ordinary) // 2], min(ordinary), max(ordinary)) == (1, 0, 13)


class Tick(ak.DurableObject):
    async def arm(self, at):
        await self.ctx.storage.set_alarm(at)

    async def alarm(self, info):
        if info.scheduled_time < 5_000:
            await self.ctx.storage.set_alarm(info.scheduled_time + 1_000)


def draws(seed, n, sample=QUIET_LATENESS_MS):
    """The first n fire lateness draws of a run with this seed: a generator of their own, seeded from the
    run's seed (so the kernel's source, which draws the retry jitter, never sees them)."""
    rng = random.Random(f"fire-latency:{seed}")
    return [sample[rng.randrange(len(sample))] for _ in range(n)]


def test_fires_are_late_by_seeded_draws_from_the_sample():
    def fires(seed):
        sim = ak.Simulation("workerd-local", seed=seed)
        sim.call(sim.namespace("T", Tick).get("t").arm(1_000))
        sim.run()
        ev = sim.events()
        return [int(t) for t in ev[ev["kind"] == "fire"]["t_ms"]]

    # seed 0's draws from the run's fire-latency stream: 0, 1, 1, 1, 1 ms
    assert fires(0) == fires(0) == [1_000, 2_001, 3_001, 4_001, 5_001] == [1_000 * k + d for k, d in
                                                                           zip(range(1, 6), draws(0, 5, MEASURED_FIRST_FIRES_MS))]
    assert fires(1) != fires(0)  # another seed, other draws


def _probe_samples(name):
    from alarmkit.calibrate.recorded import data_dir

    return json.loads((data_dir() / name).read_text())["results"]["lateness_many"]["samples_ms"]


def _stats(samples):
    srt = sorted(samples)
    return len(srt), srt[0], (srt[149] + srt[150]) / 2, srt[269], srt[-1]  # n, min, median, p90, max


def test_the_quiet_sample_is_its_runs_300_fires_and_the_loaded_one_stays():
    quiet = _probe_samples("lateness-quiet-workerd-1.20261117.1.json")
    assert tuple(sorted(Counter(quiet).items())) == QUIET_LATENESS_COUNTS
    assert _stats(quiet) == (300, 0, 1.0, 2, 44)
    loaded = _probe_samples("fidelity-workerd-1.20261117.1.json")
    assert tuple(sorted(Counter(loaded).items())) == LOADED_LATENESS_COUNTS
    assert _stats(loaded) == (300, 1, 4.5, 31, 107)
    # the names: the quiet sample (the workerd default), the loaded one, the exact 2 ms; an int is exact too
    assert ak.Latency.measured() == ak.Latency.from_value("measured") == ak.Latency.empirical(sorted(quiet))  # kept sorted, as counts
    assert ak.PROFILES["workerd"].fire_latency == ak.Latency.measured()
    assert ak.Simulation().profile.fire_latency == ak.Latency.measured()
    assert ak.Latency.from_value("measured-loaded").values == LOADED_LATENESS_MS
    assert ak.Latency.from_value("exact") == ak.Latency.from_value(2) == ak.Latency.fixed(2)
    assert ak.PROFILES["workerd-2026-07"].fire_latency == ak.PROFILES["workerd"].fire_latency  # workerd, older facets
    assert ak.PROFILES["workerd-local"].fire_latency == ak.Latency.empirical(MEASURED_FIRST_FIRES_MS)
    assert ak.PROFILES["celld"].fire_latency == ak.Latency.fixed(2)


def _lateness(seed, **kw):
    # one object per instant (1 ms apart): each fire takes its own draw; fires sharing an instant share its
    # latency plus a spread (test_same_instant_fires_share_the_instant_and_spread_over_2_to_7_ms)
    sim = ak.Simulation(seed=seed, **kw)
    ns = sim.namespace("T", Tick)
    for i in range(300):
        sim.call(ns.get(f"t{i}").arm(1_000 + i))
    sim.run(until=1_500)
    ev = sim.events()
    fires = ev[ev["kind"] == "fire"]
    return [int(t) - int(s) for t, s in zip(fires["t_ms"], fires["scheduled_ms"])], ev


def test_the_default_draws_seeded_from_the_quiet_sample_and_exact_is_2_ms():
    late, ev = _lateness(0)
    assert len(late) == 300 and set(late) <= set(QUIET_LATENESS_MS)
    assert sorted(late) == sorted(draws(0, 300))  # each fire takes one draw
    counts = Counter(late)
    assert counts[1] > counts[2] > counts[0] and counts[1] > 150  # the sample's shape: 220, 68, 5 of 300
    again, ev2 = _lateness(0)
    assert again == late and ev2.equals(ev)  # the same seed: the same journal, row for row
    assert _lateness(0, fire_latency="measured")[1].equals(ev)  # the default is "measured"
    assert _lateness(1)[0] != late  # another seed, other draws
    assert set(_lateness(0, fire_latency="exact")[0]) == {2}  # the teaching option: every fire 2 ms late
    assert set(_lateness(0, fire_latency=0)[0]) == {0}
    loaded = _lateness(0, fire_latency="measured-loaded")[0]
    assert set(loaded) <= set(LOADED_LATENESS_MS) and min(loaded) >= 1 and max(loaded) > 9


class Flaky(ak.DurableObject):
    async def arm(self, at):
        await self.ctx.storage.set_alarm(at)

    async def alarm(self, info):
        raise RuntimeError("down")


def _retries(**kw):
    sim = ak.Simulation(seed=3, retry_max_tries=3, **kw)
    sim.call(sim.namespace("F", Flaky).get("f").arm(1_000))
    sim.run()
    ev = sim.events()
    fires = [int(t) for t in ev[ev["kind"] == "fire"]["t_ms"]]
    jitter = [json.loads(d)["jitter_ms"] for d in ev[ev["kind"] == "retry_scheduled"]["detail"]]
    return fires, jitter


def test_a_retry_is_the_previous_fire_plus_backoff_jitter_and_its_own_draw_and_the_jitter_is_unmoved():
    fires, jitter = _retries()
    exact_fires, exact_jitter = _retries(fire_latency="exact")
    # the draws come from a generator of their own: the kernel's source draws the same jitter either way
    assert jitter == exact_jitter and len(fires) == 4
    late = draws(3, 4)
    assert fires[0] == 1_000 + late[0]
    for k in range(1, 4):  # the handler fails at once: the retry is due at its fire + 2 s << (k-1) + jitter
        assert fires[k] == fires[k - 1] + (2_000 << (k - 1)) + jitter[k - 1] + late[k]
    assert exact_fires[0] == 1_002 and all(
        exact_fires[k] == exact_fires[k - 1] + (2_000 << (k - 1)) + jitter[k - 1] + 2 for k in range(1, 4))
