"""The fidelity check: the calibration twin's own worker.js (what real workerd runs) under the
JavaScript host, judged against the committed real-workerd reference with the calibration's checks:
every fact equal, every timing inside its band."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_twin_worker_js_under_the_host_matches_real_workerd(js_host):
    from alarmkit.calibrate.recorded import reference
    from alarmkit.workers.js.fidelity import NOT_RUN, recheck_js

    recorded = reference()
    cal = recheck_js(recorded)
    assert set(cal.verdicts) == set(recorded.observed)                    # every recorded probe has a verdict
    assert len(recorded.observed) == 48 and NOT_RUN == {}                 # the host runs every probe
    failed = {n: [c.name for c in v.checks if not c.ok] or v.error or v.not_run
              for n, v in cal.verdicts.items() if not v.match}
    assert not failed
    assert set(cal.sim_runs) == set(recorded.observed)                    # 48 of 48, each run and journaled
    assert {"exhaustion", "revival", "abort_retry", "gate", "restart_past_due", "no_alarm_class",
            "same_instant", "turn_abort_await", "ctor_fail_2", "delete_all_2026_11", "long_alarm", "facet",
            "deploy_removes_alarm", "round3"} <= set(cal.verdicts)


def test_the_facet_probe_under_the_host_gives_the_python_twins_journal_and_real_workerds_facts(js_host):
    from alarmkit.calibrate.calibration import run_sim
    from alarmkit.calibrate.recorded import reference
    from alarmkit.journal import Journal
    from alarmkit.workers.js.fidelity import recheck_js

    recorded = reference()
    cal = recheck_js(recorded, names=["facet"])
    v = cal.verdicts["facet"]
    assert v.match and len(v.checks) == 22, [c.name for c in v.mismatches]
    js = cal.simulated["facet"]
    steps = [(e["t"], e["detail"].get("step", e["kind"])) for e in js["events"]]
    assert steps == [(0, "construct"), (0, "ping_before"), (0, "get_before"), (0, "set_alarm_call"), (0, "pending_call"),
                     (200, "parent_work"), (300, "ping_same_stub_after"), (300, "get_same_stub_after"),
                     (300, "ping_regot"), (300, "get_regot"), (1500, "facet_events_after_wait"),
                     (1500, "parent_alarm"), (1500, "parent_sql_ok")]
    real = [e["detail"].get("step", e["kind"]) for e in recorded.observed["facet"]["events"]]
    assert [s for _, s in steps] == real                                  # real workerd's order (its times add latency)
    assert js["events"] == run_sim(["facet"], Journal())[0]["facet"]["events"]   # the Python twin's, row for row
    assert js["set_alarm_call"]["error"]["text"] == "Error: Facets currently cannot set alarms."
    assert [e["kind"] for e in js["facet_events_after_wait"]["value"]] == ["construct", "construct"]
    kinds = cal.journal.events(cal.sim_runs["facet"])
    broken = kinds[kinds["kind"] == "facet_broken"]
    assert list(broken["object_id"]) == [f"{js['obj']}/f1"] and list(broken["t_ms"] - kinds["t_ms"].min()) == [0]


def test_a_probe_the_host_skips_is_not_run_not_an_error(js_host):
    from alarmkit.calibrate.render import text_table
    from alarmkit.workers.js.fidelity import recheck_js

    cal = recheck_js(names=["normal", "facet"], skip={"facet": "skipped for this test"})
    assert cal.verdicts["normal"].match and "facet" not in cal.sim_runs
    assert cal.verdicts["facet"].not_run == "simulator: skipped for this test" and cal.verdicts["facet"].error is None
    table = text_table(cal)
    assert "ERROR" not in table and "  facet: not run: simulator: skipped for this test" in table
    assert table.rstrip().endswith("1/2 probes match, 1 not run")

def test_calibrate_cli_js_host_against_the_reference(js_host, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "alarmkit", "calibrate", "--reference", "--js-host",
                        "--probe", "normal", "--probe", "abort_no_retry"], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2/2 probes match" in p.stdout
    assert "worker.js under the JavaScript host" in p.stderr
