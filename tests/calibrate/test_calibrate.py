"""Calibration: the simulator's answers against real workerd's, probe by probe.

Three layers:
- no workerd needed: the importer, the checks, the simulated twin (exact virtual times), and the
  committed reference run under data/ checked against today's simulator (``recheck``);
- real workerd (skipped when it is not installed; ``python3 dev.py test`` installs it from npm):
  every quick probe on workerd and in the simulator, each must match (~30 s);
- long (``ALARMKIT_LONG=1``): the retry-exhaustion and revival probes (~3.5 min).
"""

from __future__ import annotations

import json
import os
import re

import pytest

from alarmkit.calibrate import Bands, SimWorkerd, calibrate, compare_results, overlay_figure, recheck, reference
from alarmkit.calibrate.catalogue import LONG, PROBES, QUICK
from alarmkit.calibrate.runner import run_probe, strip_events
from alarmkit.calibrate.importer import canonical_object, import_result, twin_rows
from alarmkit.calibrate.recorded import reference_path
from alarmkit.calibrate.workerd import DEFAULT_VERSION
from alarmkit.cli import main
from alarmkit.journal import EVENT_KINDS, Journal

LONG = os.environ.get("ALARMKIT_LONG") == "1"
REAL_PROFILE = f"workerd-real@{DEFAULT_VERSION}"


# ---------------------------------------------------------------------------------------------
# the importer: twin kinds -> journal kinds, times relative to the anchor
# ---------------------------------------------------------------------------------------------

def _ev(t, kind, scheduled=None, rc=None, is_retry=None, **detail):
    return {"t": t, "kind": kind, "scheduled": scheduled, "retry_count": rc, "is_retry": is_retry, "detail": detail}


CRASH = {
    "probe": "crash_after_effect", "obj": "ledger-crash-0a1b2c3d4e", "t0_ms": 1_000_000,
    "events": [
        _ev(-3, "construct", noboot=False),
        _ev(0, "grant", 300, id="a", ttl_ms=300, expire_at=1_000_300),
        _ev(0, "set_alarm", 300, src="grant", requested=1_000_300, previous=None, after=1_000_300),
        _ev(302, "alarm_start", 300, 0, 0, get_alarm=None, has_info=True),
        _ev(303, "revoke", None, 0, id="a", call_no=1),
        _ev(303, "throw", None, 0, where="revoke", id="a", message="injected revoke failure"),
        _ev(2400, "alarm_start", 300, 1, 1, get_alarm=None, has_info=True),
        _ev(2401, "revoke", None, 1, id="a", call_no=2),
        _ev(2401, "delete_lease", id="a"),
        _ev(2401, "ensure", src="alarm", next=None, action="none"),
        _ev(2402, "alarm_end", None, 1, revoked=["a"], get_alarm=None),
    ],
}


def test_twin_rows_map_kinds_and_keep_times_relative():
    rows = twin_rows(CRASH)
    assert [r[4] for r in rows] == ["construct", "call", "arm", "fire", "effect", "handler_error", "fire", "effect",
                                    "handler_ok"]
    assert [r[1] for r in rows] == [-3, 0, 0, 302, 303, 303, 2400, 2401, 2402]
    assert {r[3] for r in rows} == {"ledger-crash"} and {r[2] for r in rows} == {"LEDGER"}
    by = {(r[4], r[1]): r for r in rows}
    assert by[("call", 0)][8] == {"method": "grant", "id": "a", "ttl_ms": 300, "expire_at": 300}
    assert by[("arm", 0)][5:8] == (300, None, None)
    assert by[("arm", 0)][8]["cause"] == "user" and by[("arm", 0)][8]["direction"] == "new"
    assert by[("fire", 302)][5:8] == (300, None, 0) and by[("fire", 302)][8]["late_ms"] == 2
    assert by[("fire", 2400)][7] == 1 and by[("fire", 2400)][8] == {"attempt": 2, "late_ms": 2100, "is_retry": True,
                                                                     "get_alarm": None}
    assert by[("handler_error", 303)][8] == {"error": "Error", "message": "injected revoke failure", "counted": True,
                                             "where": "revoke"}
    assert by[("effect", 2401)][8] == {"name": "revoke", "key": "a", "call_no": 2}
    assert [r[0] for r in rows] == list(range(1, 10))


def test_import_result_writes_a_run_under_the_real_profile():
    j = Journal()
    run = import_result(j, "crash_after_effect", CRASH, DEFAULT_VERSION, {"x": 1})
    info = j.run(run)
    assert info["scenario"] == "calibrate:crash_after_effect" and info["profile"] == REAL_PROFILE
    assert info["params"] == {"x": 1, "t0_ms": 1_000_000, "obj": "ledger-crash-0a1b2c3d4e"}
    ev = j.events(run)
    assert list(ev["kind"]) == [r[4] for r in twin_rows(CRASH)]
    assert set(ev["kind"]) <= set(EVENT_KINDS)


def test_restart_and_revive_are_added_and_names_lose_their_suffix():
    res = {"probe": "revival", "obj": "ledger-revive-ffffffffff", "t0_ms": 0, "restart_at": -2100, "restart_s": 0.07,
           "events": [_ev(3, "construct", noboot=False),
                      _ev(20, "set_alarm", -2500, src="construct", requested=-2500, previous=None, after=20)]}
    rows = twin_rows(res)
    assert [(r[1], r[4], r[3]) for r in rows] == [(-2100, "restart", None), (3, "construct", "ledger-revive"),
                                                  (20, "arm", "ledger-revive"), (20, "revive", "ledger-revive")]
    assert rows[0][8] == {"downtime_ms": 70}
    assert canonical_object("probe-facet-83ec9115a7/f1") == "probe-facet/f1"
    assert canonical_object("probe-late50-0000000003") == "probe-late50"
    assert canonical_object(float("nan")) is None


# ---------------------------------------------------------------------------------------------
# the simulated twin: the probes run unchanged on the virtual clock
# ---------------------------------------------------------------------------------------------

def _sim(name, seed=0):
    wd = SimWorkerd(seed=seed)
    return run_probe(wd, name)


def test_simulated_probes_are_deterministic_with_exact_times():
    a, b = _sim("crash_after_effect"), _sim("crash_after_effect")
    assert strip_events(a) | {"wall_s": 0} == strip_events(b) | {"wall_s": 0}
    # seed 0: 300 + a 1 ms draw of the measured fire latency; then 2000 ms + 432 ms jitter + another 1 ms draw
    assert [x["t"] for x in a["attempts"]] == [301, 2734]
    assert a["retry_counts"] == [0, 1] and a["effect_count"] == 2
    ex = _sim("exhaustion")
    assert ex["attempt_t_s"] == [0.301, 2.734, 7.129, 16.682, 36.329, 71.776, 136.44]
    assert ex["attempts_after_exhaustion"] == 0 and ex["alarm_after"] is None


def test_simulated_wake_of_an_evicted_object_fires_once_and_the_constructor_keeps_the_alarm():
    # observed on workerd: evicted after ~10 s idle; the alarm rebuilds it; the constructor's
    # getAlarm() shows the stored time, so "moves only earlier" keeps it and alarm() runs once
    r = _sim("wake_evicted")
    assert r["constructs_t"] == [0, 15_001]  # 1 ms late: seed 0's draw
    assert [a["t"] for a in r["attempts"]] == [15_001]
    assert r["constructor_ensure"] == [{"src": "construct", "next": 15_000, "current": 15_000, "action": "keep"}]


def test_simulated_stop_and_start_take_the_runtime_down_for_the_time_slept():
    r = _sim("restart_past_due")
    assert (r["restart_at"], r["restart_began"], r["fire_minus_scheduled_ms"]) == (-1000, 1000, [1001])


def _sim_as_catalogued(name, seed=0, **changes):
    """The probe on the simulator as calibrate runs it (its ProbeSpec.sim settings), plus ``changes``."""
    return run_probe(SimWorkerd(seed=seed, **{**PROBES[name].sim, **changes}), name)


def test_new_behaviour_probes_are_simulated_under_workerd_local_at_the_twins_compat_date():
    for name in ("cold_name", "rearm_now", "rearm_scheduled"):
        assert PROBES[name].sim == {"profile": "workerd-local", "compatibility_date": "2026-11-17"}
        assert not PROBES[name].long  # quick: cold_name takes ~16 s of real time, as wake_evicted does
    assert PROBES["cold_name_2026_01"].sim == {"profile": "workerd-local", "compatibility_date": "2026-01-28"}
    assert PROBES["cold_name_2026_01"].compat_date == "2026-01-28" and not PROBES["cold_name_2026_01"].long
    assert PROBES["normal"].sim == {}


def test_simulated_cold_wake_keeps_the_name_on_workerd_local_and_loses_it_before_the_compat_date():
    r = _sim_as_catalogued("cold_name")
    obj = r["obj"]
    assert r["constructs_t"] == [0, 15_000]  # evicted after 10 s idle; rebuilt by the alarm, 0 ms late (seed 0)
    assert [a["t"] for a in r["attempts"]] == [15_000] and r["rebuilt_for_the_alarm"] is True
    assert r["name_in_constructor"] == [obj, obj] and r["name_in_alarm"] == [obj]
    # production's rule (profile workerd): before id_name_since (2026-03-15) a cold-woken instance has no name
    assert _sim_as_catalogued("cold_name_2026_01")["name_in_alarm"] == [obj]  # workerd-local: id_name_since=None
    old = _sim_as_catalogued("cold_name", profile="workerd", compatibility_date="2026-01-28")
    assert old["name_in_constructor"] == [old["obj"], None] and old["name_in_alarm"] == [None]
    v = compare_results("cold_name", r, old)
    assert [c.name for c in v.mismatches] == ["ctx.id.name in alarm() = the object's name",
                                              "ctx.id.name in every constructor = the object's name"]


@pytest.mark.parametrize("name", ["rearm_now", "rearm_scheduled"])
def test_simulated_rearm_chain_stalls_only_where_a_run_started_in_its_scheduled_millisecond(name):
    r = _sim_as_catalogued(name)
    # workerd-local's seeded latency draws (seed 0): 0 ms first; that start re-arms at its own scheduledTime,
    # which stays stored and never fires (rearm_at_now="same-time-unfired")
    assert [(a["t"], a["scheduled"]) for a in r["attempts"]] == [(100, 100)]
    assert [x["same_time"] for x in r["rearms"]] == [True]
    assert (r["fires"], r["fires_by_the_rule"], r["alarm_after"], r["overdue_after_ms"]) == (1, 1, 100, 2_900)
    assert compare_results(name, r, r).match
    # seed 5's draws (1, 2, 2, 3, 1, 1 ms) never start a run in its scheduled millisecond: the chain runs
    later = _sim_as_catalogued(name, seed=5)
    assert [(a["t"], a["scheduled"]) for a in later["attempts"]] == [
        (101, 100), (103, 101), (105, 103), (108, 105), (109, 108), (110, 109)]
    # production's "fires" (and its measured latency, seed 0's draws 1, 1, 1, 1, 1, 2 ms): the whole chain
    # runs, nothing stays stored
    prod = _sim_as_catalogued(name, profile="workerd")
    assert [a["t"] for a in prod["attempts"]] == [101, 102, 103, 104, 105, 107]
    assert (prod["fires"], prod["fires_by_the_rule"], prod["alarm_after"]) == (6, 6, None)


def test_rearm_check_judges_the_rule_not_the_count():
    sim = _sim_as_catalogued("rearm_now")
    real = json.loads(json.dumps(sim))
    real.update(fires=6, alarm_after=None, lateness_ms=[1, 2, 1, 0, 3, 2])  # a same-time re-arm that chained anyway
    v = compare_results("rearm_now", real, sim)
    assert [(c.name, c.observed, c.simulated) for c in v.mismatches] == [
        ("fires as the rule predicts (stall only on a re-arm at its own scheduledTime)", False, True)]
    chained = _sim_as_catalogued("rearm_now", profile="workerd")  # 6 fires, no same-time re-arm: the rule holds
    assert compare_results("rearm_now", chained, sim).match


# ---------------------------------------------------------------------------------------------
# the checks
# ---------------------------------------------------------------------------------------------

def test_compare_flags_a_structural_difference_with_both_values():
    real = _sim("normal")
    sim = json.loads(json.dumps(real))
    sim["revoke_calls"] = 3
    v = compare_results("normal", real, sim)
    assert not v.match
    [bad] = v.mismatches
    assert (bad.name, bad.kind, bad.observed, bad.simulated) == ("revoke calls", "exact", 2, 3)


def test_timings_must_be_in_band_on_both_sides():
    real = _sim("crash_after_effect")
    late = json.loads(json.dumps(real))
    late["retry_after_throw_ms"] = 2_800  # past 2000 + 500 jitter + 250 ms allowance
    v = compare_results("crash_after_effect", late, real)
    [bad] = v.mismatches
    assert (bad.name, bad.band, bad.observed, bad.simulated) == ("retry wait after the throw", (2000, 2750), 2800, 2433)
    assert compare_results("crash_after_effect", late, real, Bands(latency_ms=300)).match
    assert Bands().retry(5) == (64_000, 80_250)
    early = json.loads(json.dumps(real))
    early["attempts"][0]["t"] = early["attempts"][0]["scheduled"] - 1  # a fire before its time is never in band
    assert [c.name for c in compare_results("crash_after_effect", early, real).mismatches] == [
        "attempt 1 lateness (fire - scheduledTime)"]


def test_error_texts_may_carry_alarmkit_hint_after_workerds_words():
    real = _sim("bad_values")
    ok = compare_results("bad_values", real, real)
    assert ok.match
    nan = [c for c in ok.checks if c.name == "setAlarm(NaN): message"][0]
    assert nan.kind == "prefix" and nan.simulated.startswith(nan.observed)
    wrong = json.loads(json.dumps(real))
    wrong["results"][3]["error"]["message"] = "Invalid Date"
    assert [c.name for c in compare_results("bad_values", wrong, real).mismatches] == ["setAlarm(NaN): message"]


def test_a_failed_probe_is_an_error_not_a_match():
    v = compare_results("normal", {"probe": "normal", "error": "WorkerdError: down"}, _sim("normal"))
    assert not v.match and v.error == "real workerd: WorkerdError: down"


def test_a_probe_not_run_is_said_so_never_an_error_and_never_a_match(ref):
    from alarmkit.calibrate.calibration import Calibration
    from alarmkit.calibrate.render import details_figure, text_table

    v = compare_results("normal", ref.observed["normal"], {"probe": "normal", "not_run": "the host has no X"})
    assert (v.match, v.error, v.not_run, v.checks) == (False, None, "simulator: the host has no X", [])
    cal = Calibration(version=ref.version, workerd=ref.workerd, compat_date=ref.compat_date, long=False,
                      created_at="now", bands=ref.bands, journal=Journal(),
                      observed={n: ref.observed[n] for n in ("normal", "facet", "gate")},
                      simulated={"normal": {"probe": "normal", "not_run": "the host has no X"},
                                 "gate": {"probe": "gate", "error": "RuntimeError: boom"}})
    table = text_table(cal.judge())
    assert re.search(r"^normal\s+not run\s", table, re.M) and re.search(r"^facet\s+not run\s", table, re.M)
    assert "  normal: not run: simulator: the host has no X" in table
    assert "  facet: not run: simulator: no simulated result" in table   # missing is not run, not an error
    assert re.search(r"^gate\s+ERROR\s", table, re.M)                  # a run that failed stays an error
    assert table.count("ERROR") == 1
    assert table.rstrip().endswith("0/3 probes match, 2 not run")
    assert not cal.match and cal.to_dict()["probes"]["normal"]["not_run"] == "simulator: the host has no X"
    cells = details_figure(cal).data[0].cells.values
    assert [cells[5][i] for i, p in enumerate(cells[0]) if p == "normal"] == ["not run"]


# ---------------------------------------------------------------------------------------------
# the committed reference run: reality, recorded, checked on a machine without Node
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ref():
    return reference()


@pytest.fixture(scope="module")
def rechecked(ref):
    return recheck(ref)


def test_reference_file_is_small_named_by_version_and_holds_every_probe(ref):
    path = reference_path()
    assert path.name == f"calibration-workerd-{DEFAULT_VERSION}.duckdb"
    assert path.stat().st_size < 1_000_000
    assert ref.version == DEFAULT_VERSION and ref.long is True
    assert set(ref.observed) == set(PROBES)
    assert all("error" not in r for r in ref.observed.values())
    runs = ref.journal.runs()
    real = runs[runs["profile"] == REAL_PROFILE]
    assert sorted(real["scenario"]) == sorted(f"calibrate:{n}" for n in PROBES)


def test_reference_holds_the_real_exhaustion_ladder(ref):
    ev = ref.journal.events(ref.real_runs["exhaustion"])
    fires = ev[ev["kind"] == "fire"]
    assert list(fires["retry_count"]) == [0, 1, 2, 3, 4, 5, 6]
    assert (ev["kind"] == "handler_error").sum() == 7 and (ev["kind"] == "handler_ok").sum() == 0
    waits = ref.observed["exhaustion"]["retry_after_throw_ms"]
    for n, w in enumerate(waits):  # recorded reality within 2 s << n .. + 25 % (+ latency allowance)
        lo, hi = ref.bands.retry(n)
        assert lo <= w <= hi, (n, w)


@pytest.mark.parametrize("name", list(PROBES))
def test_todays_simulator_matches_the_recorded_real_run(rechecked, name):
    v = rechecked.verdicts[name]
    assert v.match, "\n".join(f"{c.name}: real {c.observed!r} | simulated {c.simulated!r} {c.band or ''}"
                              for c in v.mismatches) or v.error


def test_overlay_figure_puts_real_and_simulated_runs_on_one_axis(ref):
    fig = overlay_figure("crash_after_effect")
    titles = [a.text for a in fig.layout.annotations]
    assert f"real workerd {DEFAULT_VERSION}" in titles and "simulator (profile workerd)" in titles
    assert fig.layout.title.text.startswith("crash_after_effect: real workerd")
    assert len(fig.data) > 4
    local = [a.text for a in overlay_figure("rearm_now").layout.annotations]
    assert "simulator (profile workerd-local)" in local  # simulated under the profile its ProbeSpec names


# ---------------------------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------------------------

def test_cli_reference_mode_needs_no_workerd(capsys, tmp_path):
    assert main(["calibrate", "--reference", "--json", "--out", str(tmp_path / "r.html")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["match"] is True and doc["profile"] == REAL_PROFILE
    assert set(doc["probes"]) == set(PROBES)
    text = (tmp_path / "r.html").read_text()
    assert text.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in text
    assert not re.search(r"<script[^>]+src=", text)  # plotly.js inline: the report opens offline
    assert f"alarmkit calibration · workerd {DEFAULT_VERSION}" in text


def test_cli_table(capsys):
    assert main(["calibrate", "--reference"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^normal\s+match\s+8/8\s+2/2", out, re.M)
    assert out.rstrip().endswith(f"{len(PROBES)}/{len(PROBES)} probes match: the simulator agrees with workerd")


def _no_workerd_no_node(monkeypatch, tmp_path):
    from alarmkit.calibrate import workerd as W

    monkeypatch.setenv(W.ENV_CACHE, str(tmp_path / "empty"))
    monkeypatch.delenv(W.ENV_BINARY, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))


def test_install_only_without_node_says_so_and_exits_0(monkeypatch, tmp_path, capsys):
    _no_workerd_no_node(monkeypatch, tmp_path)
    assert main(["calibrate", "--install-only"]) == 0
    assert "Node.js and npm are not on PATH" in capsys.readouterr().out


def test_calibrate_without_workerd_or_node_points_to_the_reference(monkeypatch, tmp_path, capsys):
    _no_workerd_no_node(monkeypatch, tmp_path)
    assert main(["calibrate"]) == 2
    err = capsys.readouterr().err
    assert "workerd is not installed" in err and "alarmkit calibrate --reference" in err


# ---------------------------------------------------------------------------------------------
# real workerd
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def live(workerd_binary):
    return calibrate(names=QUICK, parallel=4)


@pytest.mark.slow
@pytest.mark.parametrize("name", QUICK)
def test_simulator_matches_real_workerd(live, name):
    v = live.verdicts[name]
    assert v.match, "\n".join(f"{c.name}: real {c.observed!r} | simulated {c.simulated!r} {c.band or ''}"
                              for c in v.mismatches) or v.error


@pytest.mark.slow
def test_real_runs_are_journaled_under_the_real_profile(live):
    runs = live.journal.runs()
    assert (runs["profile"] == REAL_PROFILE).sum() == len(QUICK)
    ev = live.journal.events(live.real_runs["normal"])
    assert set(ev["kind"]) <= set(EVENT_KINDS)
    assert ev["t_ms"].min() > -1_000 and ev["t_ms"].max() < 10_000  # relative to the probe's anchor
    assert (ev["kind"] == "fire").sum() == 2


@pytest.mark.long
@pytest.mark.skipif(not LONG, reason="long probes (~3.5 min): set ALARMKIT_LONG=1")
def test_simulator_matches_real_workerd_on_exhaustion_and_revival(workerd_binary):
    cal = calibrate(long=True, names=LONG)
    for name in LONG:
        v = cal.verdicts[name]
        assert v.match, (name, [(c.name, c.observed, c.simulated) for c in v.mismatches], v.error)
