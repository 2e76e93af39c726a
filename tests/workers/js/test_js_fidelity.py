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
    assert len(recorded.observed) == 43 and set(NOT_RUN) == {"facet"}     # ctx.facets: not in the JavaScript host
    matched = {n for n, v in cal.verdicts.items() if v.match}
    failed = {n: [c.name for c in v.checks if not c.ok] or v.error
              for n, v in cal.verdicts.items() if not v.match and n not in NOT_RUN}
    assert not failed
    assert matched == set(recorded.observed) - {"facet"}                  # 42 of 43, long ones and fid_* too
    assert {"exhaustion", "revival", "abort_retry", "gate", "restart_past_due", "no_alarm_class", "deploy_removes_alarm",
            "same_instant", "turn_abort_await", "ctor_fail_2", "delete_all_2026_11", "long_alarm"} <= matched
    facet = cal.verdicts["facet"]                                         # said, not hidden, and never run
    assert not facet.match and facet.error.startswith("simulator: not run under the JavaScript host")
    assert "facet" not in cal.sim_runs


def test_calibrate_cli_js_host_against_the_reference(js_host, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "alarmkit", "calibrate", "--reference", "--js-host",
                        "--probe", "normal", "--probe", "abort_no_retry"], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2/2 probes match" in p.stdout
    assert "worker.js under the JavaScript host" in p.stderr
