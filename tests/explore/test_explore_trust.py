"""explore's word : no silent all-clear, runs marked
complete, results written as they finish and never over someone else's files, a capped depth."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run_main  # noqa: E402 - tests/clirun.py

from alarmkit import AlarmkitError, FaultPlan, Journal, explore, run_scenario
from alarmkit.errors import PlanNotApplied
from alarmkit.explore import results_table

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
QUICK = dict(seeds=3, crash_points=None, workers=1, progress=False)
TYPO = FaultPlan(effect_throws=[{"effect": "revok"}, {"effect": "revoke"}],
                 crashes=[{"task": "rpc:grnt", "invocation": 1, "at_await": 1}])
TYPO_LINE = ("2 of 3 plan entries never applied: effect_throws[0]: effect 'revok' is not an effect of this "
             "scenario; effects seen: revoke; crashes[0]: task 'rpc:grnt' is not a task that reached an await in "
             "this run; tasks seen: alarm, rpc:grant")


def _cli(*args: str, cwd: Path, real: bool = False) -> subprocess.CompletedProcess:
    """``alarmkit ARGS`` in this process (tests/clirun.py); ``real``: in a subprocess, as a user runs it."""
    if not real:
        return run_main(*args, cwd=cwd, env=ENV)
    return subprocess.run([sys.executable, "-m", "alarmkit", *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=300)


# -- item 3: no silent all-clear -------------------------------------------------------------------


def test_a_plan_entry_that_matches_nothing_is_a_warning_not_an_all_clear():
    ex = explore("lease-ledger", faults=TYPO, **QUICK)
    assert ex.warnings == [TYPO_LINE] and not ex.ok
    report = ex.report()
    assert f"warning: {TYPO_LINE}" in report
    assert "under these faults" not in report and "under the faults that applied (see the warning)" in report
    # every run records how many faults each entry injected
    applied = [json.loads(a) for a in ex.table["faults_applied"]]
    assert all(a["effect_throws[0]"] == 0 and a["crashes[0]"] == 0 and a["effect_throws[1]"] >= 1 for a in applied)
    assert list(ex.table["unapplied"]) == [2] * 4


def test_every_entry_applied_gives_no_warning():
    ex = explore("lease-ledger", faults=FaultPlan(effect_throws=[{"effect": "revoke"}]), **QUICK)
    assert ex.warnings == [] and ex.ok and "under these faults" in ex.report()


def test_an_entry_that_applied_in_some_run_is_not_a_warning():
    # attempt 9 throws only where an earlier fault makes alarm() run that often: the crash search finds one
    ex = explore("lease-no-revival", faults=FaultPlan(effect_throws=[{"effect": "revoke", "times": 8}]), seeds=2,
                 depth=1, workers=1, progress=False)
    counts = [json.loads(a)["effect_throws[0]"] for a in ex.table["faults_applied"]]
    assert min(counts) < max(counts) or max(counts) > 0
    assert ex.warnings == []


def test_strict_makes_it_an_error_that_still_carries_the_exploration():
    with pytest.raises(PlanNotApplied, match=r"^2 of 3 plan entries never applied: effect_throws\[0\]: ") as err:
        explore("lease-ledger", faults=TYPO, strict=True, **QUICK)
    assert isinstance(err.value, AlarmkitError) and err.value.exploration.runs == 4


def test_object_filter_naming_no_object_is_explained():
    ex = explore("lease-ledger", faults=FaultPlan(object="ledgr", handler_throws=[1]), **QUICK)
    assert ex.warnings == ["1 of 1 plan entry never applied: handler_throws[0]: object 'ledgr' is not an object "
                           "of this scenario; objects seen: ledger"]


def test_the_journal_row_records_counts_and_the_report_summary_shows_the_warning(tmp_path):
    from alarmkit.runtime._applied import journal_summary

    with Journal(tmp_path / "j.duckdb") as j:
        run_scenario("lease-ledger", journal=j, faults=TYPO)
        row = j.run(1)
    assert row["complete"] is True and row["ended_at"] is not None
    assert json.loads(row["faults_applied"]) == {"effect_throws[0]": 0, "effect_throws[1]": 1, "crashes[0]": 0}
    assert journal_summary(row) == TYPO_LINE


def test_cli_prints_the_warning_and_strict_exits_2(tmp_path):
    plan = tmp_path / "plan.toml"
    TYPO.save(plan)
    out = _cli("explore", "lease-ledger", "--faults", str(plan), "--seeds", "2", "--crash-points", "none",
               "--workers", "1", cwd=tmp_path)
    assert out.returncode == 0 and f"warning: {TYPO_LINE}" in out.stdout
    assert f"alarmkit: warning: {TYPO_LINE}" in out.stderr
    out = _cli("explore", "lease-ledger", "--faults", str(plan), "--seeds", "2", "--crash-points", "none",
               "--workers", "1", "--strict", cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"alarmkit: error: {TYPO_LINE} (strict: " in out.stderr and "lease-ledger: 3 runs" in out.stdout


# -- item 3: a run says whether it finished ------------------------------------------------------


def test_a_run_cut_short_is_marked_incomplete_and_a_finished_one_complete(tmp_path):
    from alarmkit import Simulation, scenario
    from alarmkit.scenarios import SCENARIOS

    @scenario("test-breaks-part-way", "runs lease-normal, then raises")
    def breaks(sim):
        SCENARIOS["lease-normal"].fn(sim)
        raise RuntimeError("the scenario broke")

    try:
        with Journal(tmp_path / "j.duckdb") as j:
            run_scenario("lease-normal", journal=j)
            with pytest.raises(RuntimeError, match="^the scenario broke$"):
                run_scenario("test-breaks-part-way", journal=j)
            with pytest.raises(KeyError):
                with Simulation(journal=j, scenario="by hand"):
                    raise KeyError("x")
            Simulation(journal=j, scenario="never closed")  # like a process killed part-way
            runs = j.runs()
    finally:
        del SCENARIOS["test-breaks-part-way"]
    assert list(runs["complete"]) == [True, False, False, False]
    assert list(runs["ended_at"].notna()) == [True, True, True, False]


def test_an_old_journal_gains_the_columns_and_reads_as_not_known_complete(tmp_path):
    import duckdb

    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE runs (run_id INTEGER PRIMARY KEY, scenario TEXT, profile TEXT, seed BIGINT, "
                "params TEXT, faults TEXT, started_at TIMESTAMP)")
    con.execute("INSERT INTO runs VALUES (1, 'lease-normal', 'workerd', 0, '{}', NULL, now())")
    con.execute("CREATE TABLE events (run_id INTEGER, seq BIGINT, t_ms BIGINT, namespace TEXT, object_id TEXT, "
                "kind TEXT, scheduled_ms BIGINT, prev_scheduled_ms BIGINT, retry_count INTEGER, detail TEXT)")
    con.close()
    with Journal(path) as j:
        runs = j.runs()
        assert list(runs["complete"]) == [False] and runs["ended_at"].isna().all()
        run_scenario("lease-normal", journal=j)
        assert list(j.runs()["complete"]) == [False, True]


# -- item 4 / item 1: writes as it goes, never over other files -------------------------------------


def test_out_writes_a_subfolder_of_its_own_and_deletes_nothing(tmp_path):
    out = tmp_path / "runs"
    out.mkdir()
    theirs = out / "runs-01-00000.parquet"
    theirs.write_bytes(b"someone else's file")
    a = explore("lease-ledger", out=out, **QUICK)
    b = explore("lease-ledger", out=out, **QUICK)
    assert theirs.read_bytes() == b"someone else's file"
    assert a.out != b.out and a.out.parent == b.out.parent == out
    assert len(results_table(a.out)) == len(results_table(b.out)) == 4
    with pytest.raises(AlarmkitError, match=r"^no runs-\*\.parquet in "):
        results_table(tmp_path / "empty-folder-that-is-not-there")


def test_a_bad_journal_or_out_is_refused_before_any_run(tmp_path):
    folder = tmp_path / "a-folder.duckdb"
    folder.mkdir()
    with pytest.raises(AlarmkitError):
        explore("lease-ledger", journal=folder, **QUICK)
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(AlarmkitError, match=r"^--out '.*file' is a file; pass a folder"):
        explore("lease-ledger", out=afile, **QUICK)
    out = _cli("explore", "lease-ledger", "--out", str(afile), "--workers", "1", cwd=tmp_path, real=True)
    assert out.returncode == 2 and "is a file; pass a folder" in out.stderr and "Traceback" not in out.stderr


def test_runs_reach_the_journal_chunk_by_chunk(tmp_path, monkeypatch):
    """The journal gets each chunk's runs when it finishes, not all at the end."""
    from alarmkit.explore import _sweep

    seen = []
    real = _sweep.run_chunk

    def spy(job):
        seen.append(len(j.runs()))  # runs in the journal when this chunk starts
        return real(job)

    monkeypatch.setattr(_sweep, "run_chunk", spy)
    with Journal() as j:
        ex = explore("lease-ledger", seeds=40, depth=1, workers=1, progress=False, journal=j)
        assert len(j.runs()) == ex.runs
    assert seen[0] == 1 and seen == sorted(seen) and seen[-1] > seen[0]


# -- item 5: depth cap, O(1) attempt look-ups --------------------------------------------------------


def test_a_deep_search_is_refused_with_an_estimate_and_the_way_to_raise_the_cap(tmp_path):
    # 31 crash points (25 before the turn model: each of the 6 alarm() runs' ends is one too)
    with pytest.raises(AlarmkitError, match=r"^depth 6 would make about 29,647,211 crash-point runs \(31 crash "
                                            r"points in the fault-free run, each level ~16x the one before\), "
                                            r"above the cap max_crash_runs=100,000; lower the depth or raise "
                                            r"the cap \(--max-crash-runs 30000000, max_crash_runs= in Python\)$"):
        explore("lease-ledger", depth=6, **{**QUICK, "crash_points": "all"})
    out = _cli("explore", "lease-ledger", "--depth", "1000", "--workers", "1", cwd=tmp_path)
    assert out.returncode == 2 and "alarmkit: error: depth 1000 would make more than 10^15 crash-point runs" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_cap_also_stops_a_search_whose_estimate_was_too_low():
    # 568 runs in wave 2 against an estimate of 512 (387 and cap 350 before the turn model: each alarm()'s
    # end, after its commit, is a crash point too, 31 points instead of 25)
    with pytest.raises(AlarmkitError, match=r"^crash wave 2 would bring the crash-point runs to 568, above the cap "
                                            r"max_crash_runs=520; the 35 runs done are kept"):
        explore("lease-ledger", depth=2, max_crash_runs=520, **{**QUICK, "crash_points": "all"})


class _Attempt(int):
    """An attempt number that counts how often it is compared: a list look-up compares it with
    every entry, a hashed one with at most a few."""

    compared = 0

    def __eq__(self, other):
        _Attempt.compared += 1
        return int(self) == other

    __hash__ = int.__hash__


def test_attempt_look_ups_do_not_walk_the_list():
    class Host:
        label = "o"

    plan = FaultPlan(uncounted=list(range(2, 100_002)), duplicates=list(range(1, 100_001)))
    plan.install(type("Sim", (), {"kernel": type("K", (), {"now": 0})(), "log": lambda *a: None})())
    _Attempt.compared = 0
    for n in (1, 50_000, 100_001, 200_000):  # a hit, a hit, the last, a miss
        try:
            plan.before_alarm(Host(), _Attempt(n), 0)
        except Exception:  # noqa: BLE001 - UncountedFailure for the hits
            pass
    assert _Attempt.compared <= 8  # a tuple's `in` would compare ~250,000 times


# -- explore prints nothing --------------------------------------------------------


def test_explore_prints_nothing_and_the_report_holds_the_snippet(capsys):
    ex = explore("lease-no-revival", seeds=5, depth=1, workers=1, progress=False)
    assert capsys.readouterr().out == ""
    assert ex.counterexamples and ex.counterexamples[0].snippet() in ex.report()


def test_the_html_report_summary_says_which_entries_never_applied_and_an_unfinished_run(tmp_path):
    from alarmkit import Simulation
    from alarmkit.viz.report import export_run

    with Journal(tmp_path / "j.duckdb") as j:
        run_scenario("lease-ledger", journal=j, faults=TYPO)
        sim = Simulation(journal=j, scenario="never closed")
        sim.log("fault", None, None, None, None, {"fault": "x"})
        sim.flush()
        html = export_run(j, 1, tmp_path / "r1.html").read_text(encoding="utf-8")
        unfinished = export_run(j, 2, tmp_path / "r2.html").read_text(encoding="utf-8")
    from alarmkit.viz._timeline import esc  # the package's one escaping function (quotes stay as text)

    assert "fault plan applied" in html and esc(TYPO_LINE) in html
    assert "no: cut short by an error or a kill" in unfinished and "no: cut short" not in html
