"""ak.diff: two runs aligned per object and per alarm, down to the first divergence (exact expectations)."""

import json

import pandas as pd
import pytest

import alarmkit as ak
from alarmkit.realruns import fixture, import_file
from alarmkit.runtime.profiles import PROFILES

# these tests are about diffs, not fire lateness: simulations here take the exact fire latency
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)
EXACT = PROFILES["workerd"].replace(fire_latency="exact")

CRASH = {"crash_after_effect": [{"effect": "revoke", "call": 1}]}


@pytest.fixture(scope="module")
def ledger_runs():
    good = ak.run_scenario("lease-ledger", seed=3, profile=EXACT)
    again = ak.run_scenario("lease-ledger", seed=3, profile=EXACT)
    crashed = ak.run_scenario("lease-ledger", seed=3, faults=ak.FaultPlan.from_dict(CRASH), profile=EXACT)
    return good, again, crashed


def test_identical_runs_diff_empty(ledger_runs):
    good, again, _ = ledger_runs
    d = ak.diff(good, again)
    assert d.same and d.first_divergence is None
    assert d.table().empty and d.invariants.empty
    assert d.matched == 26
    assert d.summary() == "A and B agree: 26 alarm events matched at the same times (times as journaled)."
    assert d.counts[[c for c in d.counts.columns if c.endswith("_diff")]].to_numpy().sum() == 0
    assert d.counts.loc[0, "fires_a"] == d.counts.loc[0, "fires_b"] == 6


def test_one_injected_crash_is_the_first_divergence_and_its_duplicate_shows(ledger_runs):
    good, _, crashed = ledger_runs
    d = ak.diff(good, crashed, names=("fault-free", "crash"))
    fd = d.first_divergence
    assert (fd.object, fd.t_ms, fd.run, fd.status, fd.kind, fd.row) == ("ledger", 15002, "b", "only_b", "crash", 0)
    assert fd.text == ("crash crashes ledger at 15.002 s (injected right after effect revoke('lease-2'); "
                       "fault crash_after_effect); fault-free does not")
    rows = [(r.kind, r.status, r.what, None if pd.isna(r.t_a) else int(r.t_a), None if pd.isna(r.t_b) else int(r.t_b))
            for r in d.table().itertuples()]
    assert rows == [
        ("crash", "only_b", "", None, 15002),
        ("handler_ok → handler_error", "changed", "", 15002, 15002),
        ("arm", "moved", "user", 15002, 17125),   # the handler that re-arms runs again 2.123 s later
        ("fire", "only_b", "", None, 17125),
        ("effect", "only_b", 'revoke("lease-2")', None, 17125),   # the duplicate the crash causes
        ("handler_ok", "only_b", "", None, 17125),
    ]
    c = d.counts.iloc[0]
    assert (c.effects_a, c.effects_b, c.duplicates_a, c.duplicates_b, c.retries_b, c.fires_diff) == (6, 7, 0, 1, 1, 1)
    inv = d.invariants.to_dict("records")
    assert inv == [{"what": "obligation", "name": "revoke('lease-2')", "object": "ledger", "key": "'lease-2'",
                    "in_a": True, "in_b": True, "message_a": "done, ran once", "message_b": "done, ran twice"}]
    # the chain that led there, in each run: the arm that set the alarm, its move, the fire, then the crash
    assert list(fd.chain["crash"]["kind"]) == ["arm", "arm", "fire", "effect", "fault", "crash"]
    assert list(fd.chain["fault-free"]["kind"]) == ["arm", "arm", "fire", "effect", "arm", "handler_ok"]
    lines = d.summary().splitlines()
    assert lines[1] == f"First divergence: {fd.text}."
    assert "On ledger, crash has 1 more fire, 1 more retry, 1 more effect, 1 more duplicate effect than fault-free." in lines
    assert ("Obligation revoke('lease-2') on ledger: done, ran once in fault-free, done, ran twice in crash."
            in lines)


def test_celld_vs_workerd_names_each_late_fire_with_its_lateness():
    j = ak.Journal()
    fleet = ak.run_scenario("keepalive-celld-vs-workerd", seed=0, journal=j)
    d = ak.diff(fleet["compare_run_id"], fleet.run_id, journal=j, names=("workerd", "celld"))
    assert d.first_divergence is None  # nothing missing, nothing ends otherwise: celld is only late
    late = d.table()[d.table()["status"] == "late"]
    # workerd's fires are late by seed 0's draws of its measured default (1 ms for these five), celld's resident
    # cell by its exact 2 ms: the resident differs by a millisecond, the dormant cells by the waker's tick
    assert [(r.object, int(r.scheduled_a), int(r.late_a), int(r.late_b)) for r in late.itertuples()] == [
        ("cell-0", 15000, 1, 45002), ("resident", 21500, 1, 2), ("cell-1", 28000, 1, 32002), ("cell-2", 41000, 1, 19002),
        ("cell-3", 54000, 1, 6002)]
    lines = d.summary().splitlines()
    for cell, due, late_s in (("cell-0", "15 s", "45.002 s"), ("resident", "21.5 s", "2 ms"), ("cell-1", "28 s", "32.002 s"),
                              ("cell-2", "41 s", "19.002 s"), ("cell-3", "54 s", "6.002 s")):
        assert f"{cell}'s alarm due {due} fires 1 ms late in workerd and {late_s} late in celld." in lines
    # the re-arms inside those late handlers are for later times: named as moved, not missing
    t = d.table()
    rearms = t[(t["status"] == "moved") & (t["scheduled_a"] != t["scheduled_b"])]
    assert sorted(rearms["object"]) == ["cell-0", "cell-1", "cell-2", "cell-3", "resident"]
    # and each late handler's end happens as much later as its fire (times are compared, not only lateness)
    ends = t[(t["status"] == "moved") & (t["kind"] == "handler_ok")]
    assert [(r.object, int(r.delta_ms)) for r in ends.itertuples()] == [
        ("cell-0", 45_001), ("resident", 1), ("cell-1", 32_001), ("cell-2", 19_001), ("cell-3", 6_001)]
    assert set(d.table()["status"]) == {"late", "moved"}
    assert "cell-4" not in set(d.table()["object"])  # 2 ms late on both


def test_a_real_run_against_its_simulated_twin_differs_in_lateness_only():
    j = ak.Journal()
    real = import_file(fixture("lease-normal"), j)
    sim = ak.run_scenario("lease-normal", journal=j, profile=EXACT)
    d = ak.diff(real, sim, align="first_request", tolerance_ms=250, names=("real", "simulated"))
    assert d.first_divergence is None and d.invariants.empty
    t = d.table()
    assert list(t["status"]) == ["late", "late"]
    assert [(int(r.t_a), int(r.late_a), int(r.t_b), int(r.late_b)) for r in t.itertuples()] == [
        (302, 1, 302, 2), (1508, 1, 1502, 2)]
    # under the workerd profile's measured default the twin's fires are 1 ms late too (seed 0's draws): no difference
    default = ak.run_scenario("lease-normal", journal=j)
    assert ak.diff(real, default, align="first_request", tolerance_ms=250, names=("real", "simulated")).table().empty
    assert d.paired_by_order == [("ledger-normal", "ledger", "ledger-normal ~ ledger")]
    lines = d.summary().splitlines()
    assert lines[2:4] == ["ledger-normal ~ ledger's alarm due 301 ms fires 1 ms late in real and 2 ms late in simulated.",
                          "ledger-normal ~ ledger's alarm due 1.507 s fires 1 ms late in real and 2 ms late in simulated "
                          "(6 ms earlier, at 1.502 s)."]
    assert [ln for ln in lines if not ln.startswith(("Note:", "ledger-normal ~ ledger's alarm"))] == [
        "real and simulated differ in 2 alarm events; 6 matched (each counted from its first request, 250 ms "
        "tolerance).", "No event is missing from either run and none ends otherwise."]
    # without the tolerance the real arms and their fires (for 301 ms, 1.507 s after the first request) are
    # moved against the simulated 300 ms, 1.5 s
    exact = ak.diff(real, sim, align="first_request", names=("real", "simulated"))
    assert [(r.kind, r.status, int(r.scheduled_a), int(r.scheduled_b)) for r in exact.table().itertuples()
            if r.kind in ("arm", "fire")] == [
        ("arm", "moved", 301, 300), ("fire", "moved", 301, 300), ("arm", "moved", 1507, 1500),
        ("fire", "moved", 1507, 1500)]
    # and every other event that happens at another time is moved with its delta, none "the same"
    assert not (exact.lanes["status"] == "same").any() or exact.lanes.loc[exact.lanes["status"] == "same", "delta"].eq(0).all()


def test_exact_alignment_refuses_epoch_against_virtual_time():
    j = ak.Journal()
    real = import_file(fixture("lease-normal"), j)
    sim = ak.run_scenario("lease-normal", journal=j, profile=EXACT)
    with pytest.raises(ak.AlarmkitError, match="align='first_request'"):
        ak.diff(real, sim)


def test_two_journals_and_frames_give_the_same_diff(ledger_runs, tmp_path):
    good, _, crashed = ledger_runs
    ja, jb = ak.Journal(tmp_path / "a.duckdb"), ak.Journal(tmp_path / "b.duckdb")
    ra = ak.run_scenario("lease-ledger", seed=3, journal=ja, profile=EXACT).run_id
    rb = ak.run_scenario("lease-ledger", seed=3, journal=jb, faults=ak.FaultPlan.from_dict(CRASH), profile=EXACT).run_id
    from_journals = ak.diff((ja, ra), (jb, rb))
    from_frames = ak.diff(good.events, crashed.events)
    for d in (from_journals, from_frames):
        assert d.table().equals(ak.diff(good, crashed).table())
        assert d.first_divergence.kind == "crash"
        assert any(n.startswith("obligations of A and B not known") for n in d.notes)
    ja.close(), jb.close()


@pytest.mark.parametrize("kw, match", [
    ({"align": "later"}, "align must be"), ({"align": -1}, "0..86400000"), ({"align": True}, "align must be"),
    ({"tolerance_ms": -5}, "tolerance_ms must be"), ({"align": 10, "tolerance_ms": 20}, "already a tolerance"),
    ({"names": ("A", "A")}, "names must be"), ({"names": ("A",)}, "names must be"),
])
def test_bad_arguments_are_refused_naming_the_value(ledger_runs, kw, match):
    good, again, _ = ledger_runs
    with pytest.raises(ak.InvalidValue, match=match):
        ak.diff(good, again, **kw)


def test_what_is_not_a_run_is_refused(ledger_runs):
    with pytest.raises(ak.AlarmkitError, match="cannot diff a str"):
        ak.diff("run 1", ledger_runs[0])
    with pytest.raises(ak.AlarmkitError, match="needs journal="):
        ak.diff(1, 2)


def test_skipped_checks_are_said(ledger_runs):
    good, _, crashed = ledger_runs
    d = ak.diff(good, crashed, check=False)
    assert not d.checked and d.invariants.empty
    assert "Note: invariants not checked (check=False): a difference there would not show." in d.summary().splitlines()


def _frame(rows):
    return pd.DataFrame([(i + 1, t, "N", o, k, s, None, rc, json.dumps(d) if d else None)
                         for i, (t, o, k, s, rc, d) in enumerate(rows)],
                        columns=["seq", "t_ms", "namespace", "object_id", "kind", "scheduled_ms", "prev_scheduled_ms",
                                 "retry_count", "detail"])


def _cycle(at, due, key=None):
    return [(at, "o", "arm", due, None, {"direction": "new", "cause": "user"}),
            (due + 2, "o", "fire", due, 0, {"attempt": 1, "late_ms": 2}),
            (due + 2, "o", "effect", None, None, {"name": "send", "key": due if key is None else key}),
            (due + 2, "o", "handler_ok", due, 0, {"next_ms": None})]


def test_one_missing_alarm_costs_its_own_rows_not_every_alarm_after_it():
    full = [r for i in range(10) for r in _cycle(i * 1_000, i * 1_000 + 500)]
    gap = [r for i in range(10) if i != 3 for r in _cycle(i * 1_000, i * 1_000 + 500)]
    d = ak.diff(_frame(full), _frame(gap))
    assert [(r.kind, r.status, int(r.t_a)) for r in d.table().itertuples()] == [
        ("arm", "only_a", 3_000), ("fire", "only_a", 3_502), ("effect", "only_a", 3_502), ("handler_ok", "only_a", 3_502)]
    assert d.matched == 36
    assert d.first_divergence.text == "A arms o for 3.5 s at 3 s (cause: user); B does not"


def test_an_arm_for_another_time_is_moved_and_its_fire_too():
    a = _cycle(0, 500, key="k")
    b = _cycle(0, 900, key="k")
    d = ak.diff(_frame(a), _frame(b), align=100)
    assert [(r.kind, r.status, r.scheduled_a, r.scheduled_b, r.delta_ms) for r in d.table().itertuples()
            if r.status == "moved"] == [("arm", "moved", 500, 900, 0), ("fire", "moved", 500, 900, 400),
                                        ("effect", "moved", pd.NA, pd.NA, 400), ("handler_ok", "moved", 500, 900, 400)]
    assert d.first_divergence is None  # nothing missing, nothing ended otherwise
    assert "o's arm for 500 ms in A is for 900 ms in B (400 ms later; at 0 ms and 0 ms)." in d.summary().splitlines()
    assert "o's effect at 502 ms in A happens 400 ms later in B (at 902 ms)." in d.summary().splitlines()
    assert ak.diff(_frame(a), _frame(_cycle(0, 560, key="k")), align=100).same  # within the tolerance, as late: the same


def test_a_counterexample_diffs_against_the_same_seed_without_its_faults():
    found = ak.explore("lease-ctor-pushes-later", seeds=3, depth=1, workers=1, progress=False, quiet=True)
    d = found.counterexamples[0].diff()
    assert d.names == ("without the faults", "with the faults")
    fd = d.first_divergence
    assert (fd.kind, fd.run, fd.t_ms) == ("crash", "b", 15_001)  # 1 ms late (seed 0's draw); the crash at alarm()'s first await: a turn's writes are lost whole
    assert list(d.invariants["name"]) == ["alarm_pushed_past_due", "revoke('lease-2')"]


def test_calibration_shows_sim_against_real_as_a_diff():
    from alarmkit.calibrate.recorded import reference
    from alarmkit.calibrate.render import probe_diff

    cal = reference()  # the committed recording of real workerd
    normal = probe_diff("normal", cal)
    assert normal.first_divergence is None and set(normal.table()["status"]) == {"late"}
    rearm = probe_diff("rearm_now", cal)  # workerd re-armed "now" six times in the recording, the simulator four
    assert rearm.first_divergence.text == (
        "the simulator never fires probe-rearm-now's alarm due 117 ms; workerd 1.20261117.1 fires it at 123 ms. "
        "In the simulator, its alarm set to 104 ms at 104 ms (cause: user) and user code never set it again")
    assert (rearm.counts.loc[0, "fires_a"], rearm.counts.loc[0, "fires_b"]) == (6, 4)


def test_the_notes_say_how_the_runs_were_made_differently():
    a = ak.run_scenario("lease-ledger", seed=1)
    assert not any("made differently" in n for n in ak.diff(a, ak.run_scenario("lease-ledger", seed=1)).notes)
    d = ak.diff(a, ak.run_scenario("lease-ledger", seed=2, horizon_ms=a.params["horizon_ms"] + 1), names=("one", "two"))
    assert d.notes[0] == "the runs were made differently: seed 1 in one, 2 in two; parameters horizon_ms differ"
    assert "Note: the runs were made differently: seed 1 in one, 2 in two" in d.summary()
    other = ak.diff(a, ak.run_scenario("lease-exhaustion", seed=1, profile="celld"))
    assert other.notes[0] == ("the runs were made differently: scenario lease-ledger in A, lease-exhaustion in B; "
                              "profile workerd in A, celld in B")


def test_two_runs_with_no_alarm_events_are_not_said_to_agree():
    def frame(objects):
        return pd.DataFrame([{"seq": i, "t_ms": i, "namespace": "H", "object_id": o, "kind": "call",
                              "scheduled_ms": None, "prev_scheduled_ms": None, "retry_count": None,
                              "detail": '{"method":"go"}'} for i, o in enumerate(objects)])

    d = ak.diff(frame(["a"]), frame(["zzz", "q"]))
    assert d.matched == 0
    assert d.summary().splitlines()[0] == ("A and B have no alarm events to compare (1 and 2 events of other kinds, "
                                           "which diff does not align): nothing was compared.")
