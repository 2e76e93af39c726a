"""The workerd-local profile's fire latency: replayed (seeded) from the committed reference run."""

import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

import alarmkit as ak
from alarmkit.runtime.profiles import MEASURED_FIRST_FIRES_MS

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


def test_fires_are_late_by_seeded_draws_from_the_sample():
    def fires(seed):
        sim = ak.Simulation("workerd-local", seed=seed)
        sim.call(sim.namespace("T", Tick).get("t").arm(1_000))
        sim.run()
        ev = sim.events()
        return [int(t) for t in ev[ev["kind"] == "fire"]["t_ms"]]

    assert fires(0) == fires(0) == [1_001, 2_002, 3_001, 4_000, 5_001]  # seed 0's draws: 1, 2, 1, 0, 1 ms
    assert fires(1) != fires(0)  # another seed, other draws
    assert ak.Simulation("workerd", seed=0).profile.fire_latency == ak.Latency.fixed(2)  # the production stand-in: unchanged
