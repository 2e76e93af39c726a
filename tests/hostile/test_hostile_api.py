"""The public constructors under generated hostile values: each succeeds or raises an AlarmkitError
(never a TypeError, AttributeError, RecursionError... from deep inside)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alarmkit import FaultPlan, Journal, Simulation
from alarmkit.errors import AlarmkitError
from alarmkit.scenarios import SCENARIOS, run_scenario

from strategies import examples, json_value_text, plan_dict, text

ANY = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
                text(), st.lists(st.integers(), max_size=3), st.dictionaries(text(8), st.integers(), max_size=2),
                st.just(object()), st.just(b"bytes"))


def _kept_to_alarmkit_errors(make, what: str = "api") -> None:
    from harness import count

    count(what)
    try:
        make()
    except AlarmkitError as err:
        assert str(err) and "\n" not in str(err).strip() or len(str(err)) < 4000
    except TypeError as err:  # Python's own contract for an unknown keyword: not a value alarmkit takes
        assert "unexpected keyword argument" in str(err), err


@settings(max_examples=examples(60))
@given(kw=st.dictionaries(st.sampled_from(["profile", "seed", "journal", "scenario", "params", "faults", "step_limit",
                                           "time_limit_ms", "start_ms", "fire_latency_ms", "bogus"]), ANY, max_size=3))
def test_simulation_takes_or_refuses_any_value(kw):
    _kept_to_alarmkit_errors(lambda: Simulation(**kw).close(), "Simulation()")


@settings(max_examples=examples(120))
@given(plan=plan_dict())
def test_fault_plan_from_dict_json_and_toml_take_or_refuse_any_plan(plan):
    _kept_to_alarmkit_errors(lambda: FaultPlan.from_dict(plan), "FaultPlan.from_dict")
    try:
        text_ = json.dumps(plan, allow_nan=True)
    except (ValueError, RecursionError):
        return
    _kept_to_alarmkit_errors(lambda: FaultPlan.from_json(text_), "FaultPlan.from_json")
    try:
        toml = FaultPlan.from_dict(plan).to_toml()
    except AlarmkitError:
        return
    assert FaultPlan.from_toml(toml) == FaultPlan.from_dict(plan)  # what it takes, it writes back the same


@settings(max_examples=examples(40))
@given(name=st.sampled_from(sorted(SCENARIOS)), data=st.data())
def test_run_scenario_takes_or_refuses_any_parameter(name, data):
    params = SCENARIOS[name].params
    key = data.draw(st.one_of(st.sampled_from(sorted(params) or ["x"]), text(12)), label="param")
    raw = data.draw(json_value_text(), label="value")
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        value = raw
    # max_work keeps an accepted run to about a second: the cap itself is what is under test here
    _kept_to_alarmkit_errors(lambda: run_scenario(name, seed=1, max_work=20_000, **{key: value}), "run_scenario()")


@settings(max_examples=examples(40))
@given(path=st.one_of(text(40), st.sampled_from(["", ":memory:", ".", "/", "x/", "j.duckdb/", "a\x00b"])),
       batch=st.one_of(st.none(), ANY))
def test_journal_takes_or_refuses_any_path(tmp_path_factory, path, batch):
    folder = tmp_path_factory.mktemp("j")
    import os

    old = os.getcwd()
    os.chdir(folder)
    try:
        kw = {} if batch is None else {"batch_size": batch}
        _kept_to_alarmkit_errors(lambda: Journal(path, **kw).close(), "Journal()")
    finally:
        os.chdir(old)
    made = [p.name for p in folder.iterdir()]
    assert all(not n.startswith(".") or "alarmkit-tmp" not in n for n in made), made  # no temporary file left


def test_nan_and_infinity_in_a_plan_are_refused_by_name():
    for bad in (math.nan, math.inf, -math.inf, 2**64):
        with pytest.raises(AlarmkitError):
            FaultPlan.from_dict({"handler_throws": [bad]})


# the named fire latencies ("measured", "measured-loaded", "exact") and their near misses, as a Simulation
# setting and as a fault plan's latency field (where "measured" once raised a KeyError from the range check)
NEAR_NAMES = ["measured", "measured-loaded", "exact", "Measured", "measured ", "loaded", "", "measured-quiet",
              "exact\x00", "2", "empirical", "fixed"]


@pytest.mark.parametrize("name", NEAR_NAMES)
def test_named_latencies_are_taken_or_refused_in_one_line(name):
    from alarmkit.runtime.profiles import NAMED_LATENCIES

    for make in (lambda: Simulation(fire_latency=name).close(), lambda: FaultPlan.from_dict({"latency": name}),
                 lambda: FaultPlan.from_json(json.dumps({"latency": name}))):
        if name in NAMED_LATENCIES:
            make()
        else:
            with pytest.raises(AlarmkitError, match="measured-loaded") as err:
                make()
            assert "\n" not in str(err.value)
    if name in NAMED_LATENCIES:
        plan = FaultPlan.from_dict({"latency": name})
        assert FaultPlan.from_toml(plan.to_toml()) == plan == FaultPlan.from_json(plan.to_json())
