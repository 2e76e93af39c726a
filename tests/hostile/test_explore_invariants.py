"""``alarmkit explore SCENARIO --invariant NAME`` as a hostile user types it. Two commits landed at once: one
read --invariant for a scenario, one refused it (the refusal won: the flag the docs describe exited 2). A
scenario states no expectations, so ``--invariant expect`` checked nothing and said "no failed expectation",
and a name given twice was counted twice ("2 invariants checked")."""

from __future__ import annotations

import pytest
from alarmkit.cli import main
from alarmkit.explore import explore

ARGV = ["explore", "lease-no-revival", "--seeds", "1", "--crash-points", "none", "--workers", "1"]


@pytest.mark.parametrize("names, said", [
    (["early_fire"], "no early alarm under these faults: 1 invariant checked over 2 runs"),
    (["early_fire", "early_fire"], "no early alarm under these faults: 1 invariant checked over 2 runs"),
    (["concurrent_alarm", "early_fire", "concurrent_alarm"], "no early alarm, no overlapping alarm under these "
                                                            "faults: 2 invariants checked over 2 runs"),
])
def test_invariants_asked_for_a_scenario_are_checked_once_each(names, said, capsys):
    argv = [*ARGV]
    for n in names:
        argv += ["--invariant", n]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert said in out and "expect" not in out  # a scenario has no expect list: never named as skipped or held


@pytest.mark.parametrize("name, start", [
    ("nope", "unknown invariant 'nope'; known: ['alarm_pushed_past_due', "),
    ("", "unknown invariant ''; known: "),
    ("EARLY_FIRE", "unknown invariant 'EARLY_FIRE'; known: "),
    ("early_fire\u202e", "unknown invariant 'early_fire\\u202e'; known: "),
    ("ÉARLY\n", "unknown invariant 'ÉARLY\\n'; known: "),
    ("expect", "invariant 'expect' checks a worker drive's expect list, and scenario 'lease-no-revival' states no "
               "expectations, so it would check nothing; drop it, or explore your worker"),
])
def test_a_bad_invariant_for_a_scenario_is_one_line_and_exit_2(name, start, capsys):
    assert main([*ARGV, "--invariant", name]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"alarmkit: error: {start}") and err.count("\n") == 1, err


@pytest.mark.parametrize("value, start", [
    ([], "invariants=[] checks nothing; name at least one"),
    ("lost", "invariants is a list of names, got the text 'lost'; pass ['lost']"),
    (["expect"], "invariant 'expect' checks a worker drive's expect list"),
])
def test_the_api_refuses_what_would_check_nothing(value, start):
    with pytest.raises(Exception) as err:
        explore("lease-no-revival", seeds=1, crash_points=None, workers=1, progress=False, invariants=value)
    assert str(err.value).startswith(start) and type(err.value).__name__ == "AlarmkitError"


def test_a_scenarios_all_clear_never_claims_expectations_it_has_none_of():
    said = explore("lease-ledger", seeds=1, crash_points=None, workers=1, progress=False).checked.all_clear(False)
    assert "9 invariants checked over 2 runs" in said and "expectation" not in said and "not checked" not in said
