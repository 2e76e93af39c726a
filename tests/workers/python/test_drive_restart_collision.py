"""A drive's own restart step that comes while a fault plan's restart has the runtime down (explore
--worker's random restarts) is skipped and said, as a plan's restart that finds it down is; it raised
"the runtime is already down" out of the run."""

import json
import shutil
from pathlib import Path

import alarmkit as ak
from alarmkit.workers import explore_worker, run_worker

FIXTURES = Path(__file__).parent / "fixtures"
DRIVE = {"steps": [{"at": 0, "call": "CACHE", "name": "c", "method": "put", "args": ["k", "v", 5000]},
                   {"at": 2000, "restart": 1000}], "until": 20000}


def _files(tmp_path):
    shutil.copy(FIXTURES / "ttl.py", tmp_path / "ttl.py")
    (tmp_path / "drive.json").write_text(json.dumps(DRIVE))
    return tmp_path / "ttl.py", tmp_path / "drive.json"


def test_the_drives_restart_while_a_plans_restart_has_the_runtime_down_is_skipped_and_said(tmp_path):
    entry, drive = _files(tmp_path)
    plan = ak.FaultPlan.from_dict({"restarts": [{"at_ms": 1500, "downtime_ms": 2000}]})
    r = run_worker(entry, drive, bindings={"CACHE": "TtlCache"}, faults=plan)
    assert r.summary["skipped_steps"] == ["step 2: restart at 2000 ms (1000 ms down) skipped: the runtime was already "
                                          "down (a fault plan's restart)"]
    ev = r.events
    assert list(ev.loc[ev["kind"] == "restart", "t_ms"]) == [1500]  # the plan's; the drive's found it down
    # without the plan the drive's restart happens
    alone = run_worker(entry, drive, bindings={"CACHE": "TtlCache"})
    assert alone.summary["skipped_steps"] == [] and list(alone.events.query("kind == 'restart'")["t_ms"]) == [2000]


def test_explore_worker_with_random_restarts_over_a_drives_restart_runs_every_seed(tmp_path):
    entry, drive = _files(tmp_path)
    plan = ak.FaultPlan.from_dict({"restarts": [{"at_ms": 1900, "downtime_ms": 500}]})
    found = explore_worker(entry, drive, bindings={"CACHE": "TtlCache"}, faults=plan, seeds=3, depth=1,
                           crash_points=None, workers=1, progress=False)
    assert found.runs == 4  # the baseline and three random runs
    assert "raised out of the scenario" not in found.report()  # each raised "the runtime is already down" before
