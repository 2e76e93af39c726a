"""What run_scenario returns (RunResult), and a counterexample replayed beside the correct variant."""

import pytest

import alarmkit as ak
from alarmkit.explore import Counterexample


def test_run_scenario_returns_a_RunResult_with_summary_fields_events_and_obligations():
    r = ak.run_scenario("lease-ledger", seed=0)
    assert isinstance(r, ak.RunResult)
    assert (r.scenario, r.seed, r.profile, r.run_id, r.horizon_ms, r.grace_ms) == (
        "lease-ledger", 0, "workerd", None, 2_400_000, None)
    assert [(a["t_ms"], a["retry_count"]) for a in r.attempts][:2] == [(15_001, 0), (30_001, 0)]  # seed 0: 1 ms late
    assert r.effects == {f"lease-{i}": 1 for i in range(6)}
    assert r.event_count == len(r.events) == 70 and list(r.events["kind"][:1]) == ["construct"]
    assert [(o["key"], o["due_ms"]) for o in r.obligations][:2] == [("lease-0", 30_000), ("lease-1", 90_000)]
    assert r["final_alarm"] is None and "final_alarm" in r and r.get("nope", 7) == 7  # the scenario's own summary
    with pytest.raises(KeyError, match=r"'attempts' is an attribute: result.attempts"):
        r["attempts"]
    with pytest.raises(KeyError, match=r"scenario 'lease-ledger' reported no 'nope'; it reported \['failed_calls'"):
        r["nope"]
    d = r.to_dict()
    assert list(d)[:9] == ["scenario", "seed", "profile", "run_id", "attempts", "effects", "events", "obligations",
                           "horizon_ms"]
    assert d["events"] == r.event_count and "sim" not in d and d["final_alarm"] is None
    assert ak.check(r).ok


def test_check_refuses_what_is_not_a_run_result():
    with pytest.raises(ak.AlarmkitError, match=r"^check\(\) needs the RunResult run_scenario returns, got dict"):
        ak.check({"sim": None})


def test_a_counterexample_replays_into_a_journal_and_beside_the_correct_variant():
    cx = Counterexample("lease-alarm-as-data", "lost", "ledger", "", ak.FaultPlan(), seed=0)
    with ak.Journal() as j:
        bad = cx.replay(j)
        assert bad.scenario == "lease-alarm-as-data" and bad.run_id == 1
        assert sorted(o["key"] for o in ak.check(bad).lost) == ["lease-0", "lease-1", "lease-3"]
        pair = cx.compare("lease-ledger", journal=j, labels=("alarm as data", "correct ledger"))
        assert (pair.bad.run_id, pair.good.run_id) == (2, 3) and pair.good.scenario == "lease-ledger"
        assert pair.check().lost == ak.check(bad).lost and ak.check(pair.good).ok
        assert list(j.runs()["scenario"]) == ["lease-alarm-as-data", "lease-alarm-as-data", "lease-ledger"]
        fig = pair.figure(kinds=["arm", "fire", "effect"], title="t")
        names = {t.name for t in fig.data}
        assert fig.layout.title.text.startswith("t") and len(fig.data) > 0 and names
