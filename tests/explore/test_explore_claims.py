"""An all-clear names only what was checked: ``explore(invariants=[...])`` and ``alarmkit explore
--invariant NAME`` check those alone, and the sentence says what each checked one found absent and which
were not asked for. It said "no lost work, no early or overlapping alarm, no wake-up dropped or pushed late"
whatever was checked, and the command ignored ``--invariant`` for a scenario (it checked them all)."""

from __future__ import annotations

from alarmkit.cli import main
from alarmkit.explore import explore

NOT_ASKED = ("not checked (not asked for): lost, early_effect, late, dropped_wakeup, alarm_pushed_past_due, "
             "concurrent_alarm, runaway_retries, library_dropped")  # expect: a scenario states none, nothing to ask


def test_the_all_clear_of_one_invariant_claims_that_one_and_names_the_rest():
    ex = explore("lease-no-revival", seeds=3, crash_points=None, workers=1, progress=False, invariants=["early_fire"])
    assert not ex.counterexamples and ex.checked.faults_applied > 0
    said = ex.checked.all_clear(False)
    assert said.startswith("no early alarm under these faults: 1 invariant checked over 4 runs, ")
    assert NOT_ASKED in said and "no lost work" not in said and "overlapping" not in said


def test_every_invariant_checked_says_each_one():
    ex = explore("lease-ledger", seeds=2, crash_points=None, workers=1, progress=False)
    said = ex.checked.all_clear(False)
    assert said.startswith("no lost work, no effect before its time, no work later than its bound (where an "
                           "obligation gives one), no wake-up dropped, no wake-up pushed past its due time, no early "
                           "alarm, no overlapping alarm, no runaway retries, no library schedule dropped under "
                           "these faults: 9 invariants checked over 3 runs")  # no expect: a scenario states none
    assert "not checked" not in said


def test_the_command_checks_only_the_invariants_asked_for(capsys):
    argv = ["explore", "lease-no-revival", "--seeds", "3", "--crash-points", "none", "--workers", "1"]
    assert main(argv) == 1  # lost work found
    capsys.readouterr()
    assert main([*argv, "--invariant", "early_fire"]) == 0
    out = capsys.readouterr().out
    assert "no early alarm under these faults: 1 invariant checked over 4 runs" in out and NOT_ASKED in out
    assert main([*argv, "--invariant", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("alarmkit: error: unknown invariant 'nope'; known: ['alarm_pushed_past_due', ") \
        and err.count("\n") == 1


def test_a_counterexample_of_no_one_object_says_the_whole_run_not_none():
    from alarmkit.explore._findings import Counterexample
    from alarmkit.faults import FaultPlan

    whole = Counterexample("s", "expect", None, "GET / answered 500", FaultPlan(), 3)
    one = Counterexample("s", "lost_work", "ledger", "row left", FaultPlan(), 3)
    assert str(whole).startswith("expect (the whole run): GET / answered 500\n") and "None" not in str(whole).split("\n")[0]
    assert str(one).startswith("lost_work on ledger: row left\n")
