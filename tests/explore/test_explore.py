"""explore(): crash points, random fault plans, shrinking, snippets, journal, Parquet, the CLI."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from alarmkit import AlarmkitError, FaultPlan, FaultSpace, Journal, check, explore, run_scenario
from alarmkit.cli import main
from alarmkit.explore import results_table

FAST = dict(seeds=60, depth=1, workers=1, progress=False, quiet=True)
LEDGER = "ledger"

# Each anti-pattern with the counterexample the explorer shrinks it to (seed 0 each):
MINIMAL = {
    # two grants, one alarm: the replaced lease is never revoked, with no fault at all
    "lease-alarm-as-data": ("lost", FaultPlan()),
    # the first alarm() crashes at its first await (the turn model: a grant's crash now loses the whole
    # turn, its lease included, so the grant crash of before no longer shows it); the retry wakes a fresh
    # instance whose constructor arms "a sweep in a minute" past lease-0's expiry (30 s)
    "lease-ctor-pushes-later": ("alarm_pushed_past_due",
                                FaultPlan(crashes=[{"task": "alarm", "invocation": 1, "at_await": 1,
                                                    "object": LEDGER}])),
    # revoke fails once before it happens: the row was already deleted, the retry finds nothing
    "lease-delete-before-effect": ("lost", FaultPlan(effect_throws=[{"effect": "revoke", "when": "before"}])),
    # the turn model: a crash can no longer split alarm()'s DELETE from its re-arm (one turn), so the
    # counterexample needs late fires too (found with 200 seeds, not 60): see test_invariants
    "lease-reads-clock": ("early_effect",
                          FaultPlan(crashes=[{"task": "alarm", "invocation": 2, "at_await": 1, "object": LEDGER}],
                                    latency={"kind": "failover", "lo": 1, "hi": 5, "p": 0.44})),
    # get_alarm() is None inside alarm(): the chain to the next lease is dropped, with no fault
    "lease-getalarm-in-handler": ("dropped_wakeup", FaultPlan()),
    # revoke throws seven times: the retries are used up and nothing revives the alarm
    "lease-no-revival": ("lost", FaultPlan(effect_throws=[{"effect": "revoke", "times": 7}])),
}


SEEDS = {"lease-reads-clock": 200}  # its one counterexample needs a random plan (late fires and a crash)


@pytest.fixture(scope="module")
def found():
    return {name: explore(name, **{**FAST, "seeds": SEEDS.get(name, FAST["seeds"])}) for name in MINIMAL}


@pytest.mark.parametrize("name", sorted(MINIMAL))
def test_each_anti_pattern_is_caught_with_its_own_minimal_counterexample(found, name):
    invariant, plan = MINIMAL[name]
    ex = found[name]
    assert not ex.ok
    cx = next(c for c in ex.counterexamples if c.invariant == invariant)
    assert (cx.plan, cx.seed, cx.object) == (plan, 0, LEDGER)
    # the counterexample reproduces on its own
    again = check(run_scenario(name, seed=cx.seed, faults=cx.plan))
    assert invariant in {v.invariant for v in again.violations}


def test_the_six_counterexamples_are_six_different_findings(found):
    firsts = {name: found[name].counterexamples[0] for name in MINIMAL}
    assert {name: cx.scenario for name, cx in firsts.items()} == {name: name for name in MINIMAL}
    assert len({(cx.invariant, cx.plan.to_json()) for cx in firsts.values()}) == 6


def test_the_correct_ledger_survives_the_same_search():
    ex = explore("lease-ledger", **FAST)
    assert ex.ok and ex.counterexamples == []
    assert int(ex.table["violations"].sum()) == 0 and int(ex.table["stuck"].sum()) == 0
    assert int(ex.table["duplicates"].gt(0).sum()) > 0  # duplicates happen; they are not failures
    assert set(ex.table["kind"]) == {"baseline", "crash", "random"}


@pytest.mark.parametrize("name", sorted(MINIMAL))
def test_the_correct_ledger_survives_each_counterexample(name):
    _invariant, plan = MINIMAL[name]
    assert check(run_scenario("lease-ledger", seed=0, faults=plan)).ok


def test_the_correct_ledger_survives_a_depth_two_crash_search_and_150_seeds():
    ex = explore("lease-ledger", seeds=150, depth=2, workers=1, progress=False, quiet=True)
    kinds = ex.table["kind"].value_counts().to_dict()
    assert kinds["random"] == 150 and kinds["crash"] > 300
    assert ex.ok, ex.report()


@pytest.mark.slow
def test_the_correct_ledger_survives_the_full_search_and_1000_seeds():
    ex = explore("lease-ledger", seeds=1000, depth=2, progress=False, quiet=True)  # a local process pool
    assert ex.table["kind"].value_counts()["random"] == 1000
    assert ex.ok, ex.report()


def test_a_counterexample_prints_as_a_snippet_that_reproduces_it(found):
    cx = next(c for c in found["lease-no-revival"].counterexamples if c.invariant == "lost")
    assert cx.snippet() == (
        "from alarmkit import FaultPlan, check, run_scenario\n"
        "\n"
        "plan = FaultPlan(effect_throws=[{'effect': 'revoke', 'times': 7}])\n"
        "result = run_scenario('lease-no-revival', seed=0, faults=plan)\n"
        "for v in check(result).violations:\n"
        "    print(v.invariant, v.object, v.message)"
    )
    out = subprocess.run([sys.executable, "-c", cx.snippet()], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.startswith("lost ledger revoke('lease-0') due at 30.000 s never ran by the horizon 2400.000 s")


def test_shrinking_removes_every_fault_the_failure_does_not_need():
    bloated = FaultPlan(handler_throws=list(range(1, 10)), evictions=[{"at_ms": 5_000}], latency=20_000,
                        duplicates=[2])
    ex = explore("lease-no-revival", faults=bloated, seeds=[7], crash_points=None, workers=1, progress=False, quiet=True)
    cx = next(c for c in ex.counterexamples if c.invariant == "lost")
    assert cx.plan == FaultPlan(handler_throws=[1, 2, 3, 4, 5, 6, 7]) and cx.seed == 0
    assert cx.found_in == "baseline" and cx.shrink_runs > 5


def test_shrink_on_its_own():
    from alarmkit.explore import shrink

    big = FaultPlan(effect_throws=[{"effect": "revoke", "times": 8, "when": "before"}], evictions=[{"at_ms": 1_000}])
    plan, seed, violation, runs = shrink("lease-delete-before-effect", big, 4, "lost")
    assert plan == FaultPlan(effect_throws=[{"effect": "revoke", "when": "before"}]) and seed == 0
    assert violation["object"] == "ledger" and runs < 40
    with pytest.raises(AlarmkitError, match=r"^lease-ledger with FaultPlan\(\) and seed 0 does not violate 'lost'"):
        shrink("lease-ledger", FaultPlan(), 0, "lost")


def test_the_same_exploration_gives_the_same_table():
    kw = dict(seeds=20, depth=2, crash_points="alarm", workers=1, progress=False, quiet=True)
    a, b = explore("lease-reads-clock", **kw), explore("lease-reads-clock", **kw)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert [c.to_dict() for c in a.counterexamples] == [c.to_dict() for c in b.counterexamples]


def test_a_process_pool_gives_the_same_table_as_one_process(tmp_path):
    kw = dict(seeds=30, depth=2, crash_points="alarm", progress=False, quiet=True)
    serial = explore("lease-delete-before-effect", workers=1, **kw)
    pooled = explore("lease-delete-before-effect", workers=2, out=tmp_path / "runs", **kw)
    assert (pooled.table["depth"] == 2).sum() > 50  # the second wave's order must not depend on completion order
    pd.testing.assert_frame_equal(serial.table, pooled.table)
    # the workers' Parquet files, read back by DuckDB as one table
    assert pooled.out.parent == tmp_path / "runs"  # a subfolder of its own
    pd.testing.assert_frame_equal(results_table(pooled.out), pooled.table.drop(columns="run_id"))


def test_every_run_goes_to_the_journal():
    with Journal() as j:
        ex = explore("lease-no-revival", seeds=10, depth=1, journal=j, workers=1, progress=False, quiet=True)
        runs = j.runs()
        assert len(runs) == ex.runs and list(ex.table["run_id"]) == list(runs["run_id"])
        assert set(runs["scenario"]) == {"lease-no-revival"}
        counts = j.sql("SELECT run_id, count(*) AS n FROM events GROUP BY run_id ORDER BY run_id")
        assert list(counts["n"]) == list(ex.table["events"])
        assert [json.loads(f) for f in runs["faults"]] == [json.loads(f) for f in ex.table["faults"]]
        assert j.sql("SELECT count(*) AS n FROM events WHERE kind = 'fault'")["n"][0] == ex.table["faults_injected"].sum()


def test_a_fixed_plan_runs_under_every_seed_and_a_space_draws_one_plan_per_seed():
    plan = FaultPlan(uncounted=[1])
    ex = explore("lease-ledger", faults=plan, seeds=5, crash_points=None, workers=1, progress=False, quiet=True)
    assert set(ex.table["faults"]) == {plan.to_json()}
    ex = explore("lease-ledger", faults=FaultSpace(p_throws=1.0, max_burst=1), seeds=5, crash_points=None, workers=1,
                 progress=False, quiet=True)
    random_plans = [FaultPlan.from_json(f) for f in ex.table["faults"][1:]]
    assert all(len(p.handler_throws) == 1 for p in random_plans)


def test_fault_space_draws_are_deterministic_and_bounded():
    from alarmkit.explore._space import Domain

    dom = Domain(points=[("o", "alarm", 1, 1)], effects=["revoke"], effect_calls=6, attempts=6, successes=6,
                 window_ms=240_000)
    space = FaultSpace()
    assert [space.draw(s, dom) for s in range(50)] == [space.draw(s, dom) for s in range(50)]
    for s in range(300):
        p = space.draw(s, dom)
        assert p.handler_throws != "always" and len(p.handler_throws) <= 9
        assert all(0 <= e.at_ms <= 240_000 for e in p.evictions)
        assert p.latency is None or p.latency.max_ms == 60_000
    with pytest.raises(AlarmkitError, match=r"^FaultSpace.p_crash is a probability in \[0, 1\], got 2$"):
        FaultSpace(p_crash=2)
    with pytest.raises(AlarmkitError, match=r"^unknown FaultSpace field 'p_crashes'"):
        FaultSpace.from_dict({"p_crashes": 0.5})


@pytest.mark.parametrize("kwargs, message", [
    ({"scenario": "nope"}, r"^unknown scenario 'nope'"),
    ({"scenario": "lease-ledger", "params": {"ttl": 5}}, r"^scenario 'lease-ledger' has no parameter\(s\) \['ttl'\]"),
    ({"scenario": "lease-ledger", "crash_points": "some"}, r"^crash_points is 'all', 'alarm', None or a list"),
    ({"scenario": "lease-ledger", "seeds": -1}, r"^seeds must be a count of random runs in 0\.\.10,000,000, got -1"),
    ({"scenario": "lease-ledger", "depth": -1}, r"^depth is how many crashes"),
    ({"scenario": "lease-ledger", "executor": "cluster"}, r"^executor must be None \(a local process pool\), 'serial'"),
    ({"scenario": "lease-ledger", "faults": 3}, r"^faults is a FaultPlan, a FaultSpace, a dict or None, got int$"),
    ({"scenario": "lease-ledger", "invariants": ["lots"]}, r"^unknown invariant 'lots'"),
])
def test_bad_arguments_say_what_is_allowed(kwargs, message):
    with pytest.raises(AlarmkitError, match=message):
        explore(**{"seeds": 1, "workers": 1, "progress": False, "quiet": True, **kwargs})


# -- the CLI ---------------------------------------------------------------------------------------


def test_cli_explore_json_names_each_violation_with_plan_and_seed(capsys):
    assert main(["explore", "lease-no-revival", "--seeds", "40", "--depth", "1", "--workers", "1", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["scenario"] == "lease-no-revival" and out["runs"] > 40
    (v,) = out["violations"]
    assert (v["invariant"], v["object"], v["seed"]) == ("lost", "ledger", 0)
    plan = FaultPlan.from_dict(v["faults"])
    assert 1 <= plan.size() <= 2  # no fault in it can be dropped: it no longer fails without any one of them
    assert "lost" in {x.invariant for x in check(run_scenario("lease-no-revival", seed=0, faults=plan)).violations}
    assert v["snippet"].startswith("from alarmkit import FaultPlan")
    assert isinstance(out["duplicates"], list)


def test_cli_explore_finds_nothing_in_the_ledger_and_still_exits_zero(capsys, tmp_path):
    db = tmp_path / "j.duckdb"
    plan = tmp_path / "plan.toml"
    FaultPlan(handler_throws=[1, 2, 3, 4, 5, 6, 7]).save(plan)
    rc = main(["explore", "lease-ledger", "--seeds", "5", "--faults", str(plan), "--crash-points", "none",
               "--workers", "1", "--db", str(db), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["violations"] == [] and out["runs"] == 6
    with Journal(db) as j:
        assert len(j.runs()) == 6


def test_cli_bad_fault_file_exits_2_naming_the_field(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"restarts": [{"at_ms": 5, "downtime": 10}]}))
    assert main(["explore", "lease-ledger", "--faults", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.json: unknown fault plan field 'restarts[0].downtime'; allowed fields: ['at_ms', 'downtime_ms']" in err


def test_cli_bad_numbers_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["explore", "lease-ledger", "--seeds", "many"])
    assert exc.value.code == 2 and "expected a whole number, got 'many'" in capsys.readouterr().err
    assert main(["explore", "lease-ledger", "--workers", "0"]) == 2


def test_a_journaled_exploration_says_which_run_each_counterexample_came_from(tmp_path):
    journal = Journal(tmp_path / "x.duckdb")
    found = explore("lease-no-revival", seeds=20, journal=journal, workers=1, progress=False)
    cx = found.counterexamples[0]
    row = found.table[found.table["key"] == cx.found_in].iloc[0]
    run = journal.run(int(row["run_id"]))
    assert (run["scenario"], run["seed"]) == ("lease-no-revival", int(row["seed"]))
    assert f"  found in run {int(row['run_id'])} of the journal (`alarmkit export --db FILE --run {int(row['run_id'])}`" \
        in found.report()
    assert "found in run" not in explore("lease-no-revival", seeds=20, workers=1, progress=False).report()  # no journal
    n = len(found.table)
    with pytest.raises(AlarmkitError, match=rf"^no run 99999 in the journal; it holds {n:,} runs, ids 1\.\.{n} "):
        journal.run(99999)  # hundreds of runs: the range, not every id
    journal.close()
