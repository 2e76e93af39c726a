"""The ``deploy_removes_alarm`` probe's simulated side: a stored alarm, then a restart onto code whose
class has no ``alarm()`` (the twin's ``FidDeploy`` becoming ``FidNoAlarm``), with exact virtual times.
The same probe on real workerd is in test_workerd_twin.py (the ``quick`` fixture); the committed real
result is judged against today's simulator in test_calibrate.py."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from alarmkit.calibrate import SimWorkerd
from alarmkit.calibrate.fid_probes import fid_log, fid_op
from alarmkit.calibrate.fidtwin import TwinFidDeploy, TwinFidNoAlarm
from alarmkit.calibrate.importer import twin_rows
from alarmkit.calibrate.recorded import fidelity_reference
from alarmkit.calibrate.runner import run_probe
from alarmkit.calibrate.simbackend import EPOCH_MS
from alarmkit.calibrate.workerd import WorkerdError, render_config
from alarmkit.calibrate.workerd import WorkerdProcess


def _rows(wd, *kinds):
    ev = wd.sim.events()
    ev = ev[ev["kind"].isin(kinds)]
    return [(int(t) - EPOCH_MS, k, None if pd.isna(r) else int(r), json.loads(d) if isinstance(d, str) else d)
            for t, k, r, d in zip(ev["t_ms"], ev["kind"], ev["retry_count"], ev["detail"])]


def test_simulated_deploy_drops_the_due_alarm_once_with_a_warning_at_exact_times():
    wd = SimWorkerd(seed=0)
    r = run_probe(wd, "deploy_removes_alarm")
    # armed at 0 for +3000 (t relative to the alarm's time: -3000), down 1 s, up at -2000
    assert (r["restart_at"], r["restart_done"], r["get_alarm_before"]) == (-3000, -2000, 0)
    assert r["constructed_for_the_alarm"] == [1]  # the due alarm built the object (1 ms late: seed 0's draw), no request did
    assert (r["constructions_after_restart"], r["alarm_runs"], r["get_alarm_after"]) == (1, 0, None)
    assert r["same_instance_at_check"] is True and r["warning_logged"] == 1
    rows = _rows(wd, "restart", "deploy", "fire", "construct", "handler_error", "retry_scheduled", "abandoned", "evict")
    assert [(t, k, rc) for t, k, rc, _ in rows] == [
        (0, "construct", None), (0, "restart", None), (0, "deploy", None),
        (3001, "fire", 0), (3001, "construct", None), (3001, "handler_error", 0),
        (14_000, "evict", None),  # idle 10 s after the getAlarm() at +4000: a retry after it would construct again
        (19_000, "restart", None), (19_000, "deploy", None)]
    err = rows[5][3]
    assert (err["error"], err["counted"], err["retry"]) == ("NoAlarmHandler", False, False)
    assert err["warning"].startswith("TwinFidNoAlarm has no alarm() handler")
    assert [d["version"] for _, k, _, d in rows if k == "deploy"] == ["v2", "v1"]
    assert wd.deploy == "v1" and wd.fids["deploy"].cls is TwinFidDeploy  # redeployed back at the end


def test_the_same_restart_without_the_deploy_runs_alarm():
    # the control: only the deploy makes the difference (FidDeploy keeps Fid's alarm() under "v1")
    wd = SimWorkerd(seed=0)
    at = EPOCH_MS + 3000
    fid_op(wd, "arm_at", "d", cls="deploy", at=at)
    wd.restart(1.0)
    wd.sleep(4.0)
    kinds = [(r["t_ms"] - at, r["kind"]) for r in fid_log(wd, "d")]
    assert kinds == [(1, "construct"), (1, "alarm_start"), (1, "alarm_end")]  # the log starts again at the restart
    assert fid_op(wd, "get", "d", cls="deploy")["alarm"] is None


def test_redeploy_changes_only_the_deploy_namespace_and_refuses_an_unknown_version():
    wd = SimWorkerd(seed=0)
    wd.redeploy("v2")
    assert wd.fids["deploy"].cls is TwinFidNoAlarm and wd.deploy == "v2"
    assert wd.fids["fid"].cls.__name__ == "TwinFid"
    r = fid_op(wd, "arm_at", "x", cls="deploy", at=EPOCH_MS + 60_000)  # now a class without alarm()
    assert r["error"]["message"].startswith("Your Durable Object class must have an alarm() handler")
    with pytest.raises(WorkerdError, match=r"unknown twin deploy 'v3'; deploys: \['v1', 'v2'\]"):
        wd.redeploy("v3")


def test_the_imported_real_run_has_the_restart_and_the_deploy_beside_it():
    real = fidelity_reference()["deploy_removes_alarm"]
    rows = [(r.t_ms, r.kind) for r in twin_rows(real)]
    assert (real["restart_at"], "restart") in rows and (real["restart_at"], "deploy") in rows
    assert [k for _, k in rows if k == "construct"] == ["construct", "construct"]  # before, and for the alarm


def test_render_config_of_deploy_v2_puts_its_module_first(tmp_path):
    v1 = render_config(1, tmp_path)
    v2 = render_config(1, tmp_path, deploy="v2")
    assert 'embed "deploy-v2.js"' not in v1
    assert 'modules = [ (name = "deploy-v2.js", esModule = embed "deploy-v2.js"), (name = "worker.js"' in v2
    for text in (v1, v2):  # the same className and uniqueKey either way: the stored alarms survive
        assert '(className = "FidDeploy", uniqueKey = "alarmkit-twin-fid-deploy", enableSql = true)' in text
        assert not re.search(r"@[A-Z_]+@", text)
    with pytest.raises(WorkerdError, match="unknown twin deploy 'v0'"):
        render_config(1, tmp_path, deploy="v0")


def test_workerd_process_refuses_an_unknown_deploy_before_stopping(workerd_binary):
    with WorkerdProcess(workerd_binary) as wd:
        with pytest.raises(WorkerdError, match="unknown twin deploy"):
            wd.redeploy("v9")
        assert wd.running and wd.deploy == "v1"


def test_the_simulated_log_has_a_start_line_per_start_and_the_warning_after_the_deploy():
    wd = SimWorkerd(seed=0)
    run_probe(wd, "deploy_removes_alarm")
    log = wd.log_tail()
    assert log.count("=== start") == 3  # the first start, the deploy of v2, the deploy back to v1
    assert [part.count("without a handler") for part in log.split("=== start")[1:]] == [0, 1, 0]
